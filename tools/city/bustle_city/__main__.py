"""bustle-city: runs one city on K district servers and a gateway on this
machine, and keeps it running (docs/districts.md, "One command").

    bustle-city [--config CITY.json | --districts K --grid N --agents P]
                [--port 7777] [--rate HZ] [--dir RUN_DIR] [--max-restarts N]

It starts bustle-server --district dK for every district of the city's map
in index order (each dialling the one below it, each recording to
RUN_DIR/dK-<start>.db), then bustle-gateway on --port, and prints one line
per process and "bustle-city: gateway listening on HOST:PORT". It then
watches them:

  - a district that exits without being asked to (a crash, kill -9) is
    started again on the same ports with --resume on its newest recording:
    it replays to where it was with every digest checked, its neighbours
    (which waited for it) go on, and the gateway's clients keep their
    entities;
  - a gateway that exits is started again on the same port; its clients
    reconnect and get a baseline;
  - a process that needs more than --max-restarts restarts stops the city
    (exit 1): something is wrong that a restart does not fix.

SIGINT or SIGTERM stops the gateway, then the districts (SIGTERM each),
and exits 0. This is the coordinator for plain processes; on Kubernetes
the orchestrator starts and replaces the processes (deploy/README.md).
"""

import argparse
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

LINKS = re.compile(r"^bustle-server district (\S+) links on (\S+):(\d+)$")
LISTENING = re.compile(r"^bustle-(server|gateway) listening on (\S+):(\d+)$")
START_TIMEOUT_S = 120.0


def say(text):
    print(f"bustle-city: {text}", flush=True)


class Child:
    """One process: its stdout read by a thread (the lines naming its ports),
    its stderr appended to a log file."""

    def __init__(self, name, args, log: Path):
        self.name, self.args = name, args
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self.log)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, pattern):
        """The match of the first stdout line matching `pattern`, or None if
        the process ended or said nothing of the kind in time."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                return None
            m = pattern.match(line)
            if m:
                return m
        return None

    def stop(self, timeout=10.0):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class City:
    def __init__(self, opts, config: Path, district_ids):
        self.opts, self.config, self.ids = opts, config, district_ids
        self.dir = Path(opts.dir)
        self.districts = {}   # id -> Child
        self.links = {}       # id -> links port
        self.ports = {}       # id -> client port
        self.recordings = {}  # id -> [recording paths, oldest first]
        self.restarts = {}    # name -> count
        self.gateway = None
        self.gateway_port = opts.port

    def district_args(self, k, resume=None):
        d = self.ids[k]
        rec = self.dir / f"{d}-{time.strftime('%Y%m%dT%H%M%S')}-{len(self.recordings.get(d, []))}.db"
        self.recordings.setdefault(d, []).append(rec)
        args = [self.opts.server, "--config", str(self.config), "--district", d,
                "--port", str(self.ports.get(d, 0)),
                "--district-listen", f"127.0.0.1:{self.links.get(d, 0)}",
                "--client-entries-per-step", "1000000", "--record", str(rec),
                "--snapshot-db", str(self.dir / f"{d}-snapshots.db")]
        if self.opts.rate:
            args += ["--rate", str(self.opts.rate)]
        if k > 0:
            below = self.ids[k - 1]
            args += ["--district-peers", f"{below}=127.0.0.1:{self.links[below]}"]
        if resume:
            args += ["--resume", str(resume)]
        return args

    def start_district(self, k, resume=None):
        d = self.ids[k]
        child = Child(d, self.district_args(k, resume), self.dir / f"{d}.log")
        links = child.wait_for(LINKS)
        listening = child.wait_for(LISTENING) if links else None
        if not listening:
            child.stop()
            raise RuntimeError(f"district {d} did not start (see {self.dir / (d + '.log')})")
        self.links[d], self.ports[d] = int(links.group(3)), int(listening.group(3))
        self.districts[d] = child
        say(f"district {d} pid {child.proc.pid} on 127.0.0.1:{self.ports[d]}"
            f"{' (resumed from ' + resume.name + ')' if resume else ''}")

    def start_gateway(self):
        spec = ",".join(f"{d}=127.0.0.1:{self.ports[d]}" for d in self.ids)
        args = [self.opts.gateway, "--config", str(self.config), "--districts", spec,
                "--port", str(self.gateway_port)]
        if self.opts.rate:
            args += ["--rate", str(self.opts.rate)]
        child = Child("gateway", args, self.dir / "gateway.log")
        m = child.wait_for(LISTENING)
        if not m:
            child.stop()
            raise RuntimeError(f"the gateway did not start (see {self.dir / 'gateway.log'})")
        self.gateway, self.gateway_port = child, int(m.group(3))
        say(f"gateway pid {child.proc.pid}")
        say(f"gateway listening on 127.0.0.1:{self.gateway_port}")

    def count_restart(self, name):
        self.restarts[name] = self.restarts.get(name, 0) + 1
        if self.restarts[name] > self.opts.max_restarts:
            raise RuntimeError(f"{name} needed more than {self.opts.max_restarts} restarts")

    def watch_once(self):
        for k, d in enumerate(self.ids):
            child = self.districts[d]
            if child.proc.poll() is None:
                continue
            code = child.proc.returncode
            child.log.close()
            self.count_restart(d)
            resume = self.recordings[d][-1]
            say(f"district {d} exited ({'signal ' + str(-code) if code < 0 else 'code ' + str(code)}); "
                f"resuming it from {resume.name}")
            self.start_district(k, resume=resume)
        if self.gateway.proc.poll() is not None:
            self.gateway.log.close()
            self.count_restart("gateway")
            say(f"the gateway exited (code {self.gateway.proc.returncode}); starting it again")
            self.start_gateway()

    def stop(self):
        if self.gateway:
            self.gateway.stop()
        for d in reversed(self.ids):
            if d in self.districts:
                self.districts[d].stop()


def parse(argv):
    p = argparse.ArgumentParser(prog="bustle-city", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", help="the city (a scenario with a district map); "
                   "default: the generated district city")
    p.add_argument("--districts", type=int, default=2, help="generated city: districts (default 2)")
    p.add_argument("--grid", type=int, default=16, help="generated city: nodes per side (default 16)")
    p.add_argument("--agents", type=int, default=20000, help="generated city: pedestrians (default 20000)")
    p.add_argument("--port", type=int, default=7777, help="the gateway's port (0: any; default 7777)")
    p.add_argument("--rate", type=float, help="steps per second of every process (default: the city's)")
    p.add_argument("--dir", default="bustle-city", help="recordings and logs (default ./bustle-city)")
    p.add_argument("--max-restarts", type=int, default=5, help="per process (default 5)")
    p.add_argument("--server", default=os.environ.get("BUSTLE_SERVER", "bustle-server"))
    p.add_argument("--gateway", default=os.environ.get("BUSTLE_GATEWAY", "bustle-gateway"))
    p.add_argument("--bench", default=os.environ.get("BUSTLE_BENCH", "bustle-bench"),
                   help="bustle-bench, which writes the generated city")
    return p.parse_args(argv)


def city_file(opts) -> Path:
    if opts.config:
        return Path(opts.config).resolve()
    path = Path(opts.dir).resolve() / "city.json"
    subprocess.run([opts.bench, "districts", "--grid", str(opts.grid), "--districts",
                    str(opts.districts), "--agents", str(opts.agents), "--vehicles", "0",
                    "--write-scenario", str(path)], check=True, stdout=subprocess.DEVNULL)
    return path


def main(argv=None):
    opts = parse(sys.argv[1:] if argv is None else argv)
    Path(opts.dir).mkdir(parents=True, exist_ok=True)
    try:
        config = city_file(opts)
        ids = [d["id"] for d in json.loads(config.read_text()).get("districts", [])]
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        say(f"cannot read or write the city: {e}")
        return 2
    if not ids:
        say(f"{config} has no district map")
        return 2
    stopping = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.set())
    city = City(opts, config, ids)
    code = 0
    try:
        for k in range(len(ids)):
            city.start_district(k)
        city.start_gateway()
        while not stopping.wait(0.2):
            city.watch_once()
    except RuntimeError as e:
        say(str(e))
        code = 1
    finally:
        city.stop()
    say("stopped")
    return code


if __name__ == "__main__":
    sys.exit(main())
