"""bustle-view pictures from a live server and from a recording, checked
pixel by pixel: agents drawn in their colour where the stream places them,
lanes drawn, one colour per tier / hint / policy, and the frame of a
recording at step N being the recorded state at step N (same digest)."""

import sqlite3

import numpy as np
import pytest

from bustle_view.cli import build_parser, main as cli_main
from bustle_view.render import render
from bustle_view.source import open_source
from conftest import SOURCE_DIR, replay_binary, run_view, wait_step
from pixels import count, load_meta, load_png, near

TIER = {"Full": "#e6194b", "Simulated": "#4363d8", "Coarse": "#3cb44b"}
HINT = {"Actor": "#f032e6", "Instanced": "#42d4f4", "Marker": "#9a6324"}
POLICY = {"RouteFollow": "#469990", "LaneFollow": "#bfef45", "Yielding": "#ffe119",
          "WaitingAtSignal": "#f58231", "Parked": "#808000", "Manual": "#000075",
          "DespawnPending": "#911eb4"}
ROAD, SIDEWALK = "#5a5a5a", "#b4b4b4"


def check_agents(img, meta, palette, field):
    """Every agent's centre pixel has a palette colour, most of them their own
    (agents can overlap); every value present is drawn."""
    ents = meta["picture"]["entities"]
    assert ents, "no agents in the picture"
    any_colour = sum(any(near(img, e["px"], e["py"], c) for c in palette.values()) for e in ents)
    own = sum(near(img, e["px"], e["py"], palette[e[field]]) for e in ents)
    assert any_colour >= 0.95 * len(ents), f"{len(ents) - any_colour} agents not drawn"
    assert own >= 0.75 * len(ents), f"only {own} of {len(ents)} agents in their {field} colour"
    for value in {e[field] for e in ents}:
        assert count(img, palette[value]) > 0, f"no pixel of {field} {value}"


def test_png_and_svg_from_live_server(server, tmp_path):
    png, svg, meta = tmp_path / "live.png", tmp_path / "live.svg", tmp_path / "live.json"
    r = run_view("--port", server.port, "--step", 40, "-o", png, "-o", svg, "--meta", meta)
    assert r.returncode == 0, r.stderr
    assert "bustle.default.two-blocks.v1 step" in r.stdout
    m = load_meta(meta)
    assert m["frame"]["step"] >= 40
    assert m["frame"]["kinds"]["Pedestrian"] == len(m["frame"]["entities"]) > 0
    img = load_png(png)
    assert img.shape[:2] == (620, 1000)
    assert count(img, ROAD) > 2000 and count(img, SIDEWALK) > 2000, "lanes not drawn"
    check_agents(img, m, TIER, "tier")
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert "bustle.default.two-blocks.v1" in text  # the title


def recorded_digest(path, step):
    con = sqlite3.connect(str(path))
    try:
        row = con.execute("SELECT digest FROM recording_ticks WHERE step = ? ORDER BY tick LIMIT 1",
                          (step,)).fetchone()
    finally:
        con.close()
    return f"{row[0] & 0xFFFFFFFFFFFFFFFF:016x}"


def test_png_from_recording_at_step(recording, tmp_path):
    png, meta = tmp_path / "rec.png", tmp_path / "rec.json"
    # In this process (the launcher is run as a process above): same code path.
    assert cli_main(["--recording", str(recording), "--step", "150", "-o", str(png),
                     "--meta", str(meta), "--replay-binary", replay_binary()]) == 0
    m = load_meta(meta)
    assert m["frame"]["step"] == 150
    assert m["frame"]["digest"] == recorded_digest(recording, 150)
    assert len(m["frame"]["entities"]) == 120
    img = load_png(png)
    assert count(img, ROAD) > 2000 and count(img, SIDEWALK) > 2000
    check_agents(img, m, TIER, "tier")


def test_color_by_modes_differ(recording, tmp_path):
    # One frame (in this process), drawn three ways.
    args = build_parser().parse_args(["--recording", str(recording), "--step", "200",
                                      "--replay-binary", replay_binary()])
    src = open_source(args)
    try:
        geometry, frame = src.geometry, src.frame()
    finally:
        src.close()
    assert frame["step"] == 200
    pictures = {}
    for mode, palette in (("tier", TIER), ("hint", HINT), ("policy", POLICY)):
        png = tmp_path / f"{mode}.png"
        placed = render(geometry, frame, [png], color_by=mode)
        img = load_png(png)
        check_agents(img, {"picture": placed}, palette, mode)
        others = [c for p in (TIER, HINT, POLICY) if p is not palette for c in p.values()
                  if c not in palette.values()]
        stray = sum(count(img, c, tol=2) for c in others)
        assert stray < 20, f"{mode}: {stray} pixels of another mode's colours"
        pictures[mode] = img
    assert np.any(pictures["tier"] != pictures["hint"])
    assert np.any(pictures["tier"] != pictures["policy"])
    assert np.any(pictures["hint"] != pictures["policy"])
    with pytest.raises(ValueError, match="color_by"):
        render(geometry, frame, [tmp_path / "x.png"], color_by="speed")


def test_recording_step_out_of_range(recording, tmp_path, capsys):
    code = cli_main(["--recording", str(recording), "--step", str(10 ** 9),
                     "--replay-binary", replay_binary(), "-o", str(tmp_path / "x.png")])
    assert code == 1
    assert "no recorded tick reaches step 1000000000" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_bad_arguments(tmp_path, capsys):
    for argv, text in ((["-o", "x.jpg"], "expected a .png or .svg"),
                       ([], "nothing to do"),
                       (["--serve", "-o", "x.png"], "-o/--meta do not apply"),
                       (["-o", "x.png", "--size", "10x10"], "--size"),
                       (["-o", "x.png", "--color-by", "speed"], "invalid choice")):
        with pytest.raises(SystemExit) as exc:
            cli_main(argv)
        assert exc.value.code == 2, argv
        assert text in capsys.readouterr().err, argv
    code = cli_main(["--port", "1", "-o", str(tmp_path / "x.png"), "--timeout", "2"])
    assert code == 1 and "cannot connect" in capsys.readouterr().err
    code = cli_main(["--serve", "--port", "1", "--http-bind", "127.0.0.1:0", "--timeout", "2"])
    assert code == 1 and "cannot connect" in capsys.readouterr().err
    code = cli_main(["--serve", "--http-bind", "nowhere", "--port", "1"])
    assert code == 1 and "--http-bind: expected HOST:PORT" in capsys.readouterr().err


def test_corridor_vehicles_signals_and_dots(start_server, tmp_path):
    # The seed-003 corridor: vehicles (squares) by policy, the signal in its
    # phase's colour; then a near observer, so distant pedestrians are dots.
    srv = start_server("--clock", "fast", "--config",
                       str(SOURCE_DIR / "configs" / "corridor.city.json"))
    wait_step(srv.port, 200)
    png, meta = tmp_path / "corridor.png", tmp_path / "corridor.json"
    assert cli_main(["--port", str(srv.port), "--color-by", "policy", "-o", str(png),
                     "--meta", str(meta)]) == 0
    m = load_meta(meta)
    assert m["frame"]["kinds"]["Vehicle"] > 0
    img = load_png(png)
    check_agents(img, m, POLICY, "policy")
    vehicles = [e for e in m["picture"]["entities"] if e["kind"] == "Vehicle"]
    assert sum(near(img, e["px"], e["py"], e["color"]) for e in vehicles) >= 0.75 * len(vehicles)
    (sig,) = m["picture"]["signals"]
    assert sig["phase"] in ("Open", "Yield", "Closed")
    assert near(img, sig["px"], sig["py"], sig["color"], radius=3), sig
    assert m["geometry"]["garages"][0]["id"] == "g0"
    assert count(img, "#1f1f7a") > 20, "garage not drawn"

    args = build_parser().parse_args(["--port", str(srv.port), "--observer=-13,25,6"])
    src = open_source(args)
    try:
        dots_every = src.welcome.dots_every_steps
        src.until_step(src.mirror.step + dots_every + 1)
        frame = src.frame()
    finally:
        src.close()
    assert frame["dots_total"] > 0 and len(frame["entities"]) < 26
    placed = render(src.geometry, frame, [tmp_path / "dots.png"])
    assert count(load_png(tmp_path / "dots.png"), "#707070", tol=4) > 0, "no dots drawn"
    assert placed["entities"] or frame["dots_total"]


def blend(color, alpha, under="#f7f7f2"):
    """``color`` drawn with ``alpha`` over ``under`` (the axes' background)."""
    a, b = (np.array([int(c.lstrip("#")[i:i + 2], 16) for i in (0, 2, 4)]) for c in (color, under))
    return "#" + "".join(f"{int(round(v)):02x}" for v in alpha * a + (1 - alpha) * b)


def test_zones_from_the_shipped_scenario(start_server, tmp_path):
    # The large block's Welcome names bustle.largeblock.v1: its zones come
    # from configs/largeblock.city.json.
    srv = start_server("--clock", "fast", "--config",
                       str(SOURCE_DIR / "configs" / "largeblock.city.json"))
    args = build_parser().parse_args(["--port", str(srv.port)])
    src = open_source(args)
    try:
        geometry, frame = src.geometry, src.frame()
    finally:
        src.close()
    assert [z["id"] for z in geometry["zones"]] == ["market", "office", "facilities"]
    assert all(len(z["hull"]) >= 3 for z in geometry["zones"])
    png = tmp_path / "zones.png"
    render(geometry, frame, [png])
    img = load_png(png)
    for colour in ("#fabed4", "#ffd8b1", "#fffac8"):  # one per zone, alpha 0.55
        assert count(img, blend(colour, 0.55), tol=3) > 500, colour


def test_elevated_lane_and_retiring_agent(tmp_path):
    # No shipped city has height: a made-up one, drawn without a server.
    geometry = {
        "scenario_id": "made.up", "scenario_name": "", "step_us": 100000,
        "lanes": [
            {"index": 0, "id": "low", "kind": "Road", "points": [[0, 0], [100, 0]],
             "elevation": 0.0, "length": 100.0},
            {"index": 1, "id": "bridge", "kind": "Road", "points": [[50, -40], [50, 40]],
             "elevation": 6.5, "length": 80.0},
        ],
        "zones": [], "signals": [], "garages": [], "chains": [], "bounds": [0, -40, 100, 40],
    }
    frame = {"step": 7, "sim_time_us": 700000, "digest": None, "tiers": {"Full": 2},
             "kinds": {"Pedestrian": 0, "Vehicle": 2}, "signals": {}, "dots": {},
             "dots_total": 0, "interest_truncated": 0,
             "entities": [[1, 1, "Vehicle", "Full", "Actor", "RouteFollow", 20.0, 0.0, 0.0, False],
                          [2, 1, "Vehicle", "Full", "Actor", "RouteFollow", 80.0, 0.0, 0.0, True]]}
    png, svg = tmp_path / "bridge.png", tmp_path / "bridge.svg"
    placed = render(geometry, frame, [png, svg])
    img = load_png(png)
    assert count(img, "#202020", tol=4) > 100, "the elevated lane has no casing"
    assert "+6.5 m" in svg.read_text()
    solid, fading = placed["entities"]
    assert near(img, solid["px"], solid["py"], TIER["Full"])
    assert not near(img, fading["px"], fading["py"], TIER["Full"])
    assert near(img, fading["px"], fading["py"], blend(TIER["Full"], 0.45, ROAD), tol=4)


def test_axes_in_metres_a_scale_bar_and_the_observers(tmp_path):
    """Axes labelled in metres, a round scale bar, and each observer drawn as
    a cross with a dashed circle of its interest radius (when known), where
    the picture says it is."""
    geometry = {
        "scenario_id": "made.up", "scenario_name": "", "step_us": 100000,
        "lanes": [{"index": 0, "id": "walk", "kind": "Sidewalk", "points": [[0, 0], [200, 0]],
                   "elevation": 0.0, "length": 200.0}],
        "zones": [], "signals": [], "garages": [], "chains": [], "bounds": [0, -60, 200, 60],
    }
    frame = {"step": 3, "sim_time_us": 300000, "digest": None, "tiers": {}, "kinds": {},
             "signals": {}, "dots": {}, "dots_total": 0, "interest_truncated": 0, "entities": [],
             "observers": [[50.0, 20.0, 30.0], [150.0, -20.0, None]]}
    png, svg = tmp_path / "obs.png", tmp_path / "obs.svg"
    placed = render(geometry, frame, [png, svg])
    text = svg.read_text()
    assert "x (m)" in text and "y (m)" in text
    assert placed["scale_bar_m"] == 20.0  # 1, 2 or 5 x 10^k, at most a fifth of 200 + 2 x 12 m
    assert f"{placed['scale_bar_m']:g} m" in text
    img = load_png(png)
    assert [o["radius_m"] for o in placed["observers"]] == [30.0, None]
    for o in placed["observers"]:
        assert near(img, o["px"], o["py"], "#111111", tol=8), o
    # The interest circle passes 30 m left of the first observer, not around the second.
    first, second = placed["observers"]
    metres_per_px = (second["x"] - first["x"]) / (second["px"] - first["px"])
    r_px = 30.0 / metres_per_px
    assert near(img, first["px"] - r_px, first["py"], "#111111", radius=3, tol=60)
    assert not near(img, second["px"] - r_px, second["py"], "#111111", radius=3, tol=60)


def test_a_live_picture_draws_the_client_observer_or_the_citys(server, tmp_path):
    meta = tmp_path / "o.json"
    r = run_view("--port", server.port, "--step", 5, "--observer", "25,25,80",
                 "-o", tmp_path / "o.png", "--meta", meta)
    assert r.returncode == 0, r.stderr
    assert load_meta(meta)["frame"]["observers"] == [[25.0, 25.0, 80.0]]
    r = run_view("--port", server.port, "--step", 5, "-o", tmp_path / "c.png", "--meta", meta)
    assert r.returncode == 0, r.stderr
    city = load_meta(meta)["frame"]["observers"]
    assert city and all(radius is None for _x, _y, radius in city), city
