"""The soak report: a summary table for people, JSON and JUnit XML for machines."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from .checks import INVARIANTS


def summary(report: dict) -> str:
    lines = []
    verdict = "PASSED" if report["passed"] else "FAILED"
    lines.append(f"bustle-soak {report['scenario']}: {verdict} after {report['elapsed_s']:.1f} s "
                 f"(server {report['server']})")
    lines.append("")
    lines.append(f"{'invariant':<20} {'checks':>10} {'violations':>10}  meaning")
    for name, row in report["invariants"].items():
        mark = "" if not row["violations"] else "  <-- FAILED"
        lines.append(f"{name:<20} {row['checks']:>10} {row['violations']:>10}  {INVARIANTS[name]}{mark}")
    if report["commands"]:
        lines.append("")
        lines.append(f"{'command':<20} {'count':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  results")
        for cmd, row in sorted(report["commands"].items()):
            grades = ", ".join(f"{g} {n}" for g, n in sorted(row["grades"].items()))
            lines.append(f"{cmd:<20} {row.get('count', 0):>7} {row.get('latency_ms_p50', 0):>8} "
                         f"{row.get('latency_ms_p99', 0):>8} {row.get('latency_ms_max', 0):>8}  {grades}")
    lines.append("")
    lines.append(f"{'client':<20} {'role':<9} {'deltas':>7} {'subs':>5} {'reconn':>6} {'last step':>9}")
    for c in report["clients"]:
        lines.append(f"{c['name']:<20} {c['role']:<9} {c.get('deltas', 0):>7} {c.get('subscribes', 0):>5} "
                     f"{c.get('reconnects', 0):>6} {str(c.get('last_step')):>9}")
    res = report["resources"]
    if res:
        lines.append("")
        lines.append("server: " + ", ".join(f"{k} {v}" for k, v in res.items()))
    if report["faults_injected"]:
        lines.append(f"faults injected (test hook): {', '.join(report['faults_injected'])}")
    if report["faults_not_injected"]:
        lines.append(f"faults NOT injected (no occasion): {', '.join(report['faults_not_injected'])}")
    if report["violations"]:
        lines.append("")
        lines.append("violations (first ones per invariant):")
        for v in report["violations"][:40]:
            step = "" if v["step"] is None else f" step {v['step']}"
            lines.append(f"  {v['invariant']}: [{v['client']} at {v['at_s']:.1f} s{step}] {v['message']}")
    return "\n".join(lines)


def write_json(report: dict, path: Path) -> None:
    path.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n")


def write_junit(report: dict, path: Path) -> None:
    """One test suite per run, one test case per invariant (failure: the first
    violations), plus one case for the run itself."""
    failures = sum(1 for row in report["invariants"].values() if row["violations"])
    suite = ET.Element("testsuite", name=f"bustle-soak.{report['scenario']}",
                       tests=str(len(report["invariants"])), failures=str(failures), errors="0",
                       time=f"{report['elapsed_s']:.3f}", timestamp=report["started"])
    props = ET.SubElement(suite, "properties")
    for key in ("scenario_file", "server", "duration_s"):
        ET.SubElement(props, "property", name=key, value=str(report[key]))
    for name, row in report["invariants"].items():
        case = ET.SubElement(suite, "testcase", classname=f"bustle-soak.{report['scenario']}",
                             name=name, time="0")
        if row["violations"]:
            mine = [v for v in report["violations"] if v["invariant"] == name]
            text = "\n".join(f"[{v['client']} at {v['at_s']:.1f} s] {v['message']}" for v in mine)
            failure = ET.SubElement(case, "failure", type=name,
                                    message=f"{row['violations']} violation(s) of {name}: "
                                            f"{mine[0]['message'] if mine else ''}")
            failure.text = text
        elif not row["checks"]:
            ET.SubElement(case, "skipped", message="nothing in this scenario exercised it")
    ET.indent(suite)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
