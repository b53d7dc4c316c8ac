"""File checks of the UE5 plugin (clients/unreal/BustleClient).

No Unreal toolchain exists here, so these checks do not claim that the
plugin compiles in an engine. They check what can be checked without one:
the descriptor and module rules, the include discipline of every file, that
the module's SDK wrappers cover exactly the portable SDK's sources, and that
the SDK copy made by sync_sdk.py is complete (every copied source compiles
with only the include paths Build.cs gives the module).
"""
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(os.environ.get("BUSTLE_REPO_DIR", Path(__file__).resolve().parents[3]))
UNREAL = REPO / "clients" / "unreal"
PLUGIN = UNREAL / "BustleClient"
MODULE = PLUGIN / "Source" / "BustleClient"


def plugin_files(*suffixes):
    return sorted(p for p in PLUGIN.rglob("*") if p.is_file() and p.suffix in suffixes
                  and "ThirdParty" not in p.parts)


def includes(path):
    return re.findall(r'^\s*#\s*include\s+[<"]([^>"]+)[>"]', path.read_text(), re.M)


def cmake_client_sources():
    text = (REPO / "clients" / "cpp" / "CMakeLists.txt").read_text()
    block = re.search(r"bustle_library\(client\n(.*?)PUBLIC_DEPS", text, re.S).group(1)
    return re.findall(r"src/(\w+)\.cpp", block)


def test_descriptor():
    desc = json.loads((PLUGIN / "BustleClient.uplugin").read_text())
    assert desc["FileVersion"] == 3
    # No "EngineVersion": a plugin that names one is reported incompatible by
    # every other engine version (Epic's own plugins leave it out); the
    # versions it is written for are in the description.
    assert "EngineVersion" not in desc
    assert "Unreal Engine 5.3 to 5.5" in desc["Description"]
    assert desc["SupportedTargetPlatforms"]
    assert desc["CanContainContent"] is False
    names = []
    for module in desc["Modules"]:
        assert module["Type"] in ("Runtime", "Editor")
        assert module["LoadingPhase"] == "Default"
        assert (PLUGIN / "Source" / module["Name"] / f"{module['Name']}.Build.cs").is_file()
        names.append(module["Name"])
    assert names == ["BustleClient"]


def test_module_rules():
    rules = (MODULE / "BustleClient.Build.cs").read_text()
    assert re.search(r"public class BustleClient : ModuleRules", rules)
    assert "public BustleClient(ReadOnlyTargetRules Target)" in rules
    assert "PCHUsage = PCHUsageMode.UseExplicitOrSharedPCHs" in rules
    assert "CppStandard = CppStandardVersion.Cpp20" in rules
    # Unreal5_3 is deprecated after 5.4 and unsupported later: the engine's own.
    assert "IncludeOrderVersion = EngineIncludeOrderVersion.Latest;" in rules
    assert '"ThirdParty", "BustleSDK"' in rules
    public = re.search(r"PublicDependencyModuleNames\.AddRange\((.*?)\);", rules, re.S).group(1)
    private = re.search(r"PrivateDependencyModuleNames\.AddRange\((.*?)\);", rules, re.S).group(1)
    assert '"Core"' in public and '"Sockets"' in private
    assert '"Networking"' not in rules  # listed before but unused
    assert '"Sockets"' not in public
    assert "PublicIncludePaths" not in rules  # SDK headers stay private
    assert not re.search(r'"[^"]*asio[^"]*"', rules, re.I)  # no Asio path or module


def test_every_header_has_pragma_once_and_reflected_headers_end_with_generated():
    headers = plugin_files(".h")
    assert headers
    for h in headers:
        text = h.read_text()
        code = [l for l in text.splitlines() if l.strip() and not l.strip().startswith("//")]
        assert code and code[0].strip() == "#pragma once", f"{h}: #pragma once is not the first line of code"
        if re.search(r"^\s*(UCLASS|USTRUCT|UENUM)\(", text, re.M):
            incs = includes(h)
            assert incs[-1] == f"{h.stem}.generated.h", f"{h}: the generated header is not the last include"
            assert "GENERATED_BODY()" in text


def test_every_source_includes_its_own_header_first():
    own = {h.stem: h for h in plugin_files(".h")}
    for cpp in plugin_files(".cpp"):
        if cpp.name.endswith(".spec.cpp"):
            continue  # a spec includes what it tests first
        stem = cpp.name.split(".")[0]
        if stem in own:
            assert includes(cpp)[0] == f"{stem}.h", f"{cpp}: does not include {stem}.h first"


def test_include_discipline():
    banned = re.compile(r"^(Engine\.h|UnrealEd\.h|windows\.h|winsock2?\.h|asio.*|boost/.*)$", re.I)
    for f in plugin_files(".h", ".cpp"):
        for inc in includes(f):
            assert not banned.match(inc), f"{f}: includes {inc}"
        assert "LogTemp" not in f.read_text(), f"{f}: uses LogTemp"
    for h in (MODULE / "Public").glob("*.h"):
        for inc in includes(h):
            assert not inc.startswith("bustle/") and inc != "BustleSdk.h", f"{h}: exposes SDK headers ({inc})"
    # SDK headers only through BustleSdk.h (THIRD_PARTY_INCLUDES_START/END).
    for f in plugin_files(".h", ".cpp"):
        if f.name == "BustleSdk.h":
            continue
        assert not any(i.startswith("bustle/") for i in includes(f)), f"{f}: includes SDK headers directly"
    sdk_h = (MODULE / "Private" / "BustleSdk.h").read_text()
    assert sdk_h.index("THIRD_PARTY_INCLUDES_START") < sdk_h.index('#include "bustle/') < sdk_h.index("THIRD_PARTY_INCLUDES_END")


def test_log_category_members_only_where_logging_is_compiled():
    """Under NO_LOGGING (Test and Shipping builds by default) a log category
    is an empty FNoLoggingCategory: a member call on it (IsSuppressed,
    GetVerbosity, ...) compiles only inside `#if !NO_LOGGING` or the `#else`
    of `#if NO_LOGGING`."""
    member = re.compile(r"\bLogBustle\s*(\.|->)")
    for f in plugin_files(".cpp") + plugin_files(".h"):
        stack = []  # per open #if: True while its current branch has logging compiled
        for number, line in enumerate(f.read_text().splitlines(), 1):
            directive = line.strip()
            if re.match(r"#\s*if\s+NO_LOGGING\b", directive):
                stack.append(False)
            elif re.match(r"#\s*if\s+!\s*NO_LOGGING\b", directive):
                stack.append(True)
            elif re.match(r"#\s*if", directive):
                stack.append(None)  # unrelated condition: inherits
            elif re.match(r"#\s*else", directive) and stack:
                stack[-1] = None if stack[-1] is None else not stack[-1]
            elif re.match(r"#\s*endif", directive) and stack:
                stack.pop()
            elif member.search(line):
                logging = [s for s in stack if s is not None]
                assert logging and logging[-1], (
                    f"{f.relative_to(REPO)}:{number}: a LogBustle member outside a NO_LOGGING guard "
                    "does not compile in Test and Shipping builds")


def test_one_log_category_definition():
    defs = [f for f in plugin_files(".cpp") if "DEFINE_LOG_CATEGORY(LogBustle)" in f.read_text()]
    assert len(defs) == 1
    assert "DECLARE_LOG_CATEGORY_EXTERN(LogBustle, Log, All)" in (MODULE / "Public" / "BustleLog.h").read_text()


def test_specs_are_named_and_placed_as_automation_specs():
    specs = sorted((MODULE / "Private" / "Tests").glob("*.cpp"))
    assert specs
    for s in specs:
        assert s.name.endswith(".spec.cpp") and "Test" not in s.name, s
        text = s.read_text()
        assert re.search(r'BEGIN_DEFINE_SPEC\(\w+, "Bustle\.Unit\.\w+"', text), s
        assert "::Define()" in text and "RunTest" not in text, s


def test_wrappers_cover_exactly_the_portable_sdk_sources():
    wrapped = []
    for w in sorted((MODULE / "Private" / "Sdk").glob("*.cpp")):
        text = w.read_text()
        m = re.search(r'#include "((?:proto/)?src/\w+\.cpp)"', text)
        assert m, f"{w}: includes no SDK source"
        assert text.index("THIRD_PARTY_INCLUDES_START") < m.start() < text.index("THIRD_PARTY_INCLUDES_END")
        wrapped.append(m.group(1))
    expected = [f"src/{s}.cpp" for s in cmake_client_sources()]
    expected += [f"proto/src/{p.name}" for p in sorted((REPO / "proto" / "src").glob("*.cpp"))]
    assert sorted(wrapped) == sorted(expected)
    assert not any(s in ("connection", "client") for s in cmake_client_sources())


def test_coordinate_header_is_engine_free():
    header = MODULE / "Private" / "BustleCoordinates.h"
    assert all(re.fullmatch(r"c\w+", inc) for inc in includes(header)), includes(header)


@pytest.fixture(scope="module")
def synced_sdk():
    if shutil.which("flatc") is None:
        pytest.skip("flatc is not installed")
    dest = Path(tempfile.mkdtemp(prefix="bustle-ue-sdk-"))
    try:
        subprocess.run([sys.executable, str(UNREAL / "sync_sdk.py"), "--dest", str(dest)], check=True,
                       capture_output=True)
        yield dest
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def test_sync_produces_every_path_the_module_uses(synced_sdk):
    rules = (MODULE / "BustleClient.Build.cs").read_text()
    for sub in re.findall(r'Path\.Combine\(SdkRoot, ([^)]*)\)', rules):
        parts = [p.strip().strip('"') for p in sub.split(",")]
        assert (synced_sdk.joinpath(*parts)).exists(), parts
    for w in (MODULE / "Private" / "Sdk").glob("*.cpp"):
        inc = re.search(r'#include "((?:proto/)?src/\w+\.cpp)"', w.read_text()).group(1)
        assert (synced_sdk / inc).is_file(), inc
    assert not (synced_sdk / "include" / "bustle" / "client" / "connection.hpp").exists()
    assert "flatc:" in (synced_sdk / "SDK_VERSION").read_text()


def test_synced_sdk_compiles_with_the_module_include_paths(synced_sdk):
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    flags = ["-std=c++20", "-fsyntax-only", "-fno-exceptions",
             "-I", str(synced_sdk / "include"), "-I", str(synced_sdk / "generated"),
             "-I", str(synced_sdk / "flatbuffers" / "include"), "-I", str(synced_sdk)]
    sources = sorted((synced_sdk / "src").glob("*.cpp")) + sorted((synced_sdk / "proto" / "src").glob("*.cpp"))
    # The coordinate header compiles on its own, too.
    check_src = synced_sdk / "coordinates_check.cpp"
    check_src.write_text(f'#include "{MODULE / "Private" / "BustleCoordinates.h"}"\nint main() {{ return 0; }}\n')
    sources.append(check_src)

    def compile_one(src):
        r = subprocess.run([cxx, *flags, str(src)], capture_output=True, text=True)
        return src, r.returncode, r.stderr

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for src, rc, err in pool.map(compile_one, sources):
            assert rc == 0, f"{src.name}:\n{err[:4000]}"


def test_uobject_members_are_uproperty_object_pointers_or_weak():
    # A raw UObject pointer member is invisible to the GC; UPROPERTYs hold no
    # std:: types (UHT rejects them) and no nested containers.
    raw_member = re.compile(r"^\s*(?:const\s+)?[UA][A-Z]\w*\s*\*\s*\w+\s*(?:=\s*nullptr\s*)?;", re.M)
    for h in plugin_files(".h"):
        text = h.read_text()
        assert not raw_member.search(text), f"{h}: raw UObject pointer member: {raw_member.search(text).group(0)}"
        for m in re.finditer(r"UPROPERTY\([^)]*\)\s*\n\s*([^;]+);", text):
            decl = m.group(1)
            assert "std::" not in decl, f"{h}: UPROPERTY of a std type: {decl}"
            assert not re.search(r"T(Array|Map|Set)<[^;]*T(Array|Map|Set)<", decl), f"{h}: nested container: {decl}"
            if "*" in decl:
                assert "TObjectPtr<" in decl, f"{h}: UPROPERTY raw pointer: {decl}"


# --- The engine-API ledger (clients/unreal/ENGINE_API.md) -------------------

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine_symbols  # noqa: E402

LEDGER = UNREAL / "ENGINE_API.md"


def ledger_rows():
    """{name: (kind, [include alternatives])}; a member is keyed by its own name."""
    rows = {}
    for line in LEDGER.read_text().splitlines():
        m = re.match(r"\|\s*`([^`]+)`\s*\|\s*([\w/ ]+?)\s*\|\s*(.*?)\s*\|", line)
        if not m or m.group(1) == "Symbol":
            continue
        name = re.sub(r"\s*\(.*\)$", "", m.group(1)).split("::")[-1].strip()
        rows[name] = (m.group(2), re.findall(r"`([^`]+)`", m.group(3)))
    return rows


def ledger_table():
    """(header cells, [row cells]) of the ledger's table; a `|` inside
    backticks belongs to its cell."""
    def cells(line):
        out, cur, tick = [], "", False
        for ch in line.strip()[1:-1]:
            tick ^= ch == "`"
            if ch == "|" and not tick:
                out.append(cur.strip())
                cur = ""
            else:
                cur += ch
        return out + [cur.strip()]
    lines = LEDGER.read_text().splitlines()
    header = next(cells(l) for l in lines if l.startswith("| Symbol |"))
    return header, [cells(l) for l in lines if l.startswith("| `")]


def test_ledger_rows_are_read_in_every_listed_engine_version():
    """Each version column holds `same, line N` (declaration as in 5.5.1), a
    `path:line` with that version's declaration, or `not read` (the reason is
    in the section above the table)."""
    header, rows = ledger_table()
    versions = [h for h in header[4:] if re.fullmatch(r"UE 5\.\d+\.\d+", h)]
    assert header[3] == "UE 5.5.1 declaration"
    assert versions == header[4:] and {"UE 5.4.2", "UE 5.3.2"} <= set(versions), header
    bad = []
    for row in rows:
        if len(row) != len(header):
            bad.append(f"{row[0]}: {len(row)} cells, header has {len(header)}")
            continue
        for version, cell in zip(versions, row[4:]):
            if not re.match(r"same\b|`[\w/.]+:\d+`: `|not read\b", cell):
                bad.append(f"{row[0]} ({version}): {cell[:60]}")
    assert not bad, "\n".join(bad)


def own_header_includes(f):
    h = f.with_suffix(".h")
    if f.suffix == ".cpp":
        matches = [p for p in plugin_files(".h") if p.stem == f.name.split(".")[0]]
        h = matches[0] if matches else None
    return includes(h) if h is not None and h != f and h.is_file() else []


def test_ledger_lists_every_engine_symbol_the_plugin_uses():
    ledger = ledger_rows()
    assert len(ledger) > 200
    used = {}
    for f, names in engine_symbols.engine_symbols_by_file(MODULE).items():
        for name in names:
            used.setdefault(name, f)
    missing = sorted(f"{n} ({used[n].relative_to(MODULE)})" for n in used if n not in ledger)
    assert not missing, f"engine symbols missing from ENGINE_API.md: {missing}"
    modules = engine_symbols.build_cs_modules(MODULE / "BustleClient.Build.cs")
    assert modules and all(ledger.get(m, ("",))[0] == "module" for m in modules), modules
    stale = sorted(n for n, (kind, _) in ledger.items() if kind != "module" and n not in used)
    assert not stale, f"ENGINE_API.md lists symbols the plugin no longer uses: {stale}"


def test_every_file_includes_the_headers_of_the_engine_symbols_it_uses():
    """IWYU against the ledger: a file relies on no PCH and on no other plugin
    header for an engine declaration; only its own header may bring it."""
    ledger = ledger_rows()
    problems = []
    for f, names in engine_symbols.engine_symbols_by_file(MODULE).items():
        have = set(includes(f)) | set(own_header_includes(f))
        if any(i.endswith(".generated.h") for i in have):
            have |= {"UObject/ObjectMacros.h"}
        # A forward declaration is enough for a type used by pointer or reference.
        declared = set(re.findall(r"^\s*(?:class|struct)\s+(\w+)\s*;", f.read_text(), re.M))
        for name, kind in names.items():
            if kind == "specifier" or name not in ledger or name in declared:
                continue
            wanted = [h for h in ledger[name][1] if h.endswith(".h") and ":" not in h]
            if wanted and not have.intersection(wanted):
                problems.append(f"{f.relative_to(MODULE)}: {name} needs {' or '.join(wanted)}")
    assert not problems, "\n".join(sorted(problems))


def test_public_api_is_reflected_for_blueprint():
    client = (MODULE / "Public" / "BustleClientSubsystem.h").read_text()
    world = (MODULE / "Public" / "BustleWorldSubsystem.h").read_text()
    proxy = (MODULE / "Public" / "BustleProxy.h").read_text()

    def specifiers_of(text, declaration):
        m = re.search(r"(U(?:FUNCTION|PROPERTY))\(([^\n]*)\)\s*\n\s*[^\n]*\b" + re.escape(declaration), text)
        assert m, f"{declaration} is not reflected"
        return m.group(2)

    assert "BlueprintCallable" in specifiers_of(client, "Connect(const FString& Host")
    assert "BlueprintCallable" in specifiers_of(client, "Disconnect()")
    for delegate in ("OnConnected;", "OnDisconnected;"):
        assert "BlueprintAssignable" in specifiers_of(client, delegate)
    for delegate in ("OnEntityRepresented;", "OnEntityReleased;", "OnEntityCorpse;"):
        assert "BlueprintAssignable" in specifiers_of(world, delegate)
    for query in ("GetActorForEntity(", "GetEntityForActor(", "GetEntityInfo("):
        assert "BlueprintPure" in specifiers_of(world, query)
    assert "BlueprintCallable" in specifiers_of(world, "SetBackendEnabled(")
    assert re.search(r"UINTERFACE\([^)]*Blueprintable", proxy)
    for event in ("OnBustlePooled", "OnBustleActivated", "OnBustleDeactivated", "OnBustleVelocity",
                  "OnBustleHintChanged", "IsBustleProxyReady"):
        assert "BlueprintNativeEvent" in specifiers_of(proxy, event + "("), event


def test_no_std_types_cross_uobject_boundaries():
    """Public headers (UObjects, reflected structs, the proxy and backend
    interfaces) carry engine types only; the SDK's std:: types stay private."""
    for h in (MODULE / "Public").glob("*.h"):
        code = engine_symbols.strip_comments_and_strings(h.read_text())
        assert "std::" not in code, f"{h.name}: a std:: type in a public header"
        assert not re.search(r"#\s*include\s*<", h.read_text()), f"{h.name}: a standard header in a public header"
