"""A merge over the socket: two feeder lanes lead onto one lane, and a vehicle
from each arrives at the merge point together. The one that yields reports
Yielding / MergeYield with the other as its leader (QueryVehicle and the CLI's
``bustle vehicle``), and both end up on the shared lane a headway apart."""

from test_cli_json import bustle, one
from vehicle_helpers import Corridor, start_corridor, write_config

from bustle_client import ControlPolicy, PolicyReason, id_text


def _road(lane_id, a, b, successors):
    return {"id": lane_id, "kind": "road", "speed_mps_limit": 10, "points": [a, b],
            "successors": successors}


def _garage(gid, route):
    return {"id": gid, "lane": route[0], "route": route, "route_end": "garage",
            "prototypes": ["car"], "capacity": 2, "queue_depth": 2, "dispatch_per_step_max": 1,
            "cooldown_frames": 0, "entrance_clear_m": 8}


def merge_config(tmp_path):
    cfg = {
        "id": "bustle.test.merge",
        "name": "two 60 m feeders onto one 200 m lane",
        "step_us": 100000,
        "entity_capacity": 1024,
        "pedestrians": {"count": 0, "spawn_per_step_max": 1},
        "lanes": [_road("a", [-60, 0], [0, 0], ["m"]), _road("b", [0, -60], [0, 0], ["m"]),
                  _road("m", [0, 0], [200, 0], [])],
        "garages": [_garage("A", ["a", "m"]), _garage("B", ["b", "m"])],
        "signals": [],
        "vehicle_plan": {"batch_size": 2, "batch_interval_steps": 1, "requests": [
            {"request_id": "a0", "garage": "A", "prototype": "car", "lane": "a", "priority": 10},
            {"request_id": "b0", "garage": "B", "prototype": "car", "lane": "b", "priority": 10}]},
        "tiers": {"full_enter_m": 1000, "full_exit_m": 1000, "simulated_enter_m": 2000,
                  "simulated_exit_m": 2000},
        "observers": [[0, 0]],
    }
    return write_config(tmp_path / "merge.city.json", cfg)


def test_merge_yield_is_reported_and_the_headway_holds(start_server, tmp_path):
    srv = start_corridor(start_server, config=merge_config(tmp_path))
    with Corridor(srv, "merge") as c:
        lanes = {ln.id: ln.index for ln in c.welcome.lanes}
        c.step(1)
        ids = {c.op.vehicle(e.id).garage: e.id for e in c.mirror.vehicles()}
        assert sorted(ids) == ["A", "B"], ids
        yielded = None
        near_both = 0  # steps with both within the caution headway of the merge
        c.step(40)  # 40 m driven: 20 m to go, the merge not yet within reach
        for _ in range(40):  # one step at a time (3 commands each: under the rate limit)
            c.step(1)
            a, b = c.op.vehicle(ids["A"]), c.op.vehicle(ids["B"])
            for me, other in ((a, b), (b, a)):
                if me.reason == PolicyReason.MergeYield:
                    assert me.policy == ControlPolicy.Yielding, me
                    assert me.leader == other.id, (me, other)
                    if yielded is None:  # the CLI says the same, as JSON and as text
                        ident = id_text(me.id)
                        cli = one(srv, "vehicle", ident)["vehicle"]
                        assert (cli["policy"], cli["reason"]) == ("Yielding", "MergeYield"), cli
                        lines = bustle(srv, "vehicle", ident).stdout.splitlines()
                        assert any(ln.split() == ["reason", "MergeYield"] for ln in lines), lines
                    yielded = me
            # Invariant 6 as a client sees it: on the merge axis (s on m, minus
            # the distance left on a feeder), two vehicles within the block
            # headway (8 m) of the merge point are at least 8 m apart.
            def x(v):
                return v.s_m if v.lane == lanes["m"] else v.s_m - 60.0
            if abs(x(a)) < 8 and abs(x(b)) < 8:
                assert abs(x(a) - x(b)) >= 8 - 1e-6, (a, b)
            near_both += abs(x(a)) < 14 and abs(x(b)) < 14
        assert near_both > 0  # the check above had pairs to look at
        # the tie (same distance to the merge) goes to the smaller EntityId: A's
        assert yielded is not None and yielded.garage == "B", yielded
        assert c.op.vehicle(ids["A"]).lane == lanes["m"]
        assert c.op.vehicle(ids["B"]).lane == lanes["m"]
