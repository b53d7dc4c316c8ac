"""The wheel and sdist that `make wheel` builds (clients/python/
make-dist.sh) carry the generated wire modules, so each installs into a
fresh venv with no flatc, no schemas and no compiler: the sdist is built with
a PATH that holds nothing but the venv, and either installed package decodes
a real server's Welcome (a frame recorded from bustle-server)."""

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
WELCOME = ROOT / "tests" / "fuzz" / "corpus" / "fuzz_sdk_frames" / "default-Welcome-00.bin"
DECODE = """
import sys
from bustle_client import codec
from bustle_client.messages import Welcome
stream = open(sys.argv[1], "rb").read()
decoder = codec.FrameDecoder()
decoder.feed(stream)
msg = codec.decode_server_frame(decoder.next())
assert isinstance(msg, Welcome), msg
print(msg.scenario_id, len(msg.lanes))
"""


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([str(ROOT / "clients" / "python" / "make-dist.sh"), str(out)],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    wheels, sdists = list(out.glob("bustle_client-*.whl")), list(out.glob("bustle*client-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list(out.iterdir())
    return wheels[0], sdists[0]


def install(tmp: Path, artifact: Path, *options: str):
    """A fresh venv (Debian's python3, which has python3-flatbuffers) with
    only the venv on PATH and no FLATC: ARTIFACT is pip installed offline."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FLATC")}
    env["PATH"] = str(venv / "bin")
    python = venv / "bin" / "python"
    r = subprocess.run([str(python), "-m", "pip", "install", "--no-index", "--no-deps", "--quiet",
                        *options, str(artifact)], capture_output=True, text=True, env=env,
                       cwd=tmp, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    return python, env


def decodes_a_welcome(python, env, tmp):
    r = subprocess.run([str(python), "-c", DECODE, str(WELCOME)], capture_output=True, text=True,
                       env=env, cwd=tmp, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    scenario, lanes = r.stdout.split()
    assert scenario == "bustle.default.two-blocks.v1" and int(lanes) > 0


def test_both_carry_the_generated_wire_modules(dist):
    wheel, sdist = dist
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert "bustle/wire/Delta.py" in names and "bustle_client/py.typed" in names
    with tarfile.open(sdist) as t:
        names = t.getnames()
    assert any(n.endswith("generated/bustle/wire/Delta.py") for n in names), names[:20]
    assert any(n.endswith("/setup.py") for n in names)


def test_the_wheel_installs_and_decodes_without_flatc(dist, tmp_path):
    python, env = install(tmp_path, dist[0])
    decodes_a_welcome(python, env, tmp_path)


def test_the_sdist_builds_and_installs_without_flatc_or_schemas(dist, tmp_path):
    # --no-build-isolation: setuptools from Debian, as nothing may be downloaded here.
    python, env = install(tmp_path, dist[1], "--no-build-isolation")
    decodes_a_welcome(python, env, tmp_path)
