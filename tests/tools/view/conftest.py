"""Fixtures for the viewer tests: the real-server fixtures of
tests/integration/conftest.py (``start_server``, ``server``), plus helpers
to run ``bustle-view`` ($BUSTLE_VIEW, the build tree's launcher) and read
its pictures."""

import importlib.util
import os
import subprocess
import time
from pathlib import Path

import pytest

from bustle_client import Session

_IT = Path(__file__).resolve().parents[2] / "integration" / "conftest.py"
_spec = importlib.util.spec_from_file_location("bustle_integration_fixtures", _IT)
_it = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_it)

SOURCE_DIR = _it.SOURCE_DIR
start_server = _it.start_server
server = _it.server
clean_env = _it.clean_env
replay_binary = _it.replay_binary


def view_binary() -> str:
    path = os.environ.get("BUSTLE_VIEW", "")
    if not os.access(path, os.X_OK):
        pytest.fail(f"BUSTLE_VIEW={path!r} is not an executable file; run these tests through "
                    "ctest (it points at the build tree's tools/view/bustle-view)")
    return path


def run_view(*args, timeout=40.0):
    """Run bustle-view to completion; returns CompletedProcess (text)."""
    env = clean_env({"BUSTLE_REPLAY": replay_binary()})
    return subprocess.run([view_binary(), *map(str, args)], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout, env=env)


def wait_step(port, step, timeout=10.0):
    """Wait until the server at ``port`` reports ``step``."""
    with Session.connect("127.0.0.1", port, timeout=5.0) as s:
        s.hello("view-test")
        deadline = time.monotonic() + timeout
        while s.stats().step < step:
            assert time.monotonic() < deadline, f"server never reached step {step}"
            time.sleep(0.05)


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """A recording of the default city: 300 steps with the fast clock."""
    tmp = tmp_path_factory.mktemp("rec")
    path = tmp / "city.db"
    srv = _it.ServerProcess(["--port", "0", "--bind", "127.0.0.1", "--clock", "fast",
                             "--snapshot-db", str(tmp / "snap.db"), "--record", str(path)],
                            tmp / "server.stderr", env=clean_env())
    try:
        wait_step(srv.port, 300)
    finally:
        srv.stop(check=True)
    return path
