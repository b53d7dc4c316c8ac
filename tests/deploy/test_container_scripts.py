"""The image's entrypoint and probe (tools/container/entrypoint.sh, probe.sh),
run on the host with stand-ins for bustle-server and bustle on PATH: what
reaches the server (environment, arguments), what is refused before anything
is started or written, and how the probe asks /healthz and /readyz. The real
image runs them in `make image-test`."""

import http.server
import json
import os
import pathlib
import shutil
import stat
import subprocess
import threading

import pytest

REPO = pathlib.Path(os.environ.get("BUSTLE_REPO_DIR", pathlib.Path(__file__).resolve().parents[2]))
ENTRYPOINT = REPO / "tools/container/entrypoint.sh"
PROBE = REPO / "tools/container/probe.sh"

# Prints what it was started with as JSON; `--help` prints $FAKE_HELP.
FAKE_SERVER = """#!/usr/bin/python3
import json, os, sys
if sys.argv[1:] == ["--help"]:
    print(os.environ.get("FAKE_HELP", "")); sys.exit(0)
env = {k: v for k, v in os.environ.items() if k.startswith("BUSTLE_")}
with open(os.environ["FAKE_OUT"], "w") as f:
    json.dump({"argv": sys.argv[1:], "env": env}, f)
"""


def write_exe(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def box(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    write_exe(bindir / "bustle-server", FAKE_SERVER)
    write_exe(bindir / "bustle", FAKE_SERVER)
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "out.json"

    def run(script, *args, env=None, help_text=""):
        e = {"PATH": f"{bindir}:/usr/bin:/bin", "FAKE_OUT": str(out), "FAKE_HELP": help_text,
             "BUSTLE_BIND": "0.0.0.0", "BUSTLE_PORT": "7777",
             "BUSTLE_METRICS_BIND": "0.0.0.0:9100",
             "BUSTLE_SNAPSHOT_DB": str(data / "bustle-snapshots.db")}
        e.update(env or {})
        e = {k: v for k, v in e.items() if v is not None}
        if out.exists():
            out.unlink()
        p = subprocess.run(["sh", str(script), *args], env=e, capture_output=True, text=True,
                           timeout=20)
        started = json.loads(out.read_text()) if out.exists() else None
        return p, started

    run.data = data
    run.tmp = tmp_path
    return run


def test_refuses_a_public_bind_without_token_before_starting_anything(box):
    p, started = box(ENTRYPOINT)
    assert p.returncode == 2
    assert "BUSTLE_TOKEN" in p.stderr and "0.0.0.0:7777" in p.stderr, p.stderr
    assert started is None, "bustle-server must not start"
    assert list(box.data.iterdir()) == [], "nothing written"


def test_token_from_env_or_flag_or_loopback_bind(box):
    p, started = box(ENTRYPOINT, env={"BUSTLE_TOKEN": "s3cret"})
    assert p.returncode == 0, p.stderr
    assert started["env"]["BUSTLE_TOKEN"] == "s3cret" and started["env"]["BUSTLE_BIND"] == "0.0.0.0"
    assert started["argv"] == []
    p, started = box(ENTRYPOINT, "--token", "t", "--clock", "manual")
    assert p.returncode == 0 and started["argv"] == ["--token", "t", "--clock", "manual"]
    p, started = box(ENTRYPOINT, env={"BUSTLE_BIND": "127.0.0.1"})
    assert p.returncode == 0 and started is not None
    p, started = box(ENTRYPOINT, "--bind", "127.0.0.1")
    assert p.returncode == 0 and started is not None, "the flag overrides BUSTLE_BIND"
    p, started = box(ENTRYPOINT, "--bind=10.0.0.5", env={"BUSTLE_BIND": "127.0.0.1"})
    assert p.returncode == 2 and "10.0.0.5" in p.stderr


def test_token_file(box):
    f = box.tmp / "token"
    f.write_text("from-a-secret\n")
    p, started = box(ENTRYPOINT, env={"BUSTLE_TOKEN_FILE": str(f)})
    assert p.returncode == 0, p.stderr
    assert started["env"]["BUSTLE_TOKEN"] == "from-a-secret"
    assert "BUSTLE_TOKEN_FILE" not in started["env"]
    f.write_text("\n")
    p, started = box(ENTRYPOINT, env={"BUSTLE_TOKEN_FILE": str(f)})
    assert p.returncode == 2 and "empty" in p.stderr and started is None
    p, started = box(ENTRYPOINT, env={"BUSTLE_TOKEN_FILE": str(box.tmp / "missing")})
    assert p.returncode == 2 and "not a readable file" in p.stderr and started is None


def test_batch_mode_drops_the_images_listener_settings(box):
    p, started = box(ENTRYPOINT, "--steps", "600", "--print-digest")
    assert p.returncode == 0, p.stderr
    assert started["argv"] == ["--steps", "600", "--print-digest"]
    for name in ("BUSTLE_BIND", "BUSTLE_PORT", "BUSTLE_METRICS_BIND", "BUSTLE_SNAPSHOT_DB"):
        assert name not in started["env"], f"batch mode refuses {name}"


def test_record_dir_gives_each_start_its_own_file(box):
    rec = box.data / "recordings"
    p, started = box(ENTRYPOINT, env={"BUSTLE_TOKEN": "t", "BUSTLE_RECORD_DIR": str(rec)})
    assert p.returncode == 0, p.stderr
    path = pathlib.PurePosixPath(started["env"]["BUSTLE_RECORD"])
    assert rec.is_dir() and str(path.parent) == str(rec)
    assert path.name.startswith("session-") and path.suffix == ".db"
    assert "BUSTLE_RECORD_DIR" not in started["env"]
    p, started = box(ENTRYPOINT, env={"BUSTLE_TOKEN": "t", "BUSTLE_RECORD_DIR": str(rec),
                                      "BUSTLE_RECORD": str(box.data / "x.db")})
    assert p.returncode == 2 and "not both" in p.stderr and started is None


def test_missing_snapshot_directory_is_refused(box):
    p, started = box(ENTRYPOINT, env={"BUSTLE_TOKEN": "t",
                                      "BUSTLE_SNAPSHOT_DB": str(box.tmp / "nowhere/s.db")})
    assert p.returncode == 2 and "BUSTLE_SNAPSHOT_DB" in p.stderr and started is None


def test_a_command_instead_of_flags_runs_that_command(box):
    p, started = box(ENTRYPOINT, "bustle", "status", "--port", "7777")
    assert p.returncode == 0, p.stderr
    assert started["argv"] == ["status", "--port", "7777"]


class _Health(http.server.BaseHTTPRequestHandler):
    codes = {"/healthz": 200, "/readyz": 503}
    seen = []

    def do_GET(self):
        _Health.seen.append(self.path)
        self.send_response(self.codes.get(self.path, 404))
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def health_server():
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    _Health.seen.clear()
    yield srv.server_address[1]
    srv.shutdown()


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl (in the image) is not on this host")
def test_probe_asks_the_metrics_endpoint(box, health_server):
    help_text = "  --metrics-bind ADDR:PORT   metrics endpoint [BUSTLE_METRICS_BIND]"
    env = {"BUSTLE_METRICS_BIND": f"0.0.0.0:{health_server}"}
    p, started = box(PROBE, "healthz", env=env, help_text=help_text)
    assert p.returncode == 0, p.stderr
    p, _ = box(PROBE, "readyz", env=env, help_text=help_text)
    assert p.returncode != 0, "503 from /readyz is not ready"
    assert _Health.seen == ["/healthz", "/readyz"], "asked on loopback for a 0.0.0.0 bind"
    assert started is None, "no protocol session"
    p, _ = box(PROBE, "healthz", env={"BUSTLE_METRICS_BIND": "127.0.0.1:1"}, help_text=help_text)
    assert p.returncode != 0, "nothing listening is unhealthy"


def test_probe_falls_back_to_status_with_the_metrics_endpoint_off(box):
    p, started = box(PROBE, "healthz", env={"BUSTLE_PORT": "7788", "BUSTLE_METRICS_BIND": ""})
    assert p.returncode == 0, p.stderr
    assert started["argv"] == ["status", "--host", "127.0.0.1", "--port", "7788", "--timeout-ms", "2000"]
    p, _ = box(PROBE, "bogus")
    assert p.returncode == 2


def test_build_image_removes_only_the_labelled_build_stage():
    """make image removes the build stage's images afterwards: the label the
    script prunes is the one the Dockerfile's build stage (and only that
    stage) carries, set before the stage's first layer."""
    dockerfile = (REPO / "Dockerfile").read_text().splitlines()
    script = (REPO / "tools" / "container" / "build-image.sh").read_text()
    stages = [i for i, line in enumerate(dockerfile) if line.startswith("FROM ")]
    assert len(stages) == 2, stages
    build = dockerfile[stages[0]:stages[1]]
    runtime = dockerfile[stages[1]:]
    labels = [line.split(None, 1)[1] for line in build if line.startswith("LABEL ")]
    assert labels == ["io.bustle.stage=build"], labels
    first_layer = next(i for i, line in enumerate(build) if line.startswith(("RUN ", "COPY ")))
    assert build.index("LABEL io.bustle.stage=build") < first_layer
    assert not any("io.bustle.stage" in line for line in runtime)
    assert "image prune --force --filter label=io.bustle.stage=build" in script
    assert 'KEEP_BUILD_STAGE:-0' in script
