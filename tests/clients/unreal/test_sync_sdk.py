"""clients/unreal/sync_sdk.py, the SDK copy for the UE5 plugin: what it
copies, and that it refuses flatc and FlatBuffers headers of different
versions (flatc's output only compiles against its own runtime headers)
before writing anything. A fake flatc (a script printing a version) and a
copy of the headers with another version stand in for mismatched installs;
the real flatc and headers of this machine for the matching case."""
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(os.environ.get("BUSTLE_REPO_DIR", Path(__file__).resolve().parents[3]))
SCRIPT = REPO / "clients" / "unreal" / "sync_sdk.py"
SYSTEM_INCLUDE = Path("/usr/include")


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def real_flatc():
    flatc = shutil.which("flatc")
    if flatc is None or not (SYSTEM_INCLUDE / "flatbuffers" / "base.h").is_file():
        pytest.skip("flatc or the FlatBuffers headers are not installed")
    return flatc


def pinned_version():
    return re.search(r'^FLATBUFFERS_VERSION = "([\d.]+)"', SCRIPT.read_text(), re.M).group(1)


def fake_flatc(tmp_path, version):
    path = tmp_path / "flatc"
    path.write_text(f"#!{sys.executable}\nprint('flatc version {version}')\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def headers_with_version(tmp_path, version):
    major, minor, revision = version.split(".")
    dest = tmp_path / "include"
    shutil.copytree(SYSTEM_INCLUDE / "flatbuffers", dest / "flatbuffers")
    base = dest / "flatbuffers" / "base.h"
    text = base.read_text()
    for name, value in (("MAJOR", major), ("MINOR", minor), ("REVISION", revision)):
        text = re.sub(rf"(#define\s+FLATBUFFERS_VERSION_{name}\s+)\d+", rf"\g<1>{value}", text)
    base.write_text(text)
    return dest


def test_the_schema_folder_is_one_constant():
    text = SCRIPT.read_text()
    assert len(re.findall(r'SCHEMA_DIR = Path\("proto"\) / "fbs"', text)) == 1
    assert "proto/fbs" not in text.replace('SCHEMA_DIR = Path("proto") / "fbs"', "")


def test_copies_sources_generated_headers_and_versions(tmp_path):
    flatc = real_flatc()
    if subprocess.run([flatc, "--version"], capture_output=True, text=True).stdout.split()[-1] != pinned_version():
        pytest.skip("this machine's flatc is not the pinned version")
    dest = tmp_path / "sdk"
    r = run("--dest", dest, "--flatc", flatc, "--flatbuffers-include", SYSTEM_INCLUDE)
    assert r.returncode == 0, r.stderr
    assert (dest / "src" / "session.cpp").is_file()
    assert (dest / "include" / "bustle" / "client" / "session.hpp").is_file()
    assert not (dest / "include" / "bustle" / "client" / "connection.hpp").exists()
    assert not (dest / "src" / "client.cpp").exists()
    for schema in ("client", "common", "server"):
        assert (dest / "generated" / f"{schema}_generated.h").is_file()
    assert (dest / "flatbuffers" / "include" / "flatbuffers" / "flatbuffers.h").is_file()
    version = (dest / "SDK_VERSION").read_text()
    assert f"flatc: flatc version {pinned_version()}" in version
    assert f"flatbuffers headers: {pinned_version()}" in version


@pytest.mark.parametrize("which", ["flatc", "headers", "pin"])
def test_refuses_a_version_mismatch_before_writing(tmp_path, which):
    pinned = pinned_version()
    other = "23.5.26"
    flatc = fake_flatc(tmp_path, other if which == "flatc" else pinned)
    include = headers_with_version(tmp_path, other if which == "headers" else pinned)
    dest = tmp_path / "sdk"
    args = ["--dest", dest, "--flatc", flatc, "--flatbuffers-include", include]
    if which == "pin":
        args += ["--pin", other]
    r = run(*args)
    assert r.returncode == 1
    assert "pinned" in r.stderr
    assert other in r.stderr or pinned in r.stderr
    assert not dest.exists()
    # --check says the same without a destination.
    assert run(*args[2:], "--check").returncode == 1


def test_check_passes_when_flatc_headers_and_pin_agree(tmp_path):
    pinned = pinned_version()
    r = run("--flatc", fake_flatc(tmp_path, pinned), "--flatbuffers-include", headers_with_version(tmp_path, pinned),
            "--check")
    assert r.returncode == 0, r.stderr
