"""Where frames come from: a live server, or a recording streamed by
``bustle-replay serve`` (the same protocol; the viewer never opens the
recording's state itself, only reads its scenario for the zones).

``Source`` connects as a viewer, subscribes (whole city unless observers are
given) and keeps an :class:`bustle_client.EntityMirror` current;
``open_source`` makes one from the command line, for a picture left at the
step asked for, or for the live page.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Optional

from bustle_client import BustleError, BustleTimeout, Observer, RepresentationBudgets, Session

from .scene import (find_shipped_scenario, frame_from_mirror, geometry_from_welcome,
                    load_scenario, scenario_from_recording)

REPLAY_LISTENING = re.compile(r"^bustle-replay listening on (\S+):(\d+)$")
# A recording whose keyframe is the step asked for is served this slowly: the
# replay takes no step before the picture is taken (it is stopped right after).
HOLD_RATE_HZ = "0.001"


class ViewError(Exception):
    """Something the viewer cannot do, with a message for the user."""


def shipped_scenario_dirs():
    """Directories searched for a scenario file matching the Welcome's id:
    the source tree's configs/."""
    return [Path(__file__).resolve().parents[3] / "configs"]


class ReplayProcess:
    """``bustle-replay serve FILE --from-step N`` on an ephemeral loopback port."""

    def __init__(self, binary: str, recording: str, from_step: Optional[int] = None,
                 rate: Optional[str] = None, timeout: float = 10.0, loop: bool = False):
        args = [binary, "serve", str(recording), "--port", "0", "--bind", "127.0.0.1"]
        if from_step is not None:
            args += ["--from-step", str(from_step)]
        if rate is not None:
            args += ["--rate", rate]
        if loop:
            args.append("--loop")
        args += ["--log-level", "warn"]
        self.args = args
        try:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True)
        except OSError as exc:
            raise ViewError(f"cannot start {binary}: {exc}") from exc
        self._stderr = []
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        self.host, self.port = self._wait_listening(timeout)

    def _drain_stderr(self):
        for line in self.proc.stderr:
            self._stderr.append(line.rstrip("\n"))

    def _wait_listening(self, timeout: float):
        deadline = time.monotonic() + timeout
        result = {}

        def read():
            for line in self.proc.stdout:
                m = REPLAY_LISTENING.match(line.strip())
                if m:
                    result["addr"] = (m.group(1), int(m.group(2)))
                    return
        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(max(0.0, deadline - time.monotonic()))
        if "addr" not in result:
            self.stop()
            time.sleep(0.05)
            why = "; ".join(self._stderr[-5:]) or f"exit code {self.proc.returncode}"
            raise ViewError(f"{' '.join(self.args)}: did not start: {why}")
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        return result["addr"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def replay_binary(explicit: Optional[str] = None) -> str:
    path = explicit or os.environ.get("BUSTLE_REPLAY") or shutil.which("bustle-replay")
    if not path:
        raise ViewError("bustle-replay not found: pass --replay-binary or set BUSTLE_REPLAY")
    return path


def parse_observer(text: str) -> Observer:
    """``X,Y`` or ``X,Y,RADIUS`` (metres)."""
    try:
        parts = [float(v) for v in text.split(",")]
    except ValueError:
        raise ViewError(f"--observer: expected X,Y[,RADIUS] in metres, got {text!r}") from None
    if len(parts) == 2:
        return Observer(parts[0], parts[1])
    if len(parts) == 3:
        return Observer(parts[0], parts[1], radius_m=parts[2])
    raise ViewError(f"--observer: expected X,Y[,RADIUS] in metres, got {text!r}")


class Source:
    """A subscribed viewer session and its mirror."""

    def __init__(self, host: str, port: int, token: Optional[str] = None,
                 observers=None, budgets: Optional[RepresentationBudgets] = None,
                 scenario: Optional[dict] = None, timeout: float = 5.0,
                 replay: Optional[ReplayProcess] = None, name: str = "bustle-view"):
        self.replay = replay
        self.timeout = timeout
        try:
            self.session = Session.connect(host, port, timeout=timeout)
        except OSError as exc:
            raise ViewError(f"cannot connect to {host}:{port}: {exc}") from exc
        self.welcome = self.session.hello(name, role="viewer", token=token)
        if scenario is None:
            scenario = find_shipped_scenario(self.welcome.scenario_id, shipped_scenario_dirs())
        self.scenario = scenario
        self.geometry = geometry_from_welcome(self.welcome, scenario)
        self.session.subscribe(observers=observers or None, budgets=budgets)
        self.mirror = self.session.mirror(strict=True)
        # What a picture draws as observers: this client's own, with their
        # interest radius; without them the whole city is received, and
        # the city's observers (which the tiers follow) are asked for.
        self.client_observers = [[o.x_m, o.y_m, o.radius_m] for o in (observers or [])]

    @property
    def bytes_received(self) -> int:
        """Bytes of the stream so far, for the HUD."""
        return self.session.bytes_received

    def next(self, timeout: Optional[float] = None):
        """Apply the next delta; returns it."""
        d = self.session.next_delta(timeout=self.timeout if timeout is None else timeout)
        self.mirror.apply(d)
        return d

    def until_step(self, step: Optional[int], timeout: float = 10.0):
        """Apply the baseline, then deltas until the mirror reaches ``step``
        (None: the baseline). ``timeout`` bounds the wait for each delta, not
        the whole wait (a realtime server takes a second per 10 steps)."""
        try:
            if self.mirror.step is None:
                self.next(timeout)
            while step is not None and self.mirror.step < step:
                self.next(timeout)
        except BustleTimeout:
            at = "before the first frame" if self.mirror.step is None else \
                f"at step {self.mirror.step}"
            raise ViewError(f"no delta within {timeout:g} s {at} (is the server paused?)") from None
        return self

    def observers(self) -> list:
        """[x, y, interest radius or None] of each observer to draw: this
        client's, else the city's (QueryPopulation; none if not answered)."""
        if self.client_observers:
            return self.client_observers
        try:
            pop = self.session.population(timeout=self.timeout)
        except BustleError:
            return []
        return [[x, y, None] for x, y in zip(pop.observers_x_m or [], pop.observers_y_m or [])]

    def frame(self) -> dict:
        frame = frame_from_mirror(self.mirror)
        frame["observers"] = self.observers()
        return frame

    def close(self):
        try:
            self.session.close()
        finally:
            if self.replay is not None:
                self.replay.stop()


def recording_plan(path, step: Optional[int]):
    """(keyframe step, target step, last step) for a picture of a recording
    at ``step``: ``bustle-replay serve --from-step N`` starts at the latest
    keyframe before the first tick that reaches N, and the viewer follows the
    deltas from there to the target step (the step after that tick)."""
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
        try:
            last = con.execute("SELECT max(step) FROM recording_ticks").fetchone()[0]
            if last is None:
                raise ViewError(f"{path}: the recording has no ticks")
            if step is None:
                row = con.execute("SELECT s.step FROM recording_keyframes k JOIN snapshots s "
                                  "ON s.id = k.snapshot_id ORDER BY k.tick LIMIT 1").fetchone()
                return (row[0], row[0], last) if row else (0, 0, last)
            tick = con.execute("SELECT min(tick) FROM recording_ticks WHERE step >= ?",
                               (step,)).fetchone()[0]
            if tick is None:
                raise ViewError(f"{path}: no recorded tick reaches step {step} "
                                f"(the last recorded step is {last})")
            target = con.execute("SELECT step FROM recording_ticks WHERE tick = ?",
                                 (tick,)).fetchone()[0]
            row = con.execute("SELECT s.step FROM recording_keyframes k JOIN snapshots s "
                              "ON s.id = k.snapshot_id WHERE k.tick <= ? ORDER BY k.tick DESC "
                              "LIMIT 1", (tick,)).fetchone()
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise ViewError(f"{path}: not a Bustle recording ({exc})") from exc
    if row is None:
        raise ViewError(f"{path}: no keyframe before step {step}")
    keyframe = row[0]
    # The keyframe itself is the state at `step` when the tick after it is the
    # one that reaches it and the keyframe's step already is `step`.
    return keyframe, (keyframe if keyframe >= step else target), last


def open_source(args, live: bool = False) -> Source:
    """A Source from parsed command-line arguments: ``--recording FILE``
    (through bustle-replay serve) or a live server at ``--host``/``--port``.

    For a picture of a recording (``live`` False) the Source's mirror is left
    at the step asked for: the replay is served from the keyframe before it at
    a rate that reaches it in about a second, the viewer applies every delta
    up to it, and the replay is stopped with the Source. For the live page
    the recording plays at its recorded rate from ``--step``."""
    observers = [parse_observer(o) for o in (args.observer or [])]
    scenario = load_scenario(args.scenario) if args.scenario else None
    if not args.recording:
        src = Source(args.host, args.port, token=args.token, observers=observers,
                     scenario=scenario, timeout=args.timeout)
        if not live:
            try:
                src.until_step(args.step, timeout=args.timeout)
            except Exception:
                src.close()
                raise
        return src
    if not Path(args.recording).is_file():
        raise ViewError(f"{args.recording}: no such recording")
    if scenario is None:
        try:
            scenario = scenario_from_recording(args.recording)
        except (sqlite3.Error, ValueError) as exc:
            raise ViewError(f"{args.recording}: not a Bustle recording ({exc})") from exc
    binary = replay_binary(args.replay_binary)
    if live:
        replay = ReplayProcess(binary, args.recording, from_step=args.step, loop=True)
        try:
            return Source(replay.host, replay.port, observers=observers, scenario=scenario,
                          timeout=args.timeout, replay=replay)
        except Exception:
            replay.stop()
            raise
    keyframe, target, _last = recording_plan(args.recording, args.step)
    distance = target - keyframe
    if distance <= 0:  # the keyframe is the state asked for: hold the replay there
        rates = [HOLD_RATE_HZ]
    else:
        # About a second to the step; slower when a delta came late and
        # covered two steps (a busy machine) or the replay passed the step
        # before the subscription.
        fast = max(20.0, min(200.0, float(distance)))
        rates = [f"{fast:g}", f"{max(5.0, fast / 4):g}", f"{max(2.0, fast / 16):g}"]
    reached = []
    for rate in rates:
        replay = ReplayProcess(binary, args.recording, from_step=args.step, rate=rate)
        try:
            src = Source(replay.host, replay.port, observers=observers, scenario=scenario,
                         timeout=args.timeout, replay=replay)
        except Exception:
            replay.stop()
            raise
        try:
            src.until_step(None)
            if src.mirror.step <= target:
                src.until_step(target, timeout=args.timeout)
        except Exception:
            src.close()
            raise
        if src.mirror.step == target:
            return src
        reached.append(src.mirror.step)
        src.close()
    raise ViewError(f"{args.recording}: could not stop the replay at step {target} "
                    f"(the viewer got steps {reached}: a busy machine)")
