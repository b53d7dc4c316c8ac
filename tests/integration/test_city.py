"""bustle-city (tools/city, docs/districts.md "One command"): the generated
city on 2 district servers and a gateway, run by the real script with the
real processes on loopback. A client on the gateway streams the city; the
district d1 killed with -9 is resumed by the script from its recording on
the same ports and the client's stream goes on; SIGTERM stops everything
(exit 0, no process left); a city without a district map is refused."""

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import SOURCE_DIR, clean_env, tool_binary, write_district_city
from bustle_client import Session

PID = re.compile(r"^bustle-city: (district (\S+)|gateway) pid (\d+)")
GATEWAY = re.compile(r"^bustle-city: gateway listening on (\S+):(\d+)$")


def city_env():
    env = clean_env({
        "BUSTLE_SERVER": os.environ["BUSTLE_SERVER"],
        "BUSTLE_GATEWAY": tool_binary("BUSTLE_GATEWAY", "bustle-gateway"),
        "BUSTLE_BENCH": tool_binary("BUSTLE_BENCH", "bustle-bench"),
    })
    env["PYTHONPATH"] = str(SOURCE_DIR / "tools/city")
    return env


class CityScript:
    def __init__(self, *args):
        self.proc = subprocess.Popen([sys.executable, "-m", "bustle_city", *args],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=city_env(), text=True)
        self.lines, self.seen, self.pids = queue.Queue(), [], {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_line(self, pattern, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            assert line is not None, f"bustle-city ended: {self.seen}"
            self.seen.append(line)
            m = PID.match(line)
            if m:
                self.pids[m.group(2) or "gateway"] = int(m.group(3))
            m = pattern.match(line) if hasattr(pattern, "match") else (line if pattern in line else None)
            if m:
                return m
        pytest.fail(f"no line like {pattern!r} within {timeout} s: {self.seen}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_killed_district_is_resumed_and_the_city_goes_on(tmp_path):
    city = CityScript("--grid", "8", "--agents", "600", "--rate", "25", "--port", "0",
                      "--dir", str(tmp_path / "run"))
    try:
        m = city.wait_line(GATEWAY)
        s = Session.connect(m.group(1), int(m.group(2)), timeout=10)
        s.hello("city-client")
        s.subscribe(motion_tolerance_mm=0)
        mirror = s.mirror()
        for _ in range(20):
            d = s.next_delta(timeout=10)
            mirror.apply(d)
        killed_at = d.step
        os.kill(city.pids["d1"], signal.SIGKILL)
        city.wait_line("district d1 exited (signal 9); resuming it from d1-")
        city.wait_line("(resumed from d1-")
        while d.step < killed_at + 30:
            d = s.next_delta(timeout=20)
            mirror.apply(d)
        assert len(mirror) > 0
        st = s.stats(timeout=10)
        assert [x.id for x in st.districts] == ["d0", "d1"] and all(x.streaming for x in st.districts)
        s.close()
    finally:
        code = city.stop()
    assert code == 0, city.seen
    city.wait_line("bustle-city: stopped", timeout=5)
    assert not [name for name, pid in city.pids.items() if alive(pid)], city.pids


def test_a_city_without_a_district_map_is_refused(tmp_path):
    raw = write_district_city(tmp_path / "city.json", 2, 4, 50)
    doc = json.loads(raw.read_text())
    del doc["districts"]
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "bustle_city", "--config", str(whole), "--dir",
                        str(tmp_path / "run")], capture_output=True, text=True, timeout=30,
                       env=city_env())
    assert r.returncode == 2 and "has no district map" in r.stdout, (r.stdout, r.stderr)
