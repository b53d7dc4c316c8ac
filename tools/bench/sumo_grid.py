#!/usr/bin/env python3
"""SUMO peer of `bustle-bench vehicles` (issue 4): the same signalised grid city
and vehicle count in Eclipse SUMO, headless, 0.1 s steps; prints SUMO's vehicle
updates per second over the timed steps.

Needs `sumo` and `netgenerate` (tools/bench/install-bench-deps.sh); installs
nothing itself. Debian's python3, standard library only.

    tools/bench/sumo_grid.py [--grid 32] [--vehicles 10000] [--steps 1000]
                             [--warmup-steps 20] [--dir DIR] [--keep]

What it does, step by step (the exact commands are printed as it runs):

 1. netgenerate --grid --grid.number N --grid.length 100
        --default.lanenumber 1 --default.speed 13.9
        --default-junction-type traffic_light --no-turnarounds true
        --tls.green.time 4 --tls.yellow.time 1 -o grid.net.xml
    N x N junctions 100 m apart, one lane per direction at 13.9 m/s, a
    traffic light at every junction with a 10 s two-group cycle (4 s green,
    1 s yellow, then the other group): bustle-bench's 4 s open / 1 s yield /
    5 s closed. Each light's offset is then set to ((3 i + 7 j) mod 10) s,
    bustle-bench's stagger.
 2. grid.rou.xml: for every block (N-1)^2, one counter-clockwise loop route
    (east, north, west, south edges), exactly bustle-bench's garage routes,
    repeated (route attribute `repeat`) for longer than the run, so vehicles
    circulate and never leave. V vehicles are spread evenly over the blocks
    (the same shares as bustle-bench), each block's vehicles spaced evenly
    around its loop (rotated routes, explicit departPos), all departing at
    t = 0 with speed 0. Default SUMO car (Krauss, 5 m + 2.5 m gap).
 3. Two runs, so insertion and loading are not timed:
        sumo -n grid.net.xml -r grid.rou.xml --step-length 0.1 --no-step-log
             --duration-log.statistics --end W*0.1         (warm-up only)
        sumo ... --end (W+S)*0.1                          (warm-up + timed)
    SUMO prints "Duration: <s>" (simulation loop wall time, 10 ms
    resolution; end time / "Real time factor" gives it to the ms) and
    "UPS: <n>" (vehicle updates per second of that loop); vehicle updates =
    UPS x Duration. The timed window's figure is the difference:
        ups = (UPS_b*D_b - UPS_a*D_a) / (D_b - D_a)
    One thread (SUMO's default), like bustle-bench.

Last line, for compare_sumo.sh:
    RESULT sumo vehicles=<mean running> steps=S seconds=<D_b-D_a> ups=<ups>
"""

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SPACING_M = 100.0
SPEED_MPS = 13.9


def run(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, text=True, **kw)
    if p.returncode != 0:
        if p.stdout:
            sys.stderr.write(p.stdout[-2000:])
        raise SystemExit(f"sumo_grid: {cmd[0]} exited with status {p.returncode}")
    return p


def build_net(d, n):
    net = os.path.join(d, "grid.net.xml")
    run(["netgenerate", "--grid", "--grid.number", str(n), "--grid.length", str(SPACING_M),
         "--default.lanenumber", "1", "--default.speed", str(SPEED_MPS),
         "--default-junction-type", "traffic_light", "--no-turnarounds", "true",
         "--tls.green.time", "4", "--tls.yellow.time", "1", "-o", net],
        stdout=subprocess.DEVNULL)
    tree = ET.parse(net)
    root = tree.getroot()
    node = {}  # junction id -> (i, j)
    for j in root.iter("junction"):
        if j.get("type") == "internal":
            continue
        node[j.get("id")] = (round(float(j.get("x")) / SPACING_M), round(float(j.get("y")) / SPACING_M))
    edge = {}  # ((i, j), (i2, j2)) -> (edge id, length of its lane)
    for e in root.iter("edge"):
        if e.get("function") == "internal":
            continue
        lane = e.find("lane")
        edge[(node[e.get("from")], node[e.get("to")])] = (e.get("id"), float(lane.get("length")))
    # Stagger the lights like bustle-bench: offset ((3 i + 7 j) mod 10) s.
    text = open(net, encoding="utf-8").read()

    def offset(m):
        i, j = node[m.group(2)]
        return f'{m.group(1)}{(3 * i + 7 * j) % 10}"'

    text = re.sub(r'(<tlLogic id="([^"]+)"[^>]*?offset=")[^"]*"', offset, text)
    with open(net, "w", encoding="utf-8") as f:
        f.write(text)
    return net, edge


def build_routes(d, n, vehicles, end_s, edge):
    rou = os.path.join(d, "grid.rou.xml")
    blocks = (n - 1) * (n - 1)
    loop_m = 4 * SPACING_M
    repeat = int(math.ceil(end_s * SPEED_MPS / loop_m)) + 2
    lines = ['<routes>', '    <vType id="car" vClass="passenger"/>']
    vehs = []
    for b in range(blocks):
        i, j = b % (n - 1), b // (n - 1)
        share = vehicles // blocks + (1 if b < vehicles % blocks else 0)
        if share == 0:
            continue
        corners = [(i, j), (i + 1, j), (i + 1, j + 1), (i, j + 1)]
        loop = [edge[(corners[k], corners[(k + 1) % 4])] for k in range(4)]
        for r in range(4):
            rot = loop[r:] + loop[:r]
            lines.append(f'    <route id="b{b}r{r}" edges="{" ".join(e for e, _ in rot)}" repeat="{repeat}"/>')
        # Spread the share around the loop: vehicle k on edge k % 4, evenly
        # spaced along that edge.
        per_edge = [(share + 3 - r) // 4 for r in range(4)]
        for k in range(share):
            r, m = k % 4, k // 4
            length = loop[r][1]
            pos = (m + 0.5) * length / per_edge[r]
            vehs.append(f'    <vehicle id="v{b}.{k}" type="car" route="b{b}r{r}" depart="0" '
                        f'departPos="{pos:.2f}" departSpeed="0" departLane="0"/>')
    lines += vehs
    lines.append('</routes>')
    with open(rou, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return rou


def sumo_run(net, rou, end_s):
    cmd = ["sumo", "-n", net, "-r", rou, "--step-length", "0.1", "--no-step-log",
           "--duration-log.statistics", "--end", f"{end_s:.1f}", "--no-warnings"]
    p = run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout

    def num(pattern):
        m = re.search(pattern, out)
        if not m:
            sys.stderr.write(out)
            raise SystemExit(f"sumo_grid: no '{pattern}' in SUMO's output")
        return float(m.group(1))

    # "Duration: 12.34s" (SUMO >= 1.?) or "Duration: 12340ms"; the first
    # "Duration:" is the Performance block's (the trip statistics follow it).
    m = re.search(r"Duration:\s*([0-9.]+)\s*(ms|s)\b", out)
    if not m:
        sys.stderr.write(out)
        raise SystemExit("sumo_grid: no 'Duration:' in SUMO's output")
    duration_s = float(m.group(1)) / (1000.0 if m.group(2) == "ms" else 1.0)
    # "Real time factor" (simulated / wall seconds) carries more digits than
    # the rounded Duration; prefer it.
    rtf = re.search(r"Real time factor:\s*([0-9.eE+-]+)", out)
    if rtf and float(rtf.group(1)) > 0:
        duration_s = end_s / float(rtf.group(1))
    res = {
        "duration_s": duration_s,
        "ups": num(r"UPS:\s*([0-9.]+)"),
        "inserted": num(r"Inserted:\s*([0-9]+)"),
        "running": num(r"Running:\s*([0-9]+)"),
        "teleports": num(r"Teleports:\s*([0-9]+)") if re.search(r"Teleports:", out) else 0.0,
    }
    print("  " + "\n  ".join(l for l in out.splitlines() if l.strip()), flush=True)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", type=int, default=32)
    ap.add_argument("--vehicles", type=int, default=10000)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--warmup-steps", type=int, default=20)
    ap.add_argument("--dir", default=None, help="work directory (default: a fresh temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    a = ap.parse_args()
    if a.grid < 2 or a.vehicles < 1 or a.steps < 1 or a.warmup_steps < 1:
        raise SystemExit("sumo_grid: need --grid >= 2, --vehicles >= 1, --steps >= 1, --warmup-steps >= 1")
    for tool in ("sumo", "netgenerate"):
        if shutil.which(tool) is None:
            raise SystemExit(f"sumo_grid: '{tool}' not found; run tools/bench/install-bench-deps.sh")
    os.environ.setdefault("SUMO_HOME", "/usr/share/sumo")

    d = a.dir or tempfile.mkdtemp(prefix="bustle-sumo-")
    os.makedirs(d, exist_ok=True)
    try:
        warm_s = a.warmup_steps * 0.1
        end_s = (a.warmup_steps + a.steps) * 0.1
        net, edge = build_net(d, a.grid)
        rou = build_routes(d, a.grid, a.vehicles, end_s, edge)
        w = sumo_run(net, rou, warm_s)
        f = sumo_run(net, rou, end_s)
        seconds = f["duration_s"] - w["duration_s"]
        updates = f["ups"] * f["duration_s"] - w["ups"] * w["duration_s"]
        if seconds <= 0 or updates <= 0:
            raise SystemExit("sumo_grid: the timed window is empty (run more --steps)")
        ups = updates / seconds
        mean_running = updates / a.steps
        print(f"sumo: grid {a.grid}x{a.grid}, {a.vehicles} vehicles requested, inserted {f['inserted']:.0f}, "
              f"running at end {f['running']:.0f} (after warm-up {w['running']:.0f}), "
              f"teleports {f['teleports']:.0f}")
        print(f"  timed {a.steps} steps of 0.1 s after {a.warmup_steps} warm-up steps: {seconds:.3f} s, "
              f"mean step {1000.0 * seconds / a.steps:.3f} ms")
        print(f"  vehicle updates/s  {ups / 1e6:.3f} M  (mean running {mean_running:.0f})")
        print(f"RESULT sumo vehicles={mean_running:.0f} steps={a.steps} seconds={seconds:.6f} ups={ups:.1f}")
    finally:
        if not a.keep and a.dir is None:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
