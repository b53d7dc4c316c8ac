"""Lane closures over the socket (CloseLane / OpenLane, seed 000 §6): with a
crossing closed nobody enters it, neither in the server's state nor in the
stream a viewer mirrors; with every way on closed pedestrians wait at their
lane end and QueryPopulation counts them; opening lets them walk on; bad
lanes and viewers are refused and change nothing. Vehicles on the corridor
stop before a closed lane and drive on when it opens. Also the CLI's
``bustle close-lane`` / ``open-lane`` against the same server."""

from population_helpers import City, start_city
from test_cli_json import bustle, one
from vehicle_helpers import CORRIDOR

from bustle_client import CommandStatus, EntityKind, RejectReason, Session


def _lane_index(city, lane_id):
    return {ln.id: ln.index for ln in city.welcome.lanes}[lane_id]


def _length(city, index):
    return {ln.index: ln.length_m for ln in city.welcome.lanes}[index]


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


def _on(city, lane, kind=EntityKind.Pedestrian):
    return {e.id for e in city.mirror.values() if e.lane == lane and e.kind == kind}


def test_a_closed_crossing_is_never_entered_and_waiters_are_counted(start_server):
    srv = start_city(start_server)
    with City(srv, "lanes") as city:
        city.step(40)
        crossing = _lane_index(city, "x.market.office")
        r = city.apply("CloseLane", lane="x.market.office")
        assert r.accepted, r
        pop = city.op.population()
        assert [_text(v) for v in pop.closed_lanes] == ["x.market.office"]
        assert list(pop.closed_lane_indices) == [crossing]
        assert pop.lane_closures_total == 1
        allowed = _on(city, crossing)
        # Checked every 4 steps (a walker needs far longer to cross), which
        # keeps this client under the server's command rate limit.
        for _ in range(100):
            city.step(4)
            now = _on(city, crossing)
            assert now <= allowed, f"step {city.step_index}: {now - allowed} entered a closed lane"
            allowed = now
        assert city.op.population().lane_reroutes_total > 0

        # Every way on from market.loop closed: its walkers wait at the lane end.
        r = city.apply("CloseLane", lane="market.loop")
        assert r.accepted, r
        loop = _lane_index(city, "market.loop")
        waiting = 0
        for _ in range(60):
            city.step(5)
            waiting = city.op.population().lane_waiting_pedestrians
            if waiting >= 2:
                break
        assert waiting >= 2
        for e in city.mirror.values():
            if e.lane == loop and e.kind == EntityKind.Pedestrian:
                info = city.op.entity(e.id)
                assert info.s_m <= _length(city, loop) + 1e-9

        # Refusals change nothing.
        r = city.apply("CloseLane", lane="no.such.lane")
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.InvalidArgument
        assert "lane: unknown lane 'no.such.lane'" in r.message
        r = city.apply("OpenLane", lane_index=9999)
        assert r.status == CommandStatus.Rejected and "lane_index: 9999" in r.message
        with Session.connect("127.0.0.1", srv.port, timeout=5.0) as viewer:
            viewer.hello("lanes-viewer", role="viewer")
            r = viewer.command("OpenLane", lane="market.loop")
            assert r.status == CommandStatus.Rejected, r
        assert city.op.population().lane_closures_total == 2

        # Opened: the waiters walk on.
        assert city.apply("OpenLane", lane="market.loop").accepted
        assert city.apply("OpenLane", lane_index=crossing).accepted
        city.step(20)
        pop = city.op.population()
        assert pop.lane_waiting_pedestrians == 0 and not list(pop.closed_lanes)
        assert pop.lane_openings_total == 2


def test_vehicles_wait_before_a_closed_lane_and_resume(start_server):
    srv = start_server("--clock", "manual", "--config", str(CORRIDOR))
    with City(srv, "lanes-veh") as city:
        city.step(150)
        lane1, lane2 = _lane_index(city, "lane1"), _lane_index(city, "lane2")
        assert city.apply("CloseLane", lane="lane2").accepted
        allowed = _on(city, lane2, EntityKind.Vehicle)
        for _ in range(75):
            city.step(2)
            now = _on(city, lane2, EntityKind.Vehicle)
            assert now <= allowed, f"step {city.step_index}: {now - allowed} drove onto lane2"
            allowed = now
        held = city.op.population().lane_waiting_vehicles
        assert held >= 1
        at_end = _on(city, lane1, EntityKind.Vehicle)
        assert city.apply("OpenLane", lane="lane2").accepted
        city.step(30)
        assert city.op.population().lane_waiting_vehicles == 0
        assert _on(city, lane2, EntityKind.Vehicle) or not at_end


def test_bustle_close_and_open_lane_through_the_cli(start_server):
    srv = start_city(start_server)
    assert one(srv, "close-lane", "office.loop", "--step")["accepted"]
    pop = one(srv, "population")["population"]["lane_closures"]
    assert pop["closed_lanes"] == ["office.loop"] and pop["closures_total"] == 1
    assert "office.loop" in bustle(srv, "population").stdout
    bad = bustle(srv, "close-lane", "nope", "--step", expect=3)
    assert "unknown lane 'nope'" in bad.stdout + bad.stderr
    assert one(srv, "open-lane", "office.loop", "--step")["accepted"]
    pop = one(srv, "population")["population"]["lane_closures"]
    assert pop["closed_lanes"] == [] and pop["openings_total"] == 1
