#!/usr/bin/env python3
"""Checks the documentation's links and the commands it shows.

    tools/check/doc_links.py [--root DIR]     check README.md, CHANGELOG.md and docs/*.md
    tools/check/doc_links.py --self-test      prove the checks fail on broken input

What is checked, in README.md, CHANGELOG.md and every docs/*.md under the root
(outside fenced code blocks for links, inside ```sh blocks for commands):

1. Every relative link, `[text](path)`, `[text](path#anchor)` or
   `[text](#anchor)` (images too), names an existing file or folder, relative
   to the page; an anchor into a Markdown file names one of its headings, by
   GitHub's slug rules (lowercase, punctuation other than `-` and `_` removed,
   spaces to `-`, a repeated heading gets `-1`, `-2`, ...). http(s) and mailto
   links are not followed.
2. Every command of a ```sh (or bash, shell, console) block: each line, after
   its comment and a leading `$ ` are removed, is split at `&&`, `||`, `;`,
   `&` and `|`; of each part (after leading VAR=value words) the first word
   is checked:
   - `make`: every target named must be a target of the root Makefile (a
     `target:` line or a .PHONY name);
   - a path under build/: its last component must be a program the CMake
     build makes (add_executable, a function that wraps it, or a script
     written with file(GENERATE OUTPUT ...));
   - a path under another top-level folder of the tree (tools/, tests/, ...)
     must exist; so must the script after `python3`, `bash` or `sh`;
   - a `bustle...` program name must be one the build makes, or one the
     Dockerfile installs into a bin folder.
   Words holding placeholders (`<target>`, `$VAR`, `*`) are not checked.

Each problem is one line, `FILE:LINE: message`, e.g.
    docs/x.md:12: broken link 'y.md' (no such file)
    docs/x.md:14: broken link 'y.md#z' (no heading '#z' in docs/y.md)
    docs/x.md:20: 'make foo': no such make target
Exit status: 0 when nothing is wrong, 1 otherwise, 2 bad usage. Python 3
standard library only.
"""
import os
import re
import shlex
import sys
import tempfile

FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([^\s`]*)")
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SHELL_LANGUAGES = {"sh", "bash", "shell", "console"}
INTERPRETERS = {"python3", "python", "bash", "sh"}
PLACEHOLDER = re.compile(r"[<>$*{}]")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def slug(text):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link reads as its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in "-_ ")
    return text.replace(" ", "-")


def markdown_lines(path):
    """(line number, text, fence language or None) for every line of a file."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    fence = None  # (character, length, language) while inside a fenced block
    for number, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = (m.group(1)[0], len(m.group(1)), m.group(2).lower())
            yield number, line, "fence"
            continue
        if fence is not None and m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1] \
                and not m.group(2):
            fence = None
            yield number, line, "fence"
            continue
        yield number, line, (fence[2] if fence else None)


_ANCHORS = {}  # path -> the anchors of its headings


def headings(path):
    """The set of anchors a Markdown file defines."""
    cache = _ANCHORS
    if path not in cache:
        seen = {}
        anchors = set()
        for _, line, language in markdown_lines(path):
            if language is not None:
                continue
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            anchors.add(base if n == 0 else "%s-%d" % (base, n))
        cache[path] = anchors
    return cache[path]


class Tree:
    """What the repository provides: make targets, programs, files."""

    def __init__(self, root):
        self.root = root
        self.make_targets = self._make_targets()
        self.programs = self._programs()

    def _make_targets(self):
        targets = set()
        path = os.path.join(self.root, "Makefile")
        if not os.path.exists(path):
            return targets
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"^\.PHONY\s*:(.*)$", line)
                if m:
                    targets.update(m.group(1).split())
                    continue
                m = re.match(r"^([A-Za-z0-9_.%/-]+(?:\s+[A-Za-z0-9_.%/-]+)*)\s*:(?![=:])", line)
                if m and not line.startswith("\t"):
                    targets.update(m.group(1).split())
        return targets

    def _cmake_files(self):
        for directory, subdirs, files in os.walk(self.root):
            subdirs[:] = [d for d in subdirs if d not in (".git", "build") and not d.startswith(".")]
            for name in files:
                if name == "CMakeLists.txt" or name.endswith(".cmake"):
                    yield os.path.join(directory, name)

    def _programs(self):
        texts = []
        for path in self._cmake_files():
            with open(path, encoding="utf-8", errors="replace") as f:
                texts.append(re.sub(r"(?m)#.*$", "", f.read()))  # without comments
        programs = set()
        wrappers = set()
        for text in texts:
            programs.update(re.findall(r"add_executable\(\s*([A-Za-z0-9_.+-]+)", text))
            programs.update(re.findall(r"file\(\s*GENERATE\s+OUTPUT\s+\S*/([A-Za-z0-9_.+-]+)", text))
            # function(name arg ...) ... add_executable(${arg} ...) ... endfunction()
            for fn, body in re.findall(r"function\(\s*(\w+)[^)]*\)(.*?)endfunction\(", text, re.S):
                if re.search(r"add_executable\(\s*\$\{", body):
                    wrappers.add(fn)
        for text in texts:
            for fn in wrappers:
                programs.update(re.findall(r"(?<![\w$])%s\(\s*([A-Za-z0-9_.+-]+)" % re.escape(fn), text))
        dockerfile = os.path.join(self.root, "Dockerfile")
        if os.path.exists(dockerfile):
            with open(dockerfile, encoding="utf-8") as f:
                programs.update(re.findall(r"/bin/(bustle[A-Za-z0-9_-]*)", f.read()))
        return programs

    def top_level(self, word):
        """The first path component, when the word is a path into the tree."""
        first = word.split("/", 1)[0]
        if "/" not in word or first in ("", ".", ".."):
            return None
        return first if os.path.isdir(os.path.join(self.root, first)) or first == "build" else None


class Checker:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.tree = Tree(self.root)
        self.problems = []
        self.links = 0
        self.commands = 0

    def rel(self, path):
        return os.path.relpath(path, self.root)

    def problem(self, path, number, message):
        self.problems.append("%s:%d: %s" % (self.rel(path), number, message))

    def pages(self):
        found = [os.path.join(self.root, name) for name in ("README.md", "CHANGELOG.md")]
        docs = os.path.join(self.root, "docs")
        if os.path.isdir(docs):
            found += sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
        return [p for p in found if os.path.isfile(p)]

    def run(self):
        for page in self.pages():
            continuation = False
            for number, line, language in markdown_lines(page):
                if language is None:
                    self.check_links(page, number, line)
                    continuation = False
                elif language in SHELL_LANGUAGES:
                    continuation = self.check_shell_line(page, number, line, continuation)
        return self.problems

    def check_links(self, page, number, line):
        text = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        for m in LINK.finditer(text):
            target = m.group(2)
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # http:, https:, mailto: and other schemes
            self.links += 1
            path, _, anchor = target.partition("#")
            resolved = page if not path else os.path.normpath(
                os.path.join(os.path.dirname(page), path))
            if not os.path.exists(resolved):
                self.problem(page, number, "broken link '%s' (no such file)" % target)
                continue
            if anchor and resolved.endswith(".md") and anchor not in headings(resolved):
                self.problem(page, number, "broken link '%s' (no heading '#%s' in %s)"
                             % (target, anchor, self.rel(resolved)))

    def check_shell_line(self, page, number, line, continuation):
        """Checks one line of a shell block; returns whether the next continues it."""
        if FENCE.match(line):
            return False
        code = line.strip()
        if code.startswith("$ "):
            code = code[2:]
        code = re.sub(r"(^|\s)#.*$", "", code).rstrip()
        continues = code.endswith("\\")
        if continuation or not code:
            return continues
        for part in re.split(r"&&|\|\||;|&|\|", code.rstrip("\\")):
            try:
                words = shlex.split(part)
            except ValueError:
                words = part.split()
            while words and ASSIGNMENT.match(words[0]):
                words.pop(0)
            if words:
                self.commands += 1
                self.check_command(page, number, words)
        return continues

    def check_command(self, page, number, words):
        first = words[0]
        if first == "make":
            for word in words[1:]:
                if word.startswith("-") or ASSIGNMENT.match(word) or PLACEHOLDER.search(word):
                    continue
                if word not in self.tree.make_targets:
                    self.problem(page, number, "'make %s': no such make target" % word)
            return
        if first in INTERPRETERS and len(words) > 1 and not words[1].startswith("-"):
            if self.tree.top_level(words[1]) not in (None, "build"):
                self.check_path(page, number, words[1])
            return
        if PLACEHOLDER.search(first):
            return
        top = self.tree.top_level(first)
        if top == "build":
            name = first.rstrip("/").rsplit("/", 1)[-1]
            if not PLACEHOLDER.search(name) and name not in self.tree.programs:
                self.problem(page, number, "'%s': '%s' is not a program the CMake build makes"
                             % (first, name))
        elif top is not None:
            self.check_path(page, number, first)
        elif re.match(r"^bustle[A-Za-z0-9_-]*$", first) and first not in self.tree.programs:
            self.problem(page, number, "'%s': no such program (no add_executable, generated "
                         "script or installed script defines it)" % first)

    def check_path(self, page, number, word):
        if not PLACEHOLDER.search(word) and not os.path.exists(os.path.join(self.root, word)):
            self.problem(page, number, "'%s': no such file in the repository" % word)


def self_test():
    """Builds a small tree with three known faults; all three must be reported."""
    with tempfile.TemporaryDirectory(prefix="doc-links-self-test-") as root:
        os.makedirs(os.path.join(root, "docs"))
        os.makedirs(os.path.join(root, "tools"))
        with open(os.path.join(root, "Makefile"), "w") as f:
            f.write(".PHONY: all test\n\nall: build\n\ntest: all\n\t@echo test\n")
        with open(os.path.join(root, "tools", "run.sh"), "w") as f:
            f.write("#!/bin/sh\n")
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("# Title\n\n## Two words\n\nSee [the page](docs/page.md#a-heading).\n")
        with open(os.path.join(root, "docs", "page.md"), "w") as f:
            f.write("# A heading\n\n"
                    "Good: [up](../README.md#two-words), [here](#a-heading), "
                    "[web](https://example.com/x.md).\n"
                    "Broken: [gone](missing.md).\n"
                    "Bad anchor: [readme](../README.md#no-such-heading).\n\n"
                    "```sh\n"
                    "make test   # fine\n"
                    "make no-such-target\n"
                    "tools/run.sh --flag   # fine\n"
                    "```\n\n"
                    "```\n"
                    "[not a link](nowhere.md) inside a plain fence\n"
                    "```\n")
        problems = Checker(root).run()
    expected = [
        "docs/page.md:4: broken link 'missing.md' (no such file)",
        "docs/page.md:5: broken link '../README.md#no-such-heading' "
        "(no heading '#no-such-heading' in README.md)",
        "docs/page.md:9: 'make no-such-target': no such make target",
    ]
    for line in problems:
        print("self-test reported: " + line)
    if sorted(problems) != sorted(expected):
        for line in expected:
            if line not in problems:
                print("self-test FAILED: not reported: " + line, file=sys.stderr)
        for line in problems:
            if line not in expected:
                print("self-test FAILED: reported wrongly: " + line, file=sys.stderr)
        return 1
    print("doc_links self-test: the three faults were reported, nothing else")
    return 0


def main(argv):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    args = argv[1:]
    if args == ["--self-test"]:
        return self_test()
    if len(args) == 2 and args[0] == "--root":
        root = args[1]
    elif args:
        print("usage: doc_links.py [--root DIR] | --self-test", file=sys.stderr)
        return 2
    checker = Checker(root)
    problems = checker.run()
    for line in problems:
        print(line)
    if problems:
        print("doc_links: %d problem(s)" % len(problems), file=sys.stderr)
        return 1
    print("doc_links: %d page(s), %d link(s), %d command(s): ok"
          % (len(checker.pages()), checker.links, checker.commands))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
