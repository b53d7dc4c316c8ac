"""Engine identifiers used by the UE5 plugin's sources, found by their
spelling (no engine here to ask): Unreal's prefixed type names (UObject,
AActor, FVector, TArray, EEnum, IInterface), engine macros and constants
(UE_LOG, RF_Transient, NM_Client), members called or read through `->`, `.`
or `::` (SetActorHiddenInGame, PrimaryActorTick, bIsTearingDown) and free
functions (GetDefault, Cast, IsRunningDedicatedServer); minus everything
the plugin declares itself (its types, functions, fields, parameters and
locals), the SDK's (bustle::, snake_case) and the C++ language's.
Used by test_plugin_files.py against clients/unreal/ENGINE_API.md."""
import re
from pathlib import Path

# Lower-case engine macros the plugin may use (the spelling rules below see
# only upper-case names).
LOWERCASE_ENGINE = {"check", "checkf", "checkSlow", "ensure", "ensureMsgf", "verify"}
# C++ and preprocessor words that look like engine names.
LANGUAGE = {"TRUE", "FALSE", "NULL", "EOF"}

GLOBAL = re.compile(r"\b(G[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)\b")
# Specifiers inside the reflection macros (UPROPERTY(EditAnywhere, Category = "x")).
REFLECTED = re.compile(r"\b(?:UCLASS|UPROPERTY|UFUNCTION|USTRUCT|UENUM|UINTERFACE|UMETA)\(((?:[^()]|\([^()]*\))*)\)")
TYPE = re.compile(r"\b([UAFTIE][A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)\b")
CONSTANT = re.compile(r"\b([A-Z][A-Z0-9]+_[A-Za-z0-9_]+|[A-Z]{2,}[0-9]*)\b")
MEMBER = re.compile(r"(?:->|\.|::)\s*((?:[A-Z]|b[A-Z])\w*)\b(?!\s*::)")
CALL = re.compile(r"(?<![\w:.>])\s*\b([A-Z]\w*)\s*(?:<[^;(){}]*>)?\s*\(")
LOWER_CALL = re.compile(r"(?<![\w:.>])\b(" + "|".join(sorted(LOWERCASE_ENGINE)) + r")\s*\(")


def strip_comments_and_strings(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(?:\\.|[^'\\\n])'", "''", text)


KEYWORDS = {"return", "case", "new", "delete", "else", "throw", "sizeof", "co_return", "goto", "public",
            "private", "protected", "class", "struct", "enum", "using", "namespace", "typename", "template",
            "operator", "and", "or", "not", "if", "for", "while", "switch", "do"}
DECLARATION = re.compile(
    r"^[ \t]*(?:(?:virtual|static|inline|explicit|constexpr|FORCEINLINE|friend)\s+)*(?:const\s+)?"
    r"([A-Za-z_][\w:]*(?:<[^;(){}]*>)?)[ \t]*[*&]*[ \t]+[*&]?(?:[A-Za-z_]\w*::)*~?([A-Za-z_]\w*)\s*\(", re.M)
VARIABLE = re.compile(
    r"([A-Za-z_][\w:]*(?:<[^;(){}]*>)?)\s*[*&]*\s+[*&]?\s*([A-Za-z_]\w*)\s*(?=[;,)\[]|=(?!=)|\{|:(?!:))")


def plugin_declared(files):
    """Names the plugin declares: types, functions and fields of its own, and
    the parameters and locals of its functions (UE style names them like
    types). A forward declaration declares nothing; an `override` is the engine's."""
    names = set()
    for f in files:
        text = strip_comments_and_strings(f.read_text())
        names.update(re.findall(
            r"\b(?:class|struct|enum\s+class|enum|union)\s+(?:\w+_API\s+)?(?:\w+::)*(\w+)\s*(?:final\s*)?[:{]", text))
        names.update(re.findall(r"\bnamespace\s+(\w+)", text))
        names.update(re.findall(r"\busing\s+(\w+)\s*=", text))
        names.update(re.findall(r"#\s*define\s+(\w+)", text))
        # Delegate types, stats and log categories the plugin declares.
        names.update(re.findall(r"\b(?:DECLARE|DEFINE)_\w+\(\s*(\w+)\s*[,)]", text))
        names.update(re.findall(r"\bDECLARE_\w+\(\s*TEXT\([^)]*\)\s*,\s*(\w+)", text))
        for body in re.findall(r"enum\s+(?:class\s+)?\w+[^{;]*\{([^}]*)\}", text):
            names.update(re.findall(r"^\s*(\w+)", body, re.M))
        for m in DECLARATION.finditer(text):
            rest = text[m.end():]
            stop = min([i for i in (rest.find(";"), rest.find("{")) if i >= 0] or [len(rest)])
            if m.group(1) not in KEYWORDS and "override" not in rest[:stop]:
                names.add(m.group(2))
        for m in VARIABLE.finditer(text):
            if m.group(1) not in KEYWORDS:
                names.add(m.group(2))
        for binding in re.findall(r"\bauto\s*&?\s*\[([\w, ]+)\]", text):
            names.update(n.strip() for n in binding.split(","))
    # Engine virtuals the plugin overrides are the engine's, also where defined.
    for f in files:
        for line in strip_comments_and_strings(f.read_text()).splitlines():
            if "override" in line:
                names.difference_update(re.findall(r"\b([A-Za-z_]\w*)\s*\(", line))
    return names


def engine_symbols_by_file(module_dir):
    """{file: {name: kind}} for every plugin source and header under module_dir."""
    files = sorted(p for p in Path(module_dir).rglob("*") if p.suffix in (".h", ".cpp") and p.is_file()
                   and "ThirdParty" not in p.parts)
    own = plugin_declared(files)
    out = {}
    for f in files:
        text = strip_comments_and_strings(f.read_text())
        # Drop SDK-qualified names (bustle::client::X, bc::X, BustleUnreal::X) and includes.
        text = re.sub(r"\b(?:bustle::\w+|bc|wire|BustleUnreal|BustleSettingsSdk|BustleTime)(?:::\w+)+", " ", text)
        # An engine enumerator counts as its enum (EWorldType::Game -> EWorldType).
        text = re.sub(r"\b(E[A-Z]\w*)(?:::\w+)+", r"\1", text)
        text = re.sub(r"#\s*include[^\n]*", " ", text)
        found = {}

        def add(name, kind):
            # Specifiers are their own vocabulary: a local named Category is no specifier.
            if (kind != "specifier" and name in own) or name in LANGUAGE or "Bustle" in name or "BUSTLE" in name:
                return
            found.setdefault(name, kind)

        for m in REFLECTED.finditer(text):
            for spec in re.findall(r"(?:^|[,(])\s*(\w+)", m.group(1)):
                add(spec, "specifier")
            for spec in re.findall(r"\b(\w+)\s*=", m.group(1)):
                add(spec, "specifier")
        # In this order: a name found by an earlier pattern keeps its kind.
        for pattern, kind in ((GLOBAL, "global"), (TYPE, "type"), (CONSTANT, "macro/constant"),
                              (MEMBER, "member"), (CALL, "function"),
                              (LOWER_CALL, "macro/constant")):
            for m in pattern.finditer(text):
                add(m.group(1), kind)
        out[f] = found
    return out


def build_cs_modules(build_cs):
    text = Path(build_cs).read_text()
    deps = re.findall(r"(?:Public|Private)DependencyModuleNames\.AddRange\(new string\[\]\s*\{(.*?)\}\);", text, re.S)
    return sorted({m for block in deps for m in re.findall(r'"(\w+)"', block)})
