"""`pip install clients/python` into a fresh venv works offline with only
Debian's flatbuffers, installs the generated wire modules (the same bytes
flatc makes from proto/fbs) and py.typed, and the installed package talks
to a real server: the README's ten-line script, and a manual-clock script
that steps the world.

The source is copied first (clients/python and proto/fbs, in the
checkout's layout) so the in-place build leaves nothing in the work tree.
"""

import filecmp
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "clients" / "python"
SCHEMA = ROOT / "proto" / "fbs"


def pip_install(tmp: Path, *options: str):
    """Copy the package and the schemas (checkout layout) into ``tmp``, make
    a venv there and pip install the copy offline; returns (python, env, src)."""
    src = tmp / "src"
    shutil.copytree(PACKAGE, src / "clients" / "python",
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    shutil.copytree(SCHEMA, src / "proto" / "fbs")
    env_dir = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([str(python), "-m", "pip", "install", "--no-index", "--no-build-isolation",
                        "--quiet", *options, str(src / "clients" / "python")],
                       capture_output=True, text=True, env=env, cwd=tmp, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    return python, env, src


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pip")
    python, env, _ = pip_install(tmp)
    return python, env, tmp


def run_python(venv, code, *args, timeout=60):
    python, env, tmp = venv
    return subprocess.run([str(python), "-c", code, *args], capture_output=True, text=True,
                          env=env, cwd=tmp, timeout=timeout)


def site_packages(venv) -> Path:
    r = run_python(venv, "import bustle_client, pathlib; print(pathlib.Path(bustle_client.__file__).parent.parent)")
    assert r.returncode == 0, r.stderr
    return Path(r.stdout.strip())


def test_installed_into_the_venv_with_typing_marker(venv):
    python, _, tmp = venv
    site = site_packages(venv)
    assert str(site).startswith(str(tmp / "venv")), site  # not the source tree
    assert (site / "bustle_client" / "py.typed").is_file()
    r = run_python(venv, "import bustle_client, flatbuffers, bustle.wire.Delta; print(bustle_client.PROTOCOL_VERSION)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "3"


def test_wire_modules_are_what_flatc_generates_from_the_schema(venv, tmp_path):
    flatc = os.environ.get("FLATC") or shutil.which("flatc")
    assert flatc, "flatc not found"
    schemas = [str(SCHEMA / s) for s in ("common.fbs", "client.fbs", "server.fbs")]
    subprocess.run([flatc, "--python", "--gen-object-api", "-o", str(tmp_path), "-I", str(SCHEMA), *schemas],
                   check=True)
    expected = tmp_path / "bustle" / "wire"
    installed = site_packages(venv) / "bustle" / "wire"
    names = sorted(p.name for p in expected.glob("*.py"))
    assert names and names == sorted(p.name for p in installed.glob("*.py"))
    match, mismatch, errors = filecmp.cmpfiles(expected, installed, names, shallow=False)
    assert not mismatch and not errors


class Server:
    def __init__(self, tmp, *args):
        self.proc = subprocess.Popen([os.environ["BUSTLE_SERVER"], "--port", "0",
                                      "--snapshot-db", str(tmp / "s.db"), *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        m = re.match(r"bustle-server listening on (\S+):(\d+)", self.proc.stdout.readline())
        assert m
        self.port = int(m.group(2))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=5) == 0


def ten_line_script() -> str:
    text = (PACKAGE / "README.md").read_text()
    block = text.split("<!-- ten-line-script", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len(block.strip().splitlines()) <= 11, block  # ten lines and the import
    return block


def test_readme_ten_line_script_against_a_real_server(venv, tmp_path):
    server = Server(tmp_path)
    try:
        script = ten_line_script().replace("7777", str(server.port))
        r = run_python(venv, script)
        assert r.returncode == 0, r.stdout + r.stderr
        first, last = r.stdout.strip().splitlines()
        assert first.startswith("bustle.default.two-blocks.v1 7 lanes at 10.0 Hz")
        m = re.match(r"step (\d+) entities (\d+) digest [0-9a-f]{16}$", last)
        assert m and int(m.group(2)) > 0, last
    finally:
        server.stop()


STEPPING = """
import sys
from bustle_client import Session
with Session.connect("127.0.0.1", int(sys.argv[1])) as s:
    s.hello("pip-check", role="operator")
    s.subscribe()
    base = s.next_delta().step
    steps = []
    for _ in range(3):
        s.step(1).raise_if_rejected()
        steps.append(s.next_delta().step)
    print(base, steps, s.stats().step)
"""


def test_installed_package_steps_a_manual_clock_server(venv, tmp_path):
    server = Server(tmp_path, "--clock", "manual")
    try:
        r = run_python(venv, STEPPING, str(server.port))
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.strip() == "0 [1, 2, 3] 3"
    finally:
        server.stop()


def test_editable_install_finds_its_generated_wire_modules(tmp_path):
    """pip install -e: flatc writes into clients/python/build/wire-python of
    the (copied) source, which bustle_client._wire puts on sys.path."""
    python, env, src = pip_install(tmp_path, "-e")
    r = subprocess.run([str(python), "-c", "import bustle_client, bustle.wire; "
                        "print(bustle_client.__file__); print(list(bustle.wire.__path__)[0])"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    module, wire = r.stdout.strip().splitlines()
    assert module == str(src / "clients" / "python" / "bustle_client" / "__init__.py")
    assert wire == str(src / "clients" / "python" / "build" / "wire-python" / "bustle" / "wire")
