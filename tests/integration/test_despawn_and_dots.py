"""Despawn phase, distant dots and observer views over the socket, on the
default city (120 background pedestrians, observer at (90, 30)) with the
manual clock: on-screen despawns fade for despawn.fade_ms in Delta.retiring
before they leave, off-screen (Coarse) ones leave at once; Welcome.chains and
Delta.dots every dots_every_steps (counting only the pedestrians a client does
not receive with identity: over its budgets, or Coarse without a Marker
budget); SetObservers views (height, heading) feed the effective distance and
must come one per point."""

import math

from population_helpers import DEFAULT_CITY, FADE_MS, City, start_city
from vehicle_helpers import sync_mirror

from bustle_client import (
    CommandStatus,
    DespawnReason,
    LaneKind,
    LifecycleState,
    RejectReason,
    RepresentationBudgets,
    RepresentationHint,
    Session,
    SimTier,
)

FAR_AWAY = (5000.0, 5000.0)  # beyond tiers.simulated_exit_m of every sidewalk: all Coarse


def populated_city(start_server, name):
    srv = start_city(start_server, config=DEFAULT_CITY)
    city = City(srv, name)
    for _ in range(40):
        st = city.op.stats()
        if st.pedestrians and st.pedestrians == st.pedestrian_target:
            return city
        city.step(1)
    raise AssertionError(f"default city never reached its pedestrian target: {st}")


def put_observers(city, points, settle_steps=8):
    r = city.apply("SetObservers", points=points)
    assert r.accepted, r
    city.step(settle_steps)  # tiers are resolved every few steps, within the transition budget


def test_despawn_of_a_near_pedestrian_fades_in_the_stream_then_leaves(start_server):
    with populated_city(start_server, "fade-near") as city:
        target = city.mirror.pedestrians()[0]
        at = city.op.entity(target.id)
        put_observers(city, [(at.x_m, at.y_m)])
        info = city.op.entity(target.id)
        assert (info.tier, info.representation) == (SimTier.Full, RepresentationHint.Actor), info
        before = city.op.population()

        r = city.apply("DespawnEntity", index=target.id.index, generation=target.id.generation)
        assert r.accepted and r.entity is None, r
        n = r.applied_step
        fade_steps = math.ceil(FADE_MS * 1000 / city.welcome.step_us)
        assert target.id in city.deltas[n].retiring and target.id not in city.deltas[n].left
        assert target.id in city.mirror and target.id in city.mirror.retiring
        info = city.op.entity(target.id)
        assert (info.alive, info.lifecycle, info.retiring_reason, info.release_step) == (
            True, LifecycleState.Retiring, DespawnReason.Requested, n + fade_steps), info
        pop = city.op.population()
        assert pop.retiring == 1 and pop.faded_total == before.faded_total + 1

        city.step_each(fade_steps - 1)
        for step in range(n, n + fade_steps):
            assert target.id not in city.deltas[step].left, f"left early, at step {step}"
        assert target.id in city.mirror, "a fading entity stays in the stream"
        assert not any(target.id in city.deltas[s].retiring for s in range(n + 1, n + fade_steps)), (
            "retiring is announced once, on the step the fade begins")
        city.step(1)
        assert target.id in city.deltas[n + fade_steps].left
        assert target.id not in city.mirror and not city.mirror.retiring
        gone = city.op.query_entity(target.id)
        assert gone.status == CommandStatus.Rejected and gone.reason == RejectReason.UnknownEntity
        assert city.op.population().retiring == 0


def test_despawn_of_a_far_pedestrian_leaves_in_the_same_step(start_server):
    with populated_city(start_server, "fade-far") as city:
        put_observers(city, [FAR_AWAY])
        target = city.mirror.pedestrians()[-1]
        assert city.op.entity(target.id).tier == SimTier.Coarse
        before = city.op.population()
        assert before.tier(SimTier.Coarse) == before.background, before.tiers

        r = city.apply("DespawnEntity", index=target.id.index, generation=target.id.generation)
        assert r.accepted, r
        d = city.deltas[r.applied_step]
        assert target.id in d.left and target.id not in d.retiring
        assert target.id not in city.mirror
        gone = city.op.query_entity(target.id)
        assert gone.status == CommandStatus.Rejected and not gone.entity_info.alive
        after = city.op.population()
        assert after.fade_skipped_total == before.fade_skipped_total + 1
        assert after.faded_total == before.faded_total and after.retiring == 0
        assert after.despawned(DespawnReason.Requested) == before.despawned(DespawnReason.Requested) + 1


def test_welcome_chains_partition_the_lanes_in_travel_order(start_server):
    srv = start_city(start_server, config=DEFAULT_CITY)
    with srv.connect() as s:
        w = s.hello("chains")
        lanes = w.lanes
        assert w.chains, "Welcome must list the lane chains"
        assert w.dots_every_steps == 10  # pedestrians.dots_every_steps default
        covered = sorted(i for c in w.chains for i in c.lanes)
        assert covered == list(range(len(lanes))), "every lane belongs to exactly one chain"
        pedestrian_kinds = {LaneKind.Sidewalk, LaneKind.Crossing}
        for k, c in enumerate(w.chains):
            kinds = {lanes[i].kind for i in c.lanes}
            assert kinds <= pedestrian_kinds if c.pedestrian else kinds == {LaneKind.Road}, (k, c)
            for a, b in zip(c.lanes, c.lanes[1:]):
                assert b in lanes[a].successors, f"chain {k}: lane {b} does not follow lane {a}"
            if c.cyclic:
                assert c.lanes[0] in lanes[c.lanes[-1]].successors, f"chain {k} is not a ring"
            assert math.isclose(c.length_m, sum(lanes[i].length_m for i in c.lanes), rel_tol=1e-4)


def _dots(mirror, chains):
    """(pedestrian-chain dots, road-chain dots) of the mirror's last dot step."""
    ped = sum(n for chain, n in mirror.dots.items() if chains[chain].pedestrian)
    return ped, sum(mirror.dots.values()) - ped


def _watcher(city, name, budgets):
    """A second viewer of the city with these budgets, synced to its step."""
    s = city.srv.connect()
    s.hello(name)
    s.subscribe(budgets=budgets)
    return s, sync_mirror(s, s.mirror(), city.step_index)


def test_dots_arrive_every_dots_every_steps_and_count_only_what_a_client_does_not_receive(start_server):
    with populated_city(start_server, "dots") as city:
        chains, every = city.welcome.chains, city.welcome.dots_every_steps
        assert every > 0 and chains
        # receives nobody: every pedestrian is a dot (the baseline carries the current dots)
        blind, blind_mirror = _watcher(city, "dots-blind", RepresentationBudgets(0, 0, 0))
        # no Marker budget: receives the Full/Simulated ones, Coarse ones become dots
        unmarked, unmarked_mirror = _watcher(city, "dots-no-markers", RepresentationBudgets(markers=0))
        assert len(blind_mirror) == 0 and blind_mirror.dots_step == city.step_index
        assert blind_mirror.interest_truncated == city.op.stats().pedestrians

        def sync_watchers():
            sync_mirror(blind, blind_mirror, city.step_index)
            sync_mirror(unmarked, unmarked_mirror, city.step_index)

        first = city.step_index
        for _ in range(2 * every):
            city.step(1)
            sync_watchers()
        for step in range(first + 1, city.step_index + 1):
            d = city.deltas[step]
            if step % every == 0:
                assert [x.chain for x in d.dots] == list(range(len(chains))), (
                    f"step {step}: every chain listed once, in order")
            else:
                assert d.dots == [], f"step {step}: dots off a dot step"
        st = city.op.stats()
        assert len(city.mirror) == st.pedestrians, "default budgets: the whole default city is received"
        assert _dots(city.mirror, chains) == (0, 0), "nobody is counted both as an entity and as a dot"
        assert _dots(blind_mirror, chains) == (st.pedestrians, 0), blind_mirror.dots
        assert _dots(unmarked_mirror, chains) == (0, 0), "near the observer nobody is Coarse"
        assert len(unmarked_mirror) == st.pedestrians

        put_observers(city, [FAR_AWAY], settle_steps=1)
        while city.step_index % every:  # to the next dot step
            city.step(1)
        for _ in range(every):  # and one more, with every tier resolved Coarse
            city.step(1)
        sync_watchers()
        st = city.op.stats()
        assert city.op.population().tier(SimTier.Coarse) == st.pedestrians
        assert city.mirror.dots_step == unmarked_mirror.dots_step == city.step_index
        assert _dots(city.mirror, chains) == (0, 0), "Coarse pedestrians are still received as Markers"
        assert all(e.representation == RepresentationHint.Marker for e in city.mirror.values())
        assert len(unmarked_mirror) == 0, "Coarse entities can only be Markers: none without a budget"
        assert _dots(unmarked_mirror, chains) == (st.pedestrians, 0), unmarked_mirror.dots
        blind.close()
        unmarked.close()


def test_set_observers_views_must_match_points_and_feed_effective_distance(start_server):
    with populated_city(start_server, "views") as city:
        bad = city.apply("SetObservers", points=[(1, 2), (3, 4)], views=[(1.0, None)])
        assert bad.status == CommandStatus.Rejected and bad.reason == RejectReason.InvalidArgument
        assert bad.message.startswith("views"), bad.message
        extra = city.apply("SetObservers", points=[(1, 2)], views=[(1.0, None), (2.0, 0.5)])
        assert extra.status == CommandStatus.Rejected and "views" in extra.message

        target = city.mirror.pedestrians()[0].id
        cases = [
            # (observer relative to the pedestrian, view) -> effective distance (background weight 1)
            ((0.0, 0.0), (10.0, None), 2.0 * 10.0),     # height: height_weight 2 x |dz|
            ((-10.0, 0.0), (0.0, 0.0), 10.0),           # looking at it (+x)
            ((-10.0, 0.0), (0.0, math.pi), 15.0),       # behind the observer: x behind_factor 1.5
        ]
        for (dx, dy), (z, heading), expected in cases:
            at = city.op.entity(target)
            r = city.apply("SetObservers", points=[FAR_AWAY + (0.0, None),
                                                   (at.x_m + dx, at.y_m + dy, z, heading)])
            assert r.accepted, r
            d_eff = city.op.entity(target).effective_distance_m
            # the pedestrian walks (< 0.3 m per step at stride 2), which may shift d by that much x 1.5
            assert abs(d_eff - expected) < 0.6, (dx, dy, z, heading, d_eff, expected)


def test_a_late_joiner_receives_the_entities_already_fading(start_server):
    """server.fbs: a baseline lists every received entity already fading. A
    client that subscribes while entities fade mirrors the same entities,
    with the same retiring set, as a client that saw the fades begin. (The
    fading ones were left out: a fading entity may not improve its hint, and
    a new client's hints start at None.)"""
    with populated_city(start_server, "fade-late") as city:
        first = city.mirror.pedestrians()[0]
        at = city.op.entity(first.id)
        put_observers(city, [(at.x_m, at.y_m)])
        near = [p for p in city.mirror.pedestrians() if city.op.entity(p.id).tier == SimTier.Full][:4]
        assert near, "no Full pedestrian near the observer"
        results = city.apply_all([
            ("DespawnEntity", dict(index=p.id.index, generation=p.id.generation)) for p in near])
        assert all(r.accepted for r in results), results
        assert {p.id for p in near} <= city.mirror.retiring, "the fades did not begin"
        with Session.connect("127.0.0.1", city.srv.port, timeout=5.0) as late:
            late.hello("fade-late-joiner", role="viewer")
            late.subscribe()
            mirror = late.mirror(strict=True)
            mirror.apply(late.next_delta(timeout=5.0))
            assert mirror.step == city.mirror.step
            assert mirror.retiring == city.mirror.retiring
            assert set(mirror) == set(city.mirror)
