"""What the viewer draws: the city's geometry and one frame of entities.

Both are plain JSON-ready dicts, so the same data feeds the static renderer
(:mod:`bustle_view.render`) and the live page (:mod:`bustle_view.live`).

- ``geometry_from_welcome(welcome, scenario=None)``: lanes (kind, polyline,
  elevation), zones (from the scenario file when one is known: the Welcome
  does not carry zones), signals (position of the stop line), garages
  (entrance), lane chains (where distant dots are spread).
- ``frame_from_mirror(mirror, ...)``: every entity the mirror holds, placed
  at the mirror's step from its lane-relative anchor, with its tier,
  representation hint and control policy; the signal phases and dot counts.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Optional

from bustle_client import (
    ControlPolicy,
    EntityKind,
    LaneKind,
    RepresentationHint,
    SignalPhase,
    SimTier,
)
from bustle_client.motion import LanePolyline, sample_lane

TIERS = [t.name for t in SimTier]
HINTS = [h.name for h in RepresentationHint]
POLICIES = [p.name for p in ControlPolicy]
PHASES = [p.name for p in SignalPhase]
LANE_KINDS = [k.name for k in LaneKind]

#: Entity fields of a frame, in the order of each entity's list (compact JSON).
ENTITY_FIELDS = ["index", "generation", "kind", "tier", "hint", "policy", "x", "y", "heading",
                 "retiring"]


def _name(enum_cls, value) -> str:
    try:
        return enum_cls(value).name
    except ValueError:
        return str(int(value))


def load_scenario(path) -> dict:
    """A scenario file (JSON) as a dict."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def scenario_from_recording(path) -> Optional[dict]:
    """The scenario a recording was made with (its initial keyframe's
    ``scenario_json``), or None when the file has none."""
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    con = sqlite3.connect(uri, uri=True)
    try:
        row = con.execute("SELECT scenario_json FROM snapshots ORDER BY step, id LIMIT 1").fetchone()
    finally:
        con.close()
    return json.loads(row[0]) if row else None


def find_shipped_scenario(scenario_id: str, search_dirs) -> Optional[dict]:
    """The scenario file among ``search_dirs`` (``*.json``) whose ``id`` is
    ``scenario_id``, or None."""
    for d in search_dirs:
        d = Path(d)
        if not d.is_dir():
            continue
        for p in sorted(d.glob("*.json")):
            try:
                data = load_scenario(p)
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and data.get("id") == scenario_id:
                return data
    return None


def _point_at(points, alpha: float):
    """(x, y) at ``alpha`` (0..1) of a polyline's length (the client's lane sampling)."""
    lane = LanePolyline(points)
    p = sample_lane(lane, min(max(alpha, 0.0), 1.0) * lane.length_m)
    return p.x_m, p.y_m


def hull(points):
    """Convex hull (monotone chain) of 2-D points."""
    pts = sorted(set(map(tuple, points)))
    if len(pts) <= 2:
        return pts

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return lower[:-1] + upper[:-1]


def geometry_from_welcome(welcome, scenario: Optional[dict] = None) -> dict:
    """JSON-ready geometry of the city the Welcome describes."""
    lanes = []
    by_id = {}
    for lane in welcome.lanes:
        by_id[lane.id] = lane.index
        lanes.append({
            "index": lane.index,
            "id": lane.id,
            "kind": _name(LaneKind, lane.kind),
            "points": [[round(x, 3), round(y, 3)] for x, y in lane.points],
            "elevation": round(float(lane.elevation_m), 3),
            "length": round(float(lane.length_m), 3),
        })
    zones = []
    if scenario:
        for z in scenario.get("zones", []) or []:
            idx = [by_id[l] for l in z.get("lanes", []) if l in by_id]
            pts = [tuple(p) for i in idx for p in welcome.lanes[i].points]
            zones.append({"id": z.get("id", "?"), "lanes": idx, "capacity": z.get("capacity"),
                          "hull": [[round(x, 3), round(y, 3)] for x, y in hull(pts)]})
    signals = []
    for i, s in enumerate(welcome.signals):
        pts = welcome.lanes[s.lane].points
        x, y = _point_at(pts, s.stop_alpha)
        signals.append({"index": i, "id": s.id, "lane": s.lane, "x": round(x, 3), "y": round(y, 3)})
    garages = []
    for g in welcome.garages:
        x, y = welcome.lanes[g.entrance_lane].points[0]
        garages.append({"id": g.id, "lane": g.entrance_lane, "x": round(x, 3), "y": round(y, 3)})
    chains = [{"index": i, "lanes": list(c.lanes), "pedestrian": bool(c.pedestrian),
               "length": round(float(c.length_m), 3)} for i, c in enumerate(welcome.chains)]
    xs = [p[0] for l in lanes for p in l["points"]] or [0.0]
    ys = [p[1] for l in lanes for p in l["points"]] or [0.0]
    return {
        "scenario_id": welcome.scenario_id,
        "scenario_name": (scenario or {}).get("name", ""),
        "step_us": welcome.step_us,
        "lanes": lanes,
        "zones": zones,
        "signals": signals,
        "garages": garages,
        "chains": chains,
        "bounds": [min(xs), min(ys), max(xs), max(ys)],
        "tiers": TIERS,
        "hints": HINTS,
        "policies": POLICIES,
        "phases": PHASES,
        "entity_fields": ENTITY_FIELDS,
    }


def frame_from_mirror(mirror, step: Optional[int] = None) -> dict:
    """One frame: every entity of ``mirror`` placed at ``step`` (default: the
    mirror's), tier/hint/policy counts, signal phases and dot counts."""
    step = mirror.step if step is None else step
    entities = []
    tiers = {t: 0 for t in TIERS}
    kinds = {"Pedestrian": 0, "Vehicle": 0}
    for eid, e in sorted(mirror.at(step).items()):
        tier = _name(SimTier, e.sim_tier)
        kind = _name(EntityKind, e.kind)
        tiers[tier] = tiers.get(tier, 0) + 1
        kinds[kind] = kinds.get(kind, 0) + 1
        entities.append([eid.index, eid.generation, kind, tier,
                         _name(RepresentationHint, e.representation),
                         _name(ControlPolicy, e.policy),
                         round(e.x_m, 3), round(e.y_m, 3), round(e.heading_rad, 3),
                         bool(e.retiring)])
    return {
        "step": step,
        "sim_time_us": step * mirror.step_us,
        "digest": f"{mirror.digest:016x}" if mirror.digest is not None else None,
        "entities": entities,
        "tiers": tiers,
        "kinds": kinds,
        "signals": {str(i): _name(SignalPhase, p) for i, p in sorted(mirror.signals.items())},
        "dots": {str(c): n for c, n in sorted(mirror.dots.items())},
        "dots_total": sum(mirror.dots.values()),
        "interest_truncated": mirror.interest_truncated,
    }


def entity_dicts(frame: dict) -> list:
    """The frame's entities as dicts (ENTITY_FIELDS keys)."""
    return [dict(zip(ENTITY_FIELDS, e)) for e in frame["entities"]]


def chain_polyline(geometry: dict, chain: dict) -> list:
    """The points of a lane chain, lane after lane."""
    lanes = geometry["lanes"]
    pts = []
    for li in chain["lanes"]:
        for p in lanes[li]["points"]:
            if not pts or pts[-1] != p:
                pts.append(p)
    return pts


def spread_along(points, count: int) -> list:
    """``count`` points evenly spread along a polyline (for anonymous dots)."""
    if count <= 0 or len(points) < 2:
        return []
    out = []
    for k in range(count):
        out.append(_point_at(points, (k + 0.5) / count))
    return out
