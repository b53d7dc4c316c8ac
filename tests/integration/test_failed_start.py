"""A start that fails leaves nothing behind (the container's volume stays as
it was): the listener is opened before the recording and the snapshot store
are created, and a recording created by a start that fails afterwards is
removed again."""

import socket

from conftest import ServerProcess, clean_env


def _start(tmp_path, *args, env=None):
    srv = ServerProcess(list(args), tmp_path / "server.stderr", env=clean_env(env), may_refuse=True)
    assert srv.refused, "the start should have failed"
    return srv


def test_port_in_use_creates_no_files(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        srv = _start(tmp_path, "--bind", "127.0.0.1", "--port", str(port),
                     "--snapshot-db", str(data / "snapshots.db"), "--record", str(data / "rec.db"))
    assert srv.returncode == 1
    assert "Address already in use" in srv.stderr(), srv.stderr()
    assert sorted(p.name for p in data.iterdir()) == []


def test_snapshot_store_failure_removes_the_new_recording(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    foreign = data / "snapshots.db"
    foreign.write_bytes(b"not a snapshot store\n" * 100)
    srv = _start(tmp_path, "--bind", "127.0.0.1", "--port", "0",
                 "--snapshot-db", str(foreign), "--record", str(data / "rec.db"))
    assert srv.returncode == 1
    assert "--snapshot-db" in srv.stderr(), srv.stderr()
    assert sorted(p.name for p in data.iterdir()) == ["snapshots.db"], "only the operator's own file"
    assert foreign.read_bytes() == b"not a snapshot store\n" * 100


def test_existing_recording_is_refused_before_the_store_is_created(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "rec.db").write_bytes(b"an earlier session")
    srv = _start(tmp_path, "--bind", "127.0.0.1", "--port", "0",
                 "--snapshot-db", str(data / "snapshots.db"), "--record", str(data / "rec.db"))
    assert srv.returncode == 1
    assert sorted(p.name for p in data.iterdir()) == ["rec.db"]
    assert (data / "rec.db").read_bytes() == b"an earlier session"


def test_public_bind_without_token_creates_no_files(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    srv = _start(tmp_path, "--bind", "0.0.0.0", "--port", "0",
                 "--snapshot-db", str(data / "snapshots.db"), "--record", str(data / "rec.db"))
    assert srv.returncode == 2
    assert "without a token" in srv.stderr()
    assert list(data.iterdir()) == []
