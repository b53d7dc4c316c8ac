"""Batch mode determinism and configuration errors (bustle-server as a CLI)."""

import json
import re

import pytest

from conftest import SOURCE_DIR, run_cli

DIGEST_LINE = re.compile(r"^step (\d+) digest ([0-9a-f]{16})$")
DEFAULT_CITY = SOURCE_DIR / "configs" / "default.city.json"


def batch_digest(*args):
    p = run_cli("--steps", "1000", "--print-digest", *args)
    assert p.returncode == 0, f"exit {p.returncode}; stderr:\n{p.stderr}"
    lines = p.stdout.splitlines()
    assert len(lines) == 1, f"expected exactly one stdout line, got {lines!r}"
    m = DIGEST_LINE.match(lines[0])
    assert m, f"bad digest line {lines[0]!r}"
    assert int(m.group(1)) == 1000
    return lines[0]


def test_batch_digest_is_deterministic_and_seed_dependent():
    first = batch_digest("--seed", "7")
    assert batch_digest("--seed", "7") == first
    assert batch_digest("--seed", "8") != first


def test_default_config_file_matches_embedded_default():
    assert batch_digest("--seed", "7", "--config", str(DEFAULT_CITY)) == batch_digest("--seed", "7")


def test_batch_digest_matches_live_manual_server(start_server):
    """Same seed, no world commands: 1000 Step-driven steps reach the same digest."""
    expected = int(DIGEST_LINE.match(batch_digest("--seed", "7")).group(2), 16)
    srv = start_server("--clock", "manual", "--seed", "7")
    with srv.connect(timeout=15.0) as s:
        s.hello("it-determinism", role="operator")
        assert s.step(1000, timeout=15.0).applied_step == 1000
        st = s.stats()
        assert (st.step, st.digest) == (1000, expected), f"live {st.digest:016x} vs batch {expected:016x}"


def config_error(path, tmp_path=None):
    p = run_cli("--config", str(path), "--port", "0", timeout=10.0)
    assert p.returncode != 0, f"accepted bad config {path}; stdout {p.stdout!r}"
    assert "listening" not in p.stdout
    assert p.stderr.strip(), "no error message on stderr"
    return p.stderr


def test_missing_config_file_is_named():
    stderr = config_error("/nonexistent.json")
    assert "/nonexistent.json" in stderr, stderr


def test_invalid_json_names_file_and_line(tmp_path):
    bad = tmp_path / "broken.city.json"
    bad.write_text('{\n  "id": "broken",\n  "lanes": [,]\n}\n')
    stderr = config_error(bad)
    assert str(bad) in stderr, stderr
    assert re.search(r"line\s*3\b|:3:", stderr), f"line 3 not named:\n{stderr}"


def mutated_default(tmp_path, mutate, name="bad.city.json"):
    doc = json.loads(DEFAULT_CITY.read_text())
    mutate(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2))
    return path


@pytest.mark.parametrize("mutate, field_path", [
    (lambda d: d.update(step_us=-5), "step_us"),
    (lambda d: d["lanes"][1].update(successors=["no.such.lane"]), "lanes[1].successors[0]"),
    (lambda d: d["lanes"][2].update(kind="river"), "lanes[2].kind"),
    (lambda d: d["pedestrians"].update(count="many"), "pedestrians.count"),
    (lambda d: d["lanes"][3]["points"][1].__setitem__(0, 1.7e308), "lanes[3].points[1].x"),
], ids=["negative-step_us", "unknown-successor", "bad-lane-kind", "count-not-a-number",
        "point-outside-world-extent"])
def test_bad_field_is_named_by_path(tmp_path, mutate, field_path):
    path = mutated_default(tmp_path, mutate)
    stderr = config_error(path)
    assert field_path in stderr, f"{field_path!r} not named:\n{stderr}"
    assert str(path) in stderr, f"file not named:\n{stderr}"


def test_valid_config_copy_is_accepted(tmp_path):
    """Guards the mutation tests: the unmodified copy must load."""
    path = mutated_default(tmp_path, lambda d: None, name="ok.city.json")
    p = run_cli("--config", str(path), "--steps", "10", "--print-digest")
    assert p.returncode == 0, p.stderr
    assert DIGEST_LINE.match(p.stdout.strip())


def test_number_overflow_names_file_line_and_field(tmp_path):
    """1e999 used to end the server with nlohmann's out_of_range.406, naming no file or field."""
    text = DEFAULT_CITY.read_text()
    m = re.search(r'"speed_mps_limit": [0-9.]+', text)
    assert m, "the default city has no speed_mps_limit to replace"
    bad = tmp_path / "overflow.city.json"
    bad.write_text(text[:m.start()] + '"speed_mps_limit": 1e999' + text[m.end():])
    line = text.count("\n", 0, m.start()) + 1
    stderr = config_error(bad)
    assert "fatal" not in stderr, stderr
    assert str(bad) in stderr, stderr
    assert f"invalid JSON at line {line}," in stderr, stderr
    assert "lanes[0].speed_mps_limit" in stderr, stderr
    assert "1e999" in stderr, stderr


def test_endless_config_file_is_refused_at_the_size_limit():
    """--config /dev/zero used to read until memory ran out (bad_alloc, no file named)."""
    stderr = config_error("/dev/zero")
    assert "/dev/zero" in stderr, stderr
    assert "16777216 bytes" in stderr, stderr
    assert "fatal" not in stderr, stderr


def test_version_help_and_usage_exit_codes():
    """--version names the version and the protocol the server speaks; usage
    errors exit 2 naming the flag and the value; a scenario error exits 1."""
    v = run_cli("--version")
    assert v.returncode == 0, v.stderr
    assert re.fullmatch(r"bustle-server \d+\.\d+\.\d+ \(protocol 3\)\n", v.stdout), v.stdout
    h = run_cli("--help")
    assert h.returncode == 0 and "--config FILE" in h.stdout and "BUSTLE_PORT" in h.stdout
    for args, message in [
        (("--port", "70000"), "bustle-server: --port: expected an integer in [0, 65535], got '70000'"),
        (("--bogus",), "bustle-server: unknown option '--bogus' (see --help)"),
        (("--seed",), "bustle-server: --seed: missing value"),
        (("--print-digest=yes", "--steps", "1"), "bustle-server: --print-digest: takes no value"),
    ]:
        p = run_cli(*args)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        assert p.stderr.strip() == message, p.stderr
        assert p.stdout == ""
    env = run_cli("--steps", "1", env={"BUSTLE_SEED": "-1"})
    assert env.returncode == 2
    assert "environment BUSTLE_SEED: expected an unsigned 64-bit integer, got '-1'" in env.stderr
    assert run_cli("--config", "/nonexistent.json", "--steps", "1").returncode == 1
