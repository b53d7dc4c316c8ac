"""The live page (bustle-view --serve) in headless Chromium: a screenshot
with the city and agents in their tier colours, and two DOM dumps a moment
apart in which the HUD's step advanced and the drawn agents moved."""

import asyncio
import base64
import json
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import clean_env, replay_binary, view_binary
from pixels import count, load_png

SERVING = re.compile(r"^bustle-view serving (http://\S+/) ")
TIER = {"Full": "#e6194b", "Simulated": "#4363d8", "Coarse": "#3cb44b"}
HINT = {"Actor": "#f032e6", "Instanced": "#42d4f4", "Marker": "#9a6324"}
SIDEWALK = "#b4b4b4"


def chromium_binary():
    path = shutil.which("chromium")
    if not path:
        pytest.fail("chromium is not installed (tools/install-deps.sh installs it)")
    return path


class LivePage:
    """bustle-view --serve on an ephemeral port; stopped with SIGTERM."""

    def __init__(self, *args, timeout=30.0):
        self.proc = subprocess.Popen([view_binary(), "--serve", "--http-bind", "127.0.0.1:0",
                                      *map(str, args)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env=clean_env({"BUSTLE_REPLAY": replay_binary()}))
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in self.proc.stdout] + [lines.put(None)],
                         daemon=True).start()
        deadline = time.monotonic() + timeout
        self.url = None
        while self.url is None:
            try:
                line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                self.stop()
                pytest.fail(f"bustle-view --serve did not start: {self.proc.stderr.read()}")
            m = SERVING.match(line)
            if m:
                self.url = m.group(1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait(timeout=5)


class Chromium:
    """Headless Chromium on one page, driven over the DevTools protocol
    (aiohttp's WebSocket client): evaluate JavaScript, dump the DOM, take a
    screenshot, in real time (no virtual clock)."""

    def __init__(self, tmp_path, url, timeout=30.0):
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
             "--remote-debugging-port=0", "--remote-allow-origins=*",
             f"--user-data-dir={tmp_path / 'chromium-profile'}", "--window-size=1000,620", url],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.loop = asyncio.new_event_loop()
        self.http = self.ws = None
        self.next_id = 0
        try:
            browser = self._devtools_url(timeout)
            self.loop.run_until_complete(self._attach(browser, url, timeout))
        except BaseException:
            self.close()
            raise
        self.started_s = time.monotonic() - self.t0

    def _devtools_url(self, timeout):
        deadline = time.monotonic() + timeout
        found = queue.Queue()

        def read():
            for line in self.proc.stderr:
                m = re.search(r"DevTools listening on (ws://\S+)", line)
                if m:
                    found.put(m.group(1))
        threading.Thread(target=read, daemon=True).start()
        try:
            return found.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            pytest.fail(f"chromium printed no DevTools address within {timeout} s")

    async def _attach(self, browser_ws, url, timeout):
        import aiohttp
        host = browser_ws.split("/")[2]
        self.http = aiohttp.ClientSession()
        deadline = time.monotonic() + timeout
        while True:
            async with self.http.get(f"http://{host}/json/list") as r:
                targets = await r.json(content_type=None)
            pages = [t for t in targets if t.get("type") == "page" and t.get("url") == url]
            if pages:
                break
            assert time.monotonic() < deadline, f"no page target for {url}: {targets}"
            await asyncio.sleep(0.1)
        self.ws = await self.http.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)
        await self._call("Emulation.setDeviceMetricsOverride", width=1000, height=620,
                         deviceScaleFactor=1, mobile=False)

    async def _call(self, method, **params):
        self.next_id += 1
        await self.ws.send_json({"id": self.next_id, "method": method, "params": params})
        while True:
            msg = await asyncio.wait_for(self.ws.receive_json(), 20.0)
            if msg.get("id") == self.next_id:
                assert "error" not in msg, f"{method}: {msg['error']}"
                return msg["result"]

    def call(self, method, **params):
        return self.loop.run_until_complete(self._call(method, **params))

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return r["result"].get("value")

    def dom(self):
        return self.evaluate("document.documentElement.outerHTML")

    def wait_for(self, expression, timeout=20.0):
        deadline = time.monotonic() + timeout
        while not self.evaluate(expression):
            assert time.monotonic() < deadline, f"page: {expression} not true within {timeout} s"
            time.sleep(0.1)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self):
        if self.ws is not None:
            self.loop.run_until_complete(self.ws.close())
        if self.http is not None:
            self.loop.run_until_complete(self.http.close())
        self.loop.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def hud(dom):
    """(step, {tier: count}, agents, probe dict) from a dumped DOM."""
    def num(id_):
        m = re.search(rf'id="{id_}">(-?\d+)<', dom)
        assert m, f"#{id_} not in the DOM"
        return int(m.group(1))
    probe = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert probe, "#probe not in the DOM"
    text = probe.group(1).replace("&quot;", '"').replace("&amp;", "&")
    return num("step"), {t: num(f"tier-{t}") for t in TIER}, num("agents"), json.loads(text)


def test_live_page_in_headless_chromium(start_server, tmp_path):
    server = start_server("--clock", "realtime")  # 10 steps a second, as people watch it
    page = LivePage("--port", server.port)
    timings = {}
    try:
        browser = Chromium(tmp_path, page.url)
        try:
            timings["chromium start"] = browser.started_s
            t = time.monotonic()
            browser.wait_for("/^[0-9]+$/.test(document.getElementById('step').textContent)"
                             " && JSON.parse(document.getElementById('probe').textContent).drawn > 0")
            timings["first frame drawn"] = time.monotonic() - t
            dom1 = browser.dom()
            time.sleep(1.0)
            dom2 = browser.dom()
            shot = tmp_path / "page.png"
            browser.screenshot(shot)
            # The HUD's selector recolours the agents by representation hint.
            browser.evaluate("const s = document.getElementById('colorby'); s.value = 'hint';"
                             " s.dispatchEvent(new Event('change'));")
            time.sleep(0.5)
            hinted = json.loads(browser.evaluate("document.getElementById('probe').textContent"))
        finally:
            browser.close()
    finally:
        assert page.stop() == 0
    print("chromium seconds:", {k: round(v, 2) for k, v in timings.items()})

    img = load_png(shot)
    assert img.shape[:2] == (620, 1000)
    colours = {tuple(c) for c in img.reshape(-1, 3)[::7]}
    assert len(colours) > 20, "the screenshot is (nearly) blank"
    assert count(img, SIDEWALK) > 1000, "no lanes on the page"
    assert count(img, TIER["Full"]) > 0 or count(img, TIER["Simulated"]) > 0, "no agents drawn"

    step1, tiers1, agents1, probe1 = hud(dom1)
    step2, tiers2, agents2, probe2 = hud(dom2)
    assert agents1 > 0 and sum(tiers1.values()) == agents1
    assert sum(tiers2.values()) == agents2
    assert step2 > step1, f"the HUD's step did not advance ({step1} -> {step2})"
    assert probe1["drawn"] > 0 and probe2["drawn"] > 0
    pos1 = {k: (x, y) for k, x, y, _c in probe1["agents"]}
    pos2 = {k: (x, y) for k, x, y, _c in probe2["agents"]}
    common = set(pos1) & set(pos2)
    assert common, "no agent in both dumps"
    moved = [k for k in common if pos1[k] != pos2[k]]
    assert len(moved) >= len(common) // 2, f"agents did not move: {pos1} -> {pos2}"
    assert all(c in TIER.values() for _k, _x, _y, c in probe2["agents"])
    assert hinted["colorBy"] == "hint" and hinted["agents"]
    assert all(c in HINT.values() for _k, _x, _y, c in hinted["agents"])


def test_live_page_of_a_recording(recording):
    # The page's data for a recording (bustle-replay serve at the recorded
    # rate, looping): the latest frame advances.
    page = LivePage("--recording", recording, "--step", 100)
    try:
        def frame():
            with urllib.request.urlopen(page.url + "frame.json", timeout=5) as r:
                return json.load(r)
        deadline = time.monotonic() + 20
        while True:
            try:
                first = frame()
                break
            except urllib.error.HTTPError as exc:  # 503 until the first frame
                assert exc.code == 503 and time.monotonic() < deadline
                time.sleep(0.1)
        time.sleep(1.0)
        second = frame()
        with urllib.request.urlopen(page.url + "geometry.json", timeout=5) as r:
            geometry = json.load(r)
    finally:
        assert page.stop() == 0
    assert geometry["scenario_id"] == "bustle.default.two-blocks.v1"
    assert geometry["style"]["colors"]["tier"]["Full"] == TIER["Full"]
    assert second["step"] > first["step"] >= 0  # from the keyframe at step 0: empty at first
    assert second["entities"]
    assert second["bytes_per_s"] > 0
