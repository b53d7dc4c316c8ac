"""Session recording (--record) and bustle-replay verify against it.

Two operator clients interleave world commands and Step commands on a manual
clock, with a checkpoint and a restore mid-session; the recording must replay
to the same digest at every tick, and an altered command log must diverge at
exactly the altered tick."""

import re
import time

from conftest import replay_binary, run_cli, run_replay

from bustle_client import CommandStatus, JobState, RejectReason

from snapshot_helpers import copy_db, integrity_check, operator, run_job, sql

DIVERGED = re.compile(
    r"^DIVERGED at tick (\d+) step (\d+): recorded ([0-9a-f]{16}) replayed ([0-9a-f]{16})$")


class Driver:
    """Two operators, A and B (B subscribed, keeping a mirror), on one manual clock."""

    def __init__(self, srv):
        self.a = operator(srv, "rec-a")
        self.b = operator(srv, "rec-b")
        self.b.subscribe()
        self.mirror = self.b.mirror()
        self.ticks = 0
        self.digest_at_tick = {}
        self.pending = []  # (session, request id, expected status, expected reason)

    def close(self):
        self.a.close()
        self.b.close()

    def queue(self, who, name, expect=CommandStatus.Accepted, reason=RejectReason.None_, **fields):
        """Send a world command and make sure the server has queued it before
        anything else happens (a QueryStats on the same connection is handled
        after it), so the order across the two clients is the order written here."""
        s = getattr(self, who)
        rid = s.send_command(name, **fields)
        s.stats()
        self.pending.append((s, rid, expect, reason))
        return rid

    def step(self, who, n=1):
        s = getattr(self, who)
        r = s.step(n)
        assert r.accepted, r
        self.ticks += n
        self.digest_at_tick[self.ticks] = s.stats().digest
        for sess, rid, expect, reason in self.pending:
            res = sess.wait_result(rid, timeout=3.0)
            assert res.status == expect and res.reason == reason, res
        self.pending.clear()
        self.sync()
        return r

    def sync(self):
        step = self.a.stats().step
        while self.mirror.step != step:
            self.mirror.apply(self.b.next_delta(timeout=3.0))

    def victim(self, k=0):
        # Despawned entities near an observer fade (Delta.retiring) before
        # they leave; a second despawn of one would be rejected.
        return sorted(set(self.mirror) - self.mirror.retiring)[k]


def bump_target_count(path, where):
    """Adds 7 to the count of the SetPedestrianTarget commands matching ``where``,
    whichever way recording_commands stores arguments (columns or JSON ``args``)."""
    columns = {name for (name,) in sql(path, "SELECT name FROM pragma_table_info('recording_commands')")}
    if "count" in columns:
        change = "count = count + 7"
    else:
        assert "args" in columns, columns
        change = "args = json_set(args, '$.count', json_extract(args, '$.count') + 7)"
    sql(path, f"UPDATE recording_commands SET {change} WHERE kind = 'set_pedestrian_target' AND {where}")
    return path


def record_session(srv):
    """The scripted session; returns (driver, ticks)."""
    d = Driver(srv)
    try:
        d.step("a", 3)
        d.sync()
        # tick 4: commands from both clients, interleaved, in one tick
        d.queue("a", "SetPedestrianTarget", count=60)
        d.queue("b", "DespawnEntity", index=d.victim(0).index, generation=d.victim(0).generation)
        d.queue("a", "SetPedestrianTarget", count=50)
        d.queue("b", "DespawnEntity", index=d.victim(1).index, generation=d.victim(1).generation)
        d.step("a")
        d.step("b", 2)
        # a rejected command is part of the log too
        d.queue("b", "DespawnEntity", expect=CommandStatus.Rejected,
                reason=RejectReason.UnknownEntity, index=60_000, generation=1)
        d.queue("a", "DespawnEntity", index=d.victim(2).index, generation=d.victim(2).generation)
        d.step("b")
        assert run_job(d.a, "Checkpoint", "mid")[-1].state == JobState.Committed
        mid_tick = d.ticks
        d.step("a", 2)
        d.queue("b", "SetPedestrianTarget", count=30)
        d.step("a", 2)
        # a command queued when the restore replaces the world never applies
        rid = d.a.send_command("SetPedestrianTarget", count=44)
        d.a.stats()
        assert run_job(d.b, "Restore", "mid")[-1].state == JobState.Applied
        r = d.a.wait_result(rid, timeout=3.0)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.WorldReplaced, r
        assert d.a.stats().step == mid_tick
        while True:  # the subscriber's baseline after the restore
            delta = d.b.next_delta(timeout=3.0)
            d.mirror.apply(delta)
            if delta.baseline:
                break
        assert d.mirror.step == mid_tick
        d.queue("a", "SetPedestrianTarget", count=25)
        d.queue("b", "DespawnEntity", index=d.victim(0).index, generation=d.victim(0).generation)
        d.step("a", 5)
        d.queue("b", "SetPedestrianTarget", count=80)
        d.step("b", 3)
        d.step("a", 10)
        st = d.a.stats()
        assert st.recording and not st.recording_failed, st
        deadline = time.monotonic() + 5.0
        while d.a.stats().recorded_ticks < d.ticks:
            assert time.monotonic() < deadline, f"recorded_ticks stuck at {d.a.stats().recorded_ticks}"
            time.sleep(0.02)
        assert d.a.stats().recorded_ticks == d.ticks
        return d
    except BaseException:
        d.close()
        raise


def test_recorded_session_verifies_and_altered_log_diverges(start_server, tmp_path):
    replay_binary()  # skip early when bustle-replay is not built
    rec = tmp_path / "session.bustle"
    srv = start_server("--clock", "manual", "--record", str(rec))
    d = record_session(srv)
    d.close()
    srv.stop(check=True)
    assert rec.exists() and integrity_check(rec) == ["ok"]

    (ticks,) = sql(rec, "SELECT count(*) FROM recording_ticks")[0]
    assert ticks == d.ticks
    kinds = {k for (k,) in sql(rec, "SELECT DISTINCT kind FROM recording_commands")}
    assert kinds == {"set_pedestrian_target", "despawn_entity"}, kinds
    reasons = [r for (r,) in sql(rec, "SELECT reason FROM recording_keyframes ORDER BY tick")]
    assert reasons[0] == "initial" and "restore" in reasons, reasons

    p = run_replay("verify", str(rec))
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert p.stdout.startswith("OK verified"), p.stdout
    assert f"OK verified {d.ticks} ticks" in p.stdout, p.stdout

    # the first SetPedestrianTarget, altered: replay diverges at exactly its tick
    bad = copy_db(rec, tmp_path / "altered-first.bustle")
    (t_first,) = sql(bad, "SELECT min(tick) FROM recording_commands "
                          "WHERE kind = 'set_pedestrian_target'")[0]
    assert t_first == 4
    bump_target_count(bad, "tick = (SELECT min(tick) FROM recording_commands "
                           "WHERE kind='set_pedestrian_target')")
    p = run_replay("verify", str(bad))
    assert p.returncode == 1, (p.stdout, p.stderr)
    m = DIVERGED.match(p.stdout.strip().splitlines()[-1])
    assert m, p.stdout
    assert int(m.group(1)) == t_first and int(m.group(2)) == t_first, p.stdout
    assert int(m.group(3), 16) == d.digest_at_tick[t_first], (
        "the recorded digest is the live session's", p.stdout)
    assert m.group(3) != m.group(4)

    # the last one (after the restore keyframe) too
    bad = copy_db(rec, tmp_path / "altered-last.bustle")
    (t_last,) = sql(bad, "SELECT max(tick) FROM recording_commands "
                         "WHERE kind = 'set_pedestrian_target'")[0]
    (restore_tick,) = sql(bad, "SELECT max(tick) FROM recording_keyframes WHERE reason = 'restore'")[0]
    assert t_last > restore_tick
    bump_target_count(bad, f"tick = {t_last}")
    p = run_replay("verify", str(bad))
    assert p.returncode == 1, (p.stdout, p.stderr)
    m = DIVERGED.match(p.stdout.strip().splitlines()[-1])
    assert m and int(m.group(1)) == t_last, p.stdout


def test_record_refuses_an_existing_file(start_server, tmp_path):
    existing = tmp_path / "taken.bustle"
    existing.write_bytes(b"an earlier recording")
    srv = start_server("--clock", "manual", "--record", str(existing), may_refuse=True)
    assert srv.refused, "the server started over an existing recording"
    assert srv.returncode != 0
    assert str(existing) in srv.stderr(), srv.stderr()
    assert existing.read_bytes() == b"an earlier recording"


def test_stats_without_recording(start_server):
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        s.step(2)
        st = s.stats()
        assert (st.recording, st.recording_failed, st.recorded_ticks) == (False, False, 0)


def test_recording_counts_ticks_across_a_restore(start_server, tmp_path):
    """Ticks never repeat even when steps do (a restore goes back)."""
    rec = tmp_path / "ticks.bustle"
    srv = start_server("--clock", "manual", "--record", str(rec))
    with operator(srv) as s:
        s.step(5)
        assert run_job(s, "Checkpoint", "five")[-1].state == JobState.Committed
        s.step(5)
        assert run_job(s, "Restore", "five")[-1].state == JobState.Applied
        s.step(3)
        deadline = time.monotonic() + 5.0
        while s.stats().recorded_ticks < 13:
            assert time.monotonic() < deadline, s.stats()
            time.sleep(0.02)
        assert s.stats().step == 8
    srv.stop(check=True)
    rows = sql(rec, "SELECT tick, step FROM recording_ticks ORDER BY tick")
    assert rows == [(t, t if t <= 10 else t - 5) for t in range(1, 14)], rows
    assert sql(rec, "SELECT tick, reason FROM recording_keyframes ORDER BY tick") == [
        (1, "initial"), (11, "restore")]


def test_batch_mode_records_and_the_recording_verifies(tmp_path):
    """--steps N --record FILE used to exit 0 and write no recording."""
    replay_binary()
    rec = tmp_path / "batch.bustle"
    p = run_cli("--steps", "600", "--seed", "7", "--record", str(rec), "--record-keyframe-steps", "250",
                "--print-digest")
    assert p.returncode == 0, p.stderr
    assert rec.exists() and integrity_check(rec) == ["ok"]
    m = re.match(r"^step 600 digest ([0-9a-f]{16})$", p.stdout.strip())
    assert m, p.stdout
    assert sql(rec, "SELECT count(*), min(tick), max(tick), max(step) FROM recording_ticks") == [(600, 1, 600, 600)]
    (last,) = sql(rec, "SELECT digest FROM recording_ticks WHERE tick = 600")[0]
    assert last & (2**64 - 1) == int(m.group(1), 16), "the recorded digest is the printed one"
    assert sql(rec, "SELECT tick, reason FROM recording_keyframes ORDER BY tick") == [
        (1, "initial"), (251, "periodic"), (501, "periodic")]

    v = run_replay("verify", str(rec))
    assert v.returncode == 0, (v.stdout, v.stderr)
    assert "OK verified 600 ticks" in v.stdout, v.stdout

    # recording changes nothing about the run itself
    plain = run_cli("--steps", "600", "--seed", "7", "--print-digest")
    assert plain.returncode == 0 and plain.stdout == p.stdout, (plain.stdout, p.stdout)


def test_batch_mode_refuses_an_existing_recording(tmp_path):
    existing = tmp_path / "taken.bustle"
    existing.write_bytes(b"an earlier recording")
    p = run_cli("--steps", "10", "--record", str(existing))
    assert p.returncode != 0
    assert str(existing) in p.stderr, p.stderr
    assert existing.read_bytes() == b"an earlier recording"
