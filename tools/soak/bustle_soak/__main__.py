"""bustle-soak: run a soak scenario against bustle-server and check invariants.

Exit status: 0 every invariant held; 1 a violation (named on stderr and in the
reports); 2 a bad scenario file or bad arguments; 3 the run could not start
(server did not start, connection refused).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import scenario as scenario_mod
from .checks import INVARIANTS

FAULTS = ("duplicate-id", "drop-result")


def _fault(text: str):
    kind, _, at = text.partition("@")
    if kind not in FAULTS:
        raise argparse.ArgumentTypeError(f"unknown fault {kind!r} (known: {', '.join(FAULTS)})")
    try:
        return kind, float(at) if at else 2.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"fault time {at!r} is not a number of seconds") from None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="bustle-soak",
        description="Drive a Bustle server with scripted clients for a bounded time and check "
                    "invariants continuously (see docs/testing.md, Soak driver).",
        epilog="invariants: " + ", ".join(INVARIANTS) +
               ". Exit status: 0 passed, 1 violation, 2 bad scenario or arguments, 3 could not start.")
    ap.add_argument("scenario", help="scenario file (.toml or .json)")
    ap.add_argument("--duration", type=float, metavar="SECONDS",
                    help="override the scenario's duration_s (env SOAK_SECONDS)")
    ap.add_argument("--server", metavar="BINARY",
                    help="bustle-server to start when the scenario says start = true "
                         "(default: $BUSTLE_SERVER)")
    ap.add_argument("--report-dir", metavar="DIR", default="soak-report",
                    help="where soak-report.json and soak-junit.xml go (default ./soak-report)")
    ap.add_argument("--check", action="store_true", help="only validate the scenario file")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    # Test hook (tests/tools/soak): corrupt what the driver observed, to prove a check fires.
    ap.add_argument("--inject-fault", type=_fault, action="append", default=[],
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    try:
        scn = scenario_mod.load(args.scenario)
    except scenario_mod.ScenarioError as exc:
        print(f"bustle-soak: {exc}", file=sys.stderr)
        return 2
    if args.check:
        print(f"bustle-soak: {args.scenario}: ok ({len(scn.clients)} client groups, "
              f"{len(scn.commands)} commands, {scn.duration_s:g} s)")
        return 0
    duration = args.duration
    if duration is None and os.environ.get("SOAK_SECONDS"):
        try:
            duration = float(os.environ["SOAK_SECONDS"])
        except ValueError:
            print(f"bustle-soak: SOAK_SECONDS={os.environ['SOAK_SECONDS']!r} is not a number",
                  file=sys.stderr)
            return 2
    if duration is not None and duration <= 0:
        print("bustle-soak: --duration must be positive", file=sys.stderr)
        return 2

    def progress(row, checker):
        if args.quiet:
            return
        bad = sum(checker.counts.values())
        print(f"bustle-soak: t={row['t_s']:.0f}s step={row.get('step')} "
              f"pedestrians={row.get('pedestrians')} vehicles={row.get('vehicles')} "
              f"rss={row.get('rss_mib', 0):.1f}MiB fds={row.get('fds')} violations={bad}", flush=True)

    from bustle_client import BustleError  # the client (and its wire modules) only for a run

    from . import driver, report

    def on_violation(v):
        step = "" if v.step is None else f" step {v.step}"
        print(f"bustle-soak: violation {v.invariant}: [{v.client} at {v.at_s:.1f} s{step}] {v.message}",
              file=sys.stderr, flush=True)

    out = Path(args.report_dir)
    out.mkdir(parents=True, exist_ok=True)
    try:
        rep = driver.run(scn, server_binary=args.server or os.environ.get("BUSTLE_SERVER"),
                         duration_s=duration, faults=dict(args.inject_fault),
                         workdir=out / "work", progress=progress, on_violation=on_violation)
    except (RuntimeError, OSError, BustleError) as exc:
        print(f"bustle-soak: could not start: {exc}", file=sys.stderr)
        return 3
    report.write_json(rep, out / "soak-report.json")
    report.write_junit(rep, out / "soak-junit.xml")
    print(report.summary(rep))
    print(f"reports: {out / 'soak-report.json'}, {out / 'soak-junit.xml'}")
    if rep.get("interrupted"):
        print("bustle-soak: interrupted before the end of the run", file=sys.stderr)
    if not rep["passed"]:
        failed = [name for name, row in rep["invariants"].items() if row["violations"]]
        print(f"bustle-soak: FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
