"""Population features of the Python client without a server: spawn pipeline,
lifecycle settings and batches, entity/population queries, observer views,
Delta dots/retiring, Welcome chains (codec, Session against a fake server, mirror)."""

import math

import pytest

import server_frames as sf
from bustle.wire.CommandBody import CommandBody

from bustle_client import (
    BatchStatus,
    BustleTimeout,
    ChainDots,
    CommandRejected,
    DespawnReason,
    EntityId,
    EntityMirror,
    LaneChain,
    LifecycleOpKind,
    LifecycleState,
    MalformedFrameError,
    MirrorError,
    ObserverView,
    PedestrianOrigin,
    PriorityClass,
    ProtocolError,
    RejectReason,
    RepresentationHint,
    SimTier,
    SpawnFailed,
    SpawnFailure,
    SpawnRequest,
    SpawnState,
    codec,
    despawn_op,
    spawn_op,
)
from bustle_client.messages import Delta, EntityEnter, EntityKind, SpawnUpdate


def _body(payload):
    _, cmd = sf.parse_client_frame(payload)
    return sf.parse_command_body(cmd)


def _cmd(name, **fields):
    return _body(codec.build_command(1, name, **fields))


# ------------------------------------------------------------------ encoding


def test_spawn_pedestrian_encodes_optional_zone_lane_priority_and_timeout():
    t, b = _cmd("SpawnPedestrian", zone="market", lane="market.loop", priority="story",
                timeout_ms=2500)
    assert t == CommandBody.SpawnPedestrian
    assert (b.Zone(), b.Lane(), b.Priority(), b.TimeoutMs()) == (b"market", b"market.loop", 0, 2500)
    t, b = _cmd("SpawnPedestrian")
    assert (b.Zone(), b.Lane(), b.Priority(), b.TimeoutMs()) == (None, None, PriorityClass.Quest, 0)
    _, b = _cmd("SpawnPedestrian", priority=PriorityClass.Background)
    assert b.Priority() == 3
    _, b = _cmd("SpawnPedestrian", priority=9)  # the server judges out-of-range values
    assert b.Priority() == 9


def _route(b):
    return [b.Route(i) for i in range(b.RouteLength())]


def test_spawn_pedestrian_encodes_a_route_in_order():
    _, b = _cmd("SpawnPedestrian", route=["x.facilities.market", "market.loop", "market.loop"])
    assert _route(b) == [b"x.facilities.market", b"market.loop", b"market.loop"]
    assert (b.Zone(), b.Lane()) == (None, None)
    _, b = _cmd("SpawnPedestrian", zone="market", lane="market.loop", route=("market.loop",))
    assert (b.Lane(), _route(b)) == (b"market.loop", [b"market.loop"])
    # No route, None or an empty one: nothing is sent (wander from the start).
    for fields in ({}, {"route": None}, {"route": []}):
        _, b = _cmd("SpawnPedestrian", **fields)
        assert b.RouteIsNone(), fields
    # Sent as given: the server judges the ids, their succession and their number.
    _, b = _cmd("SpawnPedestrian", route=["a"] * 300)
    assert b.RouteLength() == 300


def test_spawn_pedestrian_route_must_be_a_sequence_of_lane_ids():
    with pytest.raises(TypeError, match="sequence of lane ids.*not a str"):
        codec.build_command(1, "SpawnPedestrian", route="market.loop,x.market.office")
    with pytest.raises(TypeError, match=r"route\[1\] must be a str"):
        codec.build_command(1, "SpawnPedestrian", route=["market.loop", 7])
    with pytest.raises(TypeError, match=r"route\[0\]"):
        spawn_op(route=[None])


def test_spawn_pedestrian_arguments_are_checked():
    with pytest.raises(ValueError, match="unknown priority class 'boss'.*Story"):
        codec.build_command(1, "SpawnPedestrian", priority="boss")
    with pytest.raises(ValueError, match="does not fit a ubyte"):
        codec.build_command(1, "SpawnPedestrian", priority=256)
    with pytest.raises(TypeError, match="zone"):
        codec.build_command(1, "SpawnPedestrian", zone=3)


@pytest.mark.parametrize("name, body_type", [("CancelSpawn", CommandBody.CancelSpawn),
                                             ("QuerySpawn", CommandBody.QuerySpawn)])
def test_handle_commands_encode_the_handle(name, body_type):
    t, b = _cmd(name, handle=2**64 - 1)
    assert t == body_type and b.Handle() == 2**64 - 1


@pytest.mark.parametrize("name, body_type", [("ReportAttached", CommandBody.ReportAttached),
                                             ("QueryEntity", CommandBody.QueryEntity),
                                             ("DespawnEntity", CommandBody.DespawnEntity)])
def test_id_commands_encode_the_entity_id(name, body_type):
    t, b = _cmd(name, index=12, generation=3)
    assert t == body_type and (b.Id().Index(), b.Id().Generation()) == (12, 3)


def test_query_population_has_an_empty_body():
    t, b = _cmd("QueryPopulation")
    assert t == CommandBody.QueryPopulation and b is None


def test_set_lifecycle_sends_every_field():
    _, b = _cmd("SetLifecycle", growth_quota=8, recycle_quota=0, interval_ms=100, migration_budget=16)
    assert (b.GrowthQuota(), b.RecycleQuota(), b.IntervalMs(), b.MigrationBudget()) == (8, 0, 100, 16)
    _, b = _cmd("SetLifecycle")
    assert (b.GrowthQuota(), b.RecycleQuota(), b.IntervalMs(), b.MigrationBudget()) == (2, 2, 250, 4)


def test_lifecycle_batch_encodes_spawn_and_despawn_ops_in_order():
    t, b = _cmd("LifecycleBatch", ops=[
        spawn_op(zone="office", priority="community", timeout_ms=7),
        despawn_op(EntityId(5, 2)),
        ("spawn", {"lane": "l0"}),
        ("Despawn", (6, 1)),
        spawn_op(),
    ])
    assert t == CommandBody.LifecycleBatch and b.OpsLength() == 5
    ops = [b.Ops(i) for i in range(5)]
    assert [o.Kind() for o in ops] == [0, 1, 0, 1, 0]
    s0 = ops[0].Spawn()
    assert (s0.Zone(), s0.Lane(), s0.Priority(), s0.TimeoutMs()) == (b"office", None, 2, 7)
    assert ops[0].Id() is None and ops[1].Spawn() is None
    assert (ops[1].Id().Index(), ops[1].Id().Generation()) == (5, 2)
    assert ops[2].Spawn().Lane() == b"l0" and ops[2].Spawn().Priority() == 1
    assert (ops[3].Id().Index(), ops[3].Id().Generation()) == (6, 1)
    assert ops[4].Spawn().Zone() is None
    assert all(ops[i].Spawn().RouteIsNone() for i in (0, 2, 4))


def test_lifecycle_batch_spawn_ops_carry_their_routes():
    _, b = _cmd("LifecycleBatch", ops=[
        spawn_op(route=["x.facilities.market", "market.loop"]),
        ("spawn", {"zone": "office", "route": ["office.loop"]}),
        spawn_op(zone="market"),
    ])
    ops = [b.Ops(i).Spawn() for i in range(b.OpsLength())]
    assert _route(ops[0]) == [b"x.facilities.market", b"market.loop"]
    assert (ops[1].Zone(), _route(ops[1])) == (b"office", [b"office.loop"])
    assert ops[2].RouteIsNone()


def test_empty_lifecycle_batch_has_an_empty_vector():
    _, b = _cmd("LifecycleBatch", ops=[])
    assert b.OpsLength() == 0 and not b.OpsIsNone()


def test_lifecycle_op_helpers():
    op = spawn_op("market", "market.loop", PriorityClass.Story, 10)
    assert op.kind == LifecycleOpKind.Spawn and op.id is None
    assert op.spawn == SpawnRequest("market", "market.loop", PriorityClass.Story, 10)
    assert op.spawn.route == ()
    routed = spawn_op(route=["x.facilities.market", "market.loop"])
    # Kept as a tuple: the request stays immutable and comparable.
    assert routed.spawn.route == ("x.facilities.market", "market.loop")
    assert routed.spawn == SpawnRequest(priority="quest", route=["x.facilities.market", "market.loop"])
    assert SpawnRequest(route=None).route == ()
    assert despawn_op((3, 4)).id == EntityId(3, 4)
    with pytest.raises(ValueError, match="lifecycle op kind"):
        codec.build_command(1, "LifecycleBatch", ops=[("teleport", (1, 1))])


def _views(b):
    return [(b.Views(i).ZM(), b.Views(i).HasHeading(), b.Views(i).HeadingRad())
            for i in range(b.ViewsLength())]


def test_set_observers_without_heights_or_headings_sends_no_views():
    _, b = _cmd("SetObservers", points=[(1, 2), (3, 4)])
    assert b.PointsLength() == 2 and b.ViewsIsNone()


def test_set_observers_derives_one_view_per_point_when_any_has_z_or_heading():
    _, b = _cmd("SetObservers", points=[(1, 2), (3, 4, 12.5), (5, 6, 0, math.pi / 2), (7, 8, 1, None)])
    assert [(b.Points(i).X(), b.Points(i).Y()) for i in range(b.PointsLength())] == [
        (1, 2), (3, 4), (5, 6), (7, 8)]
    assert _views(b) == [(0.0, False, 0.0), (12.5, False, 0.0), (0.0, True, math.pi / 2),
                         (1.0, False, 0.0)]


def test_set_observers_explicit_views_are_sent_as_given():
    _, b = _cmd("SetObservers", points=[(1, 2), (3, 4)], views=[ObserverView(2.0, 0.5)])
    assert b.PointsLength() == 2 and _views(b) == [(2.0, True, 0.5)]
    _, b = _cmd("SetObservers", points=[(1, 2)], views=[(3.0, None), 4.5])
    assert _views(b) == [(3.0, False, 0.0), (4.5, False, 0.0)]
    with pytest.raises(ValueError, match="not both"):
        codec.build_command(1, "SetObservers", points=[(1, 2, 3)], views=[1.0])
    with pytest.raises(ValueError, match="expected"):
        codec.build_command(1, "SetObservers", points=[(1,)])


# ------------------------------------------------------------------ decoding


SPAWN = {"Handle": 7, "State": SpawnState.IdentityCreated, "Terminal": False, "Entity": (40, 2),
         "Zone": "market", "Lane": 0, "Priority": PriorityClass.Quest, "RequestedStep": 11,
         "StateStep": 12}


def test_spawn_update_decodes():
    msg = codec.decode_server_frame(sf.spawn_update(SPAWN))
    assert isinstance(msg, SpawnUpdate)
    st = msg.spawn
    assert (st.handle, st.state, st.failure, st.terminal, st.entity, st.zone, st.lane, st.priority,
            st.requested_step, st.state_step) == (
        7, SpawnState.IdentityCreated, SpawnFailure.None_, False, EntityId(40, 2), "market", 0,
        PriorityClass.Quest, 11, 12)
    assert st.has_entity


def test_spawn_status_defaults_mean_no_lane_and_no_entity():
    st = codec.decode_server_frame(sf.spawn_update({"Handle": 1})).spawn
    assert st.state == SpawnState.Queued and st.lane is None and st.zone == ""
    assert st.entity == EntityId(0, 0) and not st.has_entity
    assert st.priority == PriorityClass.Story  # a table default of 0 (the server always writes it)


def test_spawn_update_without_status_is_malformed():
    with pytest.raises(MalformedFrameError, match="SpawnUpdate"):
        codec.decode_server_frame(sf.spawn_update(None))


def test_command_result_spawn_fields_decode():
    r = codec.decode_server_frame(sf.command_result(3, handle=41, entity=(9, 4),
                                                    batch=BatchStatus.Committed, handles=[41, 42],
                                                    spawn=dict(SPAWN, State=SpawnState.Canceled,
                                                               Terminal=True)))
    assert (r.handle, r.entity, r.batch, r.handles) == (41, EntityId(9, 4), BatchStatus.Committed,
                                                        [41, 42])
    assert r.spawn.state == SpawnState.Canceled and r.spawn.terminal
    plain = codec.decode_server_frame(sf.command_result(4))
    assert (plain.handle, plain.entity, plain.batch, plain.handles) == (0, None, BatchStatus.None_, None)
    assert plain.entity_info is None and plain.population is None and plain.spawn is None
    null = codec.decode_server_frame(sf.command_result(5, entity=(0, 0), handles=[]))
    assert null.entity is None and null.handles == []


def test_entity_info_decodes_every_axis():
    info = {"Id": (3, 1), "Alive": True, "Kind": 0, "Lifecycle": LifecycleState.Retiring,
            "Tier": SimTier.Full, "Representation": RepresentationHint.Actor, "Priority": 2,
            "Origin": PedestrianOrigin.Resident, "Saveable": True, "ForcedFull": True,
            "Community": "market_vendors", "Zone": "market", "WorkPoint": "stalls", "WorkSlot": 5,
            "Lane": 2, "SM": 1.5, "XM": -3.25, "YM": 40.0, "EffectiveDistanceM": 12.0,
            "SpawnHandle": 0, "SpawnState": 0, "RetiringReason": DespawnReason.Requested,
            "ReleaseStep": 99}
    e = codec.decode_server_frame(sf.command_result(1, entity_info_=info)).entity_info
    assert (e.id, e.alive, e.kind, e.lifecycle, e.tier, e.representation, e.priority, e.origin) == (
        EntityId(3, 1), True, EntityKind.Pedestrian, LifecycleState.Retiring, SimTier.Full,
        RepresentationHint.Actor, PriorityClass.Community, PedestrianOrigin.Resident)
    assert (e.saveable, e.forced_full, e.community, e.zone, e.work_point, e.work_slot, e.lane) == (
        True, True, "market_vendors", "market", "stalls", 5, 2)
    assert (e.s_m, e.x_m, e.y_m, e.effective_distance_m) == (1.5, -3.25, 40.0, 12.0)
    assert (e.retiring_reason, e.release_step) == (DespawnReason.Requested, 99)
    bare = codec.decode_server_frame(sf.command_result(1, entity_info_={"Id": (8, 8)})).entity_info
    assert bare.work_slot is None and bare.lane is None and bare.community == ""
    assert bare.lifecycle == LifecycleState.Requested and not bare.alive


POPULATION = {
    "Hour": 12.5, "TimeScale": 60, "GrowthQuota": 8, "RecycleQuota": 3, "IntervalMs": 100,
    "MigrationBudget": 5,
    "Communities": [{"Id": "vendors", "BasePopulation": 24, "Target": 12, "Zone": "market",
                     "Active": 10, "Dormant": 14, "Saveable": True},
                    {"Id": "clerks", "BasePopulation": 24, "Target": 18, "Zone": "office",
                     "Active": 18, "Dormant": 6}],
    "Residents": 48, "ResidentsActive": 28, "ResidentsRetiring": 1, "Background": 100,
    "Spawned": 4, "PedestrianTarget": 120, "HandoffsPending": 2,
    "SpawnLive": [12, 8, 0, 3], "SpawnTotals": [20, 8, 3, 3, 1, 1, 0, 2, 0],
    "SpawnRequested": 20, "SpawnDeferredByCap": 12, "SpawnDeferredByCapacity": 1,
    "SpawnDeferredByZone": 2, "Retiring": 3, "FadedTotal": 7, "FadeSkippedTotal": 9,
    "DespawnedByReason": [0, 0, 0, 5, 2], "Tiers": [4, 50, 70], "TierPromoted": 1,
    "TierDemoted": 2, "TierDeferred": 3, "ForcedFull": 1, "ForcedOverflow": 0,
    "ForceFullRefused": 6, "LedgerFragments": 30, "LedgerDeficit": 2.5, "LedgerSurplus": 1.25,
    "LedgerMaxDeficit": 0.75,
}


def test_population_info_decodes_with_readers_by_enum():
    p = codec.decode_server_frame(sf.command_result(1, population=POPULATION)).population
    assert (p.hour, p.time_scale, p.growth_quota, p.recycle_quota, p.interval_ms,
            p.migration_budget) == (12.5, 60, 8, 3, 100, 5)
    assert [c.id for c in p.communities] == ["vendors", "clerks"]
    v = p.community("vendors")
    assert (v.base_population, v.target, v.zone, v.active, v.dormant, v.saveable) == (
        24, 12, "market", 10, 14, True)
    assert p.residents_dormant == 20 and p.residents_active + p.residents_dormant == p.residents
    assert p.live(SpawnState.Queued) == 12 and p.live(SpawnState.IdentityCreated) == 8
    assert p.live(SpawnState.TimedOut) == 0  # past the end of a shorter vector
    assert p.total(SpawnState.Canceled) == 2 and p.spawn_deferred_by_cap == 12
    assert p.despawned(DespawnReason.LaneDeadEnd) == 5 and p.despawned(DespawnReason.Overpopulated) == 0
    assert (p.tier(SimTier.Full), p.tier(SimTier.Coarse)) == (4, 70)
    assert (p.ledger_fragments, p.ledger_deficit, p.force_full_refused, p.faded_total) == (30, 2.5, 6, 7)
    with pytest.raises(KeyError):
        p.community("nobody")


def test_zone_info_handoff_fields_decode():
    b = sf.flatbuffers.Builder(128)
    from bustle.wire import CommandResult as CR, ZoneInfo as ZI
    zid = b.CreateString("office")
    ZI.Start(b)
    ZI.AddId(b, zid)
    ZI.AddHandoffsStarted(b, 4)
    ZI.AddHandoffsAccepted(b, 3)
    ZI.AddHandoffsReturned(b, 1)
    ZI.AddRetiring(b, 2)
    zone = ZI.End(b)
    vec = sf._offsets_vector(b, CR.StartZonesVector, [zone])
    CR.Start(b)
    CR.AddRequestId(b, 1)
    CR.AddZones(b, vec)
    (z,) = codec.decode_server_frame(sf._finish(b, sf.SM.CommandResult, CR.End(b))).zones
    assert (z.id, z.handoffs_started, z.handoffs_accepted, z.handoffs_returned, z.retiring) == (
        "office", 4, 3, 1, 2)


def test_welcome_decodes_chains_and_dot_rate():
    w = codec.decode_server_frame(sf.welcome(chains=[([0, 3], True, True, 140.5), ([6], False, False, 200.0)],
                                             dots_every_steps=10))
    assert w.chains == [LaneChain([0, 3], True, True, 140.5), LaneChain([6], False, False, 200.0)]
    assert w.dots_every_steps == 10
    old = codec.decode_server_frame(sf.welcome())
    assert old.chains == [] and old.dots_every_steps == 0


def test_delta_decodes_dots_and_retiring():
    d = codec.decode_server_frame(sf.delta(20, dots=[(0, 7), (1, 65535)], retiring=[(3, 1), (2**32 - 1, 9)]))
    assert d.dots == [ChainDots(0, 7), ChainDots(1, 65535)]
    assert d.retiring == [EntityId(3, 1), EntityId(2**32 - 1, 9)]
    plain = codec.decode_server_frame(sf.delta(21))
    assert plain.dots == [] and plain.retiring == []


def test_truncated_population_frames_raise_only_malformed_frame_error():
    payload = sf.command_result(1, population=POPULATION, entity_info_={"Id": (1, 1), "Zone": "z"})
    for cut in range(8, len(payload), 7):
        try:
            codec.decode_server_frame(payload[:cut])
        except MalformedFrameError:
            pass


# ------------------------------------------------------------------ session


def _spawn(handle, state, **kw):
    terminal = state in (SpawnState.ReadyForGameplay, SpawnState.Failed, SpawnState.Canceled,
                         SpawnState.TimedOut)
    return sf.spawn_update(dict(SPAWN, Handle=handle, State=state, Terminal=terminal, **kw))


def test_spawn_pedestrian_returns_the_handle_and_wait_spawn_collects_states(pair):
    s, srv = pair
    srv.send(_spawn(3, SpawnState.IdentityCreated), sf.delta(1, baseline=True),
             sf.command_result(1, handle=3),
             _spawn(4, SpawnState.IdentityCreated),
             _spawn(3, SpawnState.Registered), _spawn(3, SpawnState.RepresentationRequested),
             _spawn(3, SpawnState.Attached), _spawn(3, SpawnState.ReadyForGameplay))
    r = s.spawn_pedestrian(zone="market", priority="story")
    _, cmd = srv.read()
    t, body = sf.parse_command_body(cmd)
    assert t == CommandBody.SpawnPedestrian and body.Zone() == b"market" and body.Priority() == 0
    assert r.handle == 3 and s.buffered_spawn_updates == 1 and s.buffered_deltas == 1
    got = s.wait_spawn(r, SpawnState.RepresentationRequested, timeout=1.0)
    assert [u.state for u in got] == [SpawnState.IdentityCreated, SpawnState.Registered,
                                      SpawnState.RepresentationRequested]
    assert [u.state for u in s.wait_spawn(3, timeout=1.0, check=True)] == [
        SpawnState.Attached, SpawnState.ReadyForGameplay]
    assert [u.handle for u in s.spawn_updates()] == [4]
    assert s.buffered_spawn_updates == 0


def test_wait_spawn_stops_at_a_terminal_state_and_check_raises(pair):
    s, srv = pair
    srv.send(_spawn(5, SpawnState.Canceled, Entity=(0, 0)),
             _spawn(6, SpawnState.Failed, Failure=SpawnFailure.EntityGone))
    got = s.wait_spawn(5, SpawnState.ReadyForGameplay, timeout=1.0)
    assert [u.state for u in got] == [SpawnState.Canceled] and got[-1].terminal
    with pytest.raises(SpawnFailed, match="spawn 6 ended Failed.*EntityGone") as info:
        s.wait_spawn(6, check=True, timeout=1.0)
    assert info.value.spawn.failure == SpawnFailure.EntityGone


def test_wait_spawn_timeout_names_handle_and_states_seen(pair):
    s, srv = pair
    srv.send(_spawn(8, SpawnState.IdentityCreated))
    with pytest.raises(BustleTimeout, match="spawn 8 to reach Attached.*IdentityCreated"):
        s.wait_spawn(8, {SpawnState.Attached}, timeout=0.2)


def test_spawn_updates_of_one_handle_and_next_spawn_update(pair):
    s, srv = pair
    srv.send(_spawn(1, SpawnState.IdentityCreated), _spawn(2, SpawnState.IdentityCreated), sf.delta(2))
    assert s.next_delta(timeout=1.0).step == 2
    assert [u.handle for u in s.spawn_updates(2)] == [2]
    assert s.next_spawn_update(timeout=0).handle == 1
    with pytest.raises(BustleTimeout, match="SpawnUpdate"):
        s.next_spawn_update(timeout=0.1)


def test_population_helpers_encode_their_commands(pair):
    s, srv = pair
    srv.send(sf.command_result(1, entity=(4, 2)), sf.command_result(2), sf.command_result(3),
             sf.command_result(4, batch=BatchStatus.Committed, handles=[9]),
             sf.command_result(5, spawn=dict(SPAWN, Handle=9)))
    assert s.cancel_spawn(7).entity == EntityId(4, 2)
    s.report_attached(EntityId(4, 2))
    s.set_lifecycle(growth_quota=8, recycle_quota=1, interval_ms=100, migration_budget=0)
    assert s.lifecycle_batch([spawn_op("market"), despawn_op((1, 1))]).handles == [9]
    assert s.spawn_status(9).handle == 9
    got = [sf.parse_command_body(srv.read()[1]) for _ in range(5)]
    (t0, c), (t1, a), (t2, lc), (t3, batch), (t4, q) = got
    assert (t0, c.Handle()) == (CommandBody.CancelSpawn, 7)
    assert (t1, a.Id().Index(), a.Id().Generation()) == (CommandBody.ReportAttached, 4, 2)
    assert (t2, lc.GrowthQuota(), lc.RecycleQuota(), lc.IntervalMs(), lc.MigrationBudget()) == (
        CommandBody.SetLifecycle, 8, 1, 100, 0)
    assert (t3, batch.OpsLength()) == (CommandBody.LifecycleBatch, 2)
    assert (t4, q.Handle()) == (CommandBody.QuerySpawn, 9)


def test_set_lifecycle_keeps_unnamed_settings_from_the_current_population(pair):
    s, srv = pair
    srv.send(sf.command_result(1, population=POPULATION), sf.command_result(2))
    assert s.set_lifecycle(growth_quota=2).accepted
    t, _ = sf.parse_command_body(srv.read()[1])
    assert t == CommandBody.QueryPopulation
    t, lc = sf.parse_command_body(srv.read()[1])
    assert (t, lc.GrowthQuota(), lc.RecycleQuota(), lc.IntervalMs(), lc.MigrationBudget()) == (
        CommandBody.SetLifecycle, 2, 3, 100, 5)


def test_entity_and_population_queries_return_their_payloads(pair):
    s, srv = pair
    srv.send(sf.command_result(1, entity_info_={"Id": (2, 1), "Alive": True, "Zone": "office"}),
             sf.command_result(2, population=POPULATION),
             sf.command_result(3, status=1, reason=RejectReason.NotFound, message="no spawn handle 77"),
             sf.command_result(4))
    e = s.entity((2, 1))
    assert (e.id, e.alive, e.zone) == (EntityId(2, 1), True, "office")
    assert s.population().residents == 48
    with pytest.raises(CommandRejected, match="NotFound.*no spawn handle 77"):
        s.spawn_status(77)
    with pytest.raises(ProtocolError, match="QueryEntity result without entity_info"):
        s.entity(EntityId(5, 5))
    got = [sf.parse_command_body(srv.read()[1])[0] for _ in range(4)]
    assert got == [CommandBody.QueryEntity, CommandBody.QueryPopulation, CommandBody.QuerySpawn,
                   CommandBody.QueryEntity]


def test_set_observers_helper_sends_views(pair):
    s, srv = pair
    srv.send(sf.command_result(1), sf.command_result(2))
    s.set_observers([(10, 20, 5.0, 0.0)])
    s.set_observers([(10, 20)], views=[(1.0, None), (2.0, None)])
    _, b1 = sf.parse_command_body(srv.read()[1])
    _, b2 = sf.parse_command_body(srv.read()[1])
    assert _views(b1) == [(5.0, True, 0.0)]
    assert b2.PointsLength() == 1 and b2.ViewsLength() == 2


# ------------------------------------------------------------------ mirror


def _state(index, gen=1):
    return EntityEnter(EntityId(index, gen), 0, 0, 0, 0, EntityKind.Pedestrian, SimTier.Full,
                       RepresentationHint.Actor, 0)


def _mirror(strict=True):
    """A mirror over one straight lane."""
    return EntityMirror(codec.decode_server_frame(sf.welcome(lanes=[sf.STRAIGHT_LANE])), strict=strict)


def test_mirror_tracks_retiring_until_left_and_keeps_last_dots():
    m = _mirror()
    m.apply(Delta(1, 0, 0, True, entered=[_state(1), _state(2)]))
    m.apply(Delta(2, 0, 0, False, retiring=[EntityId(1, 1)], dots=[ChainDots(0, 3), ChainDots(1, 0)]))
    assert EntityId(1, 1) in m and m.retiring == {EntityId(1, 1)}
    assert m.dots == {0: 3, 1: 0} and m.dots_step == 2
    m.apply(Delta(3, 0, 0, False))
    assert m.retiring == {EntityId(1, 1)} and m.dots_step == 2  # no dots on this step: kept
    m.apply(Delta(4, 0, 0, False, left=[EntityId(1, 1)]))
    assert EntityId(1, 1) not in m and not m.retiring


def test_mirror_retiring_and_left_in_one_step_is_consistent():
    m = _mirror()
    m.apply(Delta(1, 0, 0, True, entered=[_state(1)]))
    m.apply(Delta(2, 0, 0, False, left=[EntityId(1, 1)], retiring=[EntityId(1, 1)]))
    assert not m and not m.retiring


def test_strict_mirror_rejects_retiring_of_an_absent_entity():
    m = _mirror()
    m.apply(Delta(1, 0, 0, True))
    with pytest.raises(MirrorError, match="began retiring but is not present"):
        m.apply(Delta(2, 0, 0, False, retiring=[EntityId(9, 1)]))
    lax = _mirror(strict=False)
    lax.apply(Delta(1, 0, 0, False, retiring=[EntityId(9, 1)]))
    assert lax.retiring == {EntityId(9, 1)}


def test_mirror_baseline_clears_retiring():
    m = _mirror()
    m.apply(Delta(1, 0, 0, True, entered=[_state(1)], retiring=[EntityId(1, 1)]))
    assert m.retiring == {EntityId(1, 1)}
    m.apply(Delta(5, 0, 0, True, entered=[_state(1)]))
    assert not m.retiring
