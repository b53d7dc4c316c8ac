"""Handshake, subscription and the delta stream against the real server."""

import time

import pytest
from conftest import wait_populated

from bustle_client import (
    PROTOCOL_VERSION,
    ClockMode,
    ConnectionClosed,
    Delta,
    EntityKind,
    EntityMirror,
    ErrorCode,
    ErrorMessage,
    Role,
)


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

        s.subscribe()
        mirror = EntityMirror(strict=True)
        first = s.next_delta(timeout=5.0)
        assert first.baseline, "first Delta after Subscribe must be a baseline"
        assert len(first.entered) >= 100, (
            f"baseline of the default city lists {len(first.entered)} entities, expected ~120")
        assert all(e.kind == EntityKind.Pedestrian for e in first.entered)
        mirror.apply(first)
        start_positions = {eid: (e.x_m, e.y_m) for eid, e in mirror.items()}

        deltas = [first]
        for _ in range(15):
            d = s.next_delta(timeout=5.0)
            assert not d.baseline, f"unexpected second baseline at step {d.step}"
            mirror.apply(d)  # strict: consistent enter/update/leave
            deltas.append(d)
        steps = [d.step for d in deltas]
        assert all(b > a for a, b in zip(steps, steps[1:])), f"steps not increasing: {steps}"
        for d in deltas:
            assert d.sim_time_us == d.step * w.step_us, f"sim time of step {d.step}"
        moved = [eid for eid, pos in start_positions.items()
                 if eid in mirror and (mirror[eid].x_m, mirror[eid].y_m) != pos]
        assert moved, f"no entity moved between step {steps[0]} and step {steps[-1]}"


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
        mirror = EntityMirror(strict=True)
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
