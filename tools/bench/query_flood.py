#!/usr/bin/env python3
"""Query flood bench: does one kind of query, pipelined by many clients, hold
up another client's stream?

Starts the real bustle-server (realtime clock, 10 Hz) on the default city
grown to --pedestrians walkers, connects --clients flooders (each its own
process, subscribed to the whole city, keeping --pipeline queries of --kind
in flight as fast as its command rate allows) and one plain subscriber, and
reports what the subscriber got over --seconds: deltas, the longest wall-time
gap between two deltas and the most steps one delta coalesced, with the
flooders' answer counts and the server's CPU time per second. Loopback only; it stops by itself.

  PYTHONPATH=clients/python:build/release/python \\
    tools/bench/query_flood.py --server build/release/server/app/bustle-server \\
    --kind QueryStats --clients 10 --pedestrians 40000 --seconds 45
"""

import argparse
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bustle_client import CommandStatus, Session

SOURCE = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"^bustle-server listening on (\S+):(\d+)$")


def flood(host, port, kind, pipeline, seconds, out):
    """One flooder: subscribed, `pipeline` queries in flight until the time is up."""
    s = Session.connect(host, port, timeout=10.0)
    s.hello("flooder")
    s.subscribe(motion_tolerance_mm=0)
    accepted = refused = 0
    inflight = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        while len(inflight) < pipeline:
            inflight.append(s.send_command(kind))
        r = s.wait_result(inflight.pop(0), timeout=30.0)
        if r.status == CommandStatus.Accepted:
            accepted += 1
        else:
            refused += 1
        while s.buffered_deltas:  # deltas are read and dropped, as a slow viewer would
            s.next_delta(timeout=0)
    for rid in inflight:
        s.wait_result(rid, timeout=30.0)
    out.put((accepted, refused))
    s.close()


def cpu_s(pid):
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(binary, pedestrians):
    city = json.loads((SOURCE / "configs" / "default.city.json").read_text())
    city["pedestrians"]["count"] = pedestrians
    city["pedestrians"]["spawn_per_step_max"] = max(8, pedestrians // 40)
    city["entity_capacity"] = pedestrians + pedestrians // 8 + 1024
    config = tempfile.NamedTemporaryFile("w", suffix=".city.json", delete=False)
    json.dump(city, config)
    config.close()
    snapshots = Path(config.name).with_suffix(".db")  # removed with the config
    proc = subprocess.Popen([binary, "--port", "0", "--config", config.name,
                             "--snapshot-db", str(snapshots)], text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    for line in proc.stdout:
        m = LISTENING.match(line.strip())
        if m:
            return proc, m.group(1), int(m.group(2)), config.name
    raise SystemExit(f"query_flood: {binary} exited without listening")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", required=True, help="bustle-server binary")
    ap.add_argument("--kind", default="QueryStats", help="query to flood (default QueryStats)")
    ap.add_argument("--clients", type=int, default=10, help="flooding clients (default 10)")
    ap.add_argument("--pipeline", type=int, default=32, help="queries in flight per flooder")
    ap.add_argument("--pedestrians", type=int, default=40000, help="walkers (default 40000)")
    ap.add_argument("--seconds", type=float, default=45.0, help="flood length (default 45)")
    args = ap.parse_args()
    proc, host, port, config = start_server(args.server, args.pedestrians)
    try:
        good = Session.connect(host, port, timeout=10.0)
        good.hello("good-subscriber")
        good.subscribe(motion_tolerance_mm=10)
        deadline = time.monotonic() + 60
        while True:  # the city fills first
            d = good.next_delta(timeout=10.0)
            if d.step >= 60 or time.monotonic() > deadline:
                break
        out = multiprocessing.Queue()
        workers = [multiprocessing.Process(target=flood, args=(host, port, args.kind,
                                                               args.pipeline, args.seconds, out))
                   for _ in range(args.clients)]
        for w in workers:
            w.start()
        deltas, gap_s, most_steps = 0, 0.0, 0
        cpu_before = cpu_s(proc.pid)
        last_t, last_step = time.monotonic(), d.step
        end = last_t + args.seconds
        while time.monotonic() < end:
            d = good.next_delta(timeout=30.0)
            now = time.monotonic()
            deltas += 1
            gap_s = max(gap_s, now - last_t)
            most_steps = max(most_steps, d.step - last_step)
            last_t, last_step = now, d.step
        cpu = cpu_s(proc.pid) - cpu_before
        answers = [out.get(timeout=60) for _ in workers]
        for w in workers:
            w.join(timeout=60)
        good.close()
        print(f"kind {args.kind}, {args.clients} flooders x {args.pipeline} in flight, "
              f"{args.pedestrians} walkers, {args.seconds:.0f} s")
        print(f"subscriber: {deltas} deltas ({deltas / args.seconds:.1f}/s at 10 Hz), "
              f"longest gap {gap_s * 1000:.0f} ms, most steps in one delta {most_steps}")
        print(f"flooders: {sum(a for a, _ in answers)} accepted, "
              f"{sum(r for _, r in answers)} refused (rate limit); "
              f"server CPU {cpu / args.seconds:.2f} s per s")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for leftover in Path(config).parent.glob(Path(config).stem + "*"):
            leftover.unlink()


if __name__ == "__main__":
    sys.exit(main())
