"""The long form of the district tests (label slow: `make check-all`, not
`make test`): 2 and 4 district servers over 5 000 steps, pedestrians
(and, in the second test, cars queueing across the borders) crossing every
border many times; kill -9 of a district chosen by a seeded
generator at 20 moments chosen the same way, each followed by --resume.
Every district's digest at every step equals an uninterrupted run's, every
resumed recording verifies alone, and at every keyframe of the
uninterrupted run each id is held once in the city (in transit counted
once). The moments are fixed by the seed; when the kill lands in wall time
does not change the outcome, which is what the test proves."""

import random

import pytest

from test_districts import check_conservation, check_kills, vehicle_city

STEPS = 5000
KILLS = 20


def kill_plan(districts: int, seed: int):
    """KILLS (district, recorded ticks) pairs, ticks increasing, at least 60
    apart (each kill lands after the previous resume), in [100, STEPS - 100]."""
    rng = random.Random(seed)
    ticks = sorted(rng.sample(range(100, STEPS - 100, 60), KILLS))
    return [(rng.randrange(districts), t) for t in ticks]


@pytest.mark.parametrize("districts", [2, 4])
def test_twenty_kills_over_five_thousand_steps_change_nothing(tmp_path, districts):
    calm = check_kills(tmp_path, districts, kill_plan(districts, 34 + districts), STEPS)
    crossings = check_conservation([r[0] for r in calm], steps=STEPS)
    assert crossings > 1000 * (districts - 1), f"only {crossings} border crossings"


@pytest.mark.parametrize("districts", [2, 4])
def test_twenty_kills_with_cars_across_the_borders_change_nothing(tmp_path, districts):
    """The same with 300 cars on the loops of a 4 x 4 grid: a killed district's
    keyframe holds the ghosts it just sent and its garages' cars away."""
    city = vehicle_city(tmp_path, districts)
    calm = check_kills(tmp_path, districts, kill_plan(districts, 134 + districts), STEPS, city=city)
    check_conservation([r[0] for r in calm], steps=STEPS)
