"""Population v2 over the socket on the large-block city (seed 001: 3 zones, 3
communities of 24, 72 identities) with the manual clock: every axis of a
resident (QueryEntity), QueryPopulation across an hour switch (migration
handoffs, invariants, identities kept), and runtime lifecycle settings
(SetLifecycle)."""

from population_helpers import City, start_city

from bustle_client import (
    CommandStatus,
    EntityId,
    LifecycleState,
    PedestrianOrigin,
    PriorityClass,
    RejectReason,
)

RESIDENTS = 72
#: Where each community's schedule puts it, and its target, at 06:00 / 08:00 / 12:00.
AT_06 = {"market_vendors": ("market", 12), "office_workers": ("office", 12), "maintenance": ("facilities", 24)}
AT_08 = {"market_vendors": ("market", 24), "office_workers": ("office", 24), "maintenance": ("facilities", 24)}
AT_12 = {"market_vendors": ("market", 24), "office_workers": ("market", 24), "maintenance": ("office", 24)}


def residents_by_id(op, first_index=0, count=128):
    """EntityInfo of every live resident among the first ``count`` entity
    indices (generation 1: identities created at start-up, never released)."""
    found = {}
    for index in range(first_index, first_index + count):
        r = op.query_entity(EntityId(index, 1))
        if r.accepted and r.entity_info.origin == PedestrianOrigin.Resident:
            found[r.entity_info.id] = r.entity_info
    return found


def check_population_invariants(pop, where=""):
    assert pop.residents == RESIDENTS, where
    assert sum(c.active + c.dormant for c in pop.communities) == pop.residents, (where, pop.communities)
    assert sum(c.active for c in pop.communities) == pop.residents_active, where
    assert pop.residents_retiring <= pop.residents_active, where
    for c in pop.communities:
        assert c.target <= c.base_population, (where, c)


def communities(pop):
    return {c.id: (c.zone, c.target) for c in pop.communities}


def test_query_entity_shows_every_axis_of_active_and_dormant_residents(start_server):
    srv = start_city(start_server)
    with City(srv, "residents") as city:
        city.step(60)
        pop = city.op.population()
        assert communities(pop) == AT_06
        residents = residents_by_id(city.op)
        assert len(residents) == RESIDENTS, "72 resident identities from start-up"
        active = {i: e for i, e in residents.items() if e.lifecycle == LifecycleState.Active}
        dormant = {i: e for i, e in residents.items() if e.lifecycle == LifecycleState.Dormant}
        assert len(active) == pop.residents_active == 48 and len(dormant) == RESIDENTS - 48
        assert set(active) == {p.id for p in city.mirror.pedestrians()}, "active residents are the stream"
        assert not set(dormant) & set(city.mirror), "dormant residents have no representation"
        for i, e in active.items():  # residents are named and drawn by community and profession
            m = city.mirror[i]
            assert m.label and m.label.startswith(e.community + "."), (m, e)
            assert m.archetype_name.startswith(f"pedestrian.{e.community}."), (m, e)

        technicians = [e for e in active.values() if e.community == "maintenance"]
        assert len(technicians) == 24
        for e in technicians:
            assert (e.zone, e.work_point, e.origin, e.priority, e.saveable) == (
                "facilities", "workshop", PedestrianOrigin.Resident, PriorityClass.Community, False), e
            assert e.lane is not None and e.alive
        assert sorted(e.work_slot for e in technicians) == list(range(24)), "one technician per slot"
        for e in active.values():
            assert e.zone == AT_06[e.community][0], e
        vendor = next(e for e in dormant.values() if e.community == "market_vendors")
        assert (vendor.alive, vendor.saveable, vendor.zone, vendor.lane) == (True, True, "market", None), vendor
        assert vendor.work_slot is None


def test_population_across_an_hour_switch_migrates_and_keeps_identities(start_server):
    srv = start_city(start_server)
    with City(srv, "hour-switch") as city:
        city.step(60)
        before = residents_by_id(city.op)
        clerks_in_office = {i for i, e in before.items()
                            if e.community == "office_workers" and e.lifecycle == LifecycleState.Active}
        assert len(clerks_in_office) == 12

        r = city.apply("SetHour", hour=12.0)
        assert r.accepted, r
        handoffs_seen = migrated_in = pending_max = 0
        for step in range(300):
            city.step(1)
            pop = city.op.population()
            check_population_invariants(pop, f"step {city.step_index}")
            zones = city.op.zones()
            assert sum(z.active for z in zones) == pop.residents_active
            handoffs_seen += sum(z.handoffs_started + z.handoffs_accepted for z in zones)
            migrated_in += sum(z.migrated_in for z in zones)
            pending_max = max(pending_max, pop.handoffs_pending)
            done = all(c.active == c.target for c in pop.communities) and pop.handoffs_pending == 0
            if done and all(z.active == z.target for z in zones):
                break
        else:
            raise AssertionError(f"no convergence after 300 steps: {pop.communities}")
        assert communities(pop) == AT_12
        assert pop.residents_active == 72  # all 72 active at 12:00 (the seed-001 demo mix)
        assert handoffs_seen > 0 or migrated_in > 0, "members changed zones without any handoff or migration"

        after = residents_by_id(city.op)
        assert set(after) == set(before), "the identity set survives the hour switch"
        moved = {i for i in clerks_in_office if after[i].zone == "market"
                 and after[i].lifecycle == LifecycleState.Active}
        assert moved, "office clerks active at 06:00 keep their identity in the market at 12:00"


def steps_to_converge(city, hour, expected, limit=120):
    """Set the hour, then step until every community has its target active;
    returns (steps, zones). Community targets follow the hour at once; zone
    targets only at the next lifecycle interval."""
    r = city.apply("SetHour", hour=hour)
    assert r.accepted, r
    for n in range(1, limit + 1):
        pop = city.op.population()
        assert communities(pop) == expected
        if all(c.active == c.target for c in pop.communities):
            return n, city.op.zones()
        city.step(1)
    raise AssertionError(f"communities did not converge within {limit} steps: {pop.communities}")


def test_set_lifecycle_growth_quota_speeds_up_convergence(start_server):
    quick_srv = start_city(start_server)
    slow_srv = start_city(start_server)
    with City(slow_srv, "quota-default") as slow, City(quick_srv, "quota-8") as quick:
        for city in (slow, quick):
            city.step(60)
        r = quick.apply("SetLifecycle", growth_quota=8, recycle_quota=8, interval_ms=250, migration_budget=4)
        assert r.accepted, r
        pop = quick.op.population()
        assert (pop.growth_quota, pop.recycle_quota, pop.interval_ms, pop.migration_budget) == (8, 8, 250, 4)
        default = slow.op.population()
        assert (default.growth_quota, default.recycle_quota, default.interval_ms) == (2, 2, 250)

        slow_steps, _ = steps_to_converge(slow, 8.0, AT_08)
        quick_steps, zones = steps_to_converge(quick, 8.0, AT_08)
        # +12 vendors and +12 clerks: 6 intervals at quota 2, 2 at quota 8 (2.5 steps each)
        assert quick_steps < slow_steps, (quick_steps, slow_steps)
        assert quick_steps <= 8 and slow_steps >= 12, (quick_steps, slow_steps)
        assert all(z.activated <= 8 for z in zones)


def test_set_lifecycle_rejects_bad_values_with_the_field_and_changes_nothing(start_server):
    srv = start_city(start_server)
    with City(srv, "quota-bad") as city:
        city.step(2)
        good = dict(growth_quota=3, recycle_quota=3, interval_ms=500, migration_budget=2)
        assert city.apply("SetLifecycle", **good).accepted
        for field, value in (("interval_ms", 0), ("interval_ms", 3_600_001), ("growth_quota", 1_000_001),
                             ("recycle_quota", 1_000_001), ("migration_budget", 1_000_001)):
            r = city.apply("SetLifecycle", **dict(good, **{field: value}))
            assert (r.status, r.reason) == (CommandStatus.Rejected, RejectReason.InvalidArgument), r
            assert field in r.message, r.message
        pop = city.op.population()
        assert (pop.growth_quota, pop.recycle_quota, pop.interval_ms, pop.migration_budget) == (3, 3, 500, 2)
