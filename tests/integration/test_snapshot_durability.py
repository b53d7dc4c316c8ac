"""Snapshot files under stress, over the socket: corrupted snapshots, SIGKILL
while committing, a full store (SQLITE_FULL via --snapshot-db-max-pages)."""

import math
import re
import struct
import time

import pytest
from conftest import run_cli

from bustle_client import JobState

from snapshot_helpers import (
    copy_db,
    integrity_check,
    operator,
    run_job,
    sql,
)

CP = "cp"
CP_ROW = f"(SELECT id FROM snapshots WHERE name = '{CP}')"


@pytest.fixture(scope="module")
def checkpoint_db(tmp_path_factory, request):
    """A snapshot store holding checkpoint 'cp' taken at step 20 (manual clock)."""
    from conftest import ServerProcess, clean_env  # module scope: no start_server fixture
    d = tmp_path_factory.mktemp("checkpoint-db")
    db = d / "snapshots.db"
    srv = ServerProcess(["--port", "0", "--bind", "127.0.0.1", "--clock", "manual",
                         "--snapshot-db", str(db)], d / "server.stderr", env=clean_env())
    try:
        with operator(srv) as s:
            s.step(20)
            assert run_job(s, "Checkpoint", CP)[-1].state == JobState.Committed
            assert s.stats().pedestrians > 3
    finally:
        srv.stop(check=True)
    assert integrity_check(db) == ["ok"]
    return db


def _set_u32(blob, index, value):
    b = bytearray(blob)
    struct.pack_into("<I", b, 4 * index, value)
    return bytes(b)


def _set_f64(blob, index, value):
    b = bytearray(blob)
    struct.pack_into("<d", b, 8 * index, value)
    return bytes(b)


def _update_blob(db, table, column, change):
    (blob,) = sql(db, f"SELECT {column} FROM {table} WHERE snapshot_id = {CP_ROW}")[0]
    sql(db, f"UPDATE {table} SET {column} = ? WHERE snapshot_id = {CP_ROW}", (change(blob),))


def _flip_byte(blob, at):
    b = bytearray(blob)
    b[at] ^= 0xFF
    return bytes(b)


# name -> (corrupt(db), regexes the job's failure message must match). Fields
# of validation errors come as the core's path ("pedestrians.lane"), those of
# decoding errors as the column ("lane"); both name the field.
CORRUPTIONS = {
    "dangling-lane": (
        lambda db: _update_blob(db, "pedestrian_columns", "lane", lambda b: _set_u32(b, 2, 9999)),
        ["table pedestrian_columns", f"name='{CP}'", "element 2", r"field (pedestrians\.)?lane\b",
         "lane 9999 does not exist"]),
    "lane-blob-truncated": (
        lambda db: _update_blob(db, "pedestrian_columns", "lane", lambda b: b[:-1]),
        ["table pedestrian_columns", r"field lane\b", "blob size"]),
    "distance-nan": (
        lambda db: _update_blob(db, "pedestrian_columns", "s_m", lambda b: _set_f64(b, 0, math.nan)),
        ["table pedestrian_columns", "element 0", r"field (pedestrians\.)?s_m\b", "nan"]),
    "distance-past-lane-end": (
        lambda db: _update_blob(db, "pedestrian_columns", "s_m", lambda b: _set_f64(b, 1, 1e6)),
        ["table pedestrian_columns", "element 1", r"field (pedestrians\.)?s_m\b", "outside lane"]),
    "generation-byte-flipped": (
        lambda db: _update_blob(db, "pedestrian_columns", "id_generation",
                                lambda b: _flip_byte(b, 4 * 3)),
        ["table pedestrian_columns", "element 3", r"field (pedestrians\.)?id\b", "not alive"]),
    "duplicate-entity": (
        lambda db: [_update_blob(db, "pedestrian_columns", col,
                                 lambda b: b[:4] + b[:4] + b[8:])
                    for col in ("id_index", "id_generation")],
        ["table pedestrian_columns", "element 1", r"field (pedestrians\.)?id\b", "duplicate entity"]),
    "count-mismatch": (
        lambda db: sql(db, f"UPDATE pedestrian_columns SET count = count + 1 WHERE snapshot_id = {CP_ROW}"),
        ["table pedestrian_columns", r"field count\b"]),
    "registry-generation-truncated": (
        lambda db: _update_blob(db, "world_state", "registry_generation", lambda b: b[:-4]),
        ["table world_state", r"field registry_generation\b"]),
    "despawn-counts-not-json": (
        lambda db: sql(db, f"UPDATE world_state SET despawned_by_reason = '[1,2' WHERE snapshot_id = {CP_ROW}"),
        ["table world_state", r"field despawned_by_reason\b"]),
    "pedestrians-missing": (
        lambda db: sql(db, f"DELETE FROM pedestrian_columns WHERE snapshot_id = {CP_ROW}"),
        ["table pedestrian_columns", "missing"]),
    "other-scenario": (
        lambda db: sql(db, f"UPDATE snapshots SET scenario_json = scenario_json || ' ' WHERE name = '{CP}'"),
        ["table snapshots", r"field scenario_json\b"]),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_corrupt_checkpoint_fails_restore_and_leaves_world_untouched(
        start_server, checkpoint_db, tmp_path, case):
    corrupt, expected = CORRUPTIONS[case]
    db = copy_db(checkpoint_db, tmp_path / "corrupt.db")
    corrupt(db)
    assert integrity_check(db) == ["ok"], "the corruption must be logical, not a broken file"

    srv = start_server("--clock", "manual", "--snapshot-db", str(db))
    with operator(srv) as s:
        s.step(7)
        before = s.stats()
        seen = run_job(s, "Restore", CP)
        assert [j.state for j in seen] == [JobState.Queued, JobState.Failed], seen
        message = seen[-1].message
        assert seen[-1].terminal and str(db) in message, message
        for pattern in expected:
            assert re.search(pattern, message), f"{case}: {pattern!r} not in {message!r}"
        after = s.stats()
        assert (after.step, after.digest, after.pedestrians) == (
            before.step, before.digest, before.pedestrians), "a failed restore changed the live world"
        # the world carries on exactly as a world that never saw the restore
        s.step(3)
        live = s.stats()
    batch = run_cli("--steps", "10", "--print-digest")
    assert batch.returncode == 0, batch.stderr
    assert batch.stdout.strip() == f"step 10 digest {live.digest:016x}", (batch.stdout, live)


def test_corrupt_file_is_refused_or_reported_never_applied(start_server, checkpoint_db, tmp_path):
    """Bytes flipped inside the file's b-tree pages (not via SQL): the server
    either refuses the store at start-up naming it, or the restore fails
    naming it; it never applies."""
    db = copy_db(checkpoint_db, tmp_path / "flipped.db")
    data = bytearray(db.read_bytes())
    page = 4096
    assert len(data) >= 4 * page
    for p in range(2, len(data) // page):  # page headers and cell pointers after page 1
        for off in range(8, 40):
            data[p * page + off] ^= 0x5A
    db.write_bytes(bytes(data))

    srv = start_server("--clock", "manual", "--snapshot-db", str(db), may_refuse=True)
    if srv.refused:
        assert srv.returncode != 0
        assert "flipped.db" in srv.stderr(), srv.stderr()
        return
    with operator(srv) as s:
        before = s.stats()
        seen = run_job(s, "Restore", CP)
        assert seen[-1].state == JobState.Failed, seen
        assert "flipped.db" in seen[-1].message, seen[-1].message
        assert s.stats().digest == before.digest


# ------------------------------------------------------------------ SIGKILL


@pytest.fixture(scope="module")
def prev_db(tmp_path_factory):
    """A snapshot store with checkpoint 'prev' at step 12; returns (path, Stats at 12)."""
    from conftest import ServerProcess, clean_env
    d = tmp_path_factory.mktemp("prev-db")
    db = d / "snapshots.db"
    srv = ServerProcess(["--port", "0", "--bind", "127.0.0.1", "--clock", "manual",
                         "--snapshot-db", str(db)], d / "server.stderr", env=clean_env())
    try:
        with operator(srv) as s:
            s.step(12)
            assert run_job(s, "Checkpoint", "prev")[-1].state == JobState.Committed
            st = s.stats()
    finally:
        srv.stop(check=True)
    return db, st


@pytest.mark.parametrize("delay_ms", [20, 50, 150, 300])
def test_sigkill_while_autosaving_leaves_store_sound(start_server, prev_db, tmp_path, delay_ms):
    src, prev = prev_db
    db = copy_db(src, tmp_path / "store.db")
    srv = start_server("--clock", "fast", "--autosave-steps", "1", "--snapshot-db", str(db))
    time.sleep(delay_ms / 1000.0)
    assert srv.proc.poll() is None, f"server died on its own: {srv.stderr()}"
    srv.kill9()
    assert srv.proc.returncode == -9

    assert integrity_check(db) == ["ok"]

    srv2 = start_server("--clock", "manual", "--snapshot-db", str(db))
    with operator(srv2) as s:
        listed = {i.name: i for i in s.snapshots()}
        assert "prev" in listed and listed["prev"].step == prev.step, listed
        assert set(listed) <= {"prev", "autosave"}, listed
        if delay_ms >= 150:
            # it was committing autosaves (one per step) when it died
            assert "autosave" in listed, f"no autosave committed in {delay_ms} ms: {srv.stderr()}"
        seen = run_job(s, "Restore", "prev")
        assert seen[-1].state == JobState.Applied, seen
        st = s.stats()
        assert (st.step, st.digest) == (prev.step, prev.digest)
        if "autosave" in listed:
            auto = listed["autosave"]
            seen = run_job(s, "Restore", "autosave")
            assert seen[-1].state == JobState.Applied, seen
            st = s.stats()
            assert (st.step, st.digest) == (auto.step, auto.digest), (st, auto)


# ------------------------------------------------------------- store full


def test_full_store_fails_the_write_and_the_sim_goes_on(start_server, checkpoint_db, tmp_path):
    probe = copy_db(checkpoint_db, tmp_path / "probe.db")
    (pages,) = sql(probe, "PRAGMA page_count")[0]
    (page_size,) = sql(probe, "PRAGMA page_size")[0]
    assert page_size == 4096 and pages > 1

    db = copy_db(checkpoint_db, tmp_path / "capped.db")
    srv = start_server("--clock", "fast", "--snapshot-db", str(db),
                       "--snapshot-db-max-pages", str(pages))
    with operator(srv) as s:
        before = s.stats()
        seen = run_job(s, "Checkpoint", "second")
        assert [j.state for j in seen] == [JobState.Copied, JobState.Failed], seen
        message = seen[-1].message
        assert "full" in message.lower() or "SQLITE_FULL" in message, message
        assert "capped.db" in message, message

        # the clock keeps running
        deadline = time.monotonic() + 5.0
        while s.stats().step <= before.step + 20:
            assert time.monotonic() < deadline, "sim stopped stepping after the failed write"
        # nothing half-written, and the first checkpoint still restores
        assert [i.name for i in s.snapshots()] == [CP]
        s.pause()
        seen = run_job(s, "Restore", CP)
        assert seen[-1].state == JobState.Applied, seen
        st = s.stats()
        assert st.step == 20
        s.resume()
        # and a later write that fits (replacing the same snapshot) is again possible
        # or fails the same way; either way the store stays sound
        seen = run_job(s, "Checkpoint", CP)
        assert seen[-1].state in (JobState.Committed, JobState.Failed), seen
    assert integrity_check(db) == ["ok"]
