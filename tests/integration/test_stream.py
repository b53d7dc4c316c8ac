"""Handshake, subscription and the delta stream against the real server
(protocol v2: lane-relative dead-reckoned motion, interest and budgets)."""

import json
import math
import time

import pytest
from conftest import wait_populated

from bustle_client import (
    PROTOCOL_VERSION,
    ClockMode,
    ConnectionClosed,
    Delta,
    CommandRejected,
    EntityKind,
    ErrorCode,
    ErrorMessage,
    Observer,
    RejectReason,
    RepresentationBudgets,
    RepresentationHint,
    Role,
    SimTier,
)

DEFAULT_CITY_ARGS = ("--clock", "manual")


def test_handshake_subscribe_and_entities_move(server):
    with server.connect() as s:
        w = s.hello("it-stream", role="viewer")
        assert w.protocol_version == PROTOCOL_VERSION
        assert w.role == Role.Viewer
        assert w.clock_mode == ClockMode.Fast
        assert w.step_us > 0
        assert w.scenario_id
        assert w.lanes, "Welcome must carry the lane geometry"
        wait_populated(s)

        assert all(lane.length_mm == round(lane.length_m * 1000) for lane in w.lanes)
        assert "pedestrian" in w.archetypes

        result = s.subscribe()
        assert result.accepted
        mirror = s.mirror(strict=True)
        first = s.next_delta(timeout=5.0)
        assert first.baseline, "first Delta after Subscribe must be a baseline"
        assert len(first.entered) >= 100, (
            f"baseline of the default city lists {len(first.entered)} entities, expected ~120")
        assert all(e.kind == EntityKind.Pedestrian for e in first.entered)
        assert all(e.representation != RepresentationHint.None_ for e in first.entered)
        assert all(w.archetypes[e.archetype].startswith("pedestrian") for e in first.entered)
        assert all(e.lane < len(w.lanes) and e.s_mm <= w.lanes[e.lane].length_mm
                   for e in first.entered)
        mirror.apply(first)
        start_positions = {eid: (x, y) for eid, (_, _, x, y) in mirror.positions_at().items()}

        deltas = [first]
        for _ in range(15):
            d = s.next_delta(timeout=5.0)
            assert not d.baseline, f"unexpected second baseline at step {d.step}"
            mirror.apply(d)  # strict: consistent enter/motion/change/leave
            deltas.append(d)
        steps = [d.step for d in deltas]
        assert all(b > a for a, b in zip(steps, steps[1:])), f"steps not increasing: {steps}"
        for d in deltas:
            assert d.sim_time_us == d.step * w.step_us, f"sim time of step {d.step}"
        now = mirror.positions_at()
        moved = [eid for eid, pos in start_positions.items() if eid in now and now[eid][2:] != pos]
        assert moved, f"no entity moved between step {steps[0]} and step {steps[-1]}"


#: Steps a tier's simulated pose may be behind the stream's (which extrapolates
#: strided tiers between their evaluations): Simulated every 2nd, Coarse every 8th.
STRIDE_LAG = {SimTier.Full: 0, SimTier.Simulated: 1, SimTier.Coarse: 7}


def _assert_mirror_matches_server(s, mirror, ids, tolerance_mm):
    """The mirror's reconstruction of ``ids`` agrees with QueryEntity: same
    lane, distance along it within the tolerance (+1 mm of rounding), and the
    position within that distance too. QueryEntity reports the last simulated
    pose, so strided tiers may be behind by up to their stride's travel."""
    step_us = mirror.step_us
    for eid in ids:
        info = s.entity(eid)
        e = mirror[eid]
        assert info.lane == e.lane, (eid, info, e)
        lag_mm = e.speed_mmps * STRIDE_LAG[info.tier] * step_us // 1_000_000
        ahead = e.predicted_s_mm - info.s_m * 1000
        assert -(tolerance_mm + 1) <= ahead <= lag_mm + tolerance_mm + 1, (eid, info.tier, info.s_m, e)
        if lag_mm == 0:
            slack_m = (tolerance_mm + 1) / 1000.0 + 1e-9
            assert abs(info.x_m - e.x_m) <= slack_m and abs(info.y_m - e.y_m) <= slack_m, (eid, info, e)


@pytest.mark.parametrize("tolerance_mm", [0, 10, 250])
def test_reconstructed_poses_match_the_server_within_the_tolerance(start_server, tolerance_mm):
    """Dead reckoning: the mirror places every received pedestrian where the
    server has it, step after step, with motion records only where the
    prediction would drift past the subscription's tolerance."""
    srv = start_server(*DEFAULT_CITY_ARGS)
    with srv.connect() as op, srv.connect() as v:
        op.hello("it-dr-op", role="operator")
        v.hello("it-dr-viewer")
        op.step(30)  # let the spawn pipeline fill the city
        v.subscribe(motion_tolerance_mm=tolerance_mm)
        mirror = v.mirror()
        mirror.apply(v.next_delta(timeout=5.0))
        assert mirror.baselines == 1 and len(mirror) > 50
        ids = sorted(mirror)[:40]
        records = 0
        for _ in range(12):
            step = op.step(1).applied_step
            while mirror.step != step:
                d = v.next_delta(timeout=5.0)
                records += len(d.motion)
                mirror.apply(d)
            live = [eid for eid in ids if eid in mirror]
            _assert_mirror_matches_server(op, mirror, live, tolerance_mm)
        # constant walking speeds cost no bytes: far fewer records than entity-steps
        assert records < 12 * len(mirror), f"{records} motion records for {len(mirror)} entities"


def test_budgets_limit_what_is_sent_and_update_interest_widens_them(start_server):
    srv = start_server(*DEFAULT_CITY_ARGS)
    with srv.connect() as op, srv.connect() as v:
        op.hello("it-budget-op", role="operator")
        v.hello("it-budget-viewer")
        op.step(30)
        population = op.stats().pedestrians
        assert population > 30
        v.subscribe(budgets=RepresentationBudgets(actors=3, instances=7, markers=0))
        mirror = v.mirror()
        base = v.next_delta(timeout=5.0)
        mirror.apply(base)
        hints = [e.representation for e in mirror.values()]
        assert hints.count(RepresentationHint.Actor) <= 3
        assert hints.count(RepresentationHint.Instanced) <= 7
        assert RepresentationHint.Marker not in hints and len(mirror) <= 10
        assert all(e.sim_tier != SimTier.Coarse for e in mirror.values()), "Coarse can only be Marker"
        assert base.interest_truncated == population - len(mirror), (base.interest_truncated, population)
        # wider budgets: the rest enters without a new baseline
        v.update_interest(budgets=RepresentationBudgets())
        step = op.step(1).applied_step
        while mirror.step != step:
            d = v.next_delta(timeout=5.0)
            assert not d.baseline
            mirror.apply(d)
        assert len(mirror) == op.stats().pedestrians and mirror.interest_truncated == 0


def test_observers_limit_interest_to_their_area(start_server):
    """A far observer receives nobody; narrowing a whole-city subscription to
    one entity's surroundings (UpdateInterest) sends the others ``left`` and
    keeps only entities within the radius (1.1 x radius: hysteresis)."""
    srv = start_server(*DEFAULT_CITY_ARGS)
    with srv.connect() as op, srv.connect() as far, srv.connect() as near:
        op.hello("it-interest-op", role="operator")
        far.hello("it-far")
        near.hello("it-near")
        op.step(30)
        far.subscribe(observers=[Observer(50_000.0, 50_000.0, radius_m=10.0)])
        base = far.next_delta(timeout=5.0)
        assert base.baseline and base.entered == [] and base.interest_truncated == 0
        near.subscribe(motion_tolerance_mm=0)
        mirror = near.mirror()
        mirror.apply(near.next_delta(timeout=5.0))
        everyone = len(mirror)
        center = sorted(mirror)[len(mirror) // 2]
        ox, oy = mirror[center].x_m, mirror[center].y_m
        near.update_interest(observers=[Observer(ox, oy, radius_m=20.0)])
        left = 0
        for _ in range(2):
            step = op.step(1).applied_step
            while mirror.step != step:
                d = near.next_delta(timeout=5.0)
                assert not d.baseline, "UpdateInterest sends no new baseline"
                left += len(d.left)
                mirror.apply(d)
        assert center in mirror and 0 < len(mirror) < everyone and left > 0
        for eid, (_, _, x, y) in mirror.positions_at().items():
            assert math.hypot(x - ox, y - oy) <= 22.0 + 0.01, (eid, x, y)


def _two_rings_city(path) -> str:
    """Two sidewalk rings 1 km apart, pedestrians on both."""
    def ring(name, x0):
        return [
            {"id": f"{name}.n", "kind": "sidewalk", "speed_mps_limit": 1.4,
             "points": [[x0, 0], [x0 + 30, 0], [x0 + 30, 10]], "successors": [f"{name}.s"]},
            {"id": f"{name}.s", "kind": "sidewalk", "speed_mps_limit": 1.4,
             "points": [[x0 + 30, 10], [x0, 10], [x0, 0]], "successors": [f"{name}.n"]},
        ]
    city = {"id": "test.two-rings", "step_us": 100000, "entity_capacity": 256,
            "pedestrians": {"count": 40, "spawn_per_step_max": 40},
            "lanes": ring("west", 0) + ring("east", 1000)}
    path.write_text(json.dumps(city))
    return str(path)


def test_interest_moved_far_while_stepping_is_manual_applies_at_the_current_step(
        start_server, tmp_path):
    """Frames pose only what subscribed clients may read (docs/protocol.md,
    interest coverage). A client that moves its observer to a part of the
    city the last frame left out still gets that part at once, at the
    current step, with no step run: the server republishes the step."""
    srv = start_server("--clock", "manual", "--config", _two_rings_city(tmp_path / "rings.json"))
    with srv.connect() as op, srv.connect() as c:
        op.hello("it-cover-op", role="operator")
        c.hello("it-cover-client")
        op.step(10)
        c.subscribe(observers=[Observer(15.0, 5.0, radius_m=40.0)])
        mirror = c.mirror()
        mirror.apply(c.next_delta(timeout=5.0))
        west = len(mirror)
        assert west > 0
        assert all(x < 100.0 for (_, _, x, _) in mirror.positions_at().values())
        step = mirror.step
        c.update_interest(observers=[Observer(1015.0, 5.0, radius_m=40.0)])
        d = c.next_delta(timeout=5.0)
        assert d.step == step and not d.baseline
        mirror.apply(d)
        assert len(d.left) == west and len(mirror) > 0
        assert all(x > 900.0 for (_, _, x, _) in mirror.positions_at().values())


def test_subscribe_with_a_bad_observer_is_rejected_naming_the_field(server):
    with server.connect() as s:
        s.hello("it-bad-observer")
        with pytest.raises(CommandRejected, match=r"observers\[1\]\.radius_m") as info:
            s.subscribe(observers=[Observer(0, 0), Observer(1, 1, radius_m=0.0)])
        assert info.value.result.reason == RejectReason.InvalidArgument
        with pytest.raises(CommandRejected):  # not subscribed
            s.update_interest(budgets=RepresentationBudgets())
        s.subscribe()  # the connection is still usable
        assert s.next_delta(timeout=5.0).baseline


def test_late_joiner_gets_baseline_with_current_population(server):
    with server.connect() as a, server.connect() as b:
        a.hello("early")
        wait_populated(a)
        a.subscribe()
        da = a.next_delta(timeout=5.0)
        for _ in range(5):
            da = a.next_delta(timeout=5.0)
        b.hello("late")
        b.subscribe()
        db = b.next_delta(timeout=5.0)
        assert db.baseline and db.step > 0
        assert db.entered, "late joiner's baseline must list the current population"
        # both see the same world: same digest for the same step
        digests_a = {}
        while True:
            digests_a[da.step] = da.digest
            if da.step >= db.step:
                break
            da = a.next_delta(timeout=5.0)
        if db.step in digests_a:
            assert digests_a[db.step] == db.digest


def test_realtime_clock_runs_at_configured_rate(start_server):
    srv = start_server("--clock", "realtime")
    with srv.connect() as s:
        w = s.hello("it-rate")
        assert w.clock_mode == ClockMode.Realtime
        assert w.step_us == 100_000, "default city runs at 10 Hz"
        first = s.stats().step
        time.sleep(1.0)
        advanced = s.stats().step - first
        assert 6 <= advanced <= 14, f"{advanced} steps in ~1 s at 10 Hz"


def test_rate_flag_sets_step_length(start_server):
    srv = start_server("--clock", "realtime", "--rate", "20")
    with srv.connect() as s:
        assert s.hello("it-rate20").step_us == 50_000


def test_sigterm_with_subscribed_client_exits_promptly(start_server):
    srv = start_server("--clock", "fast")
    s = srv.connect()
    s.hello("it-sigterm")
    s.subscribe()
    s.next_delta(timeout=5.0)
    code, seconds = srv.stop(check=True)
    assert code == 0 and seconds <= 3.0
    seen = s.wait_closed(timeout=3.0)
    others = [m for m in seen if not isinstance(m, Delta)]
    # at most a ServerShuttingDown notice, then EOF
    assert len(others) <= 1, f"unexpected frames at shutdown: {others}"
    assert all(isinstance(m, ErrorMessage) and m.code == ErrorCode.ServerShuttingDown
               for m in others), f"unexpected frames at shutdown: {others}"
    with pytest.raises(ConnectionClosed):
        s.next_delta(timeout=1.0)
    s.close()


def test_slow_client_gets_coalesced_deltas(server):
    """A client that stops reading is not sent a backlog of every step: after
    catching up it sees step gaps, and the coalesced deltas keep a strict
    mirror consistent (same population, increasing steps)."""
    with server.connect() as s:
        s.hello("it-slow-reader")
        population = wait_populated(s).pedestrians
        s.subscribe()
        mirror = s.mirror(strict=True)
        mirror.apply(s.next_delta(timeout=5.0))
        assert len(mirror) == population
        start_step = mirror.step
        time.sleep(1.0)  # fast clock: tens of thousands of steps pass meanwhile
        deltas_read, gaps = 0, 0
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and gaps == 0:
            prev = mirror.step
            mirror.apply(s.next_delta(timeout=5.0))
            deltas_read += 1
            gaps += mirror.step > prev + 1
        assert gaps, f"{deltas_read} deltas from step {start_step}, none coalesced"
        assert len(mirror) == population


def test_a_manual_step_of_n_ends_in_a_delta_at_its_last_step(start_server):
    """Step(n) under a manual clock: the subscriber's deltas go strictly up and
    end exactly at the step the command left the world in, never beyond it;
    the steps in between may be coalesced (at most n deltas, at least one),
    as for any client that did not see every step (docs/protocol.md,
    streaming). Another Step(1) is then exactly one more delta."""
    srv = start_server(*DEFAULT_CITY_ARGS)
    with srv.connect() as op, srv.connect() as v:
        op.hello("it-step-n-op", role="operator")
        v.hello("it-step-n-viewer")
        op.step(5)
        v.subscribe()
        mirror = v.mirror(strict=True)
        mirror.apply(v.next_delta(timeout=5.0))
        for n in (1, 7, 40, 1):
            start = mirror.step
            target = op.step(n, timeout=5.0).applied_step
            assert target == start + n
            steps = []
            while mirror.step != target:
                d = v.next_delta(timeout=5.0)
                assert d.step > mirror.step, (steps, d.step)
                assert d.step <= target, (steps, d.step, target)
                mirror.apply(d)
                steps.append(d.step)
            assert 1 <= len(steps) <= n and steps[-1] == target, (n, steps)
            assert mirror.digest == op.stats().digest


def test_frames_nobody_reads_carry_no_entities_and_a_subscriber_still_gets_all(start_server):
    """With no client subscribed the sim thread publishes frames without
    entities (nobody reads them); a Subscribe wakes it to publish the current
    step in full, also under a manual clock where no step comes by itself.
    Each baseline lists every entity at the step the world is at, and after
    the last subscriber left, the next one's baseline is again the current
    step's whole city."""
    srv = start_server(*DEFAULT_CITY_ARGS)
    with srv.connect() as op:
        op.hello("it-unwatched-op", role="operator")
        for steps in (40, 25):
            target = op.step(steps, timeout=10.0).applied_step  # nobody subscribed
            stats = op.stats()
            assert stats.step == target
            with srv.connect() as v:
                v.hello("it-unwatched-viewer")
                v.subscribe()
                first = v.next_delta(timeout=5.0)
                assert first.baseline and first.step == target, (first.step, target)
                assert first.digest == stats.digest
                assert len(first.entered) == stats.pedestrians + stats.vehicles > 0, (
                    len(first.entered), stats.pedestrians, stats.vehicles)
                # Subscribed: the next step's delta follows at once.
                op.step(1, timeout=5.0)
                assert v.next_delta(timeout=5.0).step == target + 1
