"""Helpers shared by the snapshot, durability and recording tests."""

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

from bustle_client import CommandStatus, JobState, Role

JOB_TIMEOUT = 10.0


def operator(srv, name="it-operator"):
    s = srv.connect()
    w = s.hello(name, role="operator")
    assert w.role == Role.Operator, "without --token an operator request gets Operator"
    return s


def viewer(srv, name="it-viewer"):
    s = srv.connect()
    assert s.hello(name, role="viewer").role == Role.Viewer
    return s


def assert_rejected(result, reason):
    assert result.status == CommandStatus.Rejected and result.reason == reason, result
    return result


def run_job(s, command, name, timeout=JOB_TIMEOUT):
    """Checkpoint/Save/Restore/Load ``name``; every state seen (the result's first).
    Fails the test if the command itself is rejected."""
    r = s.command(command, name=name)
    assert r.status == CommandStatus.Accepted, f"{command} '{name}' rejected: {r}"
    assert r.job is not None and r.job.name == name, r
    if r.job.terminal:
        return [r.job]
    return [r.job, *s.wait_job(r.job.job_id, timeout=timeout)]


def states(seen):
    return [j.state for j in seen]


def step_digests(s, n):
    """Manual clock: n single steps; {step: digest after it}."""
    got = {}
    for _ in range(n):
        r = s.step(1)
        assert r.accepted, r
        got[r.applied_step] = s.stats().digest
    return got


def manual_command(s, name, **fields):
    """Manual clock: world commands apply at the start of the next step, so send
    the command, run one step, then collect its result."""
    request_id = s.send_command(name, **fields)
    assert s.step(1).status == CommandStatus.Accepted
    return s.wait_result(request_id, timeout=3.0)


def sql(path, statement, params=()):
    """Run one statement on a SQLite file (committed); returns all rows."""
    with closing(sqlite3.connect(str(path), timeout=5.0)) as db:
        rows = db.execute(statement, params).fetchall()
        db.commit()
        return rows


def integrity_check(path):
    """PRAGMA integrity_check rows of a SQLite file (['ok'] when sound)."""
    return [r[0] for r in sql(path, "PRAGMA integrity_check")]


def copy_db(src, dst):
    """Copy a SQLite file with its -wal/-shm companions, if any."""
    src, dst = Path(src), Path(dst)
    shutil.copyfile(src, dst)
    for suffix in ("-wal", "-shm"):
        side = Path(str(src) + suffix)
        if side.exists():
            shutil.copyfile(side, Path(str(dst) + suffix))
    return dst


def committed(seen):
    return seen[-1].state == JobState.Committed
