"""bustle-soak end to end: scenario validation errors name the field, the
reports are written and parse, a short soak passes against the real server
(one the driver starts, and one it is only pointed at), and the same soak
fails, naming the invariant, when the hidden test hook injects a duplicate
entity id or drops a command result."""

import json
import os
import re
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bustle_soak import scenario as scenario_mod

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SCENARIOS = sorted((ROOT / "tools" / "soak" / "scenarios").glob("*.toml"))
SHORT = HERE / "short.toml"


def soak(*args, timeout=90):
    return subprocess.run([sys.executable, "-m", "bustle_soak", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def reports(out: Path):
    report = json.loads((out / "soak-report.json").read_text())
    junit = ET.parse(out / "soak-junit.xml").getroot()
    return report, junit


def test_three_shipped_scenarios_are_valid():
    names = {p.stem for p in SCENARIOS}
    assert {"default-city", "largeblock-day", "corridor-dispatch"} <= names
    for path in SCENARIOS:
        r = soak(path, "--check")
        assert r.returncode == 0, r.stderr
        assert "ok" in r.stdout


BAD = [
    ("duration_s = 'long'\n[[clients]]\nname = 'a'\n", "duration_s: must be a number, got string 'long'"),
    ("[[clients]]\nname = 'a'\n", "duration_s: required"),
    ("duration_s = 5\n[[clients]]\nname = 'a'\nbudgets = { actors = 5000 }\n",
     "clients[0].budgets.actors: must be in [0, 4096], got 5000"),
    ("duration_s = 5\n[[clients]]\nname = 'a'\nobservers = [{ x_m = 1, y_m = 2, radius_m = 0 }]\n",
     "clients[0].observers[0].radius_m: must be in (0, 100000] metres"),
    ("duration_s = 5\n[[clients]]\nname = 'a'\nrole = 'god'\n",
     "clients[0].role: must be one of viewer, operator, got 'god'"),
    ("duration_s = 5\n[[clients]]\nname = 'a'\nrole = 'operator'\n[[commands]]\nkind = 'fly'\nrate_hz = 1\n",
     "commands[0].kind: must be one of spawn,"),
    ("duration_s = 5\n[[clients]]\nname = 'a'\n[[commands]]\nkind = 'spawn'\nrate_hz = 1\n",
     "commands: need at least one client with role = \"operator\""),
    ("duration_s = 5\n[[clients]]\nname = 'a'\nrole = 'operator'\n[[commands]]\nkind = 'garage_request'\n"
     "rate_hz = 1\ngarage = 'g0'\n", "commands[0].prototype: required for garage_request"),
    ("duration_s = 5\n[[clients]]\nname = 'a'\ncolour = 'red'\n", "clients[0].colour: unknown field"),
    ("duration_s = 5\n[server]\nconfig = 'nowhere.json'\n[[clients]]\nname = 'a'\n",
     "server.config: no file 'nowhere.json'"),
    ("duration_s = 5\n[server]\nstart = false\nport = 0\n[[clients]]\nname = 'a'\n",
     "server.port: must name the running server's port"),
    ("duration_s = 5\n[[clients]]\nname = 'a'\n[[clients]]\nname = 'a'\n", "clients[1].name: 'a' used twice"),
    ("duration_s = = 5\n", "not valid TOML"),
]


@pytest.mark.parametrize("text,message", BAD)
def test_bad_scenario_is_refused_naming_the_field(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(scenario_mod.ScenarioError) as err:
        scenario_mod.load(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)


def test_bad_json_scenario_exits_2_naming_the_field(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"duration_s": 5, "clients": [{"name": "a", "count": 0}]}')
    r = soak(path, "--check")
    assert r.returncode == 2
    assert f"bustle-soak: {path}: clients[0].count: must be in [1, 64], got 0" in r.stderr


def test_short_soak_passes_and_writes_reports(tmp_path):
    r = soak(SHORT, "--report-dir", tmp_path, "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASSED" in r.stdout
    report, junit = reports(tmp_path)
    assert report["passed"] and not report["violations"]
    for name in ("unique-ids", "contiguous-steps", "digest-agreement", "mirror-consistency",
                 "stats-consistency", "command-answered", "command-graded", "hint-budgets"):
        assert report["invariants"][name]["checks"] > 0, name
    assert report["commands"]["SpawnPedestrian"]["count"] > 5
    assert report["resources"]["rss_mib_max"] > 0 and report["resources"]["fds_max"] > 0
    assert junit.get("failures") == "0"
    assert {c.get("name") for c in junit.iter("testcase")} >= {"unique-ids", "command-answered"}


@pytest.mark.parametrize("fault,invariant", [("duplicate-id", "unique-ids"),
                                             ("drop-result", "command-answered")])
def test_injected_fault_fails_naming_the_invariant(tmp_path, fault, invariant):
    r = soak(SHORT, "--report-dir", tmp_path, "--quiet", "--inject-fault", f"{fault}@1.5")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"FAILED: {invariant}" in r.stderr, r.stderr
    report, junit = reports(tmp_path)
    assert report["faults_injected"] == [fault]
    assert report["invariants"][invariant]["violations"] >= 1
    failed = {name for name, row in report["invariants"].items() if row["violations"]}
    assert failed == {invariant}, report["violations"]
    failures = [c for c in junit.iter("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failures] == [invariant]
    assert failures[0].find("failure").get("type") == invariant


def test_soak_of_a_server_it_did_not_start(tmp_path):
    """start = false: host/port given, /proc sampled through the given pid (JSON scenario)."""
    server = subprocess.Popen([os.environ["BUSTLE_SERVER"], "--port", "0",
                               "--snapshot-db", str(tmp_path / "s.db")],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = server.stdout.readline()
        m = re.match(r"bustle-server listening on (\S+):(\d+)", line)
        assert m, line
        scenario = {
            "name": "external", "duration_s": 4,
            "server": {"start": False, "host": m.group(1), "port": int(m.group(2)), "pid": server.pid},
            "clients": [{"name": "w"}, {"name": "op", "role": "operator", "subscribe": False}],
            "commands": [{"kind": "set_target", "rate_hz": 2, "min": 100, "max": 140},
                         {"kind": "checkpoint_restore", "rate_hz": 1, "first_s": 0.5}],
        }
        path = tmp_path / "external.json"
        path.write_text(json.dumps(scenario))
        r = soak(path, "--report-dir", tmp_path / "out", "--quiet")
        assert r.returncode == 0, r.stdout + r.stderr
        report, _ = reports(tmp_path / "out")
        assert report["resources"]["rss_mib_max"] > 0
        assert report["server_exit"] is None
        assert server.poll() is None  # left running
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=5) == 0


def test_resubscribe_and_update_interest_together(tmp_path):
    r = soak(HERE / "interest-churn.toml", "--report-dir", tmp_path, "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    report, _ = reports(tmp_path)
    near = [c for c in report["clients"] if c["name"].startswith("near")]
    assert all(c["subscribes"] >= 4 and c["interest_updates"] >= 4 for c in near), near
