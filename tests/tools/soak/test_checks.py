"""The shared checks of bustle-soak in process: digests compared per (epoch,
step), Stats compared with a whole-city client's counts when it reaches the
step, violations kept per invariant."""

import time

from bustle_soak.checks import INVARIANTS, Checker


def checker():
    return Checker(time.monotonic())


def test_same_digest_passes_other_digest_is_named():
    c = checker()
    c.digest(0, 10, 0xAA, "a")
    c.digest(0, 10, 0xAA, "b")
    assert not c.failed and c.checks["digest-agreement"] == 2
    c.digest(0, 11, 0xBB, "a")
    c.digest(0, 11, 0xBC, "stats")
    assert c.counts["digest-agreement"] == 1
    v = c.violations[0]
    assert v.invariant == "digest-agreement" and v.client == "stats" and v.step == 11
    assert "00000000000000bc" in v.message and "a saw 00000000000000bb" in v.message


def test_epochs_keep_rewound_steps_apart():
    c = checker()
    c.digest(0, 5, 1, "a")
    c.digest(1, 5, 2, "a")  # after a restore: step 5 again, another state
    assert not c.failed
    assert c.digest_at(0, 5) == 1 and c.digest_at(1, 5) == 2


def test_stats_wait_for_the_stream_then_compare():
    c = checker()
    c.stats_sample(0, 7, 100, 3)          # the stream is not at step 7 yet
    assert c.checks["stats-consistency"] == 0
    c.city_count(0, 7, 100, 3, "witness")
    assert c.checks["stats-consistency"] == 1 and not c.failed
    c.city_count(0, 8, 101, 3, "witness")
    c.stats_sample(0, 8, 99, 3)
    assert c.counts["stats-consistency"] == 1
    assert "Stats says 99 pedestrians and 3 vehicles, the stream holds 101 and 3" in c.violations[0].message


def test_violations_are_counted_beyond_those_kept():
    c = checker()
    for i in range(Checker.KEEP_PER_INVARIANT + 10):
        c.fail("unique-ids", "a", f"dup {i}")
    assert c.counts["unique-ids"] == Checker.KEEP_PER_INVARIANT + 10
    assert len(c.violations) == Checker.KEEP_PER_INVARIANT
    assert set(INVARIANTS) >= {"unique-ids", "contiguous-steps", "digest-agreement", "mirror-consistency",
                               "stats-consistency", "command-answered", "command-graded", "hint-budgets"}
