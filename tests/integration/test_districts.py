"""District servers (docs/districts.md): one generated city run by 2 and 4
real bustle-server processes in batch mode, linked over loopback in
neighbour lockstep, pedestrians crossing every border many times.

Checked from the processes' own recordings: every district's recording
verifies alone (bustle-replay verify); at every keyframe each id slot of
the city is alive or free in exactly one district or in transit between
two (the border arrivals queued for that step), counted once; two runs
with the same districts and seed record the same digest at every step."""

import json
import time
import re
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from conftest import (ServerProcess, clean_env, district_city, run_cli, run_replay,
                      server_binary)

LINKS = re.compile(r"^bustle-server district (\S+) links on (\S+):(\d+)$")
STEPS = 1200
KEYFRAME_STEPS = 100
RUN_TIMEOUT = 120.0


def start_district(city: Path, d: int, out: Path, rec: Path, ports, seed=1, extra=(),
                   steps=STEPS):
    """District d in batch mode, dialling d-1; records its links port."""
    args = [server_binary(), "--config", str(city), "--district", f"d{d}", "--seed", str(seed),
            "--steps", str(steps), "--record", str(rec), "--record-keyframe-steps",
            str(KEYFRAME_STEPS), "--sim-threads", "1", "--district-wait-s", "30", *extra]
    if d > 0:
        args += ["--district-peers", f"d{d - 1}=127.0.0.1:{ports[d - 1]}"]
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=open(out / f"{rec.stem}.err", "wb"), text=True, env=clean_env())
    line = p.stdout.readline().strip()
    m = LINKS.match(line)
    assert m and m.group(1) == f"d{d}", f"district d{d} printed {line!r}: " + \
        (out / f"{rec.stem}.err").read_text()[-2000:]
    ports[d] = int(m.group(3))
    return p


def recorded_step(rec: Path) -> int:
    try:
        return read(rec, "SELECT COALESCE(MAX(step), 0) FROM recording_ticks")[0][0]
    except sqlite3.Error:
        return 0  # not created or locked yet


def run_districts(city: Path, districts: int, out: Path, seed: int = 1, kills=(), steps=STEPS):
    """Starts district 0..n-1 in order (each dials its lower neighbour, whose
    port it read from that one's stdout) and waits for all. ``kills``: (d,
    ticks) in order: once district d's current recording holds that many
    ticks it is killed with -9 and started again with --resume on the same
    port. Returns each district's recordings, in district order."""
    out.mkdir(parents=True, exist_ok=True)
    procs, recordings, ports = [], [], {}
    try:
        for d in range(districts):
            recordings.append([out / f"d{d}.rec"])
            procs.append(start_district(city, d, out, recordings[d][0], ports, seed,
                                        steps=steps))
        for d, step in kills:
            deadline = time.monotonic() + RUN_TIMEOUT
            while recorded_step(recordings[d][-1]) < step:
                assert procs[d].poll() is None, f"d{d} ended before step {step}"
                assert time.monotonic() < deadline
                time.sleep(0.01)
            procs[d].kill()
            procs[d].wait()
            rec = out / f"d{d}.{len(recordings[d])}.rec"
            procs[d] = start_district(city, d, out, rec, ports, seed,
                                      ("--resume", str(recordings[d][-1]), "--district-listen",
                                       f"127.0.0.1:{ports[d]}"), steps=steps)
            recordings[d].append(rec)
        for d, p in enumerate(procs):
            err = recordings[d][-1].with_suffix(".err")
            assert p.wait(timeout=RUN_TIMEOUT) == 0, err.read_text()[-2000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return recordings


def read(path: Path, sql: str, *params):
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return db.execute(sql, params).fetchall()


def arrivals(rec: Path, kinds=("pedestrians", "returned", "vehicles", "returned_vehicles")):
    """{tick: [entity index, ...]} of the border arrivals recorded per tick:
    pedestrians and vehicles crossing, and ids going home (docs/districts.md)."""
    got = {}
    for tick, args in read(rec, "SELECT tick, args FROM recording_commands "
                                "WHERE kind = 'border_arrivals' ORDER BY tick, seq"):
        a = json.loads(args)
        got.setdefault(tick, [])
        for kind in kinds:
            got[tick].extend(row[0] for row in a.get(kind, []))
    return got


def check_conservation(recordings, steps=STEPS):
    """At each keyframe tick T (the state before T's step, its arrivals
    queued): every slot alive or free in exactly one district, or queued to
    arrive somewhere (in transit), once."""
    moving = [arrivals(r) for r in recordings]
    ticks = [t for (t,) in read(recordings[0], "SELECT tick FROM recording_keyframes ORDER BY tick")]
    assert len(ticks) >= steps // KEYFRAME_STEPS
    for tick in ticks:
        holders = None
        for rec, moved in zip(recordings, moving):
            (alive,) = read(rec, "SELECT w.registry_alive FROM recording_keyframes k "
                                 "JOIN world_state w ON w.snapshot_id = k.snapshot_id "
                                 "WHERE k.tick = ?", tick)[0]
            here = [1 if state != 2 else 0 for state in alive]  # 2: away (in another district)
            holders = here if holders is None else [a + b for a, b in zip(holders, here)]
            for index in moved.get(tick, []):
                holders[index] += 1
        wrong = [i for i, n in enumerate(holders) if n != 1]
        assert not wrong, f"tick {tick}: slots held {[holders[i] for i in wrong[:5]]} times: {wrong[:5]}"
    in_transit = sum(len(m.get(t, [])) for m in moving for t in ticks)
    assert in_transit > 0, "no keyframe caught a pedestrian between two districts"
    return sum(len(v) for m in moving for v in m.values())


def digests(rec: Path):
    return read(rec, "SELECT tick, digest FROM recording_ticks ORDER BY tick")


@pytest.mark.parametrize("districts", [2, 4])
def test_district_servers_conserve_every_id_and_replay_alone(tmp_path, districts):
    city = district_city(tmp_path, districts)
    recordings = [r[0] for r in run_districts(city, districts, tmp_path / "run")]
    crossings = check_conservation(recordings)
    assert crossings > 300 * (districts - 1), f"only {crossings} border crossings"
    for rec in recordings:
        assert len(digests(rec)) == STEPS
        r = run_replay("verify", str(rec), timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "OK verified" in r.stdout


def vehicle_city(tmp_path, districts):
    """A small, dense city: 300 cars on the 9 loops of a 4 x 4 grid, so cars
    queue across borders (their leaders are the neighbour's ghosts)."""
    return district_city(tmp_path, districts, grid=4, agents=100, vehicles=300)


@pytest.mark.parametrize("districts", [2, 4])
def test_vehicles_cross_between_district_servers(tmp_path, districts):
    """Cars on loops that straddle borders: at every keyframe each id slot is
    held once (in a district or crossing), every recording verifies alone,
    and a car crosses as itself (its VehicleId travels with it)."""
    city = vehicle_city(tmp_path, districts)
    recordings = [r[0] for r in run_districts(city, districts, tmp_path / "run")]
    check_conservation(recordings)
    cars = [sum(len(v) for v in arrivals(r, ("vehicles",)).values()) for r in recordings]
    assert sum(cars) > 100 * (districts - 1), f"only {cars} vehicle crossings"
    ghosts = sum(len(json.loads(a).get("ghosts", [])) for r in recordings
                 for (a,) in read(r, "SELECT args FROM recording_commands "
                                     "WHERE kind = 'border_arrivals'"))
    assert ghosts > 0
    for rec in recordings:
        assert len(digests(rec)) == STEPS
        r = run_replay("verify", str(rec), timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr


def test_the_corridor_cut_in_two_runs_on_two_district_servers(tmp_path):
    """configs/corridor.districts.city.json: cars loop through both districts,
    pedestrians cross the street between them, and the cars of d0 yield to
    pedestrians on d1's crossing (its `crossings`, recorded in d0's
    arrivals); every id is held once and each recording verifies alone."""
    city = Path(__file__).resolve().parents[2] / "configs" / "corridor.districts.city.json"
    recordings = [r[0] for r in run_districts(city, 2, tmp_path / "run")]
    check_conservation(recordings)
    cars = sum(len(v) for r in recordings for v in arrivals(r, ("vehicles",)).values())
    assert cars > 20, f"only {cars} cars crossed"
    told = sum(len(json.loads(a).get("crossings", [])) for (a,) in read(
        recordings[0], "SELECT args FROM recording_commands WHERE kind = 'border_arrivals'"))
    assert told > 0, "d1 never told d0 of a pedestrian on its crossing"
    for rec in recordings:
        r = run_replay("verify", str(rec), timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr


def test_two_runs_of_the_same_districts_agree_at_every_step(tmp_path):
    city = district_city(tmp_path, 2)
    first = run_districts(city, 2, tmp_path / "a")
    second = run_districts(city, 2, tmp_path / "b")
    for a, b in zip(first, second):
        assert digests(a[0]) == digests(b[0])
    other = run_districts(city, 2, tmp_path / "c", seed=2)
    assert digests(other[0][0]) != digests(first[0][0])


def digests_by_step(recordings):
    """{step: digest} over a district's recordings (a resumed one repeats
    steps; they must agree)."""
    got = {}
    for rec in recordings:
        for step, digest in read(rec, "SELECT step, digest FROM recording_ticks"):
            assert got.setdefault(step, digest) == digest, f"{rec}: step {step} differs"
    return got


@pytest.mark.parametrize("districts, kills", [
    (2, [(1, 300), (0, 600), (1, 900)]),
    (4, [(2, 300), (1, 650), (3, 950)]),
])
def test_a_killed_district_resumes_and_the_city_matches_an_uninterrupted_run(
        tmp_path, districts, kills):
    """kill -9 of a district during crossings, then --resume from its own
    recording: its neighbours wait, it replays to where it had recorded
    (digests checked) and the city goes on; every district's digest at every
    step equals an uninterrupted run's, so nothing is lost or doubled."""
    check_kills(tmp_path, districts, kills, STEPS)


def test_a_killed_district_with_vehicles_resumes_exactly(tmp_path):
    """The same with cars queueing across the border: a district's keyframe
    holds the ghosts of the cars it just sent and its garages' cars away."""
    check_kills(tmp_path, 2, [(1, 310), (0, 620)], 900, city=vehicle_city(tmp_path, 2))


def check_kills(tmp_path, districts, kills, steps, city=None):
    """The run with `kills` against one without: equal digests at every step
    of every district, each resumed recording verifying alone."""
    city = city or district_city(tmp_path, districts)
    calm = run_districts(city, districts, tmp_path / "calm", steps=steps)
    hit = run_districts(city, districts, tmp_path / "hit", kills=kills, steps=steps)
    for d in range(districts):
        want = digests_by_step(calm[d])
        got = digests_by_step(hit[d])
        assert len(hit[d]) == 1 + sum(1 for k, _ in kills if k == d)
        assert set(got) == set(want) == set(range(1, steps + 1))
        assert got == want, f"district d{d} differs from the uninterrupted run"
        for rec in hit[d][1:]:
            r = run_replay("verify", str(rec), timeout=120)
            assert r.returncode == 0, r.stdout + r.stderr
    return calm


def test_district_settings_are_checked_before_anything_runs(tmp_path):
    city = district_city(tmp_path, 2)
    r = run_cli("--config", str(city), "--district", "nowhere", "--steps", "1")
    assert r.returncode == 1
    assert "--district nowhere: the scenario's district map has only d0, d1" in r.stderr
    r = run_cli("--config", str(city), "--district", "d1", "--steps", "1")
    assert r.returncode == 1
    assert "--district-peers: give where neighbour 'd0' listens" in r.stderr
    r = run_cli("--config", str(city), "--district", "d0", "--district-peers",
                "d1=127.0.0.1:1", "--steps", "1")
    assert r.returncode == 1
    assert "'d1' is not a neighbour of 'd0' with a lower index" in r.stderr
    r = run_cli("--district-listen", "127.0.0.1:0", "--steps", "1")
    assert r.returncode == 2
    assert "--district-listen has no effect without --district ID" in r.stderr
    r = run_cli("--config", str(city), "--district", "d0", "--district-listen", "nohost:x",
                "--steps", "1")
    assert r.returncode == 2


def links_port(srv) -> int:
    for line in srv.startup_lines:
        m = LINKS.match(line)
        if m:
            return int(m.group(3))
    pytest.fail(f"no district links line before 'listening on': {srv.startup_lines!r}")


def test_live_district_servers_step_in_lockstep_and_stop_with_a_neighbour(start_server, tmp_path):
    """The live server (sim thread, fast clock): two districts advance
    together; when one stops, the other cannot run past its neighbour's last
    step + 1, waits for it (--district-wait-s) and then stops, saying why."""
    city = district_city(tmp_path, 2)
    # Started by hand: it is meant to exit by itself (the fixture's servers must not).
    d0 = ServerProcess(["--port", "0", "--bind", "127.0.0.1", "--config", str(city),
                        "--district", "d0", "--clock", "fast", "--sim-threads", "1",
                        "--district-wait-s", "1",
                        "--snapshot-db", str(tmp_path / "d0.db")],
                       tmp_path / "d0.stderr", env=clean_env())
    try:
        lockstep_then_stop(d0, start_server, city)
    finally:
        d0.stop(check=False)


def lockstep_then_stop(d0, start_server, city):
    d1 = start_server("--config", str(city), "--district", "d1", "--clock", "fast",
                      "--sim-threads", "1", "--district-peers",
                      f"d0=127.0.0.1:{links_port(d0)}")
    with d0.connect() as s0, d1.connect() as s1:
        s0.hello("it-d0")
        s1.hello("it-d1")
        deadline = time.monotonic() + 30
        while s1.stats().step < 500:
            assert time.monotonic() < deadline, "the districts did not reach step 500"
            time.sleep(0.05)
        assert s0.stats().step >= 499
        assert s0.stats().pedestrians > 0 and s1.stats().pedestrians > 0
    d1.stop(check=True)
    last = int(re.search(r"stopped at step (\d+)", d1.stderr()).group(1))
    assert d0.proc.wait(timeout=10) == 1, "d0 goes on without its neighbour"
    d0.stop(check=False)  # collects its stderr
    err = d0.stderr()
    assert re.search(r"no step_end \d+ from district 'd1' within 1 s \(it closed its link\)", err), err
    stopped = int(re.search(r"stopped at step (\d+)", err).group(1))
    assert last <= stopped <= last + 1
