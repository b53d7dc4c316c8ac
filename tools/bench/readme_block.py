#!/usr/bin/env python3
"""The generated benchmark block of docs/performance.md (tools/bench/run-all.sh).

    readme_block.py render RESULTS_DIR     prints the block for a results directory
    readme_block.py splice FILE BLOCK      replaces FILE's block with the file BLOCK
    readme_block.py check FILE             exits 1 (naming the line) unless the block parses

FILE is docs/performance.md unless `make bench BENCH_README=...` names another.

The block sits between BEGIN and END marker lines; everything outside it is
prose kept by hand. Each bench's figures are the median over its runs, with
the range of the runs in brackets when there was more than one; every row
states the 1-minute load average before and after that bench.
"""
import json
import os
import re
import statistics
import sys

BEGIN = "<!-- BEGIN GENERATED BENCH: tools/bench/run-all.sh (make bench) rewrites this block; edit the script, not the block -->"
END = "<!-- END GENERATED BENCH -->"
HEADER = "| bench | command | result: median [range of runs] | load 1 min before → after |"


def fail(message):
    print("readme_block: " + message, file=sys.stderr)
    sys.exit(1)


def read_env(results):
    env = {}
    with open(os.path.join(results, "run.env")) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("=")
            env[key] = value
    return env


def runs_of(results, name):
    """Outputs of NAME.1.txt, NAME.2.txt, ... as lists of lines."""
    out = []
    k = 1
    while os.path.exists(os.path.join(results, "%s.%d.txt" % (name, k))):
        with open(os.path.join(results, "%s.%d.txt" % (name, k))) as f:
            out.append(f.read().splitlines())
        k += 1
    return out


def json_line(lines, where):
    for line in reversed(lines):
        if line.startswith('{"bench"'):
            return json.loads(line)
    fail("%s: no JSON line (was --json passed?)" % where)


def result_line(lines, tag, where):
    for line in reversed(lines):
        if line.startswith("RESULT " + tag + " "):
            return dict(kv.split("=", 1) for kv in line.split()[2:])
    fail("%s: no 'RESULT %s' line" % (where, tag))


def load_lines(lines):
    before = after = None
    for line in lines:
        if line.startswith("load average before: "):
            before = line.split(": ", 1)[1].split()[0]
        if line.startswith("load average after: "):
            after = line.split(": ", 1)[1].split()[0]
    return before, after


def get(d, path):
    for key in path.split("."):
        d = d[key]
    return float(d)


def fmt(values, unit="", digits=3):
    """Median of values, then [min–max] when there are several runs."""
    med = statistics.median(values)
    text = "%.*f%s" % (digits, med, unit)
    if len(values) > 1:
        text += " [%.*f–%.*f]" % (digits, min(values), digits, max(values))
    return text


def load_cell(loads):
    before = [l[0] for l in loads if l[0] is not None]
    after = [l[1] for l in loads if l[1] is not None]
    if not before or not after:
        return "not stated"
    return "%s → %s" % (" / ".join(before), " / ".join(after))


def thousands(n):
    return "{:,}".format(int(n)).replace(",", " ")


def command_of(doc):
    return "`" + doc["command"].split(" --json")[0].split(" --dir ")[0].split(" --server ")[0] + "`"


def bench_rows(results):
    rows = []

    def bustle_bench(name, label, describe):
        """label: text, or a function of the first run's figures."""
        runs = runs_of(results, name)
        if not runs:
            return
        docs = [json_line(r, "%s.%d" % (name, k + 1)) for k, r in enumerate(runs)]
        loads = [("%.2f" % d["load_before"][0], "%.2f" % d["load_after"][0]) for d in docs]
        text = label(docs[0]["figures"]) if callable(label) else label
        rows.append((text, command_of(docs[0]), describe(docs), load_cell(loads)))

    def population_label(f):
        threads = f.get("threads", 1)
        return "population, %s active + %s dormant%s" % (
            thousands(f["active"]), thousands(f["dormant"]), ", %d threads" % threads if threads > 1 else "")

    def col(docs, path):
        return [get(d["figures"], path) for d in docs]

    def population_100k(d):
        return "step p50 %s, p99 %s, max %s; agent updates/s %s; hot state %d B per agent; peak RSS %s" % (
            fmt(col(d, "step_ms.p50"), " ms"), fmt(col(d, "step_ms.p99"), " ms"), fmt(col(d, "step_ms.max"), " ms"),
            fmt([v / 1e6 for v in col(d, "agent_updates_per_s")], " M", 2), col(d, "hot_bytes_per_agent")[0],
            fmt(col(d, "peak_rss_mib"), " MiB", 0))

    def population_1m(d):
        return "step p50 %s, p99 %s, max %s; agent updates/s %s; peak RSS %s" % (
            fmt(col(d, "step_ms.p50"), " ms"), fmt(col(d, "step_ms.p99"), " ms"), fmt(col(d, "step_ms.max"), " ms"),
            fmt([v / 1e6 for v in col(d, "agent_updates_per_s")], " M", 2), fmt(col(d, "peak_rss_mib"), " MiB", 0))

    # One thread and two (--threads 2, the step's parallel parts), interleaved.
    bustle_bench("population-100k", population_label, population_100k)
    bustle_bench("population-100k-2t", population_label, population_100k)
    bustle_bench("population-1m", population_label, population_1m)
    bustle_bench("population-1m-2t", population_label, population_1m)
    bustle_bench("step", lambda f: "pedestrian step, %s agents" % thousands(f["agents"]), lambda d: (
        "step p50 %s, p99 %s, max %s; agents stepped/s %s; peak RSS %s" % (
            fmt(col(d, "step_ms.p50"), " ms"), fmt(col(d, "step_ms.p99"), " ms"), fmt(col(d, "step_ms.max"), " ms"),
            fmt([v / 1e6 for v in col(d, "agents_stepped_per_s")], " M", 1), fmt(col(d, "peak_rss_mib"), " MiB", 0))))

    def snapshot(d):
        met = [x["figures"].get("targets_met") for x in d]
        verdict = "" if met[0] is None else "; targets (p99: stall ≤ 1, commit ≤ 50, restore ≤ 100 ms) %s in %d of %d runs" % (
            "met", sum(1 for m in met if m), len(met))
        return ("stall p50 %s, p99 %s; commit p50 %s, p99 %s; WAL checkpoint after it p99 %s; restore p50 %s, p99 %s; "
                "file %s%s" % (fmt(col(d, "stall_ms.p50"), " ms"), fmt(col(d, "stall_ms.p99"), " ms"),
                               fmt(col(d, "commit_ms.p50"), " ms", 1), fmt(col(d, "commit_ms.p99"), " ms", 1),
                               fmt(col(d, "wal_checkpoint_ms.p99"), " ms", 1), fmt(col(d, "restore_ms.p50"), " ms", 1),
                               fmt(col(d, "restore_ms.p99"), " ms", 1), fmt(col(d, "file_mib"), " MiB", 2), verdict))
    def snapshot_label(f):
        threads = f.get("threads", 1)
        return "checkpoint, %s agents%s" % (thousands(f["agents"]), ", %d threads" % threads if threads > 1 else "")
    bustle_bench("snapshot", snapshot_label, snapshot)

    def snapshot_1m(d):
        met = [x["figures"].get("targets_met") for x in d]
        verdict = "" if met[0] is None else "; target (issue 17: stall p99 ≤ 5 ms) met in %d of %d runs" % (
            sum(1 for m in met if m), len(met))
        return ("stall p50 %s, p99 %s (sim thread on CPU p99 %s); commit p99 %s; restore p99 %s; file %s%s" % (
            fmt(col(d, "stall_ms.p50"), " ms"), fmt(col(d, "stall_ms.p99"), " ms"), fmt(col(d, "stall_ms.cpu_p99"), " ms"),
            fmt(col(d, "commit_ms.p99"), " ms", 0), fmt(col(d, "restore_ms.p99"), " ms", 0),
            fmt(col(d, "file_mib"), " MiB", 1), verdict))
    bustle_bench("snapshot-1m", snapshot_label, snapshot_1m)

    def stream(d):
        parts = []
        for k, city in enumerate(d[0]["figures"]["cities"]):
            per = [x["figures"]["cities"][k]["bytes_per_moving_entity"] for x in d]
            parts.append("%s %s B per moving entity per step" % (city["city"], fmt(per, "", 3)))
        return "; ".join(parts)
    bustle_bench("stream", "stream bytes (protocol v2)", stream)

    # The frame build and the clients' encoding, in process (issue 31).
    def frame(d):
        return ("frame build p50 %s, p99 %s (CPU p50 %s), posing %s; world step p50 %s; encode per client "
                "p50 %s CPU holding %s; spatial index p50 %s" % (
                    fmt(col(d, "frame_build.wall_p50_ms"), " ms"), fmt(col(d, "frame_build.wall_p99_ms"), " ms"),
                    fmt(col(d, "frame_build.cpu_p50_ms"), " ms"), fmt(col(d, "posed"), "", 0),
                    fmt(col(d, "step.wall_p50_ms"), " ms"), fmt(col(d, "encode_per_client.cpu_p50_ms"), " ms"),
                    fmt(col(d, "held_per_client"), "", 0), fmt(col(d, "spatial_index.wall_p50_ms"), " ms")))
    bustle_bench("frame", lambda f: "frame build, %s pedestrians, %d district clients, %d threads" % (
        thousands(f["pedestrians"]), f["clients"], f["threads"]), frame)

    def fanout(d):
        r = d[0]["figures"]["runs"]
        return ("no stall: step p99 %.2f ms (runs %s), net thread %.1f %%, %.0f B per client per s; "
                "stalled: step p99 %.2f ms (runs %s), net thread %.1f %% (interleaved pairs, medians)" % (
                    r["no-stall"]["step_p99_ms"], ", ".join("%.2f" % v for v in r["no-stall"]["step_p99_ms_runs"]),
                    100 * r["no-stall"]["net_cpu"], r["no-stall"]["bytes_per_client_s"],
                    r["stalled"]["step_p99_ms"], ", ".join("%.2f" % v for v in r["stalled"]["step_p99_ms_runs"]),
                    100 * r["stalled"]["net_cpu"]))
    bustle_bench("fanout", "clients over sockets", fanout)

    # The live server at scale: what one server holds as users run it.
    def fanout_city(d):
        f = d[0]["figures"]["districts"]
        return ("%d clients holding %s entities each, the frame posing %s of %s: server step p99 %s in the measured window; "
                "server CPU per step %s with the clients, %s without; streaming CPU per client per step %s "
                "(network thread %s); %s B per client per s; 10 Hz kept: %s (interleaved pairs of runs)" % (
                    f["clients"], thousands(f["held_per_client"]), fmt(f["frame_entities"], "", 0),
                    thousands(f["pedestrians"]), fmt(f["step_p99_ms"], " ms", 1),
                    fmt(f["clients_cpu_ms_per_step"], " ms", 1), fmt(f["idle_cpu_ms_per_step"], " ms", 1),
                    fmt(f["streaming_cpu_ms_per_client"], " ms", 2), fmt(f["network_cpu_ms_per_client"], " ms", 2),
                    fmt(f["bytes_per_client_s"], "", 0), "yes" if f["schedule_kept"] else "no"))
    def fanout_city_label(f):
        return "live server, %s pedestrians, %d district clients" % (
            thousands(f["districts"]["pedestrians"]), f["districts"]["clients"])
    bustle_bench("fanout-1m", fanout_city_label, fanout_city)
    bustle_bench("fanout-1m-64", fanout_city_label, fanout_city)

    def district_servers(d):
        """Per K: the slowest district's step mean; with neighbours, the
        largest barrier wait per step, the lowest efficiency and the border
        bytes sent per step by every district together."""
        parts = []
        for run in d[0]["figures"]["runs"]:
            per = run["per_district"]
            text = "K=%d: step %.2f ms" % (run["districts"], max(p["step_ms"] for p in per))
            if run["districts"] > 1:
                text += ", wait ≤ %.2f ms/step, efficiency ≥ %.0f %%, %.0f B/step across borders" % (
                    max(p["wait_ms_per_step"] for p in per), 100 * min(p["efficiency"] for p in per),
                    sum(p["border_bytes_sent_per_step"] for p in per))
            if run["oversubscribed"]:
                text += " (oversubscribed: %d cores)" % d[0]["figures"]["cores"]
            parts.append(text)
        return "; ".join(parts)
    bustle_bench("district-servers", lambda f: "district servers, %s scaling, %s pedestrians%s%s" % (
        f["scaling"], thousands(f["agents"]), " per district" if f["scaling"] == "weak" else "",
        ", %s vehicles" % thousands(f["vehicles"]) if f.get("vehicles") else ""),
        district_servers)

    def gateway(d):
        """Per client count: the gateway's CPU per published step (median and
        range of the rounds), the busiest district's, and bytes per client."""
        runs = d[0]["figures"]["gateway"]["runs"]
        parts = []
        for r in runs:
            text = "%d clients: gateway %.2f ms CPU/step (%.2f–%.2f), district %.2f ms" % (
                r["clients"], r["gateway_cpu_ms_per_step"], r["gateway_cpu_ms_per_step_min"],
                r["gateway_cpu_ms_per_step_max"], r["district_cpu_ms_per_step"])
            if r["clients"] > 0:
                text += ", %s B per client per s" % thousands(int(r["bytes_per_client_s"]))
            parts.append(text)
        return "; ".join(parts) + " (interleaved rounds, medians)"
    bustle_bench("gateway", lambda f: "gateway, %d districts, %s pedestrians" % (
        f["gateway"]["districts"], thousands(f["gateway"]["pedestrians"])), gateway)

    for name in sorted(n[:-6] for n in os.listdir(results) if re.match(r"sdk-\d+\.1\.txt$", n)):
        bustle_bench(name, "C++ SDK per frame, %s entities" % name[4:], lambda d: (
            "total %s per frame (decode %s, apply %s, render %s); %s per entity" % (
                fmt(col(d, "frame_us.total"), " µs", 0), fmt(col(d, "frame_us.decode"), " µs", 0),
                fmt(col(d, "frame_us.apply"), " µs", 0), fmt(col(d, "frame_us.render"), " µs", 0),
                fmt(col(d, "entity_ns_total"), " ns", 1))))

    sumo = runs_of(results, "vehicles-sumo")
    if sumo:
        r = result_line(sumo[0], "compare", "vehicles-sumo.1")
        rows.append(("vehicles against SUMO", "`tools/bench/compare_sumo.sh --grid %s --vehicles %s --steps %s --repeat %s`" % (
                         r["grid"], r["vehicles"], r["steps"], r["repeat"]),
                     "Bustle %.2f M vehicle updates/s (runs %s), SUMO %.3f M (runs %s): %.0f× (target ≥ 300×: %s); "
                     "Bustle step p50 %.3f ms, p99 %.3f ms%s (%s vehicles, interleaved runs, medians)" % (
                         float(r["bustle_ups"]) / 1e6, r["bustle_runs_m"].replace(",", ", "),
                         float(r["sumo_ups"]) / 1e6, r["sumo_runs_m"].replace(",", ", "), float(r["ratio"]),
                         "met" if float(r["ratio"]) >= 300 else "not met",
                         float(r["bustle_p50_ms"]), float(r["bustle_p99_ms"]),
                         "; on 2 threads %.2f M/s (runs %s), %.0f× SUMO" % (
                             float(r["bustle_2t_ups"]) / 1e6, r["bustle_2t_runs_m"].replace(",", ", "),
                             float(r["bustle_2t_ups"]) / float(r["sumo_ups"])) if "bustle_2t_ups" in r else "",
                         r["vehicles"]),
                     load_cell([load_lines(sumo[0])])))
    elif os.path.exists(os.path.join(results, "vehicles-sumo.skipped")):
        with open(os.path.join(results, "vehicles-sumo.skipped")) as f:
            why = f.read().strip()
        rows.append(("vehicles against SUMO", "`tools/bench/compare_sumo.sh`", why, "—"))
        bustle_bench("vehicles", "vehicles (Bustle only)", lambda d: (
            "vehicle updates/s %s; step p50 %s, p99 %s" % (
                fmt([v / 1e6 for v in col(d, "vehicle_updates_per_s")], " M", 2), fmt(col(d, "step_ms.p50"), " ms"),
                fmt(col(d, "step_ms.p99"), " ms"))))

    verify = runs_of(results, "replay-verify")
    if verify:
        speeds, secs = [], []
        for k, lines in enumerate(verify):
            r = result_line(lines, "replay-verify", "replay-verify.%d" % (k + 1))
            ticks, seconds = float(r["ticks"]), float(r["seconds"])
            secs.append(seconds)
            speeds.append(ticks * float(r["step_us"]) / 1e6 / seconds)
        mib = float(r["bytes"]) / (1024 * 1024)
        rows.append(("replay verify", "`bustle-replay verify rec.db` (%d ticks recorded in batch mode, %.1f MiB)" % (
            int(ticks), mib), "%s, %s real time" % (fmt(secs, " s", 2), fmt(speeds, "×", 1)),
            load_cell([load_lines(v) for v in verify])))
    return rows


def render(results):
    env = read_env(results)
    first = None
    for name in sorted(os.listdir(results)):
        if name.endswith(".txt"):
            with open(os.path.join(results, name)) as f:
                for line in f:
                    if line.startswith("machine: "):
                        first = line[len("machine: "):].strip()
                        break
        if first:
            break
    rows = bench_rows(results)
    if not rows:
        fail(results + ": no bench results")
    kind = "QUICK toy sizes (pipeline check, not figures)" if env.get("quick") == "1" else "full sizes"
    lines = [BEGIN,
             "Generated %s from commit `%s`%s by `make bench%s` (%s; %s run(s) of each bench without a peer)." % (
                 env["date"], env["commit"], " with uncommitted changes" if env.get("dirty") == "yes" else "",
                 " BENCH_QUICK=1" if env.get("quick") == "1" else "", kind, env.get("repeat", "1")),
             "",
             "Machine: %s. Load average (1, 5, 15 min) before the run: %s; after: %s." % (
                 first or "unknown", env["load_before"], env["load_after"]),
             "",
             HEADER,
             "|---|---|---|---|"]
    for label, command, result, load in rows:
        lines.append("| %s | %s | %s | %s |" % (label, command, result.replace("|", "/"), load))
    lines.append(END)
    return "\n".join(lines) + "\n"


def block_span(text, where):
    lines = text.split("\n")
    begins = [i for i, l in enumerate(lines) if l == BEGIN]
    ends = [i for i, l in enumerate(lines) if l == END]
    if len(begins) != 1 or len(ends) != 1:
        fail("%s: expected exactly one BEGIN and one END marker line, found %d and %d" % (where, len(begins), len(ends)))
    if ends[0] < begins[0]:
        fail("%s:%d: END marker before BEGIN" % (where, ends[0] + 1))
    return lines, begins[0], ends[0]


def splice(readme, block_file):
    with open(readme) as f:
        text = f.read()
    with open(block_file) as f:
        block = f.read().rstrip("\n").split("\n")
    lines, b, e = block_span(text, readme)
    lines[b:e + 1] = block
    with open(readme, "w") as f:
        f.write("\n".join(lines))


def check(readme):
    with open(readme) as f:
        text = f.read()
    lines, b, e = block_span(text, readme)
    body = lines[b + 1:e]

    def need(pattern, what):
        for k, line in enumerate(body):
            if re.search(pattern, line):
                return k
        fail("%s:%d-%d: generated block has no %s" % (readme, b + 1, e + 1, what))
    need(r"^Generated \d{4}-\d\d-\d\d \d\d:\d\d UTC from commit `[0-9a-f]{7,}`", "'Generated DATE from commit' line")
    need(r"^Machine: \d+ cores, .*Load average .* before the run: [\d.]+ [\d.]+ [\d.]+; after: [\d.]+ [\d.]+ [\d.]+\.$",
         "machine and load line")
    h = need("^" + re.escape(HEADER) + "$", "table header")
    rows = [l for l in body[h + 2:] if l.strip()]
    if not rows:
        fail("%s: generated block has an empty table" % readme)
    for k, row in enumerate(rows):
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        at = "%s:%d" % (readme, b + h + 4 + k)
        if len(cells) != 4:
            fail("%s: expected 4 cells, found %d" % (at, len(cells)))
        if not cells[1].startswith("`"):
            fail("%s: the command cell is not a `command`" % at)
        if not re.search(r"\d", cells[2]) and not cells[2].startswith("not run: "):
            fail("%s: the result cell has no figure" % at)
        if re.search(r"\b(nan|inf)\b", cells[2]):
            fail("%s: the result cell has nan/inf" % at)
        if not re.search(r"^[\d.]+( / [\d.]+)* → [\d.]+( / [\d.]+)*$|^—$", cells[3]):
            fail("%s: the load cell '%s' is not 'BEFORE → AFTER'" % (at, cells[3]))
    print("readme_block: %s: generated block parses (%d rows)" % (readme, len(rows)))


def main(argv):
    if len(argv) == 3 and argv[1] == "render":
        sys.stdout.write(render(argv[2]))
    elif len(argv) == 4 and argv[1] == "splice":
        splice(argv[2], argv[3])
    elif len(argv) == 3 and argv[1] == "check":
        check(argv[2])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)
