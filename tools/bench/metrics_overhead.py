#!/usr/bin/python3
"""Step time with the metrics endpoint scraped every second vs not scraped.

    tools/bench/metrics_overhead.py build/release/server/app/bustle-server \
        [--pedestrians 2048] [--rate 50] [--seconds 60] [--rounds 2]

Runs bustle-server on loopback (realtime clock, the default city with
--pedestrians pedestrians, --rate Hz) `rounds` times in each mode, alternating
(unscraped, scraped, unscraped, scraped, ...) so a change in machine load hits
both modes alike. Each run lasts --seconds; in the scraped mode GET /metrics
(the full exposition, what Prometheus does) once a second. At the end of each
run one scrape reads the exact step wall times of the last 8192 steps
(bustle_step_duration_recent_seconds, quantiles 0.5 / 0.99 / 1.0) and the
scrape time. Prints one line per run and the medians per mode, and the
difference of p99 in percent. Not a test: nothing is asserted. Exit 0.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parents[2]
METRICS_LINE = re.compile(r"^bustle-server metrics on (\S+):(\d+)$")
QUANTILE = re.compile(r'^bustle_step_duration_recent_seconds\{quantile="([0-9.]+)"\} (\S+)$', re.M)


def scrape(port):
    t0 = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return text, time.perf_counter() - t0


def run(server, config, rate, seconds, scraped):
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BUSTLE_")}
        proc = subprocess.Popen(
            [server, "--port", "0", "--clock", "realtime", "--rate", str(rate), "--config", str(config),
             "--metrics-bind", "127.0.0.1:0", "--snapshot-db", str(Path(tmp) / "s.db"), "--log-level", "warn"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env, text=True)
        try:
            port = None
            for line in proc.stdout:
                m = METRICS_LINE.match(line.strip())
                if m:
                    port = int(m.group(2))
                    break
            if port is None:
                raise SystemExit("bustle-server did not print its metrics line")
            scrape_times = []
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                time.sleep(1.0)
                if scraped:
                    scrape_times.append(scrape(port)[1])
            text, _ = scrape(port)
            q = {float(a): float(b) for a, b in QUANTILE.findall(text)}
            steps = int(float(re.search(r"^bustle_steps_total (\S+)$", text, re.M).group(1)))
            dropped = int(float(re.search(r"^bustle_steps_dropped_total (\S+)$", text, re.M).group(1)))
            return {"p50_ms": q[0.5] * 1e3, "p99_ms": q[0.99] * 1e3, "max_ms": q[1.0] * 1e3, "steps": steps,
                    "dropped": dropped,
                    "scrape_ms": statistics.median(scrape_times) * 1e3 if scrape_times else None,
                    "scrapes": len(scrape_times)}
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("server")
    ap.add_argument("--pedestrians", type=int, default=2048)
    ap.add_argument("--rate", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()

    city = json.loads((SOURCE_DIR / "configs" / "default.city.json").read_text())
    city["pedestrians"]["count"] = a.pedestrians
    with tempfile.NamedTemporaryFile("w", suffix=".city.json", delete=False) as f:
        json.dump(city, f)
        config = Path(f.name)
    load_before = os.getloadavg()
    print(f"bustle-server {a.server}: default city with {a.pedestrians} pedestrians at {a.rate} Hz, "
          f"{a.seconds:.0f} s per run, {a.rounds} rounds; load average before {load_before[0]:.2f} "
          f"({os.cpu_count()} cores)")
    results = {False: [], True: []}
    try:
        for r in range(a.rounds):
            for scraped in (False, True):
                res = run(a.server, config, a.rate, a.seconds, scraped)
                res["load"] = os.getloadavg()[0]
                results[scraped].append(res)
                print(f"round {r + 1} {'scraped  ' if scraped else 'unscraped'}: p50 {res['p50_ms']:.3f} ms, "
                      f"p99 {res['p99_ms']:.3f} ms, max {res['max_ms']:.3f} ms, {res['steps']} steps "
                      f"({res['dropped']} dropped)"
                      + (f", {res['scrapes']} scrapes of median {res['scrape_ms']:.2f} ms" if scraped else "")
                      + f"; load {res['load']:.2f}", flush=True)
    finally:
        config.unlink()
    med = {k: {m: statistics.median(x[m] for x in v) for m in ("p50_ms", "p99_ms", "max_ms")} for k, v in results.items()}
    diff = (med[True]["p99_ms"] - med[False]["p99_ms"]) / med[False]["p99_ms"] * 100.0
    print(f"median unscraped: p50 {med[False]['p50_ms']:.3f} ms, p99 {med[False]['p99_ms']:.3f} ms")
    print(f"median scraped:   p50 {med[True]['p50_ms']:.3f} ms, p99 {med[True]['p99_ms']:.3f} ms")
    print(f"p99 difference (scraped - unscraped): {diff:+.1f} %; load average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
