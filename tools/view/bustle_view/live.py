"""The live page: ``bustle-view --serve`` (aiohttp).

One viewer session (live server, or a recording through ``bustle-replay
serve``) feeds an :class:`~bustle_client.EntityMirror` on a reader thread;
after each delta (at most ``--fps`` times a second) the entities are placed
by the mirror's lane-relative dead reckoning and one compact JSON frame goes
to every open page over a WebSocket. The page (``page.html``, plain
JavaScript, no external scripts) draws on a canvas and moves every agent
smoothly between two frames, with a HUD of step, tier counts and stream
bytes per second.

HTTP: ``/`` the page, ``/ws`` the WebSocket (first message ``geometry``,
then ``frame`` messages, ``status`` on connection trouble), ``/frame.json``
and ``/geometry.json`` the latest of each.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
import time
from collections import deque
from pathlib import Path

from aiohttp import WSMsgType, web

from .render import page_style
from .scene import TIERS, HINTS, POLICIES, frame_from_mirror
from .source import ViewError, open_source

PAGE = Path(__file__).with_name("page.html")
KINDS = ["Pedestrian", "Vehicle"]


def compact_frame(frame: dict, bytes_per_s: float) -> dict:
    """The frame as the page gets it: entities as short lists
    ``[index, generation, kind, tier, hint, policy, x, y, heading, retiring]``
    with enum values as indices into the geometry's name lists."""
    tiers = {n: i for i, n in enumerate(TIERS)}
    hints = {n: i for i, n in enumerate(HINTS)}
    policies = {n: i for i, n in enumerate(POLICIES)}
    ents = [[e[0], e[1], KINDS.index(e[2]) if e[2] in KINDS else 0, tiers.get(e[3], 0),
             hints.get(e[4], 0), policies.get(e[5], 0), round(e[6], 2), round(e[7], 2),
             round(e[8], 2), 1 if e[9] else 0] for e in frame["entities"]]
    return {"type": "frame", "step": frame["step"], "sim_time_us": frame["sim_time_us"],
            "digest": frame["digest"], "tiers": frame["tiers"], "kinds": frame["kinds"],
            "signals": frame["signals"], "dots": frame["dots"], "dots_total": frame["dots_total"],
            "bytes_per_s": round(bytes_per_s), "entities": ents,
            "wall_ms": round(time.time() * 1000)}


class Feed:
    """The reader thread and the pages it feeds."""

    def __init__(self, args, loop: asyncio.AbstractEventLoop):
        self.args = args
        self.loop = loop
        self.min_gap = 1.0 / max(0.5, float(args.fps))
        self.queues = set()  # asyncio.Queue per open page
        self.geometry = None
        self.geometry_text = None
        self.last_frame_text = None
        self.status = "connecting"
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.error = None
        self.thread = threading.Thread(target=self._run, name="bustle-view-feed", daemon=True)

    # -- reader thread -------------------------------------------------------
    def _run(self):
        while not self.stop.is_set():
            try:
                src = open_source(self.args, live=True)
            except Exception as exc:  # ViewError, BustleError, OSError
                self._status(f"cannot connect: {exc}")
                if not self.ready.is_set():
                    self.error = exc
                    self.ready.set()
                    return
                self.stop.wait(2.0)
                continue
            try:
                self._follow(src)
            except Exception as exc:
                self._status(f"stream ended: {exc}")
            finally:
                src.close()
            if self.args.recording:
                return
            self.stop.wait(1.0)

    def _follow(self, src):
        self.geometry = dict(src.geometry, color_by=self.args.color_by, style=page_style())
        text = json.dumps({"type": "geometry", **self.geometry}, separators=(",", ":"))
        self.geometry_text = text
        self._post(text)
        self._status("streaming")
        self.ready.set()
        samples = deque()  # (monotonic, bytes_received)
        last_sent = 0.0
        while not self.stop.is_set():
            try:
                src.next(timeout=1.0)
            except Exception as exc:
                if type(exc).__name__ == "BustleTimeout":
                    continue  # paused server: keep waiting
                raise
            now = time.monotonic()
            samples.append((now, src.bytes_received))
            while len(samples) > 2 and now - samples[0][0] > 2.0:
                samples.popleft()
            if now - last_sent < self.min_gap:
                continue
            last_sent = now
            t0, b0 = samples[0]
            rate = (src.bytes_received - b0) / (now - t0) if now > t0 else 0.0
            frame = compact_frame(frame_from_mirror(src.mirror), rate)
            text = json.dumps(frame, separators=(",", ":"))
            self.last_frame_text = text
            self._post(text)

    def _status(self, text):
        self.status = text
        self._post(json.dumps({"type": "status", "text": text}))

    def _post(self, text):
        try:
            self.loop.call_soon_threadsafe(self._broadcast, text)
        except RuntimeError:
            pass  # the loop is closing

    # -- event loop ------------------------------------------------------------
    def _broadcast(self, text):
        for q in list(self.queues):
            if q.full():  # a slow page skips frames instead of queueing them
                try:
                    q.get_nowait()
                except asyncio.QueueEmpty:
                    pass
            q.put_nowait(text)


async def handle_page(request):
    return web.FileResponse(PAGE, headers={"Cache-Control": "no-store"})


async def handle_frame(request):
    feed = request.app["feed"]
    if feed.last_frame_text is None:
        return web.json_response({"status": feed.status}, status=503)
    return web.Response(text=feed.last_frame_text, content_type="application/json")


async def handle_geometry(request):
    feed = request.app["feed"]
    if feed.geometry_text is None:
        return web.json_response({"status": feed.status}, status=503)
    return web.Response(text=feed.geometry_text, content_type="application/json")


async def handle_ws(request):
    feed = request.app["feed"]
    ws = web.WebSocketResponse(heartbeat=20.0)
    await ws.prepare(request)
    q = asyncio.Queue(maxsize=4)
    feed.queues.add(q)

    async def sender():
        if feed.geometry_text:
            await ws.send_str(feed.geometry_text)
        if feed.last_frame_text:
            await ws.send_str(feed.last_frame_text)
        while not ws.closed:
            await ws.send_str(await q.get())

    task = asyncio.ensure_future(sender())
    try:
        async for msg in ws:
            if msg.type == WSMsgType.ERROR:
                break
    finally:
        feed.queues.discard(q)
        task.cancel()
    return ws


def _bind(text):
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ViewError(f"--http-bind: expected HOST:PORT, got {text!r}")
    try:
        p = int(port)
        if not 0 <= p <= 65535:
            raise ValueError
    except ValueError:
        raise ViewError(f"--http-bind: expected a port in 0..65535, got {port!r}") from None
    return host.strip("[]"), p


async def _serve(args):
    host, port = _bind(args.http_bind)
    loop = asyncio.get_running_loop()
    feed = Feed(args, loop)
    feed.thread.start()
    ready = await loop.run_in_executor(None, feed.ready.wait, args.timeout + 5.0)
    if feed.error is not None:
        raise ViewError(str(feed.error))
    if not ready:
        feed.stop.set()
        raise ViewError(f"no stream within {args.timeout + 5.0:g} s")
    app = web.Application()
    app["feed"] = feed
    app.router.add_get("/", handle_page)
    app.router.add_get("/ws", handle_ws)
    app.router.add_get("/frame.json", handle_frame)
    app.router.add_get("/geometry.json", handle_geometry)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        feed.stop.set()
        await runner.cleanup()
        raise ViewError(f"--http-bind {args.http_bind}: {exc}") from exc
    bound = runner.addresses[0]
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    print(f"bustle-view serving http://{shown}:{bound[1]}/ "
          f"({feed.geometry['scenario_id']})", flush=True)
    done = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, done.set)
    waiter = asyncio.ensure_future(done.wait())
    watcher = asyncio.ensure_future(loop.run_in_executor(None, feed.thread.join))
    await asyncio.wait([waiter, watcher], return_when=asyncio.FIRST_COMPLETED)
    feed.stop.set()
    await runner.cleanup()
    if watcher.done() and not waiter.done():
        print(f"bustle-view: {feed.status}", file=sys.stderr)
        return 1
    return 0


def serve(args) -> int:
    return asyncio.run(_serve(args))
