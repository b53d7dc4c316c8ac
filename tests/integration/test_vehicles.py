"""Vehicles over the socket on the seed-003 corridor (configs/corridor.city.json):
the 600-step acceptance run, garage requests and their graded results, tiers
driven by SetObservers, strategies, despawn, and what a viewer may do.

Every server runs ``--clock manual`` (world commands apply at the start of the
next Step) with its own snapshot db in the test's tmp_path (conftest)."""

import math
import re

from bustle_client import (
    CommandStatus,
    ControlPolicy,
    DispatchGate,
    EntityId,
    EntityKind,
    PolicyReason,
    RejectReason,
    RepresentationHint,
    SignalPhase,
    SimTier,
    VehicleStrategy,
    VehicleStrategyState,
)

from vehicle_helpers import (
    Corridor,
    assert_rejected,
    on_loop,
    small_garage_config,
    start_corridor,
    vehicle_ordinal,
    VEHICLE_ID,
)

FAR = [(5000.0, 5000.0)]
NEAR = [(25.0, 25.0)]


def test_corridor_600_steps_dispatches_all_requests(start_server):
    """The acceptance run: 18 planned requests (r00 first by priority) all get
    a vehicle with VehicleIds 000000-000017, every gate is exercised, the
    signal cycles, and vehicles both wait at the signal and yield."""
    srv = start_corridor(start_server)
    with Corridor(srv, "accept") as c:
        w = c.op.welcome
        assert w.scenario_id == "bustle.corridor.v1"
        assert [(g.id, g.entrance_lane, g.route) for g in w.garages] == [("g0", 0, [0, 1, 2, 3])]
        assert [lane.id for lane in w.lanes][:4] == ["lane0", "lane1", "lane2", "lane3"]
        (sig,) = w.signals
        assert (sig.id, sig.lane) == ("s1", 1)
        assert math.isclose(sig.stop_alpha, 0.82, abs_tol=1e-6)
        assert math.isclose(sig.yield_alpha, 0.35, abs_tol=1e-6)

        assert "vehicle.sedan" in w.archetypes
        entered_vehicles = set()
        phases_seen = set()
        off_loop = []

        signal_deltas = []

        def watch(delta):
            # the baseline lists the signal; later deltas only when it changed
            assert [s.index for s in delta.signals] in ([0], []), delta.signals
            if delta.baseline:
                assert [s.index for s in delta.signals] == [0], delta.signals
            signal_deltas.append(len(delta.signals))
            phases_seen.update(s.phase for s in delta.signals)
            # hooks run after the mirror applied the delta: poses at its step
            for e in c.mirror.vehicles():
                if not on_loop(e.x_m, e.y_m):
                    off_loop.append((delta.step, e))
            for e in delta.entered:
                if e.kind == EntityKind.Vehicle:
                    entered_vehicles.add(e.id)
                    assert VEHICLE_ID.match(delta.labels.get(e.id.index, "")), (e, delta.labels)
                    assert w.archetypes[e.archetype] == "vehicle.sedan", e

        c.on_delta.append(watch)
        policies = set()
        stats_waiting = stats_yielding = 0
        while c.step_index < 600:
            c.step(10)
            st = c.op.stats()
            assert st.step == c.step_index
            assert st.vehicles == len(c.vehicle_entities()), (st, len(c.vehicle_entities()))
            assert st.vehicles_full + st.vehicles_simulated + st.vehicles_coarse == st.vehicles, st
            stats_waiting = max(stats_waiting, st.vehicles_waiting)
            stats_yielding = max(stats_yielding, st.vehicles_yielding)
            for e in c.vehicle_entities():
                info = c.op.vehicle(e.id)
                assert info.id == e.id and info.vehicle_id == e.label
                assert (info.policy, info.tier) == (e.policy, e.sim_tier), (info, e)
                if info.tier == SimTier.Full:
                    # simulated every step: the query and the mirror's reconstruction
                    # (tolerance 0) agree on where it is, to the millimetre (strided
                    # tiers are extrapolated in the stream between their evaluations)
                    assert info.lane == e.lane and abs(info.s_m * 1000 - e.predicted_s_mm) <= 1, (info, e)
                    assert abs(info.x_m - e.x_m) <= 0.002 and abs(info.y_m - e.y_m) <= 0.002, (info, e)
                assert 0.0 <= info.alpha <= 1.0 + 1e-9, info
                policies.add(info.policy)
        assert not off_loop, f"vehicles off the corridor's road: {off_loop[:5]}"

        g = c.garage()
        assert g.id == "g0"
        assert g.queued == [], g
        assert (g.dispatched, g.managed, g.capacity, g.next_vehicle_ordinal) == (18, 18, 18, 18), g
        assert (g.plan_total, g.plan_injected) == (18, 18), g
        assert g.frame_index == 600 and sum(g.gate_steps) == 600, g
        assert g.turnarounds > 0, g
        assert g.gate_count(DispatchGate.Cooldown) > 0, g
        assert g.gate_count(DispatchGate.EntranceBlocked) > 0, g
        assert (g.rejected_invalid, g.rejected_duplicate, g.rejected_queue_full, g.canceled) == (0, 0, 0, 0)

        st = c.op.stats()
        assert st.vehicles == 18 and st.pedestrians == 8, st
        assert len(entered_vehicles) == 18, entered_vehicles
        assert entered_vehicles == {e.id for e in c.vehicle_entities()}

        infos = c.infos()
        assert sorted(vehicle_ordinal(i) for i in infos.values()) == list(range(18))
        by_ordinal = {vehicle_ordinal(i): i for i in infos.values()}
        assert by_ordinal[0].request_id == "r00", "the priority-100 request is dispatched first"
        assert sorted(i.request_id for i in infos.values()) == [f"r{k:02d}" for k in range(18)]
        assert {(i.garage, i.prototype) for i in infos.values()} == {("g0", "sedan")}
        assert all(i.strategy == VehicleStrategyState.RouteFollow for i in infos.values())

        (si,) = c.op.signals()
        assert (si.id, si.lane) == ("s1", 1)
        assert si.cycles > 0, si
        assert si.phase == c.mirror.signals[0], (si, c.mirror.signals)
        assert phases_seen == {SignalPhase.Open, SignalPhase.Yield, SignalPhase.Closed}, phases_seen

        assert ControlPolicy.WaitingAtSignal in policies, policies
        assert ControlPolicy.Yielding in policies, policies
        assert stats_waiting > 0 and stats_yielding > 0, (stats_waiting, stats_yielding)


def test_garage_requests_graded_results_and_queue_untouched_by_rejections(start_server):
    """After the corridor's 18 vehicles are out (capacity 18 reached, nothing
    despawns on a loop) only commands change the queue."""
    srv = start_corridor(start_server)
    with Corridor(srv, "req") as c:
        c.step_to(600, chunk=100)
        g = c.garage()
        assert (g.queued, g.managed, g.capacity) == ([], 18, 18), g

        def request(request_id, priority=10, garage="g0", prototype="sedan", lane="lane0"):
            return c.apply("GarageRequest", garage=garage, request_id=request_id,
                           prototype=prototype, lane=lane, priority=priority)

        r = request("x1", priority=5)
        assert r.status == CommandStatus.Accepted, r
        assert r.message == "enqueue ordinal 18", "the 18 planned requests took ordinals 0-17"
        r = request("x2", priority=50)
        assert r.accepted and r.message == "enqueue ordinal 19", r
        r = request("x3", priority=5)
        assert r.accepted and r.message == "enqueue ordinal 20", r
        g = c.garage()
        assert g.queued == ["x2", "x1", "x3"], "priority desc, then arrival order"
        assert g.last_gate == DispatchGate.Capacity, g
        capacity_steps = g.gate_count(DispatchGate.Capacity)
        assert capacity_steps > 0
        queued = g.queued

        # each rejection: graded reason, message naming the field, queue untouched
        checks = [
            (dict(request_id="y1", garage="nope"), RejectReason.InvalidArgument, "garage:"),
            (dict(request_id="y2", prototype="truck"), RejectReason.InvalidArgument, "prototype:"),
            (dict(request_id="y3", lane="lane1"), RejectReason.InvalidArgument, "lane:"),
            (dict(request_id=""), RejectReason.InvalidArgument, "request_id:"),
            (dict(request_id="x1", priority=99), RejectReason.Duplicate, None),
            (dict(request_id="r05"), RejectReason.Duplicate, None),
        ]
        before = c.garage()
        for fields, reason, start in checks:
            r = assert_rejected(request(**fields), reason, start)
            assert c.garage().queued == queued, (fields, c.garage())
        assert "queued" in assert_rejected(request("x2"), RejectReason.Duplicate).message
        assert "dispatched" in assert_rejected(request("r00"), RejectReason.Duplicate).message
        after = c.garage()
        assert after.queued == queued
        assert after.rejected_invalid == before.rejected_invalid + 3, "unknown garage counts nowhere"
        assert after.rejected_duplicate == before.rejected_duplicate + 4
        assert after.rejected_queue_full == 0
        assert after.dispatched == 18 and after.next_vehicle_ordinal == 18

        # cancel: queued -> Accepted; not queued -> NotFound; the rest keeps its order
        r = c.apply("CancelGarageRequest", garage="g0", request_id="x1")
        assert r.accepted, r
        assert c.garage().queued == ["x2", "x3"] and c.garage().canceled == 1
        assert_rejected(c.apply("CancelGarageRequest", garage="g0", request_id="x1"), RejectReason.NotFound)
        assert_rejected(c.apply("CancelGarageRequest", garage="g0", request_id="zzz"), RejectReason.NotFound)
        assert_rejected(c.apply("CancelGarageRequest", garage="nope", request_id="x2"),
                        RejectReason.InvalidArgument, "garage:")
        assert_rejected(c.apply("CancelGarageRequest", garage="g0", request_id="r03"),
                        RejectReason.InvalidArgument)
        assert c.garage().queued == ["x2", "x3"] and c.garage().canceled == 1

        # a canceled id may be requested again (it is neither queued nor dispatched)
        r = request("x1", priority=1)
        assert r.accepted and r.message == "enqueue ordinal 21", r
        assert c.garage().queued == ["x2", "x3", "x1"]

        # free one place: the queue head gets the next VehicleId, never a reused one
        g = c.free_place_and_wait(19)
        assert (g.dispatched, g.next_vehicle_ordinal, g.queued, g.managed) == (19, 19, ["x3", "x1"], 18), g
        new = [i for i in c.infos().values() if i.request_id == "x2"]
        assert len(new) == 1 and new[0].vehicle_id == "vehicle.g0.000018", new
        assert c.op.stats().vehicles == 18


def test_garage_queue_full(start_server, tmp_path):
    cfg = small_garage_config(tmp_path, capacity=1, queue_depth=2)
    srv = start_corridor(start_server, config=cfg)
    with Corridor(srv, "full") as c:
        def request(request_id):
            return c.apply("GarageRequest", garage="g0", request_id=request_id,
                           prototype="sedan", lane="lane0", priority=10)

        g = c.garage()
        assert (g.queued, g.capacity, g.plan_total) == ([], 1, 0), g
        assert request("a").accepted
        g = c.garage()
        assert (g.queued, g.dispatched, g.managed) == ([], 1, 1), "dispatched in the step that queued it"
        assert request("b").accepted and request("c").accepted
        assert c.garage().queued == ["b", "c"]
        r = assert_rejected(request("d"), RejectReason.QueueFull)
        assert "2" in r.message, r
        g = c.garage()
        assert (g.queued, g.rejected_queue_full) == (["b", "c"], 1), g
        # full is checked after validity and duplicates
        assert_rejected(request("b"), RejectReason.Duplicate)
        assert_rejected(c.apply("GarageRequest", garage="g0", request_id="e", prototype="bus",
                                lane="lane0"), RejectReason.InvalidArgument, "prototype:")
        assert c.garage().queued == ["b", "c"]
        assert c.garage().rejected_queue_full == 1
        # room again after a cancel
        assert c.apply("CancelGarageRequest", garage="g0", request_id="b").accepted
        r = request("d")
        assert r.accepted and r.message == "enqueue ordinal 3", r
        c.step(10)  # past the cooldown (checked before capacity) the capacity gate holds
        g = c.garage()
        assert (g.queued, g.dispatched, g.last_gate) == (["c", "d"], 1, DispatchGate.Capacity), g
        assert c.op.stats().vehicles == 1


def test_set_observers_drives_tiers_and_coarse_vehicles_keep_moving(start_server):
    srv = start_corridor(start_server)
    with Corridor(srv, "tiers") as c:
        c.step_to(120)
        before = c.infos()
        assert len(before) >= 5, len(before)
        assert all(i.tier != SimTier.Coarse for i in before.values())
        names = {k: i.vehicle_id for k, i in before.items()}
        left = []
        c.on_delta.append(lambda d: left.extend(d.left))

        assert c.apply("SetObservers", points=FAR).accepted
        for _ in range(8):
            st = c.op.stats()
            if st.vehicles and st.vehicles_coarse == st.vehicles:
                break
            c.step(1)
        st = c.op.stats()
        assert st.vehicles_coarse == st.vehicles > 0 and st.vehicles_full == st.vehicles_simulated == 0, st
        infos = c.infos()
        assert set(before) <= set(infos), "no vehicle left"
        new_ids = set(infos) - set(before)  # dispatched meanwhile
        assert {k: infos[k].vehicle_id for k in before} == names, "a tier change keeps identities"
        assert all(i.tier == SimTier.Coarse for i in infos.values())
        assert not left, f"entities left during a tier change: {left}"

        # Coarse vehicles advance at stride 8: in 16 steps each one is evaluated
        # exactly twice, so its position changes at most twice -- and most move.
        coarse = sorted(set(infos) - new_ids)
        last = {k: (infos[k].x_m, infos[k].y_m) for k in coarse}
        changes = {k: 0 for k in coarse}
        first = dict(last)
        for _ in range(16):
            c.step(1)
            for k in coarse:
                i = c.op.vehicle(k)
                assert i.tier == SimTier.Coarse, i
                if (i.x_m, i.y_m) != last[k]:
                    changes[k] += 1
                    last[k] = (i.x_m, i.y_m)
        moved = [k for k in coarse if last[k] != first[k]]
        assert len(moved) * 2 >= len(coarse), (len(moved), len(coarse), changes)
        assert max(changes.values()) <= 2, changes
        # the viewer still has every one of them: Coarse is drawn as a Marker
        # (default budgets), and its pose is extrapolated between evaluations
        assert coarse and all((e.sim_tier, e.representation) == (SimTier.Coarse, RepresentationHint.Marker)
                   for e in c.mirror.vehicles() if e.id in infos)

        # no observers at all: everything is Coarse
        assert c.apply("SetObservers", points=[]).accepted
        c.step(2)
        st = c.op.stats()
        assert st.vehicles_coarse == st.vehicles, st

        # back near: nothing stays Coarse, identities unchanged
        assert c.apply("SetObservers", points=NEAR).accepted
        for _ in range(8):
            if c.op.stats().vehicles_coarse == 0:
                break
            c.step(1)
        st = c.op.stats()
        assert st.vehicles_coarse == 0 and st.vehicles_full + st.vehicles_simulated == st.vehicles, st
        infos = c.infos()
        assert all(i.tier in (SimTier.Full, SimTier.Simulated) for i in infos.values())
        assert {k: infos[k].vehicle_id for k in before} == names
        assert not left, left

        # invalid observer sets are rejected and change nothing
        assert_rejected(c.apply("SetObservers", points=[(1.0, 1.0)] * 65), RejectReason.InvalidArgument)
        assert_rejected(c.apply("SetObservers", points=[(float("nan"), 0.0)]),
                        RejectReason.InvalidArgument)
        c.step(2)
        assert c.op.stats().vehicles_coarse == 0


def _settle(c, vid, steps=4):
    """Run enough steps for a Simulated/Coarse vehicle to be evaluated."""
    c.step(steps)
    return c.op.vehicle(vid)


def test_vehicle_strategy_parked_and_back(start_server):
    srv = start_corridor(start_server)
    with Corridor(srv, "strategy") as c:
        c.step_to(40)
        infos = c.infos()
        (vid,) = [k for k, i in infos.items() if i.vehicle_id == "vehicle.g0.000000"]

        r = c.apply("SetVehicleStrategy", index=vid.index, generation=vid.generation,
                    strategy=VehicleStrategy.Parked)
        assert r.accepted, r
        parked = _settle(c, vid)
        assert (parked.strategy, parked.policy) == (VehicleStrategyState.Parked, ControlPolicy.Parked), parked
        # NotDue: a Simulated vehicle's logic did not run on this (odd) step
        assert parked.reason in (PolicyReason.ParkedStrategy, PolicyReason.NotDue), parked
        assert parked.speed_mps == 0.0
        for _ in range(20):
            c.step(1)
            now = c.op.vehicle(vid)
            assert now.policy == ControlPolicy.Parked, now
            assert (now.lane, now.s_m, now.x_m, now.y_m, now.steps_advanced) == (
                parked.lane, parked.s_m, parked.x_m, parked.y_m, parked.steps_advanced), now
        state = c.mirror[vid]
        assert state.speed_mps == 0.0 and state.policy == ControlPolicy.Parked, state
        assert abs(state.x_m - parked.x_m) <= 0.002 and abs(state.y_m - parked.y_m) <= 0.002, state

        assert c.apply("SetVehicleStrategy", index=vid.index, generation=vid.generation,
                       strategy="RouteFollow").accepted
        for _ in range(80):
            c.step(1)
            now = c.op.vehicle(vid)
            if (now.x_m, now.y_m) != (parked.x_m, parked.y_m):
                break
        assert (now.x_m, now.y_m) != (parked.x_m, parked.y_m), f"never moved again: {now}"
        assert now.strategy == VehicleStrategyState.RouteFollow and now.policy != ControlPolicy.Parked, now
        assert now.steps_advanced > parked.steps_advanced

        # Manual: the strategy is reported and arbitrated (ManualControl)
        assert c.apply("SetVehicleStrategy", index=vid.index, generation=vid.generation,
                       strategy=VehicleStrategy.Manual).accepted
        manual = _settle(c, vid)
        assert manual.strategy == VehicleStrategyState.Manual and manual.policy == ControlPolicy.Manual, manual

        # bad strategy value / not a vehicle
        assert_rejected(c.apply("SetVehicleStrategy", index=vid.index, generation=vid.generation,
                                strategy=9), RejectReason.InvalidArgument, "strategy")
        ped = c.mirror.pedestrians()[0].id
        assert_rejected(c.apply("SetVehicleStrategy", index=ped.index, generation=ped.generation,
                                strategy=VehicleStrategy.Parked), RejectReason.UnknownEntity)
        assert_rejected(c.apply("SetVehicleStrategy", index=vid.index, generation=vid.generation + 1,
                                strategy=VehicleStrategy.Parked), RejectReason.UnknownEntity)
        assert_rejected(c.op.query_vehicle(ped), RejectReason.UnknownEntity)


def test_despawn_vehicle(start_server):
    srv = start_corridor(start_server)
    with Corridor(srv, "despawn") as c:
        c.step_to(60)
        left_at = {}
        c.on_delta.append(lambda d: left_at.update({e: d.step for e in d.left}))
        vid = c.vehicle_entities()[-1].id
        info = c.op.vehicle(vid)
        st0 = c.op.stats()
        g0 = c.garage()

        r = c.apply("DespawnEntity", index=vid.index, generation=vid.generation)
        assert r.accepted, r
        assert left_at.get(vid) == c.step_index, (left_at, c.step_index)
        assert vid not in c.mirror
        assert_rejected(c.op.query_vehicle(vid), RejectReason.UnknownEntity)
        st = c.op.stats()
        assert st.vehicles == st0.vehicles - 1 + (c.garage().dispatched - g0.dispatched), (st0, st)
        assert c.garage().managed == g0.managed - 1 + (c.garage().dispatched - g0.dispatched)
        assert info.vehicle_id not in {i.vehicle_id for i in c.infos().values()}
        # the same handle again: gone
        assert_rejected(c.apply("DespawnEntity", index=vid.index, generation=vid.generation),
                        RejectReason.UnknownEntity)


def test_viewer_may_query_but_not_command_vehicles(start_server):
    srv = start_corridor(start_server)
    with Corridor(srv, "roles") as c:
        c.step_to(30)
        vid = c.vehicle_entities()[0].id
        v = c.sub  # the subscribed viewer
        queued = c.garage().queued
        forbidden = [
            ("GarageRequest", dict(garage="g0", request_id="v1", prototype="sedan", lane="lane0", priority=10)),
            ("CancelGarageRequest", dict(garage="g0", request_id=queued[0] if queued else "r01")),
            ("SetVehicleStrategy", dict(index=vid.index, generation=vid.generation, strategy=2)),
            ("SetObservers", dict(points=FAR)),
            ("DespawnEntity", dict(index=vid.index, generation=vid.generation)),
        ]
        for name, fields in forbidden:
            r = v.command(name, 3.0, **fields)  # answered at once, no step needed
            assert_rejected(r, RejectReason.NotAuthorized)
            assert name in r.message, r
        c.step(2)
        g = c.garage()
        assert "v1" not in g.queued and g.canceled == 0 and g.rejected_invalid == 0, g
        assert c.op.vehicle(vid).strategy == VehicleStrategyState.RouteFollow
        assert c.op.stats().vehicles_coarse == 0

        g = v.garages()
        assert [x.id for x in g] == ["g0"]
        assert [s.id for s in v.signals()] == ["s1"]
        info = v.vehicle(vid)
        assert info.id == vid and re.match(r"^vehicle\.g0\.\d{6}$", info.vehicle_id), info
        assert_rejected(v.query_vehicle(EntityId(60_000, 1)), RejectReason.UnknownEntity)
