"""bustle_client.motion against the C++ reference (proto/src/motion.cpp):
bustle_motion_vectors prints random predictions, lane samples and motion
record decodings with the reference's answers; every one must agree exactly
(bit for bit for the doubles). ctest sets BUSTLE_MOTION_VECTORS."""

import os
import subprocess

import pytest

from bustle_client.messages import MotionError
from bustle_client.motion import LanePolyline, MotionAnchor, predict_s_mm, read_motion, sample_lane

CASES = 3000


@pytest.fixture(scope="module")
def vectors():
    tool = os.environ.get("BUSTLE_MOTION_VECTORS")
    if not tool:
        pytest.skip("BUSTLE_MOTION_VECTORS is not set (the bustle_motion_vectors tool)")
    out = subprocess.run([tool, "20261201", str(CASES)], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    lines = out.splitlines()
    assert len(lines) == 3 * CASES
    return lines


def _rows(lines, kind):
    return [line[2:] for line in lines if line.startswith(kind + " ")]


def test_predictions_match_the_reference(vectors):
    wrong = []
    for row in _rows(vectors, "P"):
        s_mm, speed, anchor_step, step, step_us, length, want = map(int, row.split())
        got = predict_s_mm(MotionAnchor(0, s_mm, speed, anchor_step), step, step_us, length)
        if got != want:
            wrong.append((row, got))
    assert not wrong, wrong[:5]


def test_lane_samples_match_the_reference_bit_for_bit(vectors):
    wrong = []
    for row in _rows(vectors, "S"):
        fields = row.split()
        n = int(fields[0])
        values = [float.fromhex(x) for x in fields[1:]]
        points = [(values[2 * k], values[2 * k + 1]) for k in range(n)]
        s, want = values[2 * n], tuple(values[2 * n + 1:])
        got = tuple(sample_lane(LanePolyline(points, 1.5, 0), s))
        if got != want:
            wrong.append((row, got))
    assert not wrong, wrong[:5]


def test_record_decoding_and_errors_match_the_reference(vectors):
    wrong, errors = [], 0
    for row in _rows(vectors, "R"):
        data_hex, rest = row.split(" |", 1)
        want_error, records = rest.split("|", 1)
        try:
            got = [(r.index, int(r.lane is not None), r.lane or 0, r.s_mm, r.speed_mmps)
                   for r in read_motion(bytes.fromhex(data_hex))]
            got_error = ""
        except MotionError as exc:
            got, got_error = None, str(exc)
        errors += bool(want_error)
        want = None if want_error else [tuple(map(int, r.split(","))) for r in records.split()]
        if (got_error, got) != (want_error, want):
            wrong.append((row, got_error, got))
    assert not wrong, wrong[:5]
    assert 0 < errors < CASES, "the cases cover both valid and invalid bytes"
