"""bustle-view: pictures of the city from a live server or a recording."""

from __future__ import annotations

import argparse
import json
import os
import sys

from bustle_client import BustleError

USAGE_EXAMPLES = """\
examples:
  bustle-view -o city.png                          live server at 127.0.0.1:7777, the baseline
  bustle-view --step 600 -o city.png -o city.svg   wait for step 600, PNG and SVG
  bustle-view --recording session.db --step 300 --color-by hint -o s300.png
  bustle-view --serve --http-bind 127.0.0.1:8080   live page (open http://127.0.0.1:8080/)

exit codes: 0 done; 1 the server or recording could not be read; 2 bad arguments.
"""


def _env_int(name, default):
    v = os.environ.get(name)
    try:
        return int(v) if v else default
    except ValueError:
        return default


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bustle-view", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Draw the city as the server sees it: lanes, zones, signals, garages, "
                    "agents (by tier, representation hint or policy) and distant dots; "
                    "PNG/SVG pictures or a live page.",
        epilog=USAGE_EXAMPLES)
    src = p.add_argument_group("source")
    src.add_argument("--host", default=os.environ.get("BUSTLE_HOST", "127.0.0.1"),
                     help="server address (env BUSTLE_HOST; default 127.0.0.1)")
    src.add_argument("--port", type=int, default=_env_int("BUSTLE_PORT", 7777),
                     help="server port (env BUSTLE_PORT; default 7777)")
    src.add_argument("--token", default=os.environ.get("BUSTLE_TOKEN") or None,
                     help="server token (env BUSTLE_TOKEN)")
    src.add_argument("--recording", metavar="FILE",
                     help="a recording (bustle-server --record): streamed by bustle-replay serve")
    src.add_argument("--replay-binary", metavar="PATH",
                     help="bustle-replay to use (default: env BUSTLE_REPLAY, then PATH)")
    src.add_argument("--step", type=int, metavar="N",
                     help="picture at step N (live: wait for it; recording: the first recorded "
                          "tick at or after N). Default: the first frame")
    src.add_argument("--observer", action="append", metavar="X,Y[,R]",
                     help="subscribe around this point (repeatable); default: the whole city")
    src.add_argument("--scenario", metavar="FILE",
                     help="scenario file, for the zones (default: the recording's, or a shipped "
                          "configs/*.json with the server's scenario id)")
    src.add_argument("--timeout", type=float, default=10.0, help="seconds to wait (default 10)")
    out = p.add_argument_group("picture")
    out.add_argument("-o", "--output", action="append", metavar="FILE",
                     help="write a picture (.png or .svg; repeatable)")
    out.add_argument("--color-by", choices=["tier", "hint", "policy"], default="tier",
                     help="colour agents by simulation tier, representation hint or control "
                          "policy (default tier)")
    out.add_argument("--size", default="1000x620", metavar="WxH", help="pixels (default 1000x620)")
    out.add_argument("--meta", metavar="FILE",
                     help="also write JSON: the frame and each agent's pixel position")
    live = p.add_argument_group("live page")
    live.add_argument("--serve", action="store_true", help="serve the live page")
    live.add_argument("--http-bind", default="127.0.0.1:8080", metavar="HOST:PORT",
                      help="where the page is served (default 127.0.0.1:8080; port 0: any)")
    live.add_argument("--fps", type=float, default=20.0,
                      help="most frames per second sent to the page (default 20)")
    return p


def _size(parser, text):
    try:
        w, h = (int(v) for v in text.lower().split("x"))
        if not (100 <= w <= 8000 and 100 <= h <= 8000):
            raise ValueError
        return w, h
    except ValueError:
        parser.error(f"--size: expected WxH in pixels (100..8000), got {text!r}")


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.serve and (args.output or args.meta):
        parser.error("--serve draws the live page: -o/--meta do not apply")
    if not args.serve:
        if not args.output:
            parser.error("nothing to do: give -o FILE.png / FILE.svg, or --serve")
        for o in args.output:
            if not o.lower().endswith((".png", ".svg")):
                parser.error(f"-o {o}: expected a .png or .svg file name")
    size = _size(parser, args.size)
    from .source import ViewError, open_source

    if args.serve:
        from .live import serve
        try:
            return serve(args)
        except ViewError as exc:
            print(f"bustle-view: {exc}", file=sys.stderr)
            return 1
    from .render import render
    try:
        src = open_source(args)
        try:
            geometry, frame = src.geometry, src.frame()
        finally:
            src.close()
    except (ViewError, BustleError, OSError) as exc:
        print(f"bustle-view: {exc}", file=sys.stderr)
        return 1
    meta = render(geometry, frame, args.output, color_by=args.color_by, size=size)
    if args.meta:
        with open(args.meta, "w", encoding="utf-8") as f:
            json.dump({"geometry": geometry, "frame": frame, "picture": meta}, f)
    t = frame["tiers"]
    print(f"bustle-view: {geometry['scenario_id']} step {frame['step']}: "
          f"{len(frame['entities'])} agents (Full {t['Full']}, Simulated {t['Simulated']}, "
          f"Coarse {t['Coarse']}), {frame['dots_total']} dots -> {', '.join(args.output)}")
    return 0
