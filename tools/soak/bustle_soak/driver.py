"""The soak run: a server (started or given), one thread per client
connection, a sampler, and the checks of :mod:`bustle_soak.checks`.

Each client connection is one :class:`Worker` thread with its own blocking
``Session``: it reads its deltas (when subscribed) and checks them, and issues
its share of the scenario's commands (operators) between reads, so command
results and deltas are checked in the order the server sent them.

Restores and loads rewind the world, so a step number alone does not name a
state: digests are kept per (epoch, step). A restore or load is done
quiesced: the operator pauses the server, waits until every subscribed
client has read the paused step, starts a new epoch, restores, checks that
every subscriber's next delta is a baseline at the snapshot's step and
digest, and resumes. Subscribes, resubscribes and reconnects never overlap a
restore (they take the world gate shared, the restore takes it exclusive).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import random
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

from bustle_client import (
    BatchStatus,
    BustleError,
    BustleTimeout,
    CommandStatus,
    ConnectionClosed,
    EntityEnter,
    EntityKind,
    JobState,
    MirrorError,
    Observer,
    RejectReason,
    RepresentationBudgets,
    RepresentationHint,
    ServerError,
    Session,
    despawn_op,
    spawn_op,
)

from .checks import Checker
from .scenario import ClientSpec, CommandSpec, Scenario

#: Rejections that mean the server broke (or the driver sent nonsense), never load.
BAD_REASONS = {RejectReason.None_, RejectReason.InvariantFailure, RejectReason.UnknownCommand,
               RejectReason.NotAuthorized}
HINT_BUDGET = {RepresentationHint.Actor: "actors", RepresentationHint.Instanced: "instances",
               RepresentationHint.Marker: "markers"}
DEFAULT_BUDGETS = {"actors": 256, "instances": 4096, "markers": 16384}
JOB_TERMINAL_OK = {JobState.Committed, JobState.Applied, JobState.RepresentationRebuilt}
#: Answered at once by the sim thread; every other command is a world command,
#: queued in the world's inbox until the next step.
NOT_WORLD_COMMANDS = {"Pause", "Resume", "Step", "QueryStats", "QueryPopulation", "QueryZones",
                      "QueryGarages", "QuerySignals", "QueryEntity", "QueryVehicle", "QuerySpawn",
                      "QueryLeases", "QueryJob", "ListSnapshots", "Checkpoint", "Save", "Restore",
                      "Load", "DeleteSnapshot"}


# ---------------------------------------------------------------------------
# Server process and /proc sampling
# ---------------------------------------------------------------------------


class ServerProcess:
    """bustle-server started by the driver on an ephemeral port."""

    def __init__(self, binary: str, scenario: Scenario, workdir: Path):
        spec = scenario.server
        args = [binary, "--port", "0", "--clock", spec.clock, "--seed", str(spec.seed),
                "--snapshot-db", str(workdir / "soak-snapshots.db"), "--log-level", "warn"]
        if spec.config is not None:
            args += ["--config", str(spec.config)]
        if spec.rate_hz is not None:
            args += ["--rate", str(spec.rate_hz)]
        if spec.token:
            args += ["--token", spec.token]
        args += spec.args
        self.args = args
        self.stderr_path = workdir / "bustle-server.stderr"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._stderr)
        self.pid = self.proc.pid
        self.host, self.port = self._listening()

    def _listening(self):
        deadline = time.monotonic() + 10.0
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), True)
        line = b""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            text = line.decode("utf-8", "replace").strip()
            if text.startswith("bustle-server listening on "):
                addr = text.rsplit(" ", 1)[1]
                host, port = addr.rsplit(":", 1)
                return host, int(port)
        self.stop()
        raise RuntimeError(f"{' '.join(self.args)} did not start (exit {self.proc.returncode}): "
                           f"{self.stderr_tail()}")

    def stderr_tail(self, n: int = 2000) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")[-n:]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 5.0) -> Optional[int]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self._stderr.close()
                return None
        self._stderr.close()
        return self.proc.returncode


class ProcSampler:
    """RSS, fds, threads and CPU time of a process from /proc/PID."""

    def __init__(self, pid: int):
        self.pid = pid
        self.ticks = os.sysconf("SC_CLK_TCK")

    def sample(self) -> Optional[dict]:
        base = f"/proc/{self.pid}"
        try:
            status = Path(f"{base}/status").read_text()
            stat = Path(f"{base}/stat").read_text()
            fds = len(os.listdir(f"{base}/fd"))
        except OSError:
            return None
        rss_kib = threads = 0
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                rss_kib = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
        fields = stat.rsplit(")", 1)[1].split()
        cpu_s = (int(fields[11]) + int(fields[12])) / self.ticks  # utime + stime
        return {"rss_mib": rss_kib / 1024.0, "fds": fds, "threads": threads, "cpu_s": cpu_s}


# ---------------------------------------------------------------------------
# Shared state of one run
# ---------------------------------------------------------------------------


class World:
    """What the workers share: the epoch, the gate restores take exclusive,
    the live entity ids (for despawns) and the stop flag."""

    def __init__(self, checker: Checker, scenario: Scenario, faults: Dict[str, float]):
        self.checker = checker
        self.scenario = scenario
        self.faults = dict(faults)  # kind -> seconds after start; popped when injected
        self.faults_injected: List[str] = []
        self.stop = threading.Event()
        self.epoch = 0
        self.lock = threading.Lock()
        self.shared = 0
        self.exclusive = False
        self.paused = False
        self.pauses = 0  # how many times the driver paused the server
        self.resumed_at = 0.0
        self.workers: List["Worker"] = []
        self.live_pedestrians: List[tuple] = []  # from a whole-city client
        #: restore check: epoch -> (step, digest or None, what)
        self.expected_baseline: Dict[int, tuple] = {}
        self.snapshots = {"checkpoint": None, "save": None}  # name, step, epoch, exact
        #: world commands sent and not yet answered, and sent in all: a checkpoint
        #: taken while one may be in the inbox carries it (and its digest covers it)
        self.world_in_flight = 0
        self.world_sent = 0

    def take_fault(self, kind: str) -> bool:
        with self.lock:
            at = self.faults.get(kind)
            if at is None or self.checker.now() < at:
                return False
            del self.faults[kind]
            self.faults_injected.append(kind)
            return True

    def stalls_excused(self) -> bool:
        return self.paused or self.exclusive or time.monotonic() - self.resumed_at < 2.0


# ---------------------------------------------------------------------------
# One client connection
# ---------------------------------------------------------------------------


def _observer(o) -> Observer:
    return Observer(o.x_m, o.y_m, o.z_m, o.heading_rad, o.radius_m)


class Worker(threading.Thread):
    def __init__(self, world: World, spec: ClientSpec, ordinal: int, host: str, port: int,
                 commands: List[CommandSpec], seed: int):
        name = spec.name if spec.count == 1 else f"{spec.name}.{ordinal}"
        super().__init__(name=f"soak-{name}", daemon=True)
        self.client = name
        self.world = world
        self.spec = spec
        self.host, self.port = host, port
        self.rng = random.Random(seed)
        self.session: Optional[Session] = None
        self.subscribed = False
        self.mirror = None
        self.last_step: Optional[int] = None
        self.last_delta_at = time.monotonic()
        self.epoch_seen: Optional[int] = None
        self.await_baseline: Optional[float] = None
        self.resync = False  # the mirror broke: subscribe again for a new baseline
        self.repeat_ok = 0  # UpdateInterest answers: the current step may come again
        self.alt = 0
        self.stats = collections.Counter()
        self.step_gaps = 0
        self.skipped_steps = 0
        self.latencies: Dict[str, List[float]] = collections.defaultdict(list)
        self.results: collections.Counter = collections.Counter()  # (command, status/reason)
        self.inter_delta: List[float] = []
        self.error: Optional[str] = None
        now = time.monotonic()
        self.commands = [(c, now + (self._interval(c) if c.first_s is None else c.first_s))
                         for c in commands]
        self.next_resubscribe = now + spec.resubscribe_every_s if spec.resubscribe_every_s else None
        self.next_update = now + spec.update_interest_every_s if spec.update_interest_every_s else None
        self.next_reconnect = now + spec.reconnect_every_s if spec.reconnect_every_s else None
        self.next_stall = now + spec.stall_every_s if spec.stall_every_s else None
        self.garage_seq = 0
        self.hour = None

    # ----------------------------------------------------------- utilities

    def _interval(self, c: CommandSpec) -> float:
        return self.rng.expovariate(c.rate_hz)

    def fail(self, invariant: str, message: str, step: Optional[int] = None) -> None:
        self.world.checker.fail(invariant, self.client, message, step)

    def _budgets(self):
        b = self.spec.budgets
        return None if b is None else RepresentationBudgets(**{**DEFAULT_BUDGETS, **b})

    def _observers(self, alternate: bool = False):
        obs = self.spec.observers
        if alternate and self.spec.alt_observers:
            self.alt += 1
            choices = [self.spec.observers, self.spec.alt_observers] if self.spec.observers else \
                [self.spec.alt_observers]
            obs = choices[self.alt % len(choices)]
        return [_observer(o) for o in obs] or None

    def _kinds(self):
        if self.spec.kinds is None:
            return None
        return [EntityKind.Pedestrian if k == "pedestrian" else EntityKind.Vehicle
                for k in self.spec.kinds]

    # -------------------------------------------------------------- gate

    def _gate_shared(self):
        """Wait (reading deltas) until no restore runs, then hold the gate shared."""
        w = self.world
        while not w.stop.is_set():
            with w.lock:
                if not w.exclusive:
                    w.shared += 1
                    return True
            self.pump(0.05)
        return False

    def _gate_release(self):
        with self.world.lock:
            self.world.shared -= 1

    # ---------------------------------------------------------- connect

    def connect(self) -> None:
        spec = self.spec
        timeout = self.world.scenario.limits.command_deadline_s
        s = Session.connect(self.host, self.port, timeout=timeout)
        s.hello(f"soak-{self.client}", role=spec.role, token=self.world.scenario.server.token)
        self.session = s
        self.stats["connects"] += 1
        self.world.checker.passed("connection")
        if spec.subscribe:
            self.subscribe(alternate=False)

    def subscribe(self, alternate: bool) -> None:
        if not self._gate_shared():
            return
        try:
            resubscribe = self.subscribed
            self.subscribed = False
            self.session.subscribe(kinds=self._kinds(), observers=self._observers(alternate),
                                   budgets=self._budgets())
            self.mirror = self.session.mirror(strict=True)
            self.last_step = None
            self.epoch_seen = None
            self.subscribed = True
            # deltas of the previous subscription may still be on the way
            self.await_baseline = time.monotonic() if resubscribe else None
            self.last_delta_at = time.monotonic()
            self.stats["subscribes"] += 1
        finally:
            self._gate_release()

    def update_interest(self) -> None:
        if not self._gate_shared():
            return
        try:
            self.session.update_interest(observers=self._observers(True) or [], budgets=self._budgets())
            # the delta at the current step it asks for (it may follow the
            # baseline of a Subscribe sent just before: a baseline keeps it)
            self.repeat_ok = min(self.repeat_ok + 1, 2)
            self.stats["interest_updates"] += 1
        finally:
            self._gate_release()

    def reconnect(self) -> None:
        self.subscribed = False
        if self.session is not None:
            self.session.close()
        self.session = None
        self.stats["reconnects"] += 1
        self.connect()

    # ------------------------------------------------------------ deltas

    def pump(self, timeout: float) -> int:
        """Read and check the deltas that arrive within ``timeout``; returns how many."""
        if not self.subscribed or self.session is None:
            if timeout > 0:
                time.sleep(timeout)
            return 0
        n = 0
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 and not self.session.buffered_deltas:
                return n
            try:
                delta = self.session.next_delta(timeout=max(remaining, 0.0) if not
                                                self.session.buffered_deltas else 0.0)
            except BustleTimeout:
                return n
            if self.spec.read_delay_ms:
                time.sleep(self.spec.read_delay_ms / 1000.0)
            self.check_delta(delta)
            n += 1

    def check_delta(self, delta) -> None:
        w = self.world
        checker = w.checker
        now = time.monotonic()
        self.inter_delta.append(now - self.last_delta_at)
        if len(self.inter_delta) > 200_000:
            del self.inter_delta[:100_000]
        self.last_delta_at = now
        self.stats["deltas"] += 1
        checker.passed("stream-alive")
        if self.resync:
            self.stats["deltas_skipped_for_resync"] += 1
            return
        if self.await_baseline is not None:
            if not delta.baseline:
                self.stats["deltas_before_new_baseline"] += 1
                if now - self.await_baseline > w.scenario.limits.stream_stall_s:
                    self.fail("stream-alive", f"no baseline within {w.scenario.limits.stream_stall_s:g} s "
                                              "after Subscribe", delta.step)
                    self.await_baseline = None
                else:
                    return
            self.await_baseline = None
        if self.mirror.step is not None and delta.entered and w.take_fault("duplicate-id"):
            # Test hook: pretend the server sent an entity that is already here again.
            some = next(iter(self.mirror))
            r = self.mirror.record(some)
            dup = EntityEnter(r.id, r.lane, r.s_mm, r.speed_mmps, r.archetype, r.kind, r.sim_tier,
                              r.representation, r.policy)
            delta = dataclasses.replace(delta, entered=list(delta.entered) + [dup])
        with w.lock:
            epoch = w.epoch
        step = delta.step
        # restore / load: the first delta of a new epoch is the snapshot's baseline
        if self.epoch_seen is not None and epoch != self.epoch_seen:
            expected = w.expected_baseline.get(epoch)
            if expected is not None:
                want_step, want_digest, what = expected
                if not delta.baseline or step != want_step or (
                        want_digest is not None and delta.digest != want_digest):
                    self.fail("restore-baseline",
                              f"after {what}: first delta is {'a baseline' if delta.baseline else 'not a baseline'}"
                              f" at step {step} digest {delta.digest:016x}; expected a baseline at step "
                              f"{want_step}" + (f" digest {want_digest:016x}" if want_digest is not None else ""),
                              step)
                else:
                    checker.passed("restore-baseline")
        self.epoch_seen = epoch
        # contiguous steps
        prev = self.last_step
        if prev is not None and not delta.baseline:
            if step == prev + 1:
                checker.passed("contiguous-steps")
            elif step == prev and self.repeat_ok:
                self.repeat_ok -= 1
                checker.passed("contiguous-steps")
            elif step > prev + 1 and (self.spec.allow_step_gaps or
                                      step - prev - 1 <= w.scenario.limits.max_step_gap):
                # the network thread sends the latest step: steps the sim ran
                # back to back (realtime catch-up) arrive as one delta
                self.step_gaps += 1
                self.skipped_steps += step - prev - 1
                checker.passed("contiguous-steps")
            elif step == prev:
                self.fail("contiguous-steps", f"step {step} came twice (no UpdateInterest asked for it)", step)
            elif step < prev:
                self.fail("contiguous-steps", f"step went back from {prev} to {step} without a baseline", step)
            else:
                self.fail("contiguous-steps", f"step {prev} was followed by step {step}: "
                                              f"{step - prev - 1} steps missing (max_step_gap "
                                              f"{w.scenario.limits.max_step_gap})", step)
        self.last_step = step
        # unique ids (before the mirror, so the invariant is named exactly)
        ids = set()
        bad = False
        # an entity may leave and enter again in one delta (left applies first)
        left_now = {tuple(e) for e in delta.left} if delta.entered and delta.left else ()
        for e in delta.entered:
            key = tuple(e.id)
            if key in ids:
                self.fail("unique-ids", f"entity {key} entered twice in the delta of step {step}", step)
                bad = True
            elif not delta.baseline and e.id in self.mirror and key not in left_now:
                self.fail("unique-ids", f"entity {key} entered at step {step} while already present", step)
                bad = True
            ids.add(key)
        if not bad:
            checker.passed("unique-ids")
        checker.digest(epoch, step, delta.digest, self.client)
        if bad:
            # already reported: take the entity again without a second report
            # (a lenient apply), so one fault does not cascade
            self.mirror.strict = False
        try:
            self.mirror.apply(delta)
            if not bad:
                checker.passed("mirror-consistency")
        except MirrorError as exc:
            self.fail("mirror-consistency", str(exc), step)
            # the mirror is half applied: start over from a new baseline
            self.resync = True
            return
        finally:
            self.mirror.strict = True
        # hints within budgets
        budgets = {**DEFAULT_BUDGETS, **(self.spec.budgets or {})}
        held = collections.Counter(self.mirror.record(e).representation for e in self.mirror)
        over = [f"{HINT_BUDGET[h]} {n} > {budgets[HINT_BUDGET[h]]}" for h, n in held.items()
                if h in HINT_BUDGET and n > budgets[HINT_BUDGET[h]]]
        if RepresentationHint.None_ in held:
            over.append(f"{held[RepresentationHint.None_]} entities hinted None were sent")
        if over:
            self.fail("hint-budgets", f"step {step}: " + ", ".join(over), step)
        else:
            checker.passed("hint-budgets")
        if self.spec.whole_city:
            peds = vehicles = 0
            live = []
            for eid in self.mirror:
                r = self.mirror.record(eid)
                if r.kind == EntityKind.Vehicle:
                    vehicles += 1
                else:
                    peds += 1
                    if eid in self.mirror.retiring:
                        peds -= 1  # fading: already gone from the world's counts
                    else:
                        live.append(eid)
            checker.city_count(epoch, step, peds, vehicles, self.client)
            if step % 50 == 0:
                checker.forget_before(epoch, step - 600)
            w.live_pedestrians = live

    # ----------------------------------------------------------- commands

    def run_command(self, c: CommandSpec) -> None:
        kind = c.kind
        p = c.params
        s = self.session
        if kind in ("checkpoint_restore", "save_load"):
            self.snapshot_cycle(kind)
            return
        if kind == "spawn":
            zones = p.get("zones") or [None]
            prio = p.get("priorities") or ["quest"]
            self.ask("SpawnPedestrian", zone=self.rng.choice(zones), priority=self.rng.choice(prio))
        elif kind == "despawn":
            live = self.world.live_pedestrians
            if not live:
                return
            eid = self.rng.choice(live)
            self.ask("DespawnEntity", index=eid.index, generation=eid.generation)
        elif kind == "garage_request":
            self.garage_seq += 1
            self.ask("GarageRequest", garage=p["garage"], request_id=f"{self.client}-{self.garage_seq}",
                     prototype=p["prototype"], lane=p["lane"], priority=p.get("priority", 10))
        elif kind == "set_hour":
            if self.hour is None:
                self.hour = p.get("start", 6.0)
            else:
                self.hour = (self.hour + p.get("step_h", 1.0)) % 24.0
            self.ask("SetHour", hour=self.hour)
        elif kind == "set_time_scale":
            self.ask("SetTimeScale", scale=self.rng.choice(p.get("values") or [1, 60]))
        elif kind == "set_target":
            self.ask("SetPedestrianTarget", count=self.rng.randint(p.get("min", 0), p.get("max", 200)))
        elif kind == "lifecycle_batch":
            zones = p.get("zones") or [None]
            ops = [spawn_op(self.rng.choice(zones)) for _ in range(p.get("spawns", 2))]
            live = list(self.world.live_pedestrians)
            self.rng.shuffle(live)
            ops += [despawn_op(e) for e in live[:p.get("despawns", 1)]]
            if ops:
                self.ask("LifecycleBatch", ops=ops)
        elif kind == "query":
            self.ask(self.rng.choice(["QueryStats", "QueryPopulation", "QueryZones", "QueryGarages",
                                      "QuerySignals", "ListSnapshots"]))
        s.spawn_updates()  # pushed states of our spawn handles: not checked here, only drained

    def ask(self, command: str, **fields):
        """Send one command and check that a graded result comes within the deadline."""
        deadline = self.world.scenario.limits.command_deadline_s
        start = time.monotonic()
        world_command = command not in NOT_WORLD_COMMANDS
        if world_command:
            with self.world.lock:
                self.world.world_in_flight += 1
                self.world.world_sent += 1
        try:
            return self._ask(command, fields, start, deadline, world_command)
        finally:
            if world_command:
                with self.world.lock:
                    self.world.world_in_flight -= 1

    def _wait(self, rid: int, deadline: float, world_command: bool):
        """wait_result; a world command is answered after the next step, so
        time the driver held the server paused (a quiesced restore) does not
        count against its deadline (at most 4 extensions)."""
        w = self.world
        for _ in range(4):
            pauses = w.pauses
            try:
                return self.session.wait_result(rid, timeout=deadline)
            except BustleTimeout:
                if not (world_command and (w.paused or w.pauses != pauses)):
                    raise
                self.stats["waits_extended_by_pause"] += 1
        return self.session.wait_result(rid, timeout=deadline)

    def _ask(self, command: str, fields: dict, start: float, deadline: float, world_command: bool):
        rid = self.session.send_command(command, **fields)
        try:
            result = self._wait(rid, deadline, world_command)
            if self.world.take_fault("drop-result"):
                # Test hook: lose the result as if the server never sent it.
                self.stats["results_dropped_by_fault"] += 1
                result = self._wait(rid, deadline, world_command)
        except BustleTimeout:
            self.fail("command-answered", f"{command} (request {rid}) had no CommandResult within "
                                          f"{deadline:g} s")
            return None
        self.latencies[command].append(time.monotonic() - start)
        self.world.checker.passed("command-answered")
        if result.reason == RejectReason.RateLimited and self.session.retry_rate_limited:
            self.results[(command, "RateLimited")] += 1
            return result
        grade = "Accepted" if result.accepted else f"Rejected:{result.reason.name}"
        self.results[(command, grade)] += 1
        if result.status not in (CommandStatus.Accepted, CommandStatus.Rejected) or (
                not result.accepted and result.reason in BAD_REASONS):
            self.fail("command-graded", f"{command} (request {rid}) answered {grade}: {result.message!r}")
        elif command == "LifecycleBatch" and result.batch not in (BatchStatus.Committed,
                                                                  BatchStatus.RejectedNoChange):
            self.fail("command-graded", f"LifecycleBatch answered batch {result.batch.name}: "
                                        f"{result.message!r}")
        else:
            self.world.checker.passed("command-graded")
        return result

    def wait_job(self, result, what: str):
        if result is None or not result.accepted or result.job is None:
            return None
        try:
            states = self.session.wait_job(result.job.job_id,
                                           timeout=self.world.scenario.limits.quiesce_timeout_s)
        except BustleTimeout:
            self.fail("job-completed", f"{what}: job {result.job.job_id} did not finish in time")
            return None
        last = states[-1] if states else result.job
        if last.state not in JOB_TERMINAL_OK:
            self.fail("job-completed", f"{what}: job ended {last.state.name}: {last.message!r}")
            return None
        self.world.checker.passed("job-completed")
        return last

    def snapshot_cycle(self, kind: str) -> None:
        """Take a snapshot when none is pending, else go back to it (quiesced)."""
        w = self.world
        slot = "checkpoint" if kind == "checkpoint_restore" else "save"
        pending = w.snapshots[slot]
        if pending is None:
            with w.lock:
                if w.exclusive:
                    return
                w.shared += 1
            try:
                name = f"soak-{slot}-{self.rng.randrange(1 << 30)}"
                with w.lock:
                    quiet = w.world_in_flight == 0
                    sent = w.world_sent
                res = self.ask("Checkpoint" if slot == "checkpoint" else "Save", name=name)
                with w.lock:
                    # no world command could be in the inbox when it was taken
                    exact = quiet and w.world_sent == sent
                job = self.wait_job(res, f"{slot} {name}")
                if job is not None:
                    w.snapshots[slot] = (name, job.step, w.epoch, exact)
                    self.stats[f"{slot}s"] += 1
            finally:
                self._gate_release()
            return
        name, step, epoch, exact = pending
        w.snapshots[slot] = None
        self.quiesced_rewind("Restore" if slot == "checkpoint" else "Load", name, step, epoch, exact)
        # gone back to it once: delete it, so an hour's soak keeps a small store
        self.ask("DeleteSnapshot", name=name)

    def quiesced_rewind(self, command: str, name: str, step: int, epoch: int, exact: bool) -> None:
        w = self.world
        lim = w.scenario.limits
        # exclusive gate: wait for shared holders to leave, reading our deltas
        while True:
            with w.lock:
                if not w.exclusive and w.shared == 0:
                    w.exclusive = True
                    break
            if w.stop.is_set():
                return
            self.pump(0.02)
        try:
            paused = self.ask("Pause")
            if paused is None or not paused.accepted:
                return
            w.paused = True
            w.pauses += 1
            stats = self.ask("QueryStats")
            if stats is None or stats.stats is None:
                return
            p = stats.stats.step
            deadline = time.monotonic() + lim.quiesce_timeout_s
            while True:
                behind = [wk.client for wk in w.workers
                          if wk.subscribed and wk.is_alive() and (wk.last_step is None or wk.last_step < p)
                          and wk is not self]
                if self.subscribed and (self.last_step is None or self.last_step < p):
                    behind.append(self.client)
                if not behind:
                    break
                if time.monotonic() > deadline:
                    self.fail("stream-alive", f"quiesce before {command} {name}: "
                                              f"{', '.join(behind)} did not reach step {p} within "
                                              f"{lim.quiesce_timeout_s:g} s", p)
                    break
                self.pump(0.02)
            # A save keeps what a save keeps (DESIGN §5), not the whole state,
            # and a checkpoint keeps the commands still in the inbox (its
            # digest covers them): only a restore of a checkpoint taken with no
            # world command in flight must come back with the streamed digest.
            digest = w.checker.digest_at(epoch, step) if command == "Restore" and exact else None
            self.stats[f"{command.lower()}s_digest_checked"] += digest is not None
            with w.lock:
                w.epoch += 1
                w.expected_baseline[w.epoch] = (step, digest, f"{command} {name}")
            res = self.ask(command, name=name)
            self.wait_job(res, f"{command.lower()} {name}")
            self.stats[f"{command.lower()}s"] += 1
            # every subscriber must see the new baseline before the world moves on
            deadline = time.monotonic() + lim.quiesce_timeout_s
            while time.monotonic() < deadline:
                behind = [wk for wk in w.workers if wk.subscribed and wk.is_alive()
                          and wk.epoch_seen is not None and wk.epoch_seen != w.epoch]
                if not behind:
                    break
                self.pump(0.02)
        finally:
            resumed = self.ask("Resume")
            w.paused = False
            w.resumed_at = time.monotonic()
            with w.lock:
                w.exclusive = False
            if resumed is not None and not resumed.accepted:
                self.fail("command-graded", f"Resume after {command} rejected: {resumed.message!r}")

    # --------------------------------------------------------------- loop

    def run(self) -> None:
        w = self.world
        try:
            self.connect()
            while not w.stop.is_set():
                now = time.monotonic()
                if self.next_reconnect is not None and now >= self.next_reconnect:
                    self.next_reconnect = now + self.spec.reconnect_every_s
                    self.reconnect()
                    continue
                if self.next_resubscribe is not None and now >= self.next_resubscribe:
                    self.next_resubscribe = now + self.spec.resubscribe_every_s
                    self.subscribe(alternate=True)
                if self.next_update is not None and now >= self.next_update:
                    self.next_update = now + self.spec.update_interest_every_s
                    self.update_interest()
                if self.next_stall is not None and now >= self.next_stall:
                    self.next_stall = now + self.spec.stall_every_s
                    self.stats["stalls"] += 1
                    w.stop.wait(self.spec.stall_s)
                    self.last_delta_at = time.monotonic()
                    self.pump(0)  # read the backlog
                if self.resync:
                    self.resync = False
                    self.stats["resyncs"] += 1
                    self.subscribe(alternate=False)
                for i, (c, due) in enumerate(self.commands):
                    if now >= due:
                        self.commands[i] = (c, now + self._interval(c))
                        self.run_command(c)
                if self.subscribed:
                    gap = time.monotonic() - self.last_delta_at
                    if gap > w.scenario.limits.stream_stall_s and not w.stalls_excused():
                        self.fail("stream-alive", f"no delta for {gap:.1f} s", self.last_step)
                        self.last_delta_at = time.monotonic()
                wake = min([d for _, d in self.commands] + [now + 0.2])
                self.pump(max(0.0, min(wake - time.monotonic(), 0.2)))
        except ServerError as exc:
            if not w.stop.is_set():
                self.fail("connection", f"server closed the connection: {exc}")
        except (ConnectionClosed, OSError) as exc:
            if not w.stop.is_set():
                self.fail("connection", f"connection lost: {exc}")
        except BustleError as exc:
            if not w.stop.is_set():
                self.fail("connection", f"{type(exc).__name__}: {exc}")
        finally:
            self.subscribed = False
            if self.session is not None:
                self.session.close()


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------


def _percentile(values, q: float) -> Optional[float]:
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def run(scenario: Scenario, *, server_binary: Optional[str], duration_s: Optional[float] = None,
        faults: Optional[Dict[str, float]] = None, workdir: Optional[Path] = None,
        progress=None, on_violation=None) -> dict:
    """Run the soak; returns the report (a JSON-ready dict)."""
    duration = scenario.duration_s if duration_s is None else duration_s
    started_wall = time.time()
    started = time.monotonic()
    checker = Checker(started, on_violation)
    world = World(checker, scenario, faults or {})
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="bustle-soak-")
        workdir = Path(tmp.name)
    workdir.mkdir(parents=True, exist_ok=True)
    server = None
    spec = scenario.server
    if spec.start:
        if not server_binary:
            raise RuntimeError("no bustle-server to start: pass --server or set BUSTLE_SERVER")
        server = ServerProcess(server_binary, scenario, workdir)
        host, port, pid = server.host, server.port, server.pid
    else:
        host, port, pid = spec.host, spec.port, spec.pid
    sampler = ProcSampler(pid) if pid else None
    samples: List[dict] = []

    # which operator connection issues which command
    operators = [c for c in scenario.clients if c.role == "operator"]
    seed_rng = random.Random(scenario.seed)
    workers: List[Worker] = []
    for spec_c in scenario.clients:
        for k in range(spec_c.count):
            mine = []
            for cmd in scenario.commands:
                target = cmd.client or (operators[0].name if operators else None)
                if target == spec_c.name:
                    share = dataclasses.replace(cmd, rate_hz=cmd.rate_hz / spec_c.count)
                    mine.append(share)
            workers.append(Worker(world, spec_c, k, host, port, mine, seed_rng.randrange(1 << 32)))
    world.workers = workers

    control = Session.connect(host, port, timeout=scenario.limits.command_deadline_s)
    control.hello("soak-sampler", role="viewer", token=spec.token)
    first_stats = control.stats()
    for wk in workers:
        wk.start()
    end = started + duration
    next_sample = time.monotonic()
    next_stats = time.monotonic() + scenario.stats_every_s
    last = None
    last_progress = time.monotonic()
    server_exit = None
    interrupted = False
    try:
        while time.monotonic() < end:
            now = time.monotonic()
            if server is not None and not server.alive():
                checker.fail("server-alive", "bustle-server", f"the server exited with status "
                             f"{server.proc.returncode}: {server.stderr_tail(500)}")
                break
            if now >= next_stats:
                next_stats = now + scenario.stats_every_s
                with world.lock:
                    busy = world.exclusive
                    if not busy:
                        world.shared += 1
                if not busy:
                    try:
                        with world.lock:
                            epoch = world.epoch
                        st = control.stats()
                        checker.stats_sample(epoch, st.step, st.pedestrians, st.vehicles)
                        # the server's own digest at that step joins the comparison
                        checker.digest(epoch, st.step, st.digest, "stats")
                        last = st
                    except BustleError as exc:
                        checker.fail("connection", "soak-sampler", f"QueryStats failed: {exc}")
                    finally:
                        with world.lock:
                            world.shared -= 1
            if now >= next_sample:
                next_sample = now + scenario.sample_every_s
                s = sampler.sample() if sampler else None
                row = {"t_s": round(now - started, 3)}
                if s:
                    row.update(s)
                if last is not None:
                    row.update(step=last.step, pedestrians=last.pedestrians, vehicles=last.vehicles,
                               dropped_steps=last.dropped_steps, clients=last.clients)
                samples.append(row)
                if progress and now - last_progress >= 10:
                    last_progress = now
                    progress(row, checker)
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))
    except KeyboardInterrupt:
        interrupted = True  # Ctrl-C: stop early, still report what was checked
    finally:
        world.stop.set()
        for wk in workers:
            wk.join(timeout=scenario.limits.command_deadline_s + 5)
        try:
            final_stats = control.stats()
        except BustleError:
            final_stats = last
        control.close()
        if server is not None:
            server_exit = server.stop()
            if server_exit != 0 and not checker.counts["server-alive"]:
                checker.fail("server-alive", "bustle-server",
                             f"exit status {server_exit} after SIGTERM (expected 0): {server.stderr_tail(500)}")
            else:
                checker.passed("server-alive")
        if tmp is not None:
            tmp.cleanup()
    unfired = sorted(world.faults)
    resources = _resources(samples, first_stats, final_stats, workers, scenario, checker)
    rep = _report(scenario, duration, started_wall, time.monotonic() - started, checker, workers,
                  samples, resources, world.faults_injected, unfired, host, port, server_exit)
    rep["interrupted"] = interrupted
    return rep


def _resources(samples, first_stats, final_stats, workers, scenario, checker) -> dict:
    out: dict = {}
    rss = [s["rss_mib"] for s in samples if "rss_mib" in s]
    fds = [s["fds"] for s in samples if "fds" in s]
    if rss:
        out.update(rss_mib_first=round(rss[0], 1), rss_mib_max=round(max(rss), 1),
                   rss_mib_last=round(rss[-1], 1), fds_max=max(fds), fds_last=fds[-1])
    cpu = [(s["cpu_s"], s.get("step")) for s in samples if "cpu_s" in s and s.get("step") is not None]
    per_step = []
    for (c0, s0), (c1, s1) in zip(cpu, cpu[1:]):
        if s1 > s0:
            per_step.append((c1 - c0) * 1000.0 / (s1 - s0))
    if per_step:
        out.update(step_cpu_ms_p50=round(_percentile(per_step, 0.5), 3),
                   step_cpu_ms_max=round(max(per_step), 3))
    gaps = [g for wk in workers for g in wk.inter_delta[1:]]
    if gaps:
        out.update(delta_interval_ms_p50=round(_percentile(gaps, 0.5) * 1000, 2),
                   delta_interval_ms_p99=round(_percentile(gaps, 0.99) * 1000, 2),
                   delta_interval_ms_max=round(max(gaps) * 1000, 2))
    if first_stats is not None and final_stats is not None:
        # (restores and loads move the step back: these are not steps run)
        out.update(step_first=first_stats.step, step_last=final_stats.step,
                   dropped_steps=final_stats.dropped_steps - first_stats.dropped_steps)
    lim = scenario.limits
    problems = []
    if rss and lim.rss_mib_max is not None and max(rss) > lim.rss_mib_max:
        problems.append(f"RSS peaked at {max(rss):.1f} MiB > rss_mib_max {lim.rss_mib_max:g}")
    if rss and lim.rss_growth_mib_max is not None:
        # growth from the first quarter's peak to the last quarter's peak
        q = max(1, len(rss) // 4)
        growth = max(rss[-q:]) - max(rss[:q])
        if growth > lim.rss_growth_mib_max:
            problems.append(f"RSS grew by {growth:.1f} MiB > rss_growth_mib_max {lim.rss_growth_mib_max:g}")
    if fds and lim.fds_max is not None and max(fds) > lim.fds_max:
        problems.append(f"fds peaked at {max(fds)} > fds_max {lim.fds_max}")
    if per_step and lim.step_cpu_ms_max is not None and max(per_step) > lim.step_cpu_ms_max:
        problems.append(f"CPU per step peaked at {max(per_step):.2f} ms > step_cpu_ms_max "
                        f"{lim.step_cpu_ms_max:g}")
    for p in problems:
        checker.fail("server-resources", "bustle-server", p)
    if not problems and rss:
        checker.passed("server-resources")
    return out


def _report(scenario, duration, started_wall, elapsed, checker, workers, samples, resources,
            injected, unfired, host, port, server_exit) -> dict:
    results = collections.Counter()
    latencies = collections.defaultdict(list)
    clients = []
    for wk in workers:
        results.update(wk.results)
        for k, v in wk.latencies.items():
            latencies[k].extend(v)
        clients.append({"name": wk.client, "role": wk.spec.role, **dict(wk.stats),
                        "step_gaps": wk.step_gaps, "skipped_steps": wk.skipped_steps,
                        "last_step": wk.last_step})
    commands = {}
    for (cmd, grade), n in sorted(results.items()):
        commands.setdefault(cmd, {"grades": {}})["grades"][grade] = n
    for cmd, lat in latencies.items():
        commands.setdefault(cmd, {"grades": {}}).update(
            count=len(lat), latency_ms_p50=round(_percentile(lat, 0.5) * 1000, 2),
            latency_ms_p99=round(_percentile(lat, 0.99) * 1000, 2),
            latency_ms_max=round(max(lat) * 1000, 2))
    invariants = {name: {"checks": checker.checks[name], "violations": checker.counts[name]}
                  for name in checker.checks}
    return {
        "scenario": scenario.name,
        "scenario_file": str(scenario.path),
        "server": f"{host}:{port}",
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started_wall)),
        "duration_s": duration,
        "elapsed_s": round(elapsed, 3),
        "passed": not checker.failed,
        "invariants": invariants,
        "violations": [v.to_json() for v in checker.violations],
        "commands": commands,
        "clients": clients,
        "resources": resources,
        "samples": samples,
        "faults_injected": injected,
        "faults_not_injected": unfired,
        "server_exit": server_exit,
    }
