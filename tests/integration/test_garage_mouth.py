"""The garage mouth over the socket (issue 30, item 8; seed 003's gates): a
garage with ``mouth_capacity`` dispatches a batch in one step. QueryGarages
lists the vehicles waiting in its mouth, front first, with their EntityIds
and VehicleIds; the stream shows only the vehicles on the road; and they
enter the road one at a time, front first, each when the entrance is clear.
A vehicle in the mouth is an identity, not a vehicle on a lane: QueryVehicle
refuses it naming the mouth, QueryEntity answers kind Vehicle, lifecycle
Requested, no lane.

Every server runs ``--clock manual`` on a variant of the seed-003 corridor."""

import copy

from bustle_client import CommandStatus, DispatchGate, EntityKind, LifecycleState, RejectReason

from test_cli_json import one
from vehicle_helpers import Corridor, corridor_config, start_corridor, write_config

BATCH = 8


def mouth_config(tmp_path):
    """The corridor whose plan offers 8 requests at step 1 to a garage that
    dispatches up to 8 per step into a mouth of 8, with no cooldown."""
    cfg = copy.deepcopy(corridor_config())
    cfg["id"] = "bustle.corridor.mouth"
    cfg["garages"][0].update(dispatch_per_step_max=BATCH, cooldown_frames=0, mouth_capacity=BATCH)
    cfg["vehicle_plan"] = {"batch_size": BATCH, "batch_interval_steps": 1, "requests": [
        {"request_id": f"m{k}", "garage": "g0", "prototype": "sedan", "lane": "lane0",
         "priority": 10} for k in range(BATCH)]}
    return write_config(tmp_path / "mouth.city.json", cfg)


def vehicle_id(k):
    return f"vehicle.g0.{k:06d}"


def test_a_batch_waits_in_the_mouth_and_enters_the_road_one_at_a_time(start_server, tmp_path):
    srv = start_corridor(start_server, config=mouth_config(tmp_path))
    with Corridor(srv, "mouth") as c:
        g = c.garage()
        assert (g.mouth_capacity, g.mouth, g.dispatched) == (BATCH, [], 0), g

        c.step(1)  # the whole batch is dispatched in this one step
        g = c.garage()
        assert (g.dispatched, g.next_vehicle_ordinal, g.managed) == (BATCH, BATCH, BATCH), g
        assert g.last_gate == DispatchGate.Dispatched, g
        assert g.dispatched_ids == [f"m{k}" for k in range(BATCH)]
        # The first took the clear entrance; the other seven wait, front first.
        assert [m.vehicle_id for m in g.mouth] == [vehicle_id(k) for k in range(1, BATCH)], g.mouth
        assert [m.request_id for m in g.mouth] == [f"m{k}" for k in range(1, BATCH)]
        assert all(m.prototype == "sedan" for m in g.mouth)
        (first,) = c.vehicle_entities()
        assert c.op.vehicle(first.id).vehicle_id == vehicle_id(0)
        assert c.op.stats().vehicles == 1, "a vehicle in the mouth is not on the road"

        # A vehicle in the mouth: an identity, not on a lane, not in the stream.
        waiting = g.mouth[0]
        assert waiting.id not in {e.id for e in c.vehicle_entities()}
        r = c.op.query_vehicle(waiting.id)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.InvalidArgument, r
        assert "vehicle.g0.000001 waits in garage 'g0' mouth (place 1 of 7)" in r.message, r
        e = c.op.entity(waiting.id)
        assert (e.alive, e.kind, e.lifecycle, e.lane) == (
            True, EntityKind.Vehicle, LifecycleState.Requested, None), e
        # The CLI's JSON carries the mouth too (every GarageInfo field).
        cli = one(srv, "garages")["garages"][0]
        assert [m["vehicle_id"] for m in cli["mouth"]] == [vehicle_id(k) for k in range(1, BATCH)]
        assert cli["mouth_capacity"] == BATCH

        # One at a time, front first, until the mouth is empty.
        entered = [vehicle_id(0)]
        mouth = [m.vehicle_id for m in g.mouth]
        for _ in range(120):
            if not mouth:
                break
            on_road = {e.id for e in c.vehicle_entities()}
            c.step(1)
            g = c.garage()
            new = [e.id for e in c.vehicle_entities() if e.id not in on_road]
            assert len(new) <= 1, new
            assert g.managed == BATCH and g.dispatched == BATCH, g
            if new:
                assert c.op.vehicle(new[0]).vehicle_id == mouth[0], "the front enters first"
                entered.append(mouth.pop(0))
            assert [m.vehicle_id for m in g.mouth] == mouth, g.mouth
        assert mouth == [] and entered == [vehicle_id(k) for k in range(BATCH)], (mouth, entered)
        assert len(c.vehicle_entities()) == BATCH
        assert c.op.vehicle(waiting.id).vehicle_id == vehicle_id(1)  # on the road now
