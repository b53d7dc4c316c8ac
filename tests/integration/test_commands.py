"""Commands: clock control, authorization, population target, despawn."""

import time

import pytest
from conftest import wait_populated

from bustle_client import (
    ClockMode,
    ErrorCode,
    Role,
    ServerError,
    CommandStatus,
    RejectReason,
)


def operator(srv, name="it-operator"):
    s = srv.connect()
    w = s.hello(name, role="operator")
    assert w.role.name == "Operator", "without --token an operator request gets Operator"
    return s


def wait_for(predicate, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def test_manual_clock_advances_only_on_step(start_server):
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        assert s.welcome.clock_mode == ClockMode.Manual
        s.subscribe()
        st = s.stats()
        assert st.step == 0 and st.clock_mode == ClockMode.Manual
        time.sleep(0.5)
        assert s.stats().step == 0, "manual clock advanced without a Step"

        r = s.step(5)
        assert r.status == CommandStatus.Accepted, r
        assert r.applied_step == 5
        assert s.stats().step == 5

        # deltas catch up to exactly step 5 and stop there
        steps = []
        while not steps or steps[-1] < 5:
            steps.append(s.next_delta(timeout=3.0).step)
        assert steps[-1] == 5 and all(b > a for a, b in zip(steps, steps[1:])), steps
        time.sleep(0.3)
        assert s.stats().step == 5
        late = []
        while s.buffered_deltas:
            late.append(s.next_delta().step)
        assert all(x <= 5 for x in late), late

        assert s.step(3).applied_step == 8


@pytest.mark.parametrize("clock", ["realtime", "fast"])
def test_step_outside_manual_mode_is_rejected(start_server, clock):
    srv = start_server("--clock", clock)
    with operator(srv) as s:
        r = s.step(1)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.WrongClockMode, r


@pytest.mark.parametrize("name, fields", [
    ("Step", {"count": 1}),
    ("Pause", {}),
    ("Resume", {}),
    ("SetPedestrianTarget", {"count": 5}),
    ("DespawnEntity", {"index": 0, "generation": 1}),
])
def test_viewer_may_not_send_control_commands(start_server, name, fields):
    srv = start_server("--clock", "manual")
    with srv.connect() as s:
        s.hello("it-viewer", role="viewer")
        r = s.command(name, **fields)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.NotAuthorized, r
        st = s.stats()  # QueryStats is allowed for viewers
        assert st.step == 0, "a rejected Step must not advance the clock"


def test_pause_stops_the_clock_and_resume_restarts_it(server):
    with operator(server) as s:
        assert wait_for(lambda: s.stats().step > 0, 5.0), "fast clock does not run"
        assert s.pause().status == CommandStatus.Accepted
        a = s.stats()
        time.sleep(0.3)
        b = s.stats()
        assert a.paused and b.paused
        assert a.step == b.step, f"paused clock advanced from {a.step} to {b.step}"

        assert s.resume().status == CommandStatus.Accepted
        time.sleep(0.3)
        c = s.stats()
        assert not c.paused and c.step > b.step, f"resumed clock stuck at {c.step}"


def test_request_ids_are_echoed_and_results_are_in_order(server):
    with operator(server) as s:
        ids = [s.send_command("QueryStats") for _ in range(5)]
        results = [s.wait_result(i) for i in ids]
        assert [r.request_id for r in results] == ids
        steps = [r.stats.step for r in results]
        assert steps == sorted(steps)


def test_pedestrian_target(server):
    with operator(server) as s:
        assert wait_populated(s).pedestrians == 120, "default city has 120 pedestrians"
        r = s.set_pedestrian_target(10)
        assert r.status == CommandStatus.Accepted, r
        assert wait_for(lambda: s.stats().pedestrians == 10, 15.0), (
            f"population did not reach 10: {s.stats()}")
        st = s.stats()
        assert st.pedestrian_target == 10 and st.despawned_total >= 110

        r = s.set_pedestrian_target(10**9)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.InvalidArgument, r
        assert s.stats().pedestrian_target == 10


def manual_command(s, name, **fields):
    """Manual clock: world commands apply at the start of the next step, so send
    the command, run one step, then collect its result."""
    request_id = s.send_command(name, **fields)
    assert s.step(1).status == CommandStatus.Accepted
    return s.wait_result(request_id, timeout=3.0)


def mirror_until(s, mirror, step):
    while mirror.step is None or mirror.step < step:
        mirror.apply(s.next_delta(timeout=3.0))
    assert mirror.step == step, f"stream skipped past step {step} to {mirror.step}"
    return mirror


def test_pedestrian_target_with_mirror(start_server):
    """The stream agrees with the stats: the mirror ends with the target population."""
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        s.subscribe()
        r = manual_command(s, "SetPedestrianTarget", count=20)
        assert r.status == CommandStatus.Accepted, r
        assert s.step(200).status == CommandStatus.Accepted
        st = s.stats()
        assert st.step == 201 and st.pedestrians == 20
        mirror = mirror_until(s, s.mirror(), 201)
        assert len(mirror) == 20


def test_despawn(start_server):
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        s.subscribe()
        assert s.step(20).applied_step == 20
        mirror = mirror_until(s, s.mirror(), 20)
        assert mirror, "no pedestrians after 20 steps"
        victim = min(mirror)
        before = s.stats()

        r = manual_command(s, "DespawnEntity", index=victim.index, generation=victim.generation)
        assert r.status == CommandStatus.Accepted, r
        # Near the default observer the victim is on screen: it fades (Delta.retiring)
        # for despawn.fade_ms (1 s = 10 steps) and then leaves; its id is released then.
        mirror_until(s, mirror, 21)
        assert victim in mirror.retiring, f"{victim} did not begin fading at the despawn step"
        r = manual_command(s, "DespawnEntity", index=victim.index, generation=victim.generation)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.UnknownEntity, r
        assert s.step(9).status == CommandStatus.Accepted
        mirror_until(s, mirror, 31)
        assert victim not in mirror, f"{victim} still present after its fade"
        assert s.stats().despawned_total == before.despawned_total + 1

        r = manual_command(s, "DespawnEntity", index=victim.index, generation=victim.generation)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.UnknownEntity, r
        r = manual_command(s, "DespawnEntity", index=victim.index,
                           generation=victim.generation + 1)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.UnknownEntity, r


@pytest.mark.parametrize("how", ["flag", "env"])
def test_token_is_required_for_operator(start_server, how):
    if how == "flag":
        srv = start_server("--clock", "manual", "--token", "s3cret")
    else:
        srv = start_server("--clock", "manual", env={"BUSTLE_TOKEN": "s3cret"})
    with srv.connect() as s:
        assert s.hello("it-token", role="operator", token="s3cret").role == Role.Operator
        assert s.step(1).status == CommandStatus.Accepted
    with srv.connect() as s:
        assert s.hello("it-viewer").role == Role.Viewer
    for token in (None, "wrong"):
        with srv.connect() as s:
            # not specified: refusal (Error Unauthorized) or a viewer session;
            # specified: never an operator
            try:
                w = s.hello("it-no-token", role="operator", token=token)
            except ServerError as exc:
                assert exc.code == ErrorCode.Unauthorized, exc
                continue
            assert w.role == Role.Viewer, f"token {token!r} was granted {w.role!r}"
            r = s.step(1)
            assert r.status == CommandStatus.Rejected and r.reason == RejectReason.NotAuthorized
