"""Lane-relative, dead-reckoned motion (protocol v2, server.fbs Delta).

A Python copy of proto/include/bustle/proto/motion.hpp (proto/src/motion.cpp):
the server keeps, per client, the same prediction a client makes from an
entity's anchor, and sends a motion record only when that prediction would
leave the subscription's tolerance. A client therefore has to compute exactly
what the reference computes:

- :func:`predict_s_mm`: integer arithmetic on Python ints with the same
  operand clamps as the unsigned 64-bit C++ code (whose product cannot
  overflow with those clamps, so unbounded ints give the same result);
- :func:`read_motion` / :func:`write_motion`: the packed varint records of
  Delta.motion, with the same validation and messages (naming the byte offset);
- :class:`LanePolyline` / :func:`sample_lane`: cumulative lengths as
  ``sqrt(dx*dx + dy*dy)`` (:func:`segment_length`), segment choice by
  ``upper_bound`` (``bisect_right``), the same walk back over zero-length
  segments, heading by ``math.atan2``.

Why not ``hypot``: its rounding differs between C libraries (glibc's is not
correctly rounded, CPython's ``math.hypot`` is; they differ by one ulp for about
1 in 200 random segments), so the server and every client use the square root
of the sum of squares, which IEEE 754 rounds the same everywhere.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import List, NamedTuple, Optional, Sequence

from .messages import MotionError, MotionRecord

#: Operand bounds of the prediction (kMotion*Max in motion.hpp).
SPEED_MMPS_MAX = 1 << 20  # ~1 km/s
GAP_STEPS_MAX = 1 << 22
STEP_US_MAX = 1 << 20  # steps of at most ~1.05 s

def segment_length(dx: float, dy: float) -> float:
    """sqrt(dx*dx + dy*dy): every operation correctly rounded in IEEE 754, so
    every client on every platform gets the server's lane lengths bit for bit
    (the server compiles with -ffp-contract=off, so nothing is fused)."""
    return math.sqrt(dx * dx + dy * dy)


_U32_MAX = 0xFFFFFFFF
_FIELDS = ("index delta", "lane code", "s_mm", "speed_mmps")


class MotionAnchor(NamedTuple):
    """Where an entity was at ``step``: lane index, distance along it (mm), speed (mm/s)."""

    lane: int
    s_mm: int
    speed_mmps: int
    step: int


def predict_s_mm(anchor: MotionAnchor, step: int, step_us: int, lane_length_mm: int) -> int:
    """The predicted distance along the anchor's lane at ``step``:
    ``min(lane_length_mm, s_mm + speed * gap * step_us // 1_000_000)`` with
    speed, gap (``step - anchor.step``) and step_us clamped to 2^20, 2^22 and
    2^20. A step at or before the anchor's (or speed 0) gives the anchor's
    distance, clamped to the lane length."""
    if step <= anchor.step or anchor.speed_mmps == 0:
        return min(anchor.s_mm, lane_length_mm)
    gap = min(step - anchor.step, GAP_STEPS_MAX)
    speed = min(anchor.speed_mmps, SPEED_MMPS_MAX)
    us = min(step_us, STEP_US_MAX)
    return min(anchor.s_mm + speed * gap * us // 1_000_000, lane_length_mm)


def to_mm(metres: float) -> int:
    """Metres -> millimetres, rounded half away from zero like std::round,
    clamped to [0, 2^32 - 1] (NaN -> 0)."""
    mm = metres * 1000.0
    if not mm > 0.0:  # also NaN
        return 0
    whole = math.floor(mm)
    if mm - whole >= 0.5:  # exact for doubles; floor(mm + 0.5) can round up wrongly
        whole += 1
    mm = whole
    return _U32_MAX if mm >= _U32_MAX else int(mm)


def _varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_motion(records: Sequence[MotionRecord]) -> bytes:
    """Pack records (indices strictly increasing) as Delta.motion bytes: varint
    index delta, varint lane code (0: unchanged; n: lane n - 1), s_mm, speed."""
    out = bytearray()
    last: Optional[int] = None
    for r in records:
        if last is not None and r.index <= last:
            raise ValueError(f"motion record indices must increase: {r.index} after {last}")
        _varint(out, r.index if last is None else r.index - last)
        _varint(out, 0 if r.lane is None else r.lane + 1)
        _varint(out, r.s_mm)
        _varint(out, r.speed_mmps)
        last = r.index
    return bytes(out)


def _read_varint(data, at: int):
    """(value, next offset) of one unsigned LEB128 value of at most 10 bytes,
    or None when truncated or longer (like read_varint in motion.cpp)."""
    value = 0
    for shift in range(0, 64, 7):
        if at >= len(data):
            return None
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, at  # the C++ shift drops bits past 64
    return None


def read_motion(data) -> List[MotionRecord]:
    """Decode Delta.motion. Raises MotionError naming the byte offset for a
    truncated or over-long varint, a value over 32 bits or an index that does
    not increase (the messages of read_motion in motion.cpp)."""
    out: List[MotionRecord] = []
    at = 0
    index = 0
    n = len(data)
    while at < n:
        record_at = at
        v = [0, 0, 0, 0]
        for f in range(4):
            field_at = at
            got = _read_varint(data, at)
            if got is None:
                raise MotionError(
                    f"motion[byte {field_at}]: truncated or over-long varint ({_FIELDS[f]})",
                    field_at)
            v[f], at = got
            limit = _U32_MAX + 1 if f == 1 else _U32_MAX
            if v[f] > limit:
                raise MotionError(
                    f"motion[byte {field_at}]: {_FIELDS[f]} {v[f]} exceeds 32 bits", field_at)
        if out and v[0] == 0:
            raise MotionError(
                f"motion[byte {record_at}]: index delta 0 (indices must increase)", record_at)
        index = index + v[0] if out else v[0]
        if index > _U32_MAX:
            raise MotionError(f"motion[byte {record_at}]: index exceeds 32 bits", record_at)
        out.append(MotionRecord(index, v[1] - 1 if v[1] else None, v[2], v[3]))
    return out


class LanePose(NamedTuple):
    x_m: float
    y_m: float
    z_m: float
    heading_rad: float  # 0 = +x, counter-clockwise


class LanePolyline:
    """A lane prepared for sampling exactly as the server does: points and
    cumulative lengths (sqrt of the sum of squares), elevation and length_mm (Welcome's:
    where prediction stops)."""

    __slots__ = ("xs", "ys", "cumulative_m", "length_m", "elevation_m", "length_mm")

    def __init__(self, points, elevation_m: float = 0.0, length_mm: Optional[int] = None):
        self.xs = [float(p[0]) for p in points]
        self.ys = [float(p[1]) for p in points]
        cum = [0.0] * len(self.xs)
        for k in range(1, len(cum)):
            cum[k] = cum[k - 1] + segment_length(self.xs[k] - self.xs[k - 1], self.ys[k] - self.ys[k - 1])
        self.cumulative_m = cum
        self.length_m = cum[-1] if cum else 0.0
        self.elevation_m = float(elevation_m)
        self.length_mm = to_mm(self.length_m) if length_mm is None else int(length_mm)

    @classmethod
    def from_lane(cls, lane) -> "LanePolyline":
        """From a decoded Welcome lane (messages.Lane)."""
        return cls(lane.points, lane.elevation_m, lane.length_mm)


def sample_lane(lane: LanePolyline, s_m: float) -> LanePose:
    """The pose at ``s_m`` metres along the lane (clamped to [0, length]): the
    first segment whose cumulative end exceeds s (the last non-degenerate one
    at or past the end), linear interpolation, the segment's heading."""
    z = lane.elevation_m
    n = len(lane.xs)
    if n == 0:
        return LanePose(0.0, 0.0, z, 0.0)
    if n == 1:
        return LanePose(lane.xs[0], lane.ys[0], z, 0.0)
    cum = lane.cumulative_m
    s = min(max(s_m, 0.0), lane.length_m)
    k = bisect_right(cum, s)
    if k >= n:
        k = n - 1
    if k == 0:
        k = 1
    while k > 1 and cum[k] == cum[k - 1]:
        k -= 1
    seg = cum[k] - cum[k - 1]
    t = (s - cum[k - 1]) / seg if seg > 0.0 else 0.0
    ax, ay, bx, by = lane.xs[k - 1], lane.ys[k - 1], lane.xs[k], lane.ys[k]
    return LanePose(ax + (bx - ax) * t, ay + (by - ay) * t, z, math.atan2(by - ay, bx - ax))


__all__ = [
    "SPEED_MMPS_MAX", "GAP_STEPS_MAX", "STEP_US_MAX", "MotionAnchor", "MotionRecord",
    "MotionError", "predict_s_mm", "to_mm", "write_motion", "read_motion", "LanePose",
    "LanePolyline", "sample_lane",
]
