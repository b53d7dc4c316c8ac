"""Static pictures of one frame: PNG and SVG through matplotlib (Agg).

``render(geometry, frame, outputs, color_by="tier")`` draws lanes (by kind;
an elevated lane gets a dark casing and its height written beside it),
zones (the hull of their lanes), signals coloured by phase, garages,
entities coloured by simulation tier, representation hint or control policy
(pedestrians as discs, vehicles as squares; fading ones half transparent),
and distant crowd dots spread along their lane chains; the observers
(``frame["observers"]``: a cross each, and a dashed circle of its interest
radius when it has one, so a picture shows why an entity is only a dot);
axes in metres with a scale bar; a legend and a title (scenario, step,
counts). It returns where every entity and observer landed in the picture
(pixel coordinates of the PNG), which the tests use.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.fonttype"] = "none"  # SVG text stays text (searchable, small)
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Circle, Patch, Polygon  # noqa: E402
from mpl_toolkits.axes_grid1.anchored_artists import AnchoredSizeBar  # noqa: E402

from .scene import chain_polyline, entity_dicts, spread_along  # noqa: E402

# Entity colours: far apart from each other and from the greys of the lanes,
# so a picture can be checked pixel by pixel.
TIER_COLORS = {"Full": "#e6194b", "Simulated": "#4363d8", "Coarse": "#3cb44b"}
HINT_COLORS = {"Actor": "#f032e6", "Instanced": "#42d4f4", "Marker": "#9a6324", "None_": "#000000"}
POLICY_COLORS = {"RouteFollow": "#469990", "LaneFollow": "#bfef45", "Yielding": "#ffe119",
                 "WaitingAtSignal": "#f58231", "Parked": "#808000", "Manual": "#000075",
                 "DespawnPending": "#911eb4"}
PHASE_COLORS = {"Open": "#2ca02c", "Yield": "#ffbf00", "Closed": "#d62728"}
LANE_STYLE = {  # kind -> (colour, width in points)
    "Road": ("#5a5a5a", 9.0),
    "Sidewalk": ("#b4b4b4", 4.0),
    "Crossing": ("#dcdcdc", 5.0),
}
ZONE_COLORS = ["#fabed4", "#ffd8b1", "#fffac8", "#aaffc3", "#dcbeff", "#a9d8ff"]
DOT_COLOR = "#707070"
GARAGE_COLOR = "#1f1f7a"
COLOR_BY = {"tier": ("tier", TIER_COLORS), "hint": ("hint", HINT_COLORS),
            "policy": ("policy", POLICY_COLORS)}
MAX_DOTS_PER_CHAIN = 400
OBSERVER_COLOR = "#111111"


def scale_bar_m(extent_m: float) -> float:
    """A round length for the scale bar: 1, 2 or 5 times a power of ten, at
    most a fifth of the drawn extent."""
    target = max(extent_m / 5.0, 1e-3)
    power = 10.0 ** math.floor(math.log10(target))
    return max(m * power for m in (1.0, 2.0, 5.0) if m * power <= target)


def page_style() -> dict:
    """The colours above, for the live page (it draws with the same ones)."""
    return {"colors": {mode: dict(colors) for mode, (_field, colors) in COLOR_BY.items()},
            "lanes": {kind: list(style) for kind, style in LANE_STYLE.items()},
            "phases": PHASE_COLORS, "zones": ZONE_COLORS, "dot": DOT_COLOR,
            "garage": GARAGE_COLOR}


def _title(geometry, frame, color_by):
    k = frame["kinds"]
    t = frame["tiers"]
    return (f"{geometry['scenario_id']} — step {frame['step']} "
            f"({frame['sim_time_us'] / 1e6:.1f} s)\n"
            f"{k.get('Pedestrian', 0)} pedestrians, {k.get('Vehicle', 0)} vehicles · "
            f"Full {t.get('Full', 0)} / Simulated {t.get('Simulated', 0)} / "
            f"Coarse {t.get('Coarse', 0)} · {frame['dots_total']} dots · colour by {color_by}")


def render(geometry: dict, frame: dict, outputs, color_by: str = "tier",
           size=(1000, 620), dpi: int = 100) -> dict:
    """Draw ``frame`` on ``geometry`` and save it to each of ``outputs``
    (format from the suffix: .png or .svg). Returns {"size": [w, h],
    "entities": [{..., "px": x, "py": y, "color": "#rrggbb"}], "signals":
    [...]} with pixel coordinates of the PNG (origin top left)."""
    if color_by not in COLOR_BY:
        raise ValueError(f"color_by: expected one of {', '.join(COLOR_BY)}, got {color_by!r}")
    field, colors = COLOR_BY[color_by]
    w, h = size
    fig = plt.figure(figsize=(w / dpi, h / dpi), dpi=dpi)
    ax = fig.add_axes([0.055, 0.075, 0.675, 0.785])  # room for the axis labels
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_facecolor("#f7f7f2")
    ax.tick_params(labelsize=7)
    ax.set_xlabel("x (m)", fontsize=7, labelpad=1)
    ax.set_ylabel("y (m)", fontsize=7, labelpad=1)
    x0, y0, x1, y1 = geometry["bounds"]
    pad = max(8.0, 0.06 * max(x1 - x0, y1 - y0))
    ax.set_xlim(x0 - pad, x1 + pad)
    ax.set_ylim(y0 - pad, y1 + pad)
    bar_m = scale_bar_m(x1 - x0 + 2 * pad)
    ax.add_artist(AnchoredSizeBar(ax.transData, bar_m, f"{bar_m:g} m", "lower right", pad=0.4,
                                  color="#202020", frameon=False, size_vertical=0,
                                  fontproperties={"size": 7}))

    lanes = geometry["lanes"]
    legend = []
    # Zones under everything.
    for i, z in enumerate(geometry["zones"]):
        hull = z["hull"]
        if len(hull) < 3:
            continue
        c = ZONE_COLORS[i % len(ZONE_COLORS)]
        ax.add_patch(Polygon(hull, closed=True, facecolor=c, edgecolor=c, linewidth=18,
                             alpha=0.55, joinstyle="round", zorder=1))
        cx = sum(p[0] for p in hull) / len(hull)
        cy = sum(p[1] for p in hull) / len(hull)
        ax.text(cx, cy, z["id"], ha="center", va="center", fontsize=8, color="#555555", zorder=2)
    if geometry["zones"]:
        legend.append(Patch(facecolor=ZONE_COLORS[0], alpha=0.55, label="zone"))

    # Lanes by kind, elevated ones on top with a casing.
    kinds_seen = set()
    for lane in sorted(lanes, key=lambda l: (l["elevation"], l["kind"] != "Road")):
        color, width = LANE_STYLE.get(lane["kind"], ("#999999", 3.0))
        xs = [p[0] for p in lane["points"]]
        ys = [p[1] for p in lane["points"]]
        z = 3 + lane["elevation"] * 0.01
        if lane["elevation"] != 0:
            ax.plot(xs, ys, color="#202020", linewidth=width + 3, solid_capstyle="butt", zorder=z)
            mx, my = xs[len(xs) // 2], ys[len(ys) // 2]
            ax.text(mx, my, f" {lane['elevation']:+g} m", fontsize=7, color="#202020", zorder=9)
        ax.plot(xs, ys, color=color, linewidth=width, solid_capstyle="butt", zorder=z + 0.001)
        if lane["kind"] == "Crossing":
            ax.plot(xs, ys, color="#8c8c8c", linewidth=width, linestyle=(0, (1, 1)),
                    solid_capstyle="butt", zorder=z + 0.002)
        if lane["kind"] == "Road" and len(xs) >= 2:  # direction of travel
            i = len(xs) // 2 - 1 if len(xs) > 2 else 0
            mx, my = (xs[i] + xs[i + 1]) / 2, (ys[i] + ys[i + 1]) / 2
            ang = math.atan2(ys[i + 1] - ys[i], xs[i + 1] - xs[i])
            ax.annotate("", xy=(mx + 2 * math.cos(ang), my + 2 * math.sin(ang)), xytext=(mx, my),
                        arrowprops=dict(arrowstyle="->", color="#f0f0f0", lw=1), zorder=z + 0.003)
        kinds_seen.add(lane["kind"])
    for kind in ("Road", "Sidewalk", "Crossing"):
        if kind in kinds_seen:
            color, width = LANE_STYLE[kind]
            legend.append(Line2D([], [], color=color, linewidth=min(width, 6),
                                 label=f"{kind.lower()} lane"))
    if any(l["elevation"] != 0 for l in lanes):
        legend.append(Line2D([], [], color="#202020", linewidth=6, label="elevated lane"))

    # Distant crowd dots: anonymous counts spread along their chains.
    ndots = 0
    for ci, count in frame["dots"].items():
        ci = int(ci)
        if ci >= len(geometry["chains"]) or count <= 0:
            continue
        pts = spread_along(chain_polyline(geometry, geometry["chains"][ci]),
                           min(count, MAX_DOTS_PER_CHAIN))
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=6, c=DOT_COLOR, marker="o",
                       linewidths=0, zorder=6)
            ndots += count
    if ndots:
        legend.append(Line2D([], [], marker="o", linestyle="", markersize=3, color=DOT_COLOR,
                             label=f"distant crowd ({ndots} dots)"))

    # Garages and signals.
    for g in geometry["garages"]:
        ax.scatter([g["x"]], [g["y"]], s=140, marker="s", facecolors="none",
                   edgecolors=GARAGE_COLOR, linewidths=2, zorder=7)
        ax.text(g["x"], g["y"] - 4, g["id"], ha="center", va="top", fontsize=7, color=GARAGE_COLOR,
                zorder=9)
    if geometry["garages"]:
        legend.append(Line2D([], [], marker="s", linestyle="", markersize=8, markerfacecolor="none",
                             markeredgecolor=GARAGE_COLOR, markeredgewidth=2, label="garage"))
    for s in geometry["signals"]:
        phase = frame["signals"].get(str(s["index"]), "Open")
        ax.scatter([s["x"]], [s["y"]], s=110, marker="D", c=PHASE_COLORS.get(phase, "#999999"),
                   edgecolors="#000000", linewidths=1, zorder=8.5)  # over a waiting vehicle
        ax.text(s["x"] + 2.5, s["y"] + 2.5, f"{s['id']} {phase}", fontsize=7, zorder=9)
    if geometry["signals"]:
        for phase, c in PHASE_COLORS.items():
            legend.append(Line2D([], [], marker="D", linestyle="", markersize=6, color=c,
                                 markeredgecolor="#000000", label=f"signal {phase.lower()}"))

    # Entities.
    ents = entity_dicts(frame)
    used = {}
    for kind, marker, area in (("Pedestrian", "o", 30), ("Vehicle", "s", 70)):
        group = [e for e in ents if e["kind"] == kind]
        if not group:
            continue
        for retiring in (False, True):
            sub = [e for e in group if e["retiring"] == retiring]
            if not sub:
                continue
            cs = [colors.get(e[field], "#000000") for e in sub]
            for e, c in zip(sub, cs):
                used[e[field]] = c
            ax.scatter([e["x"] for e in sub], [e["y"] for e in sub], s=area, c=cs, marker=marker,
                       linewidths=0, alpha=0.45 if retiring else 1.0, zorder=8)
    # Observers under the agents (an observer that follows an entity must not
    # hide it): a cross, and the interest radius if known.
    observers = frame.get("observers") or []
    for x, y, radius in observers:
        ax.scatter([x], [y], s=90, marker="P", c=OBSERVER_COLOR, linewidths=0, zorder=7.5)
        if radius:
            ax.add_patch(Circle((x, y), radius, fill=False, edgecolor=OBSERVER_COLOR,
                                linestyle=(0, (4, 3)), linewidth=1.0, zorder=7.5))
    if observers:
        legend.append(Line2D([], [], marker="P", linestyle="", markersize=8, color=OBSERVER_COLOR,
                             label="observer (circle: interest)"
                             if any(r for _x, _y, r in observers) else "observer"))
    for name, c in colors.items():
        if name in used:
            legend.append(Line2D([], [], marker="o", linestyle="", markersize=7, color=c,
                                 label=f"{field} {name}"))
    if any(e["kind"] == "Vehicle" for e in ents):
        legend.append(Line2D([], [], marker="s", linestyle="", markersize=7, color="#444444",
                             label="vehicle (square)"))

    ax.set_title(_title(geometry, frame, color_by), fontsize=9, loc="left")
    fig.legend(handles=legend, loc="upper left", bbox_to_anchor=(0.745, 0.86), fontsize=8,
               frameon=False)
    fig.text(0.745, 0.04, f"{geometry.get('scenario_name', '')}"[:160], fontsize=6, wrap=True,
             color="#555555")

    fig.canvas.draw()
    placed = []
    for e in ents:
        px, py = ax.transData.transform((e["x"], e["y"]))
        placed.append({**e, "px": float(px), "py": float(h - py),
                       "color": colors.get(e[field], "#000000")})
    observers_placed = []
    for x, y, radius in observers:
        px, py = ax.transData.transform((x, y))
        observers_placed.append({"x": x, "y": y, "radius_m": radius, "px": float(px),
                                 "py": float(h - py)})
    signals = []
    for sg in geometry["signals"]:
        px, py = ax.transData.transform((sg["x"], sg["y"]))
        phase = frame["signals"].get(str(sg["index"]), "Open")
        signals.append({"id": sg["id"], "phase": phase, "px": float(px), "py": float(h - py),
                        "color": PHASE_COLORS.get(phase, "#999999")})
    for out in outputs:
        out = Path(out)
        fmt = out.suffix.lower().lstrip(".")
        if fmt not in ("png", "svg"):
            plt.close(fig)
            raise ValueError(f"{out}: expected a .png or .svg file name")
        fig.savefig(out, format=fmt, dpi=dpi)
    plt.close(fig)
    return {"size": [w, h], "color_by": color_by, "entities": placed, "signals": signals,
            "observers": observers_placed, "scale_bar_m": bar_m}
