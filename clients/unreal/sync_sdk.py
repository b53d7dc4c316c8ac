#!/usr/bin/env python3
"""Copies the portable C++ SDK into the UE5 plugin, so that the plugin builds
on its own once copied into a project's Plugins/ folder (Windows, Linux, Mac;
Python 3.8+, no packages):

  BustleClient/Source/ThirdParty/BustleSDK/
    include/bustle/client/*.hpp        portable SDK headers (no transport headers)
    include/bustle/proto/*.hpp         framing / motion / wire headers
    src/*.cpp, src/*.hpp               portable SDK sources (bustle::client only)
    proto/src/*.cpp                    proto sources (framing, motion)
    generated/*_generated.h            flatc output of the wire schemas
    flatbuffers/include/flatbuffers/   FlatBuffers runtime headers (header-only)
    SDK_VERSION                        commit, flatc and FlatBuffers versions, sources

The module compiles each SDK source through one wrapper in
Source/BustleClient/Private/Sdk/ (Sdk<Name>.cpp includes "src/<name>.cpp"
between THIRD_PARTY_INCLUDES_START/END). The copy is not tracked
(.gitignore); run this script again after every SDK change.

flatc's output only compiles against the runtime headers of the same
FlatBuffers version (the generated headers static_assert it), so flatc and
the headers must both be FLATBUFFERS_VERSION (the version the Bustle build
uses); anything else is refused before a file is written. --pin names
another version for both, when a project ships its own FlatBuffers.

Usage: sync_sdk.py [--dest DIR] [--flatc PATH] [--flatbuffers-include DIR]
                   [--pin VERSION] [--check]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# The wire schemas (*.fbs), relative to the repository root. One constant:
# the folder may be renamed.
SCHEMA_DIR = Path("proto") / "fbs"
# flatc and the FlatBuffers runtime headers must both be this version.
FLATBUFFERS_VERSION = "2.0.8"
# The same flags as cmake/Flatc.cmake.
FLATC_FLAGS = ["--cpp", "--scoped-enums", "--gen-name-strings", "--gen-object-api", "--gen-compare",
               "--reflect-names"]
# The Asio transport stays out of the plugin (the engine's FSocket replaces it).
TRANSPORT_HEADERS = {"connection.hpp", "client.hpp"}

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_DEST = HERE / "BustleClient" / "Source" / "ThirdParty" / "BustleSDK"


class SyncError(Exception):
    pass


def flatc_version(flatc):
    """'2.0.8' from `flatc --version` ("flatc version 2.0.8")."""
    try:
        out = subprocess.run([flatc, "--version"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SyncError(f"cannot run {flatc} --version: {e}")
    m = re.search(r"(\d+\.\d+\.\d+)", out)
    if not m:
        raise SyncError(f"{flatc} --version printed no version: {out.strip()!r}")
    return m.group(1)


def headers_version(include_dir):
    """'2.0.8' from flatbuffers/base.h's FLATBUFFERS_VERSION_MAJOR/MINOR/REVISION."""
    base = Path(include_dir) / "flatbuffers" / "base.h"
    if not base.is_file():
        raise SyncError(f"no flatbuffers/base.h under {include_dir} (set --flatbuffers-include)")
    text = base.read_text(encoding="utf-8", errors="replace")
    parts = []
    for name in ("MAJOR", "MINOR", "REVISION"):
        m = re.search(rf"#define\s+FLATBUFFERS_VERSION_{name}\s+(\d+)", text)
        if not m:
            raise SyncError(f"{base} does not define FLATBUFFERS_VERSION_{name}")
        parts.append(m.group(1))
    return ".".join(parts)


def default_flatbuffers_include():
    env = os.environ.get("FLATBUFFERS_INCLUDE")
    if env:
        return Path(env)
    candidates = [Path("/usr/include"), Path("/usr/local/include"), Path("/opt/homebrew/include")]
    vcpkg = os.environ.get("VCPKG_ROOT")
    if vcpkg:
        candidates.insert(0, Path(vcpkg) / "installed" / "x64-windows" / "include")
    for c in candidates:
        if (c / "flatbuffers" / "base.h").is_file():
            return c
    return candidates[0]


def sdk_sources(repo):
    """The portable library's sources, as clients/cpp/CMakeLists.txt lists them for bustle_client."""
    text = (repo / "clients" / "cpp" / "CMakeLists.txt").read_text(encoding="utf-8")
    block = re.search(r"bustle_library\(client\n(.*?)PUBLIC_DEPS", text, re.S)
    if not block:
        raise SyncError("no bustle_library(client ...) in clients/cpp/CMakeLists.txt")
    sources = re.findall(r"(src/\w+\.cpp)", block.group(1))
    if not sources:
        raise SyncError("bustle_library(client ...) lists no sources")
    return sources


def check_versions(flatc, include_dir, pin):
    have_flatc = flatc_version(flatc)
    have_headers = headers_version(include_dir)
    problems = []
    if have_flatc != pin:
        problems.append(f"flatc is {have_flatc}")
    if have_headers != pin:
        problems.append(f"the FlatBuffers headers under {include_dir} are {have_headers}")
    if problems:
        raise SyncError(f"FlatBuffers {pin} is pinned, but " + " and ".join(problems) +
                        "; generated code only compiles against headers of its own flatc version "
                        "(install matching ones, or --pin another version for both)")
    return have_flatc, have_headers


def git_commit(repo):
    try:
        return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def sync(repo, dest, flatc, include_dir, pin):
    flatc_v, headers_v = check_versions(flatc, include_dir, pin)
    schema_dir = repo / SCHEMA_DIR
    schemas = sorted(schema_dir.glob("*.fbs"))
    if not schemas:
        raise SyncError(f"no *.fbs schemas in {schema_dir}")
    sources = sdk_sources(repo)

    if dest.exists():
        shutil.rmtree(dest)
    for sub in ("include/bustle/client", "include/bustle/proto", "src", "proto/src", "generated",
                "flatbuffers/include"):
        (dest / sub).mkdir(parents=True, exist_ok=True)

    for h in sorted((repo / "clients" / "cpp" / "include" / "bustle" / "client").glob("*.hpp")):
        if h.name not in TRANSPORT_HEADERS:
            shutil.copy2(h, dest / "include" / "bustle" / "client")
    for h in sorted((repo / "proto" / "include" / "bustle" / "proto").glob("*.hpp")):
        shutil.copy2(h, dest / "include" / "bustle" / "proto")
    for s in sources:
        shutil.copy2(repo / "clients" / "cpp" / s, dest / "src")
    for h in sorted((repo / "clients" / "cpp" / "src").glob("*.hpp")):
        shutil.copy2(h, dest / "src")
    for s in sorted((repo / "proto" / "src").glob("*.cpp")):
        shutil.copy2(s, dest / "proto" / "src")

    for schema in schemas:
        r = subprocess.run([flatc, *FLATC_FLAGS, "-o", str(dest / "generated"), "-I", str(schema_dir),
                            str(schema)], capture_output=True, text=True)
        if r.returncode != 0:
            raise SyncError(f"flatc failed on {schema.name}:\n{r.stdout}{r.stderr}")
    shutil.copytree(Path(include_dir) / "flatbuffers", dest / "flatbuffers" / "include" / "flatbuffers")

    (dest / "SDK_VERSION").write_text(
        f"commit: {git_commit(repo)}\n"
        f"flatc: flatc version {flatc_v}\n"
        f"flatbuffers headers: {headers_v}\n"
        f"schemas: {SCHEMA_DIR.as_posix()}/ ({', '.join(s.name for s in schemas)})\n"
        f"sources: {' '.join(sources)}\n", encoding="utf-8")
    return sources


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST, help="where the copy goes")
    parser.add_argument("--flatc", default=os.environ.get("FLATC", "flatc"), help="flatc to run")
    parser.add_argument("--flatbuffers-include", type=Path, default=None,
                        help="directory holding flatbuffers/base.h (default: $FLATBUFFERS_INCLUDE or the "
                             "system include directories)")
    parser.add_argument("--pin", default=FLATBUFFERS_VERSION,
                        help=f"FlatBuffers version flatc and the headers must both have (default {FLATBUFFERS_VERSION})")
    parser.add_argument("--check", action="store_true", help="only check the versions; write nothing")
    args = parser.parse_args(argv)

    flatc = shutil.which(args.flatc) or args.flatc
    include_dir = args.flatbuffers_include or default_flatbuffers_include()
    try:
        if args.check:
            flatc_v, headers_v = check_versions(flatc, include_dir, args.pin)
            print(f"sync_sdk.py: flatc {flatc_v} and headers {headers_v} match the pin {args.pin}")
            return 0
        sources = sync(REPO, args.dest.resolve(), flatc, include_dir, args.pin)
    except SyncError as e:
        print(f"sync_sdk.py: {e}", file=sys.stderr)
        return 1
    print(f"sync_sdk.py: SDK copied to {args.dest} ({len(sources)} SDK sources + proto)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
