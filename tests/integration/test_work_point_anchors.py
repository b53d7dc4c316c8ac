"""Work-point anchors over the socket (seed 000 §6): the large-block city's
work-points carry anchors; at work hours every slot holder walks to its slot
and stands there, which QueryZones (anchor, per-slot arrivals) and
QueryEntity (slot, at its anchor) show through the real server, the Python
client and the CLI (text and --json). Also ``bustle close-lane`` /
``open-lane`` by ``--index``."""

from bustle_client import id_text
from population_helpers import City, start_city
from test_cli_json import bustle, one

#: configs/largeblock.city.json: each anchor at s 30 m of its zone's loop,
#: slots 1.5 m apart; slot 0's world position.
ANCHORS = {"stalls": ("market.loop", (30.0, 0.0)),
           "desks": ("office.loop", (130.0, 0.0)),
           "workshop": ("facilities.loop", (30.0, 80.0))}


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


def _work_points(city):
    return {_text(w.id): w for z in city.op.zones() for w in z.work_points}


def test_slot_holders_reach_their_anchors_at_work_hours(start_server):
    srv = start_city(start_server)
    with City(srv, "anchors") as city:
        lanes = {ln.id: ln.index for ln in city.welcome.lanes}
        # Before work hours nobody holds a slot: anchors are listed, no arrivals.
        before = _work_points(city)
        assert set(before) == set(ANCHORS)
        for wid, (lane, (x, y)) in ANCHORS.items():
            w = before[wid]
            assert _text(w.anchor_lane) == lane
            assert w.anchor_lane_index == lanes[lane]
            assert w.anchor_s_m == 30.0 and w.slot_spacing_m == 1.5
            assert abs(w.anchor_x_m - x) < 1e-9 and abs(w.anchor_y_m - y) < 1e-9
            assert w.occupied == 0 and w.arrived_count == 0 and not any(w.arrived)

        assert city.apply("SetHour", hour=8.5).accepted
        # A 200 m loop at 1.3 m/s takes 154 s (1540 steps).
        arrived = {}
        for _ in range(60):
            city.step(50)
            arrived = {wid: (w.occupied, w.arrived_count) for wid, w in _work_points(city).items()}
            if all(o == 24 and a == 24 for o, a in arrived.values()):
                break
        assert all(o == 24 and a == 24 for o, a in arrived.values()), arrived
        for w in _work_points(city).values():
            assert list(w.arrived) == [True] * 24

        # QueryEntity: every walking resident holds a slot and stands at it,
        # each on its own slot's place.
        places = set()
        for e in list(city.mirror.values()):
            info = city.op.entity(e.id)
            if info.work_slot is None:
                continue
            assert info.at_work_anchor, info
            lane, _ = ANCHORS[_text(info.work_point)]
            assert info.lane == lanes[lane]
            assert abs(info.s_m - (30.0 + 1.5 * info.work_slot)) < 1e-9
            places.add((info.lane, info.work_slot))
        assert len(places) == 72

        # They stand still while the schedule keeps their slots.
        s_before = {e.id: city.op.entity(e.id).s_m for e in list(city.mirror.values())[:10]}
        city.step(30)
        assert {i: city.op.entity(i).s_m for i in s_before} == s_before

        # The CLI shows the same (text and --json).
        text = bustle(srv, "zones").stdout
        assert "anchor lane market.loop" in text and "24 of 24 holders at their slot" in text
        zones = one(srv, "zones")["zones"]
        stalls = [w for z in zones for w in z["work_points"] if w["id"] == "stalls"][0]
        assert stalls["anchor_lane"] == "market.loop" and stalls["arrived_count"] == 24
        some = next(iter(s_before))
        ident = id_text(some)
        assert "at its slot" in bustle(srv, "entity", ident).stdout
        assert one(srv, "entity", ident)["entity"]["at_work_anchor"] is True


def test_close_and_open_lane_by_index_through_the_cli(start_server):
    srv = start_city(start_server)
    with City(srv, "lane-index") as city:
        lanes = {ln.id: ln.index for ln in city.welcome.lanes}
    office = lanes["office.loop"]
    assert one(srv, "close-lane", "--index", str(office), "--step")["accepted"]
    pop = one(srv, "population")["population"]["lane_closures"]
    assert pop["closed_lanes"] == ["office.loop"]
    bad = bustle(srv, "close-lane", "--index", "9999", "--step", expect=3)
    assert "9999" in bad.stdout + bad.stderr
    neither = bustle(srv, "open-lane", expect=2)
    assert "needs a lane" in neither.stderr
    both = bustle(srv, "open-lane", "office.loop", "--index", str(office), expect=2)
    assert "--index" in both.stderr
    assert one(srv, "open-lane", "--index", str(office), "--step")["accepted"]
    pop = one(srv, "population")["population"]["lane_closures"]
    assert pop["closed_lanes"] == [] and pop["openings_total"] == 1
