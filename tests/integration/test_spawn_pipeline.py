"""Spawn pipeline over the socket (DESIGN §3, spawn_pipeline.hpp): handles and
their graded states pushed as SpawnUpdates, the per-step creation cap,
cancellation before registration, and atomic lifecycle batches. Manual clock,
large-block city (configs/largeblock.city.json: no background pedestrians, 72
residents), so every step is deterministic."""

import json

from population_helpers import LARGEBLOCK, PIPELINE, SPAWN_PER_STEP_CAP, City, start_city, states_of

from bustle_client import (
    BatchStatus,
    CommandStatus,
    EntityId,
    LifecycleState,
    PedestrianOrigin,
    PriorityClass,
    RejectReason,
    SpawnState,
    despawn_op,
    spawn_op,
)


def step_until_spawn(city, handle, state, max_steps=8):
    """Step one at a time until QuerySpawn shows ``state`` (or a terminal
    state); returns the pushed updates of the handle up to that state."""
    for _ in range(max_steps):
        city.step(1)
        now = city.op.spawn_status(handle)
        if now.state == state or now.terminal:
            break
    assert now.state == state, f"spawn {handle} is {now.state!r} after {max_steps} steps, not {state!r}"
    return city.op.wait_spawn(handle, state, timeout=3.0)


def test_spawn_handle_reports_every_stage_until_ready_for_gameplay(start_server):
    srv = start_city(start_server)
    with City(srv, "spawn-stages") as city:
        city.step(2)
        lane = {ln.id: ln.index for ln in city.welcome.lanes}["market.loop"]
        r = city.apply("SpawnPedestrian", zone="market", lane="market.loop", priority="quest")
        assert r.status == CommandStatus.Accepted and r.handle >= 1, r
        accepted_at = r.applied_step
        queued = city.op.spawn_status(r.handle)
        assert (queued.state, queued.terminal, queued.requested_step) == (
            SpawnState.Queued, False, accepted_at)
        assert (queued.zone, queued.lane, queued.priority) == ("market", lane, PriorityClass.Quest)
        assert not queued.has_entity

        updates = step_until_spawn(city, r.handle, SpawnState.IdentityCreated)
        created = updates[-1]
        assert created.has_entity, created
        eid = created.entity
        info = city.op.entity(eid)
        assert (info.alive, info.lifecycle, info.spawn_handle, info.spawn_state) == (
            True, LifecycleState.Requested, r.handle, SpawnState.IdentityCreated), info
        assert eid not in city.mirror, "an identity not yet registered must not be in the stream"

        updates += step_until_spawn(city, r.handle, SpawnState.Registered)
        assert eid in city.mirror, "a registered spawn walks and is in the stream"
        spawned = city.mirror[eid]
        assert spawned.archetype_name == "pedestrian" and spawned.label is None, spawned
        at = city.op.entity(eid)
        # the stream extrapolates strided tiers: at most a Coarse stride (7 steps) ahead
        stride_mm = spawned.speed_mmps * 7 * city.welcome.step_us // 1_000_000
        assert at.lane == spawned.lane, (at, spawned)
        assert -11 <= spawned.predicted_s_mm - at.s_m * 1000 <= stride_mm + 11, (at, spawned)
        updates += step_until_spawn(city, r.handle, SpawnState.RepresentationRequested)
        info = city.op.entity(eid)
        assert (info.lifecycle, info.origin, info.priority, info.spawn_handle) == (
            LifecycleState.Active, PedestrianOrigin.Spawned, PriorityClass.Quest, r.handle), info
        assert info.lane == lane, "placed on the lane it asked for"

        attached = city.apply("ReportAttached", index=eid.index, generation=eid.generation)
        assert attached.accepted and attached.handle == r.handle, attached
        updates += city.op.wait_spawn(r.handle, SpawnState.Attached, timeout=3.0)
        updates += step_until_spawn(city, r.handle, SpawnState.ReadyForGameplay)

        assert states_of(updates) == PIPELINE
        assert all(u.handle == r.handle and u.entity == eid for u in updates[-len(PIPELINE):])
        steps = [u.state_step for u in updates]
        assert steps == sorted(steps) and steps[0] >= accepted_at, steps
        assert updates[-1].terminal and not any(u.terminal for u in updates[:-1])
        final = city.op.spawn_status(r.handle)
        assert (final.state, final.terminal, final.entity) == (SpawnState.ReadyForGameplay, True, eid)

        pop = city.op.population()
        assert pop.spawned == 1 and pop.total(SpawnState.ReadyForGameplay) == 1
        assert pop.total(SpawnState.Failed) == 0 and pop.spawn_requested == 1
        again = city.apply("ReportAttached", index=eid.index, generation=eid.generation)
        assert again.status == CommandStatus.Rejected, "a finished handle cannot be attached again"


def test_spawn_requests_are_validated_before_a_handle_exists(start_server):
    srv = start_city(start_server)
    with City(srv, "spawn-invalid") as city:
        bad_zone, bad_lane, road, foreign, ok = city.apply_all([
            ("SpawnPedestrian", dict(zone="harbour")),
            ("SpawnPedestrian", dict(lane="no.such.lane")),
            ("SpawnPedestrian", dict(lane="avenue.east")),
            ("SpawnPedestrian", dict(zone="office", lane="market.loop")),
            ("SpawnPedestrian", dict(zone="office")),
        ])
        for r, field in ((bad_zone, "zone"), (bad_lane, "lane"), (road, "lane"), (foreign, "lane")):
            assert (r.status, r.reason, r.handle) == (
                CommandStatus.Rejected, RejectReason.InvalidArgument, 0), r
            assert r.message.startswith(field), r.message
        assert ok.accepted and ok.handle == 1, "rejected requests consume no handle"
        prio = city.apply("SpawnPedestrian", priority=7)
        assert prio.status == CommandStatus.Rejected and "priority" in prio.message, prio
        missing = city.op.query_spawn(999)
        assert missing.status == CommandStatus.Rejected and missing.reason == RejectReason.NotFound


def test_per_step_creation_cap_defers_without_failing(start_server):
    srv = start_city(start_server)
    n = 2 * SPAWN_PER_STEP_CAP + 4
    with City(srv, "spawn-cap") as city:
        city.step(1)
        results = city.apply_all([("SpawnPedestrian", {})] * n)
        assert all(r.accepted for r in results), [r for r in results if not r.accepted]
        handles = [r.handle for r in results]
        assert handles == sorted(set(handles)) and len(handles) == n
        pop = city.op.population()
        assert pop.live(SpawnState.Queued) == n and pop.spawn_requested == n

        created_per_step, deferred_per_step = [], []
        while len(created_per_step) < 4:
            city.step(1)
            pop = city.op.population()
            deferred_per_step.append(pop.spawn_deferred_by_cap)
            created_per_step.append(pop.total(SpawnState.IdentityCreated) - sum(created_per_step))
            assert pop.total(SpawnState.Failed) == 0 and pop.total(SpawnState.TimedOut) == 0, pop
        cap = SPAWN_PER_STEP_CAP
        assert created_per_step == [cap, cap, n - 2 * cap, 0], created_per_step
        assert deferred_per_step == [n - cap, n - 2 * cap, 0, 0], deferred_per_step

        # First come, first created: each step's identities are the oldest queued handles.
        updates = city.op.spawn_updates()
        created = [u for u in updates if u.state == SpawnState.IdentityCreated]
        by_step = {}
        for u in created:
            by_step.setdefault(u.state_step, []).append(u.handle)
        assert [len(v) for _, v in sorted(by_step.items())] == [cap, cap, n - 2 * cap]
        assert [h for _, v in sorted(by_step.items()) for h in sorted(v)] == handles
        assert len({u.entity for u in created}) == n, "every created identity is distinct"

        city.step(3)
        pop = city.op.population()
        assert pop.live(SpawnState.RepresentationRequested) == n, pop.spawn_live
        assert pop.spawned == n and pop.total(SpawnState.Failed) == 0
        assert pop.spawn_deferred_by_cap == 0


def test_cancel_of_queued_and_despawn_of_unregistered_spawns_give_ids_back(start_server):
    srv = start_city(start_server)
    with City(srv, "spawn-cancel") as city:
        city.step(1)
        results = city.apply_all([("SpawnPedestrian", {})] * (SPAWN_PER_STEP_CAP + 1))
        handles = [r.handle for r in results]
        city.step(1)  # the first cap handles get identities; the last one stays Queued
        pop = city.op.population()
        assert pop.live(SpawnState.Queued) == 1 and pop.live(SpawnState.IdentityCreated) == SPAWN_PER_STEP_CAP
        first, second, last = handles[0], handles[1], handles[-1]
        assert city.op.spawn_status(last).state == SpawnState.Queued
        id_first = city.op.spawn_status(first).entity
        id_second = city.op.spawn_status(second).entity
        assert id_first.generation and id_second.generation

        cancel_queued, despawn_created, cancel_created = city.apply_all([
            ("CancelSpawn", dict(handle=last)),
            ("DespawnEntity", dict(index=id_first.index, generation=id_first.generation)),
            ("CancelSpawn", dict(handle=second)),
        ])
        assert cancel_queued.accepted and cancel_queued.entity is None, cancel_queued
        assert despawn_created.accepted and despawn_created.entity == id_first, despawn_created
        assert despawn_created.handle == first
        assert cancel_created.accepted and cancel_created.entity == id_second, cancel_created
        for h in (last, first, second):
            st = city.op.wait_spawn(h, timeout=3.0)[-1]
            assert (st.state, st.terminal) == (SpawnState.Canceled, True), st
            assert city.op.spawn_status(h).state == SpawnState.Canceled
        for eid in (id_first, id_second):
            gone = city.op.query_entity(eid)
            assert gone.status == CommandStatus.Rejected and gone.reason == RejectReason.UnknownEntity
            assert gone.entity_info is not None and not gone.entity_info.alive

        city.step(4)
        assert id_first not in city.mirror and id_second not in city.mirror
        pop = city.op.population()
        assert pop.total(SpawnState.Canceled) == 3 and pop.total(SpawnState.Failed) == 0
        assert pop.spawned == SPAWN_PER_STEP_CAP - 2
        assert city.op.stats().despawned_total == 0, "a canceled identity is given back, not despawned"
        twice = city.apply("CancelSpawn", handle=last)
        assert twice.status == CommandStatus.Rejected and twice.reason == RejectReason.NotFound, twice
        registered = city.apply("CancelSpawn", handle=handles[2])
        assert registered.status == CommandStatus.Rejected and "despawn" in registered.message, registered


def _batch_world(start_server, seed, ops_of):
    """Run 6 steps, then one step with the commands ops_of(city) builds,
    then 3 more; return (results, stats, population)."""
    srv = start_city(start_server, "--seed", str(seed))
    with City(srv, f"batch-{seed}") as city:
        city.step(6)
        results = city.apply_all(ops_of(city))
        city.step(3)
        return results, city.op.stats(), city.op.population()


def _resident(city):
    return min(s.id for s in city.mirror.pedestrians())


def test_invalid_lifecycle_batch_changes_nothing(start_server):
    def bad_batch(city):
        return [("LifecycleBatch", dict(ops=[spawn_op(zone="market"),
                                             despawn_op(_resident(city)),
                                             despawn_op(EntityId(1000, 7))]))]

    def control(city):
        return [("DespawnEntity", dict(index=1000, generation=7))]  # rejected as well: same counters

    (batch,), st, pop = _batch_world(start_server, 5, bad_batch)
    assert batch.status == CommandStatus.Rejected and batch.batch == BatchStatus.RejectedNoChange, batch
    assert batch.message.startswith("ops[2]"), batch.message
    assert not batch.handles
    (ctl,), st_control, pop_control = _batch_world(start_server, 5, control)
    assert ctl.status == CommandStatus.Rejected
    assert (st.step, st.digest) == (st_control.step, st_control.digest), (
        "a rejected batch must leave the world exactly as a control run")
    assert pop.spawn_requested == 0 and pop.residents_active == pop_control.residents_active


def test_valid_lifecycle_batch_commits_all_ops(start_server):
    srv = start_city(start_server)
    with City(srv, "batch-ok") as city:
        city.step(6)
        resident = _resident(city)
        before = city.op.population()
        r = city.apply("LifecycleBatch", ops=[spawn_op(zone="market"), despawn_op(resident),
                                              spawn_op(lane="office.loop", priority="story")])
        assert r.accepted and r.batch == BatchStatus.Committed, r
        assert len(r.handles) == 2 and r.handles[0] < r.handles[1], r.handles
        for h in r.handles:
            assert city.op.spawn_status(h).state in (SpawnState.Queued, SpawnState.IdentityCreated)
        story = city.op.spawn_status(r.handles[1])
        assert story.priority == PriorityClass.Story
        info = city.op.query_entity(resident).entity_info
        assert info.lifecycle in (LifecycleState.Retiring, LifecycleState.Dormant), info
        after = city.op.population()
        assert after.spawn_requested == before.spawn_requested + 2
        for h in r.handles:
            assert states_of(step_until_spawn(city, h, SpawnState.RepresentationRequested))[-1] == \
                SpawnState.RepresentationRequested
        empty = city.apply("LifecycleBatch", ops=[])
        assert empty.status == CommandStatus.Rejected and empty.batch == BatchStatus.RejectedNoChange


def test_viewers_query_population_but_cannot_spawn(start_server):
    srv = start_city(start_server)
    with srv.connect() as viewer:
        viewer.hello("pop-viewer", role="viewer")
        pop = viewer.population()
        assert pop.residents == 72 and len(pop.communities) == 3
        r = viewer.command("SpawnPedestrian", zone="market")
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.NotAuthorized
        r = viewer.command("LifecycleBatch", ops=[spawn_op()])
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.NotAuthorized


def _pedestrian_successors():
    """lane id -> its pedestrian successors, from the large-block config."""
    lanes = json.loads(LARGEBLOCK.read_text())["lanes"]
    walkable = {ln["id"] for ln in lanes if ln["kind"] in ("sidewalk", "crossing")}
    return {ln["id"]: [s for s in ln["successors"] if s in walkable]
            for ln in lanes if ln["id"] in walkable}


def _lane_visits(city, eid, steps, chunk=25):
    """Step ``steps`` steps in chunks, querying the entity after each; returns
    the lanes it walked, one entry per visit (a lane taken again right after
    itself counts twice: its s_m starts over)."""
    visits, last_s = [], None
    for _ in range(0, steps, chunk):
        city.step(chunk)
        info = city.op.entity(eid)
        assert info.alive and info.lane is not None, info
        if not visits or info.lane != visits[-1] or info.s_m < last_s:
            visits.append(info.lane)
        last_s = info.s_m
    return visits


def test_routed_spawn_walks_its_route_then_wanders(start_server):
    succ = _pedestrian_successors()
    # Crossing into the market, round the market loop three times (at its end
    # the loop may also turn into the crossing to the office: the route
    # decides), then across to the office loop.
    route = ["x.facilities.market", "market.loop", "market.loop", "market.loop",
             "x.market.office", "office.loop"]
    for prev, lane in zip(route, route[1:]):
        assert lane in succ[prev], f"configs/largeblock.city.json: {lane} does not follow {prev}"
    assert all(len(succ[lane]) > 1 for lane in route[1:3]), "the route must choose somewhere"
    srv = start_city(start_server)
    with City(srv, "spawn-route") as city:
        index = {ln.id: ln.index for ln in city.welcome.lanes}
        lane_id = {i: name for name, i in index.items()}
        r = city.apply("SpawnPedestrian", route=route, priority="story")
        assert r.accepted and r.handle >= 1, r
        status = city.op.spawn_status(r.handle)
        assert status.lane == index[route[0]], "route[0] is the lane asked for"
        registered = step_until_spawn(city, r.handle, SpawnState.Registered)[-1]
        eid = registered.entity
        info = city.op.entity(eid)
        assert info.lane == index[route[0]] and info.s_m < 1.0, "starts at the beginning of route[0]"

        # Lane lengths (m) / speed limits (m/s) at 0.1 s per step: crossings
        # 40 / 1.2, market loop 200 / 1.3, office loop 200 / 1.4: the whole
        # route takes about 6 710 steps, then it wanders on.
        visits = [lane_id[i] for i in _lane_visits(city, eid, 7200)]
        assert visits[:len(route)] == route, visits
        after = visits[len(route):]
        assert after and after[0] in succ[route[-1]], visits
        for prev, lane in zip(visits, visits[1:]):
            assert lane in succ[prev], visits
        assert city.op.entity(eid).origin == PedestrianOrigin.Spawned


def test_invalid_routes_are_rejected_naming_the_entry(start_server):
    srv = start_city(start_server)
    with City(srv, "spawn-route-invalid") as city:
        city.step(1)
        jump, unknown, road, other_lane, foreign, ok = city.apply_all([
            ("SpawnPedestrian", dict(route=["market.loop", "market.loop", "office.loop"])),
            ("SpawnPedestrian", dict(route=["market.loop", "no.such.lane"])),
            ("SpawnPedestrian", dict(route=["avenue.east"])),
            ("SpawnPedestrian", dict(lane="office.loop", route=["market.loop"])),
            ("SpawnPedestrian", dict(zone="office", route=["market.loop", "x.market.office"])),
            ("SpawnPedestrian", dict(zone="market", lane="market.loop", route=["market.loop"])),
        ])
        for r in (jump, unknown, road, other_lane, foreign):
            assert (r.status, r.reason, r.handle) == (
                CommandStatus.Rejected, RejectReason.InvalidArgument, 0), r
        assert jump.message == "route[2]: 'office.loop' does not follow 'market.loop'"
        assert unknown.message == "route[1]: unknown lane 'no.such.lane'"
        assert road.message.startswith("route[0]: 'avenue.east'"), road.message
        assert other_lane.message.startswith("lane: must be route[0]"), other_lane.message
        assert foreign.message.startswith("lane: 'market.loop' is not a lane of zone 'office'"), \
            foreign.message
        assert ok.accepted and ok.handle == 1, "rejected routes consume no handle"
        # Too long: refused by the server's parser at once, before any lane is looked up.
        long = city.op.command("SpawnPedestrian", route=["market.loop"] * 257)
        assert (long.status, long.reason) == (CommandStatus.Rejected, RejectReason.InvalidArgument)
        assert long.message == "route: 257 lanes, at most 256 per spawn"
        assert city.op.population().spawn_requested == 1


def test_digest_does_not_depend_on_the_connection_that_sent_the_spawns(start_server):
    """Spawn handles and queued commands used to digest their sender's session
    and request ids, so the same commands from another connection diverged.
    Two servers, same seed and commands; on the second the spawner is a later
    session (idle connections first) and its request ids have moved on."""
    from snapshot_helpers import operator, viewer

    def run(idle_connections, warmup_requests):
        srv = start_city(start_server, "--seed", "11")
        idle = [viewer(srv, f"idle-{k}") for k in range(idle_connections)]
        with operator(srv, "spawner") as op:
            for _ in range(warmup_requests):
                op.stats()
            digests = []
            for step in range(30):
                if step in (2, 3):  # 2 x 12 spawns against a cap of 8 per step: handles wait across steps
                    for k in range(12):
                        op.send_command("SpawnPedestrian", zone="market", priority="quest" if k % 2 else "story")
                if step == 6:
                    op.send_command("CancelSpawn", handle=24)
                assert op.step(1).accepted
                digests.append(op.stats().digest)
            session = op.welcome.session_id
        for s in idle:
            s.close()
        srv.stop(check=True)
        return session, digests

    first_session, first = run(0, 0)
    later_session, later = run(3, 37)
    assert first_session != later_session, "the test needs different session ids"
    assert first == later, next(f"step {k + 1}: {a:016x} vs {b:016x}" for k, (a, b) in enumerate(zip(first, later))
                                if a != b)
