"""Snapshots over the socket: checkpoint/restore (exact continuation), save/load
phases, list/delete, job failures, names and roles, a restore's baseline.

Every server runs with --snapshot-db in the test's tmp_path (conftest)."""

import time

import pytest
from conftest import wait_populated

from bustle_client import (
    BustleTimeout,
    ClockMode,
    CommandStatus,
    JobKind,
    JobState,
    RejectReason,
)

from snapshot_helpers import (
    assert_rejected,
    manual_command,
    operator,
    run_job,
    viewer,
)


#: World commands of the scripted run: before step i+1 runs, SetPedestrianTarget(SCRIPT[i]).
SCRIPT = {5: 70, 17: 33, 44: 90}


def advance(s, start, stop, skip=()):
    """Manual clock: steps start+1..stop one at a time, sending the scripted
    commands; returns {step: digest}."""
    got = {}
    for i in range(start, stop):
        rid = None
        if i in SCRIPT and i not in skip:
            rid = s.send_command("SetPedestrianTarget", count=SCRIPT[i])
        assert s.step(1).applied_step == i + 1
        if rid is not None:
            r = s.wait_result(rid, timeout=3.0)
            assert r.accepted and r.applied_step == i + 1, r
        got[i + 1] = s.stats().digest
    return got


def test_checkpoint_restore_continues_exactly(start_server):
    """Checkpoints at several steps (one with a command still queued); each
    restore lands on that step and digest, and the following steps (with the
    same commands) repeat the first run's digests one for one, whichever
    direction the restore jumps."""
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        assert s.welcome.clock_mode == ClockMode.Manual
        end = 60
        ks = (0, 5, 17, 40)
        digest = {0: s.stats().digest}
        for i in range(end):
            if i in ks:
                r = s.checkpoint(f"k{i}")
                assert r.status == CommandStatus.Accepted, r
                assert (r.job.kind, r.job.state, r.job.step, r.job.name) == (
                    JobKind.Checkpoint, JobState.Copied, i, f"k{i}"), r.job
                assert not r.job.terminal
                last = s.wait_job(r, timeout=5.0)
                assert [j.state for j in last] == [JobState.Committed], last
                assert last[-1].terminal and last[-1].step == i
            if i == 5:
                # a checkpoint taken while a world command is queued carries it
                rid = s.send_command("SetPedestrianTarget", count=SCRIPT[5])
                assert run_job(s, "Checkpoint", "k5-pending")[-1].state == JobState.Committed
                s.step(1)
                assert s.wait_result(rid).accepted
                digest[6] = s.stats().digest
                continue
            digest.update(advance(s, i, i + 1))
        assert s.stats().step == end
        assert len(set(digest.values())) == end + 1, "digests should differ from step to step"

        def restore_and_compare(name, k, stop, skip=()):
            st = run_job(s, "Restore", name)
            assert [j.state for j in st] == [JobState.Queued, JobState.Validated, JobState.Applied], st
            assert st[-1].terminal and st[-1].step == k and st[-1].name == name
            now = s.stats()
            assert now.step == k, f"restore '{name}' landed on step {now.step}, expected {k}"
            if not skip:
                assert now.digest == digest[k], (
                    f"restore '{name}': digest {now.digest:016x}, at step {k} it was {digest[k]:016x}")
            for step, d in advance(s, k, stop, skip).items():
                assert d == digest[step], (
                    f"after restore '{name}': step {step} digest {d:016x}, first run had "
                    f"{digest[step]:016x}")

        restore_and_compare("k17", 17, end)  # backwards, through two commands, to the end
        restore_and_compare("k0", 0, 3)  # backwards to the start
        restore_and_compare("k40", 40, end)  # forwards from step 3
        restore_and_compare("k5", 5, 20)
        # the queued SetPedestrianTarget comes back with the checkpoint and
        # applies at step 6 without being sent again
        restore_and_compare("k5-pending", 5, 20, skip={5})
        assert s.stats().pedestrian_target == SCRIPT[17]


def test_restore_sends_subscribers_a_baseline_at_the_older_step(start_server):
    srv = start_server("--clock", "manual")
    with operator(srv) as op, viewer(srv) as v:
        v.subscribe(motion_tolerance_mm=0)
        op.step(10)
        assert run_job(op, "Checkpoint", "ten")[-1].state == JobState.Committed
        op.step(15)
        mirror = v.mirror()
        while mirror.step != 25:
            mirror.apply(v.next_delta(timeout=3.0))
        assert mirror.baselines == 1
        before = op.stats()
        assert len(mirror) == before.pedestrians and mirror.digest == before.digest

        assert run_job(op, "Restore", "ten")[-1].state == JobState.Applied
        after = op.stats()
        assert after.step == 10
        d = v.next_delta(timeout=3.0)
        assert d.baseline and d.step == 10 and d.digest == after.digest, d
        mirror.apply(d)  # strict mirror: a baseline may go back in steps
        assert mirror.baselines == 2 and len(mirror) == after.pedestrians
        op.step(2)
        while mirror.step != 12:
            mirror.apply(v.next_delta(timeout=3.0))
        assert mirror.digest == op.stats().digest
        # a subscriber joining now reconstructs the same poses, to the millimetre
        with viewer(srv) as late:
            late.subscribe(motion_tolerance_mm=0)
            fresh = late.mirror()
            fresh.apply(late.next_delta(timeout=3.0))
            assert fresh.step == 12
            assert {k: p[:2] for k, p in fresh.positions_at().items()} == {
                k: p[:2] for k, p in mirror.positions_at().items()}


def test_restore_answers_queued_world_commands_with_world_replaced(start_server):
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        s.step(3)
        assert run_job(s, "Checkpoint", "three")[-1].state == JobState.Committed
        s.step(2)
        rid = s.send_command("SetPedestrianTarget", count=7)  # queued for the next step
        assert run_job(s, "Restore", "three")[-1].state == JobState.Applied
        r = s.wait_result(rid, timeout=3.0)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.WorldReplaced, r
        assert "three" in r.message, r.message
        s.step(1)
        st = s.stats()
        assert st.step == 4 and st.pedestrian_target == 120, "the dropped command must not apply"


def test_save_load_phases_and_population_regenerates(start_server):
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        assert manual_command(s, "SetPedestrianTarget", count=40).accepted
        s.step(30)
        saved = s.stats()
        assert saved.pedestrians == 40 and saved.pedestrian_target == 40
        r = s.save("city-40")
        assert r.status == CommandStatus.Accepted, r
        assert (r.job.kind, r.job.state, r.job.step) == (JobKind.Save, JobState.Copied, saved.step)
        assert [j.state for j in s.wait_job(r, timeout=5.0)] == [JobState.Committed]

        assert manual_command(s, "SetPedestrianTarget", count=10).accepted
        s.step(30)
        assert s.stats().pedestrians == 10

        r = s.load("city-40")
        assert r.status == CommandStatus.Accepted, r
        assert (r.job.kind, r.job.state, r.job.terminal) == (JobKind.Load, JobState.Queued, False)
        seen = s.wait_job(r, timeout=5.0)
        assert [j.state for j in seen] == [
            JobState.Validated, JobState.SnapshotApplied, JobState.ScheduleReconciled,
            JobState.RepresentationRebuilt], seen
        assert [j.terminal for j in seen] == [False, False, False, True]
        assert all(j.step == saved.step and j.name == "city-40" for j in seen), seen
        st = s.stats()
        assert st.step == saved.step and st.pedestrian_target == 40, st
        # a save keeps persistent facts only: the population is regenerated
        for _ in range(100):
            if st.pedestrians == 40:
                break
            s.step(1)
            st = s.stats()
        assert st.pedestrians == 40, f"population did not regenerate to the saved target: {st}"


def test_list_and_delete(start_server):
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        assert s.snapshots() == []
        s.step(4)
        assert run_job(s, "Checkpoint", "alpha")[-1].state == JobState.Committed
        at4 = s.stats()
        s.step(3)
        assert run_job(s, "Save", "beta")[-1].state == JobState.Committed
        at7 = s.stats()
        r = s.list_snapshots()
        assert r.accepted and r.snapshots is not None
        by_name = {i.name: i for i in r.snapshots}
        assert sorted(by_name) == ["alpha", "beta"], r.snapshots
        a, b = by_name["alpha"], by_name["beta"]
        assert (a.kind, a.step, a.digest, a.pedestrians) == ("checkpoint", 4, at4.digest, at4.pedestrians)
        assert (b.kind, b.step) == ("save", 7)
        assert a.scenario_id == b.scenario_id == srv.connect().hello("id").scenario_id
        assert a.sim_time_us == at4.sim_time_us and b.sim_time_us == at7.sim_time_us
        assert a.created_unix_ms > 1_600_000_000_000 and b.created_unix_ms >= a.created_unix_ms

        # a checkpoint of an existing name replaces it
        s.step(1)
        assert run_job(s, "Checkpoint", "alpha")[-1].state == JobState.Committed
        assert {i.name: i.step for i in s.snapshots()} == {"alpha": 8, "beta": 7}

        r = s.delete_snapshot("alpha")
        assert r.status == CommandStatus.Accepted, r
        assert [i.name for i in s.snapshots()] == ["beta"]
        assert_rejected(s.delete_snapshot("alpha"), RejectReason.NotFound)
        assert_rejected(s.delete_snapshot("never-was"), RejectReason.NotFound)
        st = run_job(s, "Restore", "alpha")
        assert st[-1].state == JobState.Failed and "alpha" in st[-1].message


def test_restore_failures_are_jobs_naming_the_snapshot(start_server):
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        s.step(6)
        before = s.stats()
        seen = run_job(s, "Restore", "no-such-snapshot")
        assert [j.state for j in seen] == [JobState.Queued, JobState.Failed], seen
        assert seen[-1].terminal and "no-such-snapshot" in seen[-1].message, seen[-1]
        seen = run_job(s, "Load", "no-such-save")
        assert [j.state for j in seen] == [JobState.Queued, JobState.Failed], seen
        assert "no-such-save" in seen[-1].message

        # restore of a save, load of a checkpoint: the kind is named
        assert run_job(s, "Save", "a-save")[-1].state == JobState.Committed
        assert run_job(s, "Checkpoint", "a-checkpoint")[-1].state == JobState.Committed
        seen = run_job(s, "Restore", "a-save")
        assert seen[-1].state == JobState.Failed, seen
        assert "a-save" in seen[-1].message and "kind" in seen[-1].message, seen[-1].message
        seen = run_job(s, "Load", "a-checkpoint")
        assert seen[-1].state == JobState.Failed, seen
        assert "a-checkpoint" in seen[-1].message and "kind" in seen[-1].message, seen[-1].message

        after = s.stats()
        assert (after.step, after.digest) == (before.step, before.digest), "a failed job changed the world"

        # QueryJob reports the last state, for any role
        job_id = seen[-1].job_id
        q = s.query_job(job_id)
        assert q.accepted and q.job.state == JobState.Failed and q.job.message == seen[-1].message
        with viewer(srv) as v:
            assert v.query_job(job_id).job.state == JobState.Failed
            assert_rejected(v.query_job(10**12), RejectReason.NotFound)


@pytest.mark.parametrize("name", [
    "", "x" * 65, "has space", "slash/name", "semi;colon", "quote'", "caf\u00e9",
    "keyframe.1", "keyframe.",
])
@pytest.mark.parametrize("command", ["Checkpoint", "Restore", "Save", "Load", "DeleteSnapshot"])
def test_bad_snapshot_names_are_invalid_arguments(start_server, command, name):
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        r = s.command(command, name=name)
        assert_rejected(r, RejectReason.InvalidArgument)
        assert r.job is None
        assert s.snapshots() == []


def test_edge_names_are_accepted(start_server):
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        names = ["x" * 64, "keyframe", "Keyframe.1", "a.b_c-D9", "-", "."]
        for n in names:
            assert run_job(s, "Checkpoint", n)[-1].state == JobState.Committed, n
        assert sorted(i.name for i in s.snapshots()) == sorted(names)


@pytest.mark.parametrize("command", ["Checkpoint", "Restore", "Save", "Load", "DeleteSnapshot"])
def test_viewer_may_not_use_snapshot_commands(start_server, command):
    srv = start_server("--clock", "manual")
    with operator(srv) as op:
        assert run_job(op, "Checkpoint", "kept")[-1].state == JobState.Committed
        with viewer(srv) as v:
            r = v.command(command, name="kept")
            assert_rejected(r, RejectReason.NotAuthorized)
            # listing is allowed to viewers
            assert [i.name for i in v.snapshots()] == ["kept"]
            assert v.buffered_job_updates == 0


def test_snapshot_jobs_with_fast_clock_and_populated_city(start_server):
    """Under a running clock a restore lands on the checkpoint's state (the
    restored step's digest matches the listing) and the clock keeps running."""
    srv = start_server("--clock", "fast")
    with operator(srv) as s:
        wait_populated(s)
        seen = run_job(s, "Checkpoint", "live")
        assert seen[-1].state == JobState.Committed
        info = {i.name: i for i in s.snapshots()}["live"]
        assert info.step == seen[0].step and info.pedestrians == 120
        s.pause()
        assert run_job(s, "Restore", "live")[-1].state == JobState.Applied
        st = s.stats()
        assert (st.step, st.digest) == (info.step, info.digest), (st, info)
        s.resume()
        deadline = time.monotonic() + 5.0
        while s.stats().step <= info.step + 10:
            assert time.monotonic() < deadline, "the clock did not resume after the restore"


# Commands still queued in a checkpoint keep their origin (session id, request
# id); after a restore they must not be answered to whichever client now has
# that session id (the server only answers commands submitted to the current
# world).
def test_restored_pending_command_answers_nobody_in_a_new_process(start_server, tmp_path):
    db = tmp_path / "pending.db"
    srv = start_server("--clock", "manual", "--snapshot-db", str(db))
    with operator(srv) as s:  # the first session of the process
        s.step(3)
        for _ in range(40):  # request ids beyond what the next client will use
            s.stats()
        rid = s.send_command("SetPedestrianTarget", count=9)
        assert rid > 40
        assert run_job(s, "Checkpoint", "pending")[-1].state == JobState.Committed
        s.step(1)
        assert s.wait_result(rid).accepted
    srv.stop(check=True)

    srv = start_server("--clock", "manual", "--snapshot-db", str(db))
    with operator(srv) as v:  # again the first session of its process
        assert run_job(v, "Restore", "pending")[-1].state == JobState.Applied
        assert v.step(1).accepted
        assert v.stats().pedestrian_target == 9, "the restored command applies"
        with pytest.raises(BustleTimeout):
            stray = v.wait_result(rid, timeout=0.5)
            pytest.fail(f"client received a result for request {rid} it never sent: {stray}")


def test_restore_under_another_rate_names_the_step_length(start_server, tmp_path):
    """The refusal used to read "different scenario ('X') than the running one ('X')"."""
    db = tmp_path / "rate.db"
    srv = start_server("--clock", "manual", "--rate", "10", "--snapshot-db", str(db))
    with operator(srv) as s:
        s.step(2)
        assert run_job(s, "Checkpoint", "at-10hz")[-1].state == JobState.Committed
    srv.stop(check=True)

    srv = start_server("--clock", "manual", "--rate", "20", "--snapshot-db", str(db))
    with operator(srv) as s:
        before = s.stats()
        seen = run_job(s, "Restore", "at-10hz")
        assert [j.state for j in seen] == [JobState.Queued, JobState.Failed], seen
        message = seen[-1].message
        assert "at-10hz" in message and "scenario_json" in message, message
        assert "step length 100000 us in the snapshot vs 50000 us running" in message, message
        assert "--rate" in message, message
        after = s.stats()
        assert (after.step, after.digest) == (before.step, before.digest), "a failed restore changed the world"


def test_load_restores_the_saved_active_set_at_once_and_waits_for_baselines(start_server):
    """Seed 001's load phases mean what they say: right after a load the saved
    active set is back (one reconciling step, not a regrowth at the quotas),
    and RepresentationRebuilt comes once subscribed clients were sent their
    baseline of the loaded world."""
    from population_helpers import LARGEBLOCK
    srv = start_server("--clock", "manual", "--config", LARGEBLOCK)
    with operator(srv) as s, viewer(srv) as v:
        v.subscribe()
        assert manual_command(s, "SetHour", hour=12.0).accepted
        s.step(300)
        noon = s.stats()
        assert noon.residents_active == 72, noon
        zones_at_noon = {z.id: z.active for z in s.zones()}
        assert [j.state for j in run_job(s, "Save", "noon")][-1] == JobState.Committed

        assert manual_command(s, "SetHour", hour=6.0).accepted
        s.step(300)
        assert s.stats().residents_active == 48

        seen = run_job(s, "Load", "noon")
        assert [j.state for j in seen][-3:] == [
            JobState.SnapshotApplied, JobState.ScheduleReconciled, JobState.RepresentationRebuilt], seen
        st = s.stats()
        assert st.step == noon.step
        assert st.residents_active == 72, "the saved active set is placed by the load itself"
        assert {z.id: z.active for z in s.zones()} == zones_at_noon
        # The viewer was sent a baseline of the loaded world (its step), with
        # the 72 residents in it.
        deadline = time.monotonic() + 5.0
        while True:
            d = v.next_delta(timeout=max(0.1, deadline - time.monotonic()))
            if d.baseline and d.step == noon.step:
                break
        assert len(d.entered) == 72, d
