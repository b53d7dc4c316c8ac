"""A tier change neither adds progress nor takes it (seed 001's equal
progress): a client that dead-reckons every pedestrian sees each one walk on
continuously, at most one step's travel per step and never backwards, while an
observer moves so that pedestrians change tier between their due steps. (A
tier change used to advance the pose by the new tier's stride: up to 780 mm
ahead on Simulated -> Coarse, 240 mm back on Coarse -> Simulated.)"""

from population_helpers import DEFAULT_CITY, City, start_city

#: Observer places: the city's middle (Full near it, Simulated beyond), 300 m
#: off (all Simulated) and 2 km off (all Coarse); scenario tiers 25 / 500 m.
OBSERVER_PLACES = [(90.0, 30.0), (90.0, 2000.0), (90.0, 300.0), (90.0, 2000.0), (90.0, 30.0)]
STEPS = 140


def test_dead_reckoned_pedestrians_walk_on_through_tier_changes(start_server):
    srv = start_city(start_server, config=DEFAULT_CITY)
    with City(srv, "tier-poses", motion_tolerance_mm=0) as city:
        city.step(30)  # the spawn pipeline fills the city
        step_ms = city.welcome.step_us / 1000.0
        length_mm = {lane.index: lane.length_mm for lane in city.welcome.lanes}
        last = {}  # id -> (lane, predicted s_mm, speed_mmps, tier) at the previous step
        checked = tier_changes = 0
        for k in range(STEPS):
            if k % 7 == 0:  # not a multiple of any stride, so changes fall between due steps
                x, y = OBSERVER_PLACES[(k // 7) % len(OBSERVER_PLACES)]
                assert city.apply("SetObservers", points=[(x, y)]).accepted
            else:
                city.step(1)
            now = {}
            for p in city.mirror.pedestrians():
                now[p.id] = (p.lane, p.predicted_s_mm, p.speed_mmps, p.sim_tier)
                before = last.get(p.id)
                if before is None or before[0] != p.lane or before[1] == length_mm[p.lane]:
                    continue  # new, on the next lane, or held at a lane end (no next lane known)
                moved_mm = p.predicted_s_mm - before[1]
                one_step_mm = max(before[2], p.speed_mmps) * step_ms / 1000.0
                if moved_mm < 0 and moved_mm + length_mm[p.lane] <= one_step_mm + 1:
                    moved_mm += length_mm[p.lane]  # round a loop lane onto itself again
                assert -1 <= moved_mm <= one_step_mm + 1, (
                    f"step {city.step_index}: {p.id} moved {moved_mm} mm in one step "
                    f"(one step's travel {one_step_mm:.0f} mm), tier {before[3]} -> {p.sim_tier}")
                checked += 1
                tier_changes += before[3] != p.sim_tier
            last = now
        assert checked > 50 * STEPS, checked
        assert tier_changes > 100, tier_changes
