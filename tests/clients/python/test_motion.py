"""Dead-reckoning arithmetic of protocol v2 (bustle_client.motion), checked
against values computed by hand from proto/src/motion.cpp: packed motion
records, the prediction with its operand clamps, lane sampling."""

import math

import pytest

from bustle_client.messages import MotionError, MotionRecord
from bustle_client.motion import (
    LanePolyline,
    MotionAnchor,
    predict_s_mm,
    read_motion,
    sample_lane,
    to_mm,
    write_motion,
)

U32 = 2**32 - 1

# ------------------------------------------------------------ motion records

RECORDS = [
    MotionRecord(3, None, 300, 1400),   # first record: the index itself; lane kept
    MotionRecord(130, 0, 0, 0),         # delta 127 (one byte); lane 0 -> code 1
    MotionRecord(U32, U32, U32, U32),   # largest values: five-byte varints, lane code 2^32
]
RECORDS_BYTES = bytes.fromhex(
    "03 00 ac02 f80a"                   # 3 | 0 | 300 = 0b10_0101100 | 1400 = 0b1010_1111000
    "7f 01 00 00"                       # 127 | 1 | 0 | 0
    "fdfeffff0f 8080808010 ffffffff0f ffffffff0f")  # 2^32-1-130 | 2^32 | 2^32-1 | 2^32-1


def test_records_encode_to_hand_computed_bytes_and_back():
    assert write_motion(RECORDS) == RECORDS_BYTES
    assert read_motion(RECORDS_BYTES) == RECORDS
    assert read_motion(b"") == [] and write_motion([]) == b""


def test_first_record_may_have_index_zero():
    assert read_motion(bytes([0, 0, 0, 0])) == [MotionRecord(0, None, 0, 0)]
    assert write_motion([MotionRecord(0, 7, 1, 2)]) == bytes([0, 8, 1, 2])


def test_varint_boundaries():
    # 127 is the largest one-byte value, 128 the smallest two-byte one, 16384 three bytes
    data = bytes([0x7F, 0x80, 0x01, 0x80, 0x80, 0x01, 0xFF, 0x7F])
    assert read_motion(data) == [MotionRecord(127, 127, 16384, 16383)]
    assert write_motion([MotionRecord(127, 127, 16384, 16383)]) == data


@pytest.mark.parametrize("data, offset, message", [
    # cut inside s_mm (its first byte has the continuation bit)
    (bytes([3, 0, 0xAC]), 2, "truncated or over-long varint (s_mm)"),
    # cut before speed_mmps
    (bytes([3, 0, 1]), 3, "truncated or over-long varint (speed_mmps)"),
    # cut before the lane code of a second record
    (bytes([3, 0, 1, 1, 2]), 5, "truncated or over-long varint (lane code)"),
    # ten bytes that all continue: longer than any 64-bit varint
    (bytes([0x80] * 10 + [0]), 0, "truncated or over-long varint (index delta)"),
    # well-formed varints over 32 bits
    (bytes([0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0]), 0, "index delta 4294967296 exceeds 32 bits"),
    (bytes([1, 0x81, 0x80, 0x80, 0x80, 0x10, 0, 0]), 1, "lane code 4294967297 exceeds 32 bits"),
    (bytes([1, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 0]), 2, "s_mm 4294967296 exceeds 32 bits"),
    # ten bytes whose last one carries bits past 64: they are dropped as in C++
    (bytes([1, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]), 3,
     "speed_mmps 18446744073709551615 exceeds 32 bits"),
    # a second record with index delta 0 (indices must strictly increase)
    (bytes([3, 0, 0, 0, 0, 0, 0, 0]), 4, "index delta 0 (indices must increase)"),
    # the running index leaves 32 bits
    (bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0, 0, 0, 1, 0, 0, 0]), 8, "index exceeds 32 bits"),
])
def test_bad_records_name_their_byte(data, offset, message):
    with pytest.raises(MotionError) as info:
        read_motion(data)
    assert str(info.value) == f"motion[byte {offset}]: {message}"
    assert info.value.offset == offset


def test_lane_code_two_to_the_32_is_the_largest_lane():
    (r,) = read_motion(bytes([1, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0]))
    assert r.lane == U32


def test_writer_refuses_indices_that_do_not_increase():
    with pytest.raises(ValueError, match="increase"):
        write_motion([MotionRecord(5, None, 0, 0), MotionRecord(5, None, 0, 0)])


# ---------------------------------------------------------------- prediction

STEP_US = 100_000


def test_prediction_advances_by_speed_times_elapsed_time_rounded_down():
    a = MotionAnchor(lane=0, s_mm=1000, speed_mmps=1400, step=10)
    assert predict_s_mm(a, 15, STEP_US, 100_000) == 1000 + 700
    assert predict_s_mm(a, 11, STEP_US, 100_000) == 1140
    # 1 mm/s for 0.999999 s is 0.999999 mm: rounds down to nothing
    assert predict_s_mm(MotionAnchor(0, 5, 1, 0), 1, 999_999, 100) == 5
    assert predict_s_mm(MotionAnchor(0, 5, 3, 0), 1, 999_999, 100) == 7  # 2.999997 mm


def test_prediction_stops_at_the_lane_end():
    a = MotionAnchor(0, 99_000, 5000, 0)
    assert predict_s_mm(a, 2, STEP_US, 100_000) == 100_000   # exactly at the end
    assert predict_s_mm(a, 10, STEP_US, 100_000) == 100_000  # 104_000 clamped
    assert predict_s_mm(a, 1, STEP_US, 100_000) == 99_500


def test_prediction_before_the_anchor_or_at_rest_is_the_anchor_clamped():
    a = MotionAnchor(0, 150_000, 1400, 10)
    assert predict_s_mm(a, 10, STEP_US, 100_000) == 100_000
    assert predict_s_mm(a, 3, STEP_US, 200_000) == 150_000
    assert predict_s_mm(MotionAnchor(0, 42, 0, 0), 10**9, STEP_US, 100) == 42


def test_prediction_clamps_its_operands():
    big_lane = U32
    # speed over 2^20 mm/s counts as 2^20
    assert predict_s_mm(MotionAnchor(0, 0, U32, 0), 1, 1_000_000, big_lane) == 2**20
    # more than 2^22 steps count as 2^22
    assert predict_s_mm(MotionAnchor(0, 0, 1000, 0), 2**40, 1_000_000, big_lane) == 1000 * 2**22
    # a step over 2^20 us counts as 2^20: 1000 mm/s x 1.048576 s
    assert predict_s_mm(MotionAnchor(0, 0, 1000, 0), 1, U32, big_lane) == 1048
    # all three at their bounds: 2^62 / 1e6 mm, then the lane length
    assert predict_s_mm(MotionAnchor(0, 0, 2**20, 0), 2**22, 2**20, big_lane) == U32
    assert predict_s_mm(MotionAnchor(0, 7, 2**20, 0), 2**22, 2**20, 2**62) == 7 + 2**62 // 10**6


def test_to_mm_rounds_half_away_from_zero_and_clamps():
    assert to_mm(0.0025) == 3  # 2.5 mm: std::round gives 3 (Python's round() would give 2)
    assert to_mm(0.0015) == 2
    assert to_mm(1.0004) == 1000
    assert to_mm(-1.0) == 0 and to_mm(float("nan")) == 0
    assert to_mm(5e6) == U32
    assert to_mm(100.0) == 100_000


# ------------------------------------------------------------- lane sampling


def test_sampling_a_multi_segment_lane():
    lane = LanePolyline([(0.0, 0.0), (3.0, 4.0), (3.0, 10.0)], elevation_m=1.25)
    assert lane.cumulative_m == [0.0, 5.0, 11.0] and lane.length_m == 11.0
    assert lane.length_mm == 11_000
    up = math.atan2(4.0, 3.0)
    assert sample_lane(lane, 2.5) == (1.5, 2.0, 1.25, up)
    # exactly at a joint: the first segment whose end exceeds s, i.e. the next one
    assert sample_lane(lane, 5.0) == (3.0, 4.0, 1.25, math.pi / 2)
    assert sample_lane(lane, 8.0) == (3.0, 7.0, 1.25, math.pi / 2)
    # at or past the end: the last point, the last segment's heading
    assert sample_lane(lane, 11.0) == (3.0, 10.0, 1.25, math.pi / 2)
    assert sample_lane(lane, 20.0) == (3.0, 10.0, 1.25, math.pi / 2)
    # before the start: the first point
    assert sample_lane(lane, -1.0) == (0.0, 0.0, 1.25, up)


def test_sampling_skips_zero_length_segments():
    # a degenerate first segment: s = 0 lies on the first real segment
    lane = LanePolyline([(0.0, 0.0), (0.0, 0.0), (10.0, 0.0)])
    assert lane.cumulative_m == [0.0, 0.0, 10.0]
    assert sample_lane(lane, 0.0) == (0.0, 0.0, 0.0, 0.0)
    assert sample_lane(lane, 4.0) == (4.0, 0.0, 0.0, 0.0)
    # a degenerate middle segment: at the joint, the segment after it
    lane = LanePolyline([(0.0, 0.0), (5.0, 0.0), (5.0, 0.0), (5.0, 5.0)])
    assert sample_lane(lane, 5.0) == (5.0, 0.0, 0.0, math.pi / 2)
    # a degenerate last segment: the end keeps the heading of the last real one
    lane = LanePolyline([(0.0, 0.0), (-10.0, 0.0), (-10.0, 0.0)])
    assert sample_lane(lane, 10.0) == (-10.0, 0.0, 0.0, math.pi)
    assert sample_lane(lane, 99.0) == (-10.0, 0.0, 0.0, math.pi)


def test_sampling_one_or_no_point():
    assert sample_lane(LanePolyline([(7.0, 8.0)], 2.0), 3.0) == (7.0, 8.0, 2.0, 0.0)
    assert sample_lane(LanePolyline([], 2.0), 3.0) == (0.0, 0.0, 2.0, 0.0)


def test_sampling_interpolates_a_diagonal():
    lane = LanePolyline([(1.0, 1.0), (4.0, 5.0)])
    x, y, _, heading = sample_lane(lane, 2.0)  # 2/5 of the way
    assert (x, y) == (1.0 + 3.0 * 0.4, 1.0 + 4.0 * 0.4)
    assert heading == math.atan2(4.0, 3.0)


def test_polyline_keeps_the_welcome_length_mm():
    # the prediction stops at Welcome's length_mm even where it differs from the points
    assert LanePolyline([(0.0, 0.0), (10.0, 0.0)], 0.0, 9_999).length_mm == 9_999


def test_lane_lengths_are_the_square_root_of_the_sum_of_squares():
    # a segment where hypot implementations disagree by one ulp (glibc vs the
    # correctly rounded one): lane lengths use sqrt(dx*dx + dy*dy) instead,
    # which IEEE 754 rounds identically on every platform
    dx, dy = float.fromhex("-0x1.641190a1bc049p+12"), float.fromhex("-0x1.d28df188422a7p+10")
    assert LanePolyline([(0.0, 0.0), (dx, dy)]).length_m == math.sqrt(dx * dx + dy * dy)
