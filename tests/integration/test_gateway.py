"""The gateway (docs/districts.md, "The gateway"): two live district servers
on loopback, bustle-gateway in front of them, and clients of the gateway
next to clients of each district (every stream whole-city, exact poses).

Checked at every step all three streams reached: no id is in both
districts; every district entity is in the gateway's stream with the same
id, lane and millimetre (so within 1 cm of its owner); the gateway's other
entities are in transit (in neither district that step, in one the next);
walkers that cross a border never leave the gateway's stream. A district
killed with -9 and resumed from its recording comes back into the same
client stream with the same entities; a gateway killed with -9 and started
again serves the same city to a client that reconnects; `bustle status`
through it shows each district. Bad settings
and a district of another city are refused with the reason."""

import json
import os
import re
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from bustle_client import EntityKind
from conftest import ServerProcess, clean_env, district_city, http_get, tool_binary

RATE_HZ = 25  # live districts, realtime: 40 ms steps
STEPS = 120
LINKS = re.compile(r"^bustle-server district (\S+) links on (\S+):(\d+)$")


def gateway_binary() -> str:
    return tool_binary("BUSTLE_GATEWAY", "bustle-gateway")


def district_args(tmp_path: Path, city: Path, d: int, links, port=0, extra=()):
    """A live, recorded district server d (dialling d-1 at links[d-1])."""
    args = ["--config", str(city), "--district", f"d{d}", "--port", str(port), "--seed", "3",
            "--rate", str(RATE_HZ), "--sim-threads", "1", "--district-wait-s", "20",
            "--client-entries-per-step", "100000", "--snapshot-db", str(tmp_path / f"d{d}.db"),
            "--record-keyframe-steps", "50", *extra]
    if d > 0:
        args += ["--district-peers", f"d{d - 1}=127.0.0.1:{links[d - 1]}"]
    return args


def start_districts(tmp_path: Path, city: Path, n: int):
    """Live district servers d0..d{n-1} (each dials its lower neighbour),
    each recording to dK.rec; returns them and their links ports."""
    procs, links = [], []
    for d in range(n):
        args = district_args(tmp_path, city, d, links,
                             extra=("--record", str(tmp_path / f"d{d}.rec")))
        p = ServerProcess(args, tmp_path / f"d{d}.stderr", env=clean_env())
        procs.append(p)
        m = LINKS.match(p.startup_lines[0]) if p.startup_lines else None
        assert m, f"district d{d} printed {p.startup_lines!r}"
        links.append(int(m.group(3)))
    return procs, links


def start_gateway(tmp_path: Path, city: Path, districts, port=0, name="gateway", extra=()):
    spec = ",".join(f"d{d}=127.0.0.1:{p.port}" for d, p in enumerate(districts))
    return ServerProcess(["--config", str(city), "--districts", spec, "--port", str(port),
                          "--rate", str(RATE_HZ), *extra],
                         tmp_path / f"{name}.stderr", env=clean_env(), binary=gateway_binary())


@contextmanager
def live_city(tmp_path: Path, n: int = 2, gateway_args=(), vehicles=0):
    gateway_binary()  # skip before starting anything when it is not built
    city = (district_city(tmp_path, n, grid=4, agents=100, vehicles=vehicles) if vehicles
            else district_city(tmp_path, n))
    procs = []
    try:
        districts, links = start_districts(tmp_path, city, n)
        procs += districts
        gateway = start_gateway(tmp_path, city, procs, extra=gateway_args)
        procs.append(gateway)
        yield city, procs, links
    finally:
        # The gateway first (a district never waits for it), then the districts.
        failures = []
        for p in reversed(procs):
            try:
                p.stop(check=True)
            except AssertionError as exc:
                failures.append(str(exc))
        assert not failures, "\n".join(failures)


def watcher(proc, name):
    s = proc.connect()
    s.hello(name)
    s.subscribe(motion_tolerance_mm=0)
    return s, s.mirror()


def settled_entity(mirror, margin_mm=35_000):
    """An entity at least margin_mm from both ends of its lane at the
    mirror's step. Walkers here go at most 10 m/s, so it stays on that lane,
    and in that district, for 3.5 s: a query about it cannot meet it crossing."""
    length = {lane.index: lane.length_mm for lane in mirror.welcome.lanes}
    for eid in sorted(mirror, key=lambda e: e.index):
        s_mm = mirror.predicted_s_mm(eid)
        if margin_mm <= s_mm <= length[mirror.record(eid).lane] - margin_mm:
            return eid
    pytest.fail(f"no entity is {margin_mm} mm inside its lane at step {mirror.step}")


def gateway_caught_up(session, step, timeout=20.0):
    """Waits until the gateway's mirror of every district has reached
    `step`: from then on it knows every entity a district streamed by then."""
    deadline = time.monotonic() + timeout
    while True:
        st = session.stats(timeout=10)
        if st.districts and all(x.streaming and x.step >= step for x in st.districts):
            return st
        assert time.monotonic() < deadline, f"the gateway never reached step {step}: {st}"
        time.sleep(0.02)


def poses(mirror, step):
    """index -> (generation, lane, s_mm) of every entity at `step`."""
    out = {}
    for eid in mirror:
        out[eid.index] = (eid.generation, mirror.record(eid).lane, mirror.predicted_s_mm(eid, step))
    return out


def watch(streams, steps):
    """Reads `steps` Deltas from each (session, mirror); returns per stream
    {step: poses} and the gateway's (first stream's) left ids by step."""
    seen = [dict() for _ in streams]
    left = []
    for _ in range(steps):
        for k, (s, m) in enumerate(streams):
            d = s.next_delta(timeout=10)
            m.apply(d)
            seen[k][d.step] = poses(m, d.step)
            if k == 0 and not d.baseline:
                left += [(e.index, d.step) for e in d.left]
    return seen, left


def check_city_after(seen, after):
    """The steps the gateway's and both districts' streams all reached (at
    least one), at each of which the gateway holds every district entity at
    its owner's pose; returns them."""
    gw, d0, d1 = seen
    common = sorted(set(gw) & set(d0) & set(d1))
    assert common, f"no step reached every stream after {after}"
    for k in common:
        union = {**d0[k], **d1[k]}
        assert all(gw[k].get(i) == p for i, p in union.items()), f"step {k} differs"
    return common


def test_one_city_through_the_gateway_crossings_continuous(tmp_path):
    with live_city(tmp_path) as (_, procs, _links):
        districts, gateway = procs[:-1], procs[-1]
        streams = [watcher(gateway, "gw")] + [watcher(d, f"d{k}") for k, d in enumerate(districts)]
        seen, gw_left = watch(streams, STEPS)
        gw, d0, d1 = seen
        common = sorted(set(gw) & set(d0) & set(d1))
        assert len(common) >= STEPS // 2, f"only {len(common)} steps reached every stream"
        owner_steps = {}  # index -> [(step, district)]
        transit = 0
        for k in common:
            assert not set(d0[k]) & set(d1[k]), f"step {k}: ids in both districts"
            for dk, poses_k in ((0, d0[k]), (1, d1[k])):
                for index, pose in poses_k.items():
                    assert gw[k].get(index) == pose, (
                        f"step {k}: entity {index} in d{dk} at {pose}, "
                        f"the gateway shows {gw[k].get(index)}")
                    owner_steps.setdefault(index, []).append((k, dk))
            for index in set(gw[k]) - set(d0[k]) - set(d1[k]):
                transit += 1
                if k + 1 in d0 and k + 1 in d1:
                    assert index in d0[k + 1] or index in d1[k + 1] or index not in gw.get(k + 1, {}), (
                        f"step {k}: entity {index} in transit, in no district the step after")
        crossers = {i for i, steps in owner_steps.items() if len({d for _, d in steps}) > 1}
        assert len(crossers) >= 5, f"only {len(crossers)} walkers crossed a border"
        for index, step in gw_left:
            if index in crossers:
                first = min(s for s, _ in owner_steps[index])
                last = max(s for s, _ in owner_steps[index])
                assert not first < step <= last, (
                    f"crossing walker {index} left the gateway's stream at step {step}")
        assert transit > 0, "no walker was seen in transit between two districts"


def test_cars_crossing_a_border_are_one_car_with_their_vehicle_id(tmp_path):
    """Cars on loops across the border (docs/districts.md, vehicles): the
    gateway shows every car of both districts at its owner's pose, keeps a
    crossing car in its stream, and names it with the VehicleId its district
    gave it."""
    with live_city(tmp_path, vehicles=300) as (_, procs, _links):
        districts, gateway = procs[:-1], procs[-1]
        streams = [watcher(gateway, "gw")] + [watcher(d, f"d{k}") for k, d in enumerate(districts)]
        # 12 s of city time: a car crosses a 100 m block and its signal.
        seen, gw_left = watch(streams, 3 * STEPS)
        common = check_city_after(seen, 0)
        assert len(common) >= STEPS // 2, f"only {len(common)} steps reached every stream"
        gw_mirror = streams[0][1]
        cars = {}  # index -> district labels seen
        for _, m in streams[1:]:
            for eid in m:
                r = m.record(eid)
                if r.kind == EntityKind.Vehicle:
                    cars.setdefault(eid.index, set()).add(r.label)
        assert len(cars) > 20, f"only {len(cars)} cars in the districts' streams"
        named = 0
        for eid in gw_mirror:
            r = gw_mirror.record(eid)
            if r.kind == EntityKind.Vehicle and eid.index in cars:
                assert r.label in cars[eid.index], (eid, r.label, cars[eid.index])
                assert r.label.startswith("vehicle.g."), r.label
                named += 1
        assert named > 20
        owners = {}
        for k in common:
            for dk in (1, 2):
                for index in seen[dk][k]:
                    if index in cars:
                        owners.setdefault(index, set()).add(dk)
        crossers = {i for i, ds in owners.items() if len(ds) > 1}
        assert crossers, "no car crossed the border while watched"
        assert not [i for i, _ in gw_left if i in crossers], "a crossing car left the gateway's stream"
        # A garage request goes to the garage's district (a district refuses
        # another district's garage, naming it).
        from bustle_client import CommandStatus, RejectReason
        op = gateway.connect()
        op.hello("gw-operator", role="operator")
        for garage, lane in (("g.0.0", "r.0.0.e"), ("g.2.0", "r.2.0.e")):
            r = op.garage_request(garage, "extra", "car", lane, timeout=10)
            assert "belongs to district" not in r.message, (garage, r)
            assert r.status == CommandStatus.Accepted or r.reason == RejectReason.QueueFull, (
                garage, r)
        r = op.garage_request("g.9.9", "extra", "car", "r.0.0.e", timeout=10)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.InvalidArgument
        assert "no garage 'g.9.9'" in r.message, r.message


def test_gateway_restart_clients_resync_and_status_names_districts(tmp_path):
    with live_city(tmp_path) as (city, procs, _links):
        districts, gateway = procs[:-1], procs[-1]
        port = gateway.port
        s, m = watcher(gateway, "before")
        for _ in range(5):
            m.apply(s.next_delta(timeout=10))
        assert len(m) > 0
        gateway.kill9()
        restarted = start_gateway(tmp_path, city, districts, port=port, name="gateway2")
        try:
            streams = [watcher(restarted, "after")] + [watcher(d, f"d{k}")
                                                      for k, d in enumerate(districts)]
            seen, _ = watch(streams, 10)
            check_city_after(seen, "the restart")
            st = streams[0][0].stats()
            assert [d.id for d in st.districts] == ["d0", "d1"]
            assert all(d.streaming for d in st.districts)
            cli = os.environ.get("BUSTLE_CLI")
            if cli:
                out = subprocess.run([cli, "status", "--port", str(port)], capture_output=True,
                                     text=True, timeout=20, env=clean_env())
                assert out.returncode == 0, out.stderr
                assert re.search(r"district d0\s+streaming, step \d+, digest [0-9a-f]{16}",
                                 out.stdout), out.stdout
                assert "district d1" in out.stdout
        finally:
            restarted.stop(check=True)


def test_a_district_killed_and_resumed_behind_the_gateway(tmp_path):
    """kill -9 of district d1 while a client watches the gateway: the
    gateway holds its last step, d1 resumes from its recording on the same
    ports, and the client's stream goes on with the same entities: at every
    step after, the gateway's city is the districts' to the millimetre, and
    nothing that lives on in d1 left the client's stream meanwhile."""
    with live_city(tmp_path) as (city, procs, links):
        gateway = procs[-1]
        s, m = watcher(gateway, "through")
        for _ in range(60):
            d = s.next_delta(timeout=10)
            m.apply(d)
        before = {e.index: e.generation for e in m}
        killed_at = d.step
        old = procs[1]
        port = old.port
        old.kill9()
        resumed = ServerProcess(
            district_args(tmp_path, city, 1, links, port=port,
                          extra=("--resume", str(tmp_path / "d1.rec"),
                                 "--record", str(tmp_path / "d1-resumed.rec"))),
            tmp_path / "d1-resumed.stderr", env=clean_env())
        procs[1] = resumed
        left = set()
        while d.step < killed_at + 40:
            d = s.next_delta(timeout=20)
            m.apply(d)
            left |= {e.index for e in d.left}
        streams = [(s, m)] + [watcher(p, f"d{k}") for k, p in enumerate(procs[:-1])]
        seen, _ = watch(streams, 10)
        common = check_city_after(seen, "the district came back")
        d1 = seen[2]
        survivors = {i for i, g in before.items() if d1[common[-1]].get(i, (None,))[0] == g}
        assert survivors, "no entity of d1 lived through the restart"
        flicker = survivors & left
        assert not flicker, f"entities of d1 left the gateway's stream and came back: {flicker}"
        assert "resumed from" in resumed.stderr()
        log = gateway.stderr()
        assert "district 'd1'" in log and "retrying" in log, log


def poses_near(mirror, step, x, y, radius):
    """poses() of the entities within `radius` of (x, y) at `step`."""
    out = {}
    for eid in mirror:
        p = mirror.pose(eid, step)
        if (p.x_m - x) ** 2 + (p.y_m - y) ** 2 <= radius ** 2:
            out[eid.index] = (eid.generation, mirror.record(eid).lane,
                              mirror.predicted_s_mm(eid, step))
    return out


def test_a_client_with_an_observer_makes_the_districts_stream_only_its_surroundings(tmp_path):
    """One client looking at 60 m around a point of d1: the gateway asks the
    districts for that neighbourhood only (its streams hold a fraction of the
    city), and the client still gets every entity there, at its owner's pose."""
    from bustle_client import Observer
    radius = 60.0
    with live_city(tmp_path) as (_, procs, _links):
        districts, gateway = procs[:-1], procs[-1]
        direct = [watcher(d, f"d{k}") for k, d in enumerate(districts)]
        for s, m in direct:
            d = s.next_delta(timeout=10)
            m.apply(d)
        here = direct[1][1].pose(next(iter(direct[1][1])), d.step)
        s = gateway.connect()
        s.hello("near")
        s.subscribe(observers=[Observer(here.x_m, here.y_m, radius_m=radius)],
                    motion_tolerance_mm=0)
        seen = [dict() for _ in range(3)]
        streams = [(s, s.mirror())] + direct
        for _ in range(40):
            for k, (session, m) in enumerate(streams):
                d = session.next_delta(timeout=10)
                m.apply(d)
                seen[k][d.step] = (poses(m, d.step) if k == 0 else
                                   poses_near(m, d.step, here.x_m, here.y_m, 0.9 * radius))
        gw, d0, d1 = seen
        common = sorted(set(gw) & set(d0) & set(d1))[5:]  # the interest settles first
        assert len(common) >= 15, f"only {len(common)} steps reached every stream"
        for k in common:
            near = {**d0[k], **d1[k]}
            assert near, f"step {k}: nobody within {radius} m"
            missing = {i: p for i, p in near.items() if gw[k].get(i) != p}
            assert not missing, f"step {k}: the client lacks or misplaces {missing}"
        st = s.stats(timeout=10)
        streamed = sum(x.entities for x in st.districts)
        city = len(direct[0][1]) + len(direct[1][1])
        assert streamed < city / 4, f"the districts stream {streamed} of {city} entities"


def test_commands_about_an_entity_are_answered_by_its_district(tmp_path):
    """QueryEntity through the gateway is the owning district's answer;
    DespawnEntity through it despawns there; an id nobody holds, a viewer's
    world command and a city-wide command other than Pause and Resume are
    refused with the reason."""
    from bustle_client import CommandStatus, RejectReason
    with live_city(tmp_path) as (_, procs, _links):
        districts, gateway = procs[:-1], procs[-1]
        direct = [watcher(d, f"d{k}") for k, d in enumerate(districts)]
        for s, m in direct:
            m.apply(s.next_delta(timeout=10))
        op = gateway.connect()
        op.hello("gw-operator", role="operator")
        gateway_caught_up(op, max(m.step for _, m in direct))
        for k, (s, m) in enumerate(direct):
            eid = settled_entity(m)
            r = op.query_entity(eid, timeout=10)
            assert r.status == CommandStatus.Accepted, (k, r)
            info = r.entity_info
            assert (info.id.index, info.id.generation) == (eid.index, eid.generation)
            assert info.alive and info.lane >= 0
        r = op.query_entity((999_999, 1), timeout=10)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.UnknownEntity
        assert "no district streams entity 999999:1" in r.message
        r = op.checkpoint("city", timeout=10)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.UnknownCommand
        assert "district servers" in r.message, r.message
        viewer = gateway.connect()
        viewer.hello("gw-viewer")
        victim = settled_entity(direct[0][1])
        r = viewer.despawn(victim.index, victim.generation, timeout=10)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.NotAuthorized
        r = op.despawn(victim.index, victim.generation, timeout=10)
        assert r.status == CommandStatus.Accepted, r
        s, m = direct[0]
        for _ in range(20):
            d = s.next_delta(timeout=10)
            m.apply(d)
            if victim not in m or victim in {e for e in d.retiring}:
                break
        else:
            pytest.fail(f"{victim} was not despawned in its district")


def operators(districts, gateway):
    """An operator session on each district and one on the gateway, which
    has caught up with them."""
    ops = []
    for d in districts:
        c = d.connect()
        c.hello("district-operator", role="operator")
        ops.append(c)
    op = gateway.connect()
    op.hello("gw-operator", role="operator")
    gateway_caught_up(op, max(c.stats(timeout=10).step for c in ops))
    return ops, op


def test_pause_and_resume_reach_every_district(tmp_path):
    """Pause through the gateway pauses every district, also one held at its
    barrier by a neighbour paused before (d0 paused on its own first): none
    steps until Resume through the gateway, after which all do; a viewer may
    not pause the city."""
    from bustle_client import CommandStatus, RejectReason
    with live_city(tmp_path) as (_, procs, _links):
        districts, gateway = procs[:-1], procs[-1]
        ops, op = operators(districts, gateway)
        viewer = gateway.connect()
        viewer.hello("gw-viewer")
        r = viewer.pause(timeout=10)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.NotAuthorized, r

        def settled_steps():
            # Equal in 5 readings 0.1 s apart (12 steps at 25 Hz: a district
            # still stepping never settles).
            deadline = time.monotonic() + 10
            readings = []
            while len(readings) < 5 or len({tuple(x) for x in readings[-5:]}) > 1:
                assert time.monotonic() < deadline, f"the districts kept stepping: {readings[-5:]}"
                readings.append([c.stats(timeout=10).step for c in ops])
                time.sleep(0.1)
            return readings[-1]

        assert ops[0].pause(timeout=10).status == CommandStatus.Accepted
        held = settled_steps()  # d1 waits at its barrier for d0's next step
        assert [c.stats(timeout=10).paused for c in ops] == [True, False]
        r = op.pause(timeout=20)
        assert r.status == CommandStatus.Accepted, r
        assert [c.stats(timeout=10).paused for c in ops] == [True, True]
        assert settled_steps() == held
        assert max(held) - min(held) <= 1, held
        r = op.resume(timeout=20)
        assert r.status == CommandStatus.Accepted, r
        deadline = time.monotonic() + 10
        while True:
            now = [c.stats(timeout=10) for c in ops]
            if all(n.step > h + 5 and not n.paused for n, h in zip(now, held)):
                break
            assert time.monotonic() < deadline, [(n.step, n.paused) for n in now]
            time.sleep(0.1)


def test_the_hour_time_scale_and_observers_reach_every_district(tmp_path):
    """SetHour, SetTimeScale and SetObservers through the gateway are applied
    by every district; a follow (one district's entity) is refused."""
    from bustle_client import CommandStatus, RejectReason
    with live_city(tmp_path) as (_, procs, _links):
        districts, gateway = procs[:-1], procs[-1]
        ops, op = operators(districts, gateway)
        r = op.set_time_scale(60, timeout=20)
        assert r.status == CommandStatus.Accepted, r
        r = op.set_hour(12.0, timeout=20)
        assert r.status == CommandStatus.Accepted, r
        for c in ops:
            p = c.population(timeout=10)
            assert p.time_scale == 60, p.time_scale
            assert 12.0 <= p.hour < 13.0, p.hour  # a minute of game time per second since
        r = op.set_observers([(10.0, 10.0), (30.0, 10.0)], timeout=20)
        assert r.status == CommandStatus.Accepted, r
        r = op.follow((1, 1), timeout=10)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.InvalidArgument, r
        assert "SetObservers.follow" in r.message, r.message


def test_a_command_for_a_district_that_is_down_says_so(tmp_path):
    """d1 killed and not restarted: a query about one of its entities is
    answered InboxFull naming d1 ("try again"); d0, waiting for d1 at its
    barrier, still answers queries about its own; the gateway shows d1 not
    streaming; Pause is refused naming d1 and the districts it paused."""
    from bustle_client import CommandStatus, RejectReason
    with live_city(tmp_path) as (_, procs, _links):
        districts, gateway = procs[:-1], procs[-1]
        direct = [watcher(d, f"d{k}") for k, d in enumerate(districts)]
        for s, m in direct:
            m.apply(s.next_delta(timeout=10))
        ours = [settled_entity(m) for _, m in direct]
        op = gateway.connect()
        op.hello("gw-operator", role="operator")
        gateway_caught_up(op, max(m.step for _, m in direct))
        assert op.query_entity(ours[1], timeout=10).status == CommandStatus.Accepted
        districts[1].kill9()
        r = op.query_entity(ours[1], timeout=20)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.InboxFull, r
        assert "district 'd1'" in r.message and "try again" in r.message, r.message
        r = op.query_entity(ours[0], timeout=10)
        assert r.status == CommandStatus.Accepted, r
        assert op.stats(timeout=10).districts[1].streaming is False
        # A city-wide command: refused, naming d1, and saying where it applied.
        r = op.pause(timeout=20)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.InboxFull, r
        assert "district 'd1'" in r.message and "applied in d0" in r.message, r.message


METRICS_LINE = re.compile(r"^bustle-gateway metrics on (\S+):(\d+)$")


def wait_probe(port, path, status, text, timeout=20.0):
    """Polls GET path until it answers `status` with `text` in its body."""
    deadline = time.monotonic() + timeout
    while True:
        got = http_get(port, path)
        if got[0] == status and text in got[1]:
            return got[1]
        assert time.monotonic() < deadline, f"{path}: still {got} after {timeout} s"
        time.sleep(0.05)


def test_the_gateway_reports_readiness_health_and_each_district(tmp_path):
    """--metrics-bind: /readyz is 200 once both districts stream and a step
    went out, /metrics shows each district streaming with its step; d1
    killed turns /readyz 503 naming d1 while /healthz stays 200."""
    from prometheus_client.parser import text_string_to_metric_families
    with live_city(tmp_path, gateway_args=("--metrics-bind", "127.0.0.1:0")) as (_, procs, _l):
        districts, gateway = procs[:-1], procs[-1]
        m = METRICS_LINE.match(gateway.stdout_lines.get(timeout=5.0) or "")
        assert m, "expected the metrics line after the listening line"
        port = int(m.group(2))
        assert "ready: 2 districts streaming" in wait_probe(port, "/readyz", 200, "ready")
        status, text = http_get(port, "/metrics")
        assert status == 200, text
        samples = {}
        for fam in text_string_to_metric_families(text):
            for x in fam.samples:
                samples[(x.name, x.labels.get("district"))] = x.value
        for d in ("d0", "d1"):
            assert samples[("bustle_gateway_district_streaming", d)] == 1
            assert samples[("bustle_gateway_district_step", d)] > 0
            assert samples[("bustle_gateway_district_entities", d)] > 0
        assert samples[("bustle_gateway_ready", None)] == 1
        assert samples[("bustle_gateway_published_step", None)] > 0
        districts[1].kill9()
        wait_probe(port, "/readyz", 503, "not ready: district 'd1' is not streaming")
        status, body = http_get(port, "/healthz")
        assert status == 200 and body.startswith("ok: gateway loop"), body


def test_a_bad_metrics_address_is_refused(tmp_path):
    city = district_city(tmp_path, 2)
    r = run_gateway("--config", str(city), "--districts", "d0=127.0.0.1:1,d1=127.0.0.1:2",
                    "--metrics-bind", "127.0.0.1")
    assert r.returncode == 2 and "--metrics-bind" in r.stderr and "ADDR:PORT" in r.stderr, r.stderr


def run_gateway(*args, timeout=20):
    return subprocess.run([gateway_binary(), *args], capture_output=True, text=True,
                          timeout=timeout, env=clean_env(), stdin=subprocess.DEVNULL)


def test_bad_settings_are_refused_with_the_reason(tmp_path, start_server):
    city = district_city(tmp_path, 2)
    cases = [
        (["--districts", "d0=127.0.0.1:1"], "district 'd1' of"),
        (["--districts", "d0=127.0.0.1:1,d1=127.0.0.1:2,d9=127.0.0.1:3"], "'d9' is not a district"),
        (["--districts", "d0=127.0.0.1:1,d0=127.0.0.1:2"], "'d0' is named twice"),
        (["--districts", "d0=127.0.0.1"], "d0: expected HOST:PORT"),
    ]
    for extra, message in cases:
        r = run_gateway("--config", str(city), *extra)
        assert r.returncode == 2 and message in r.stderr, (extra, r.returncode, r.stderr)
    # A city without a district map.
    doc = json.loads(city.read_text())
    del doc["districts"]
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(doc))
    r = run_gateway("--config", str(whole), "--districts", "d0=127.0.0.1:1")
    assert r.returncode == 2 and "no district map" in r.stderr, r.stderr
    # A district of this city on a fast clock: the gateway's clients pace by
    # the wall clock, so it stops and says so.
    fast = ServerProcess(district_args(tmp_path, city, 0, [], extra=(
        "--clock", "fast", "--record", str(tmp_path / "fast.rec"))),
                         tmp_path / "fast.stderr", env=clean_env())
    try:
        r = run_gateway("--config", str(city), "--port", "0", "--rate", str(RATE_HZ),
                        "--districts", f"d0=127.0.0.1:{fast.port},d1=127.0.0.1:{fast.port}")
        assert r.returncode == 2 and "runs a Fast clock" in r.stderr, r.stderr
    finally:
        fast.stop(check=False)
    # Districts that serve another city: the gateway stops and says which.
    other = start_server("--clock", "fast")
    r = run_gateway("--config", str(city), "--port", "0", "--districts",
                    f"d0=127.0.0.1:{other.port},d1=127.0.0.1:{other.port}")
    assert r.returncode == 2 and "serves scenario" in r.stderr, r.stderr
