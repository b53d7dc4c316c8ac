"""tools/check/function_lengths.py on small C++ files written here."""
import os
import subprocess
import sys

SCRIPT = os.environ.get("BUSTLE_FUNCTION_LENGTHS") or os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "tools", "check", "function_lengths.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True, text=True, timeout=30)


def function(name, body_lines, qualifier="void"):
    body = "".join(f"  x += {k};  // a brace in a comment: {{\n" for k in range(body_lines))
    return f"{qualifier} {name}(int& x) {{\n{body}}}\n"


def write(tmp_path, text, name="a.cpp"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_counts_lines_and_ignores_braces_in_comments_strings_and_nested_blocks(tmp_path):
    src = ("namespace n {\nstruct S {\n  int f() const { return 1; }\n};\n"
           + function("long_one", 20)
           + 'const char* s() {\n  return "}}}";\n}\n'
           + "template <class T>\nT g(T v) {\n  if (v) {\n    for (;;) {\n      break;\n    }\n  }\n  return v;\n}\n"
           + "}  // namespace n\n")
    p = write(tmp_path, src)
    r = run("--report", 5, p)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["22", f"{p}:5", "long_one"], r.stdout
    assert lines[1].split() == ["9", f"{p}:30", "g"], r.stdout  # the template<class T> is no class scope
    assert lines[-1] == "2 of 4 functions over 5 lines"


def test_fails_over_the_limit_naming_the_function(tmp_path):
    p = write(tmp_path, function("Big::step", 30))
    r = run("--report", 10, "--fail-over", 25, p)
    assert r.returncode == 1
    assert "Big::step is 32 lines, over 25" in r.stdout


def test_allow_list_permits_listed_length_and_polices_growth_and_stale_entries(tmp_path):
    p = write(tmp_path, function("Big::step", 30) + function("small", 3))
    allow = tmp_path / "allow.txt"
    allow.write_text("# known\nBig::step 32\n")
    assert run("--fail-over", 25, "--allow", allow, p).returncode == 0
    allow.write_text("Big::step 31\n")  # grew past its entry
    r = run("--fail-over", 25, "--allow", allow, p)
    assert r.returncode == 1 and "(allowed 31)" in r.stdout
    allow.write_text("Big::step 32\nsmall 50\n")  # small is not long: a stale entry
    r = run("--fail-over", 25, "--allow", allow, p)
    assert r.returncode == 1 and "small is no longer over 25 lines; remove its entry" in r.stdout


def test_bad_input_is_named(tmp_path):
    r = run(tmp_path / "missing.cpp")
    assert r.returncode == 2 and "no such file or directory" in r.stderr
    allow = tmp_path / "allow.txt"
    allow.write_text("Big::step many\n")
    r = run("--fail-over", 25, "--allow", allow, write(tmp_path, function("f", 1)))
    assert r.returncode == 2 and "allow.txt:1: expected 'NAME LINES'" in r.stderr
