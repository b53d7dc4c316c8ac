"""Fixtures that run the real bustle-server on loopback.

``start_server(*args)`` launches ``$BUSTLE_SERVER --port 0 [args]`` (default
args ``--clock fast``), waits for its one stdout line
``bustle-server listening on <addr>:<port>`` and returns a handle with the
port. Unless the args name one, every server gets its own ``--snapshot-db`` in
the test's tmp_path (never the default file in the working directory). At
teardown every server gets SIGTERM and must exit with code 0 within 3 s (it is
killed after 5 s either way, so no test leaves a process behind); a server a
test killed on purpose (``kill9()``) is exempt.

``replay_binary()`` is ``$BUSTLE_REPLAY`` (bustle-replay); tests that need it
skip when it is not set.
"""

import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bustle_client import Session

SOURCE_DIR = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"^bustle-(?:server|gateway) listening on (\S+):(\d+)$")
STARTUP_TIMEOUT = 10.0
SIGTERM_EXIT_LIMIT = 3.0
KILL_AFTER = 5.0


def server_binary() -> str:
    path = os.environ.get("BUSTLE_SERVER")
    if not path:
        pytest.fail("BUSTLE_SERVER is not set; run these tests through ctest "
                    "(or set it to the bustle-server binary)")
    if not os.access(path, os.X_OK):
        pytest.fail(f"BUSTLE_SERVER={path} is not an executable file")
    return path


class ServerProcess:
    """A bustle-server child (or, with ``binary``, another program that prints
    the same listening line: bustle-gateway). With ``may_refuse``, exiting before the listening
    line is not a failure: ``refused`` is set and ``returncode``/``stderr()``
    tell why (start-up refusals: bad files, existing recording, ...)."""

    def __init__(self, args, stderr_path: Path, env=None, may_refuse: bool = False,
                 binary=None):
        self.may_refuse = may_refuse
        self.refused = False
        self.startup_lines = []
        self.args = [binary or server_binary(), *args]
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._stderr, env=env)
        self.stdout_lines: "queue.Queue[str]" = queue.Queue()
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()
        self.exit_seconds = None
        self.killed = False
        self.host, self.port = self._wait_listening()

    def _read_stdout(self):
        for raw in self.proc.stdout:
            self.stdout_lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        self.stdout_lines.put(None)  # EOF

    def _wait_listening(self):
        deadline = time.monotonic() + STARTUP_TIMEOUT
        seen = []
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = self.stdout_lines.get(timeout=max(remaining, 0.01))
            except queue.Empty:
                line = "<timeout>"
            if line is None and self.may_refuse:
                self.proc.wait(timeout=KILL_AFTER)
                self._reader.join(timeout=2.0)
                self._stderr.close()
                self.refused = True
                return None, None
            if line is None or line == "<timeout>":
                self.stop(check=False)
                pytest.fail(
                    f"{' '.join(self.args)}: no 'bustle-server listening on' line within "
                    f"{STARTUP_TIMEOUT} s ({'exited' if line is None else 'timed out'}, "
                    f"exit code {self.proc.returncode}); stdout so far: {seen!r}; "
                    f"stderr:\n{self.stderr()}")
            m = LISTENING.match(line)
            if m:
                self.startup_lines = seen  # what it printed first (a district's links line)
                return m.group(1), int(m.group(2))
            seen.append(line)

    def stderr(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")[-4000:]

    def connect(self, timeout: float = 5.0) -> Session:
        return Session.connect(self.host, self.port, timeout=timeout)

    def kill9(self):
        """SIGKILL (a crash): no shutdown code runs. Teardown does not check it."""
        self.killed = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=KILL_AFTER)
        self._reader.join(timeout=2.0)
        if not self._stderr.closed:
            self._stderr.close()
        return self.proc.returncode

    @property
    def returncode(self):
        return self.proc.returncode

    def stop(self, check: bool = True):
        """SIGTERM, wait; kill after KILL_AFTER s. Returns (exit code, seconds)."""
        if self.refused:
            return self.proc.returncode, None
        if self.killed:
            return self.proc.returncode, self.exit_seconds
        if self.proc.poll() is None:
            t0 = time.monotonic()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=KILL_AFTER)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=KILL_AFTER)
            if self.exit_seconds is None:
                self.exit_seconds = time.monotonic() - t0
        self._reader.join(timeout=2.0)
        self._stderr.close()
        if check:
            assert self.exit_seconds is not None, (
                f"server exited before SIGTERM (code {self.proc.returncode}); "
                f"stderr:\n{self.stderr()}")
            assert self.proc.returncode == 0, (
                f"server exited with {self.proc.returncode} after SIGTERM "
                f"(after {self.exit_seconds:.2f} s); stderr:\n{self.stderr()}")
            assert self.exit_seconds <= SIGTERM_EXIT_LIMIT, (
                f"server took {self.exit_seconds:.2f} s to exit after SIGTERM")
        return self.proc.returncode, self.exit_seconds


@pytest.fixture
def start_server(tmp_path):
    """Factory: start_server('--clock', 'manual', ..., env={...}) -> ServerProcess.

    ``env`` adds variables to this process's environment for the server;
    ``may_refuse=True`` returns a handle with ``refused`` set instead of
    failing when the server exits before listening."""
    servers = []

    def start(*args, env=None, may_refuse=False):
        if not args:
            args = ("--clock", "fast")
        if "--snapshot-db" not in args:
            args = (*args, "--snapshot-db", str(tmp_path / f"server{len(servers)}-snapshots.db"))
        srv = ServerProcess(["--port", "0", "--bind", "127.0.0.1", *args],
                            tmp_path / f"server{len(servers)}.stderr", env=clean_env(env),
                            may_refuse=may_refuse)
        servers.append(srv)
        return srv

    yield start
    failures = []
    for srv in servers:
        try:
            srv.stop(check=True)
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)


@pytest.fixture
def server(start_server):
    """One server with the fast clock."""
    return start_server("--clock", "fast")


def clean_env(extra=None):
    """This environment without BUSTLE_* settings (they would change the server's defaults)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUSTLE_")}
    env.update(extra or {})
    return env


def tool_binary(variable: str, tool: str) -> str:
    """$variable (a tool built beside the server); skips the test when it is not set."""
    path = os.environ.get(variable)
    if not path:
        pytest.skip(f"{variable} is not set ({tool} is not built in this tree)")
    if not os.access(path, os.X_OK):
        pytest.fail(f"{variable}={path} is not an executable file")
    return path


def replay_binary() -> str:
    return tool_binary("BUSTLE_REPLAY", "bustle-replay")


def write_district_city(path: Path, districts: int, grid: int, agents: int,
                        vehicles: int = 0) -> Path:
    """The generated district city (bustle-bench districts --write-scenario),
    cut into `districts` strips; `vehicles` cars on the blocks' loops."""
    subprocess.run([tool_binary("BUSTLE_BENCH", "bustle-bench"), "districts", "--grid", str(grid),
                    "--districts", str(districts), "--agents", str(agents), "--vehicles",
                    str(vehicles), "--write-scenario", str(path)], check=True,
                   capture_output=True, timeout=60, env=clean_env())
    return path


def district_city(tmp_path: Path, districts: int, grid: int = 8, agents: int = 600,
                  vehicles: int = 0) -> Path:
    """The generated district city, with walkers at 10 m/s (a 100 m block in
    100 steps) so they cross borders many times in a short run."""
    raw = write_district_city(tmp_path / f"city{districts}.raw.json", districts, grid, agents,
                              vehicles)
    city = json.loads(raw.read_text())
    for lane in city["lanes"]:
        if lane.get("kind", "sidewalk") == "sidewalk":
            lane["speed_mps_limit"] = 10.0
    path = tmp_path / f"city{districts}{'v' if vehicles else ''}.json"
    path.write_text(json.dumps(city))
    return path


def http_get(port, path, timeout=5.0):
    """(status, body) of GET http://127.0.0.1:port/path."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def run_replay(*args, timeout=30.0):
    """Run bustle-replay; returns CompletedProcess (text)."""
    return subprocess.run([replay_binary(), *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout, env=clean_env())


def run_cli(*args, timeout=20.0, env=None):
    """Run bustle-server in batch/CLI mode; returns CompletedProcess (text)."""
    return subprocess.run([server_binary(), *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout, env=clean_env(env))


def wait_populated(s, timeout=5.0):
    """Wait until the spawn pipeline has reached the pedestrian target."""
    deadline = time.monotonic() + timeout
    while True:
        st = s.stats()
        if st.pedestrians > 0 and st.pedestrians == st.pedestrian_target:
            return st
        assert time.monotonic() < deadline, f"population never reached its target: {st}"
        time.sleep(0.02)
