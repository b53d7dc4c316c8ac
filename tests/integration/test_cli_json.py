"""bustle --json against the real server: every command that prints is run with
--json, its output parsed with json.loads and checked against what the server
did (steps advance, ids match the query that named them). Also the
BUSTLE_HOST/BUSTLE_PORT/BUSTLE_TOKEN defaults and the exit codes."""

import json
import os
import re
import subprocess

import pytest

from bustle_client.messages import SCHEMA
from conftest import SOURCE_DIR, clean_env

CORRIDOR = SOURCE_DIR / "configs" / "corridor.city.json"
LARGE_BLOCK = SOURCE_DIR / "configs" / "largeblock.city.json"
HEX16 = re.compile(r"^[0-9a-f]{16}$")


def cli_binary():
    path = os.environ.get("BUSTLE_CLI")
    if not path:
        pytest.skip("BUSTLE_CLI is not set (the bustle CLI is not built in this tree)")
    return path


def bustle(srv, *args, env=None, expect=0, timeout=20.0):
    """Runs bustle against `srv` (None: no --host/--port); returns the process."""
    where = [] if srv is None else ["--host", srv.host, "--port", str(srv.port)]
    p = subprocess.run([cli_binary(), *args, *where], capture_output=True, text=True,
                       timeout=timeout, env=clean_env(env))
    assert expect is None or p.returncode == expect, (f"bustle {' '.join(args)}: exit {p.returncode}, "
                                    f"expected {expect}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def objects(srv, *args, **kw):
    """bustle ARGS --json: every stdout line parsed as one JSON object."""
    p = bustle(srv, *args, "--json", **kw)
    lines = p.stdout.splitlines()
    assert lines, f"bustle {' '.join(args)} --json printed nothing; stderr:\n{p.stderr}"
    parsed = [json.loads(line) for line in lines]
    assert all(isinstance(o, dict) for o in parsed), parsed
    return parsed


def one(srv, *args, **kw):
    (obj,) = objects(srv, *args, **kw)
    return obj


def test_status_step_and_world_commands_under_the_manual_clock(start_server):
    srv = start_server("--clock", "manual", "--seed", "5")
    first = one(srv, "status")
    assert first["server"]["protocol_version"] == 3
    assert first["server"]["address"] == f"127.0.0.1:{srv.port}"
    assert first["stats"]["step"] == 0
    assert first["stats"]["clock_mode"] == "Manual"
    assert HEX16.match(first["stats"]["digest"])
    # The stats object is driven by the schema (mini-reflection): exactly the
    # fields of proto/fbs/server.fbs's Stats, in schema order.
    assert list(first["stats"]) == list(SCHEMA["Stats"]["properties"])

    stepped = one(srv, "step", "7")
    assert stepped == {"command": "step", "accepted": True, "applied_step": 7, "message": ""}
    now = one(srv, "status")["stats"]
    assert now["step"] == 7
    assert now["sim_time_us"] == 7 * now["step_us"]
    assert now["digest"] != first["stats"]["digest"]

    # Without --step a world command is only queued; with it, applied at the next step.
    assert one(srv, "target", "30") == {"command": "target", "queued": True, "why": "manual clock"}
    target = one(srv, "target", "40", "--step")
    assert target["accepted"] and target["applied_step"] == 8
    assert one(srv, "status")["stats"]["pedestrian_target"] == 40
    hour = one(srv, "hour", "12", "--step")
    assert hour["command"] == "hour" and hour["applied_step"] == 9
    assert one(srv, "time-scale", "60", "--step")["applied_step"] == 10
    assert one(srv, "observers", "25,25", "--step")["applied_step"] == 11
    stats = one(srv, "status")["stats"]
    assert stats["hour"] == pytest.approx(12.0, abs=0.1)
    assert stats["time_scale"] == 60

    life = one(srv, "lifecycle", "--growth", "4", "--step")
    assert life["settings"]["growth_quota"] == 4
    assert life["settings"]["recycle_quota"] == life["was"]["recycle_quota"]
    population = one(srv, "population")
    assert population["population"]["lifecycle"]["growth_quota"] == 4
    assert population["applied_step"] == life["applied_step"]
    assert population["population"]["pedestrian_target"] == 40
    assert one(srv, "zones") == {"applied_step": life["applied_step"], "zones": []}  # none here


def test_spawn_wait_spawn_status_entity_and_cancel(start_server):
    srv = start_server("--clock", "manual", "--config", str(LARGE_BLOCK))
    zones = one(srv, "zones")["zones"]
    assert [z["id"] for z in zones] == ["market", "office", "facilities"]
    assert list(zones[0]) == list(SCHEMA["ZoneInfo"]["properties"])  # from the schema
    lines = objects(srv, "spawn", "--zone", "office", "--priority", "story", "--wait", "registered",
                    "--step")
    accepted, *states = lines
    assert accepted["command"] == "spawn" and accepted["handle"] >= 1
    handle = accepted["handle"]
    assert [s["state"] for s in states][-1] == "Registered"
    assert all(s["handle"] == handle for s in states)
    assert [s["state_step"] for s in states] == sorted(s["state_step"] for s in states)
    entity_id = states[-1]["entity"]
    assert re.match(r"^\d+:\d+$", entity_id)

    status = one(srv, "spawn-status", str(handle))
    assert status["spawn"]["handle"] == handle
    assert status["spawn"]["entity"] == entity_id
    assert status["spawn"]["priority"] == "Story"
    assert status["spawn"]["zone"] == "office"

    entity = one(srv, "entity", entity_id)
    assert entity["entity"]["id"] == entity_id
    assert entity["entity"]["spawn_handle"] == handle
    assert entity["entity"]["alive"] is True

    # A registered spawn cannot be canceled: exit 3, the reason on stderr, nothing on stdout.
    p = bustle(srv, "cancel-spawn", str(handle), "--step", "--json", expect=3)
    assert p.stdout == "" and "rejected" in p.stderr
    queued = objects(srv, "spawn", "--step", "--spawn-timeout-ms", "60000")
    handle2 = queued[0]["handle"]
    canceled = one(srv, "cancel-spawn", str(handle2), "--step")
    assert canceled["handle"] == handle2 and canceled["accepted"] is True
    assert "entity" in canceled


def test_snapshot_jobs_list_and_delete(start_server):
    srv = start_server("--clock", "manual")
    one(srv, "step", "3")
    jobs = objects(srv, "checkpoint", "noon")
    assert [j["state"] for j in jobs] == ["Copied", "Committed"]
    job_id = jobs[0]["job_id"]
    assert all(j["job_id"] == job_id and j["name"] == "noon" for j in jobs)
    assert jobs[-1]["terminal"] is True and jobs[-1]["step"] == 3

    queried = one(srv, "job", str(job_id))
    assert queried["job_id"] == job_id and queried["state"] == "Committed"
    listed = one(srv, "snapshots")["snapshots"]
    (entry,) = [e for e in listed if e["name"] == "noon"]
    assert entry["step"] == 3 and entry["kind"] == "checkpoint"
    assert entry["digest"] == one(srv, "status")["stats"]["digest"]

    one(srv, "step", "2")
    restored = objects(srv, "restore", "noon")
    assert restored[-1]["state"] == "Applied" and restored[-1]["step"] == 3
    assert one(srv, "status")["stats"]["step"] == 3
    assert one(srv, "delete", "noon") == {"command": "delete", "deleted": "noon"}
    assert all(e["name"] != "noon" for e in one(srv, "snapshots")["snapshots"])


def test_pause_resume_and_watch_lines_under_a_fast_clock(start_server):
    srv = start_server("--clock", "fast")
    lines = objects(srv, "watch", "--count", "3", "--interval-ms", "200")
    header, *rows = lines
    assert header["watching"] == f"127.0.0.1:{srv.port}" and header["clock_mode"] == "Fast"
    assert len(rows) == 3
    steps = [r["step"] for r in rows]
    assert steps == sorted(steps) and steps[-1] > steps[0], steps
    assert all(HEX16.match(r["digest"]) and r["entities"] >= 0 for r in rows)

    paused = one(srv, "pause")
    assert paused["command"] == "pause" and paused["accepted"] is True
    held = one(srv, "status")["stats"]
    assert held["paused"] is True
    assert one(srv, "status")["stats"]["step"] == held["step"]
    resumed = one(srv, "resume")
    assert resumed["applied_step"] >= paused["applied_step"]


def test_vehicle_commands_on_the_corridor(start_server):
    srv = start_server("--clock", "manual", "--config", str(CORRIDOR))
    one(srv, "step", "20")
    garages = one(srv, "garages")
    assert garages["applied_step"] == 20
    garage = garages["garages"][0]
    assert garage["capacity"] >= garage["managed"] >= 1
    assert list(garage) == list(SCHEMA["GarageInfo"]["properties"])
    signals = one(srv, "signals")["signals"]
    assert all(s["phase"] in ("Open", "Closing", "Closed") for s in signals)

    vehicle = None
    for index in range(64):
        p = bustle(srv, "vehicle", f"{index}:1", "--json", expect=None)
        if p.returncode == 0:
            vehicle = json.loads(p.stdout)
            break
        assert p.returncode == 3, p.stderr
    assert vehicle is not None, "no vehicle among the first 64 ids"
    info = vehicle["vehicle"]
    assert info["garage"] == garage["id"]
    assert info["id"] == f"{index}:1"

    request = one(srv, "garage-request", garage["id"], "cli-json-1", info["prototype"],
                  garage_lane(srv, garage["id"]), "--step")
    assert request["accepted"] is True
    strategy = one(srv, "strategy", info["id"], "parked", "--step")
    assert strategy["applied_step"] == request["applied_step"] + 1
    assert one(srv, "vehicle", info["id"])["vehicle"]["strategy"] == "Parked"
    cancel = bustle(srv, "cancel-request", garage["id"], "cli-json-1", "--step", "--json",
                    expect=None)
    assert cancel.returncode in (0, 3), cancel.stderr  # dispatched already: not queued


def garage_lane(srv, garage_id):
    """The garage's entrance lane id, from the corridor scenario."""
    cfg = json.loads(CORRIDOR.read_text())
    (garage,) = [g for g in cfg["garages"] if g["id"] == garage_id]
    return garage["lane"]


def test_environment_gives_the_defaults_and_flags_win(start_server):
    srv = start_server("--clock", "manual", "--token", "s3cret")
    env = {"BUSTLE_HOST": "127.0.0.1", "BUSTLE_PORT": str(srv.port)}
    assert one(None, "status", env=env)["server"]["address"] == f"127.0.0.1:{srv.port}"
    # A flag overrides the variable: a wrong BUSTLE_PORT with the right --port works.
    wrong = {"BUSTLE_HOST": "127.0.0.1", "BUSTLE_PORT": "1"}
    assert one(None, "status", "--port", str(srv.port), env=wrong)["stats"]["step"] == 0
    # BUSTLE_TOKEN grants the operator role; --token overrides it.
    assert one(None, "step", "1", env={**env, "BUSTLE_TOKEN": "s3cret"})["applied_step"] == 1
    # A wrong token fails the handshake (the server closes with an Error): exit 1.
    refused = bustle(None, "step", "1", "--json", env={**env, "BUSTLE_TOKEN": "wrong"}, expect=1)
    assert refused.stdout == "" and "Unauthorized" in refused.stderr
    assert one(None, "step", "1", "--token", "s3cret", env={**env, "BUSTLE_TOKEN": "wrong"})[
        "applied_step"] == 2
    bad = bustle(None, "status", env={"BUSTLE_PORT": "http"}, expect=2)
    assert "environment BUSTLE_PORT: expected a port number in [1, 65535], got 'http'" in bad.stderr


def test_exit_codes(start_server):
    srv = start_server("--clock", "manual")
    assert bustle(srv, "step", "0", expect=2).stderr.startswith("bustle: step N: expected")
    assert "unknown command" in bustle(srv, "frobnicate", expect=2).stderr
    missing = bustle(srv, "delete", "no-such", "--json", expect=3)
    assert missing.stdout == "" and "no-such" in missing.stderr
    srv.stop()
    gone = bustle(srv, "status", "--json", "--timeout-ms", "500", expect=1)
    assert gone.stdout == "" and "unreachable" in gone.stderr


def test_largeblock_demo_mix_through_the_cli(start_server):
    """docs/population.md's command sequence for seed 001's demo mix (manual clock):
    bustle hour 12, 300 steps, bustle population: 72 active, tiers 24/32/16.
    Then the observer follows the first walking resident (--follow) and
    population names it; an unknown id is refused with exit 3."""
    srv = start_server("--clock", "manual", "--config", str(LARGE_BLOCK))
    assert one(srv, "hour", "12", "--step")["accepted"]
    bustle(srv, "step", "300")
    pop = one(srv, "population")["population"]
    assert pop["residents"] == 72 and pop["residents_active"] == 72
    assert pop["tiers"] == {"Full": 24, "Simulated": 32, "Coarse": 16}
    text = bustle(srv, "population").stdout
    assert "Full 24, Simulated 32, Coarse 16" in text, text
    assert "observers            (80.0, 60.0)" in text, text

    walker = None
    for index in range(0, 200):
        e = objects(srv, "entity", f"{index}:1", expect=None)
        if e and e[0].get("entity", {}).get("lifecycle") == "Active" and e[0]["entity"].get("community"):
            walker = f"{index}:1"
            break
    assert walker, "no walking resident found"
    assert one(srv, "observers", "--follow", walker, "--step")["accepted"]
    bustle(srv, "step", "2")
    assert f"following {walker}" in bustle(srv, "population").stdout
    bad = bustle(srv, "observers", "--follow", "999:7", "--step", expect=3)
    assert "follow: entity 999:7 is not alive" in bad.stdout + bad.stderr
