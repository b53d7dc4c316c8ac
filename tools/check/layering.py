#!/usr/bin/env python3
"""Checks that the C++ libraries include only what the layering allows.

    tools/check/layering.py [--root DIR]     check the tree under DIR (default: this repository)
    tools/check/layering.py --self-test      prove the check fails on a tree that breaks the rules

Each library folder publishes its headers as `<folder>/include/bustle/<name>/...`
(server/core as bustle/core, proto as bustle/proto, server/args as bustle/args,
tools/cli as bustle/cli, ...). A source file under a library folder may include
`bustle/<name>/...` only for the names that folder may depend on
(docs/architecture.md, "Dependencies point one way"):

    server/core      -> (the standard library only; its own check is core:forbidden_includes)
    proto            -> nothing of Bustle's
    server/args      -> nothing of Bustle's (CLI11 value checks, for the server and the tools)
    server/scenario  -> core
    server/persist   -> core
    server/net       -> proto, core
    server/ops       -> net, persist, core
    server/app       -> args, ops, net, persist, scenario, proto, core
    server/gateway   -> app, args, ops, net, scenario, proto, core, client (the C++ SDK)
    clients/cpp      -> proto

and no file under server/, proto/ or clients/ may include a header that lives
under tools/ (the tools depend on the server's libraries, never the other way
round), nor may a CMakeLists.txt there name a path under tools/. Folders not
listed (tools/, tests/) may include anything. A name whose headers live in no
library folder (a generated header, a third-party one) is not checked.

Each problem is one line, `FILE:LINE: message`. Exit status: 0 when nothing
is wrong, 1 otherwise, 2 bad usage. Python 3 standard library only.
"""
import argparse
import os
import re
import sys
import tempfile

# Library folder -> the bustle/<name> prefixes it may include besides its own.
ALLOWED = {
    "server/core": set(),
    "proto": set(),
    "server/args": set(),
    "server/scenario": {"core"},
    "server/persist": {"core"},
    "server/net": {"proto", "core"},
    "server/ops": {"net", "persist", "core"},
    "server/app": {"args", "ops", "net", "persist", "scenario", "proto", "core"},
    "server/gateway": {"app", "args", "ops", "net", "scenario", "proto", "core", "client"},
    "clients/cpp": {"proto"},
}
# Top-level folders whose files must not reach into tools/.
BELOW_TOOLS = ("server", "proto", "clients")
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc", ".inl")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](bustle/([A-Za-z0-9_]+)/[^>"]+)[>"]')
CMAKE_TOOLS_PATH = re.compile(r"(^|[\s/\"$}])tools/")


def library_names(root):
    """bustle/<name> -> the folder (relative to root) that publishes it."""
    names = {}
    for top in ("proto", "server", "clients", "tools"):
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        candidates = [base] + [os.path.join(base, d) for d in sorted(os.listdir(base))]
        for folder in candidates:
            published = os.path.join(folder, "include", "bustle")
            if not os.path.isdir(published):
                continue
            for name in sorted(os.listdir(published)):
                if os.path.isdir(os.path.join(published, name)):
                    names[name] = os.path.relpath(folder, root).replace(os.sep, "/")
    return names


def walk_files(root, folder):
    base = os.path.join(root, folder)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for filename in sorted(filenames):
            yield os.path.join(dirpath, filename)


def owning_library(rel):
    for folder in ALLOWED:
        if rel == folder or rel.startswith(folder + "/"):
            return folder
    return None


def check(root):
    problems = []
    names = library_names(root)
    for top in BELOW_TOOLS:
        if not os.path.isdir(os.path.join(root, top)):
            continue
        for path in walk_files(root, top):
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            is_cmake = os.path.basename(path) == "CMakeLists.txt" or path.endswith(".cmake")
            if not (path.endswith(SOURCE_SUFFIXES) or is_cmake):
                continue
            library = owning_library(rel)
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    if is_cmake:
                        code = line.split("#", 1)[0]
                        if CMAKE_TOOLS_PATH.search(code):
                            problems.append(f"{rel}:{number}: names a path under tools/ "
                                            "(the server's side must not depend on the tools)")
                        continue
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    header, name = match.group(1), match.group(2)
                    home = names.get(name)
                    if home is None:
                        continue
                    if home.startswith("tools/"):
                        problems.append(f"{rel}:{number}: includes {header}, which lives in {home} "
                                        "(the server's side must not depend on the tools)")
                    elif library and home != library and name not in ALLOWED[library]:
                        allowed = ", ".join(sorted(ALLOWED[library])) or "nothing of Bustle's"
                        problems.append(f"{rel}:{number}: includes {header} from {home}; "
                                        f"{library} may include {allowed}")
    return problems


def self_test():
    """A tree that breaks each rule once; every break must be reported."""
    files = {
        "server/core/include/bustle/core/world.hpp": "#pragma once\n",
        "server/net/include/bustle/net/server.hpp": '#include "bustle/core/world.hpp"\n',
        "server/persist/include/bustle/persist/store.hpp": '#include "bustle/net/server.hpp"\n',
        "tools/args/include/bustle/args/checks.hpp": "#pragma once\n",
        "server/app/src/options.cpp": '#include "bustle/args/checks.hpp"\n',
        "server/app/CMakeLists.txt": "target_include_directories(x PRIVATE ${CMAKE_SOURCE_DIR}/tools/args)\n",
        "clients/cpp/src/frame.cpp": "#include <bustle/core/world.hpp>\n",
        "tools/cli/src/main.cpp": '#include "bustle/net/server.hpp"\n#include "bustle/args/checks.hpp"\n',
    }
    expected = [
        ("clients/cpp/src/frame.cpp:1:", "from server/core"),
        ("server/app/CMakeLists.txt:1:", "names a path under tools/"),
        ("server/app/src/options.cpp:1:", "lives in tools/args"),
        ("server/persist/include/bustle/persist/store.hpp:1:", "from server/net"),
    ]
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        problems = check(root)
    failed = False
    for where, what in expected:
        if not any(p.startswith(where) and what in p for p in problems):
            print(f"self-test: expected a problem at {where} ({what}); got: {problems}")
            failed = True
    if len(problems) != len(expected):
        print(f"self-test: expected {len(expected)} problems, got {len(problems)}: {problems}")
        failed = True
    if not failed:
        print(f"self-test ok ({len(problems)} problems found, as planted)")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    parser.add_argument("--self-test", action="store_true")
    options = parser.parse_args()
    if options.self_test:
        return self_test()
    root = os.path.abspath(options.root)
    if not os.path.isdir(os.path.join(root, "server")):
        print(f"layering: {root} has no server/ folder", file=sys.stderr)
        return 2
    problems = check(root)
    for problem in problems:
        print(problem)
    if not problems:
        print("layering ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
