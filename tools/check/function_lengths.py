#!/usr/bin/env python3
"""Function lengths in C++ sources: lists every function (or lambda-free
function body at namespace or class scope) longer than a limit.

usage: function_lengths.py [--report N] [--fail-over M [--allow FILE]] PATH...

PATH is a file or a directory (searched for *.cpp / *.hpp). Prints
"<lines>  <file>:<line>  <name>" for every function over --report lines
(default 80), longest first, and exits 1 when any is over --fail-over
(default: never). --allow FILE lists known exceptions, one "NAME LINES" a
line (# comments): NAME may be up to LINES long; an entry that no longer
matches a function over M lines is stale and fails too, so the list only
shrinks. A function's length counts from the line its declarator
starts on to its closing brace. The scan is lexical (comments, strings and
character literals are skipped; braces are matched): a body opened at
namespace or class scope after a declarator ending in ')' (optionally followed
by const, noexcept, override, a trailing return type or a constructor's
initialiser list) is a function; namespaces, classes, enums and initialisers
are scopes or data, not functions.
"""
import argparse
import os
import re
import sys

SCOPE_WORDS = re.compile(r"\b(namespace|struct|class|union|enum)\b")


def strip(text):
    """Text with comments, string and char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c in "\"'":
            # a digit separator (1'000) is not a char literal
            if c == "'" and i > 0 and text[i - 1].isalnum():
                out.append(" "); i += 1; continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i)); i = j
        else:
            out.append(c); i += 1
    return "".join(out)


def drop_template(h):
    """The declarator without a leading template <...> (which may say class)."""
    while h.startswith("template"):
        depth, i = 0, len("template")
        for i in range(len("template"), len(h)):
            depth += {"<": 1, ">": -1}.get(h[i], 0)
            if depth == 0 and h[i] == ">":
                break
        h = h[i + 1:].strip()
    return h


def is_function_header(header):
    h = drop_template(" ".join(header.split()))
    if not h or SCOPE_WORDS.search(h.split("(")[0]) or h.startswith(("=", "return")):
        return False
    if "(" not in h:
        return False
    # constructor initialiser list: "X::X(args) : a_(b), c_(d)"
    m = re.match(r"(.*?\))\s*:(?!:)", h)
    if m and "=" not in m.group(1).split("(")[0]:
        return True
    tail = re.sub(r"\b(const|noexcept|override|final|mutable)\b", "", h).strip()
    tail = re.sub(r"->\s*[\w:<>,\s*&]+$", "", tail).strip()
    if not tail.endswith(")"):
        return False
    before = h.split("(")[0]
    return "=" not in before and not before.strip().endswith(("if", "for", "while", "switch", "catch"))


def name_of(header):
    h = drop_template(" ".join(header.split()))
    before = h.split("(")[0].split()
    return before[-1] if before else "?"


def functions(path):
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    # stack of (kind, start line, header); kind: scope | function | block
    stack, found = [], []
    header_start, line = 0, 1
    last_break = 0
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
            continue
        if c in ";{}":
            if c == "{":
                header = text[last_break:i]
                in_function = any(k != "scope" for k, _, _ in stack)
                if in_function:
                    stack.append(("block", line, ""))
                elif is_function_header(header):
                    # from the first non-blank line of the header
                    lead = header[: len(header) - len(header.lstrip())]
                    start = line - header.count("\n") + lead.count("\n")
                    stack.append(("function", start, name_of(header)))
                elif SCOPE_WORDS.search(header) or not header.strip() or header.strip().startswith("extern"):
                    stack.append(("scope", line, ""))
                else:
                    stack.append(("block", line, ""))  # an initialiser or a data brace
            elif c == "}" and stack:
                kind, start, name = stack.pop()
                if kind == "function":
                    found.append((line - start + 1, path, start, name))
            last_break = i + 1
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", type=int, default=80)
    ap.add_argument("--fail-over", type=int, default=None)
    ap.add_argument("--allow", default=None)
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    files = []
    for p in a.paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, f) for f in sorted(names) if f.endswith((".cpp", ".hpp"))]
        elif os.path.isfile(p):
            files.append(p)
        else:
            print(f"function_lengths: no such file or directory: {p}", file=sys.stderr)
            return 2
    rows = sorted((f for path in sorted(files) for f in functions(path)), key=lambda r: (-r[0], r[1], r[2]))
    over = [r for r in rows if r[0] > a.report]
    for n, path, start, name in over:
        print(f"{n:5d}  {path}:{start}  {name}")
    print(f"{len(over)} of {len(rows)} functions over {a.report} lines")
    if a.fail_over is None:
        return 0
    allowed = {}
    if a.allow:
        try:
            lines = open(a.allow, encoding="utf-8").read().splitlines()
        except OSError as e:
            print(f"function_lengths: --allow {a.allow}: {e.strerror}", file=sys.stderr)
            return 2
        for k, text in enumerate(lines, 1):
            text = text.split("#")[0].strip()
            if not text:
                continue
            parts = text.split()
            if len(parts) != 2 or not parts[1].isdigit():
                print(f"function_lengths: {a.allow}:{k}: expected 'NAME LINES', got '{text}'", file=sys.stderr)
                return 2
            allowed[parts[0]] = int(parts[1])
    failed = 0
    for n, path, start, name in rows:
        if n > a.fail_over and n > allowed.get(name, 0):
            limit = f" (allowed {allowed[name]})" if name in allowed else ""
            print(f"FAIL: {path}:{start} {name} is {n} lines, over {a.fail_over}{limit}")
            failed += 1
    long_names = {r[3] for r in rows if r[0] > a.fail_over}
    for name in sorted(set(allowed) - long_names):
        print(f"FAIL: {a.allow}: {name} is no longer over {a.fail_over} lines; remove its entry")
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
