"""Operations: the metrics endpoint, /healthz and /readyz, JSON logs, signals,
the checkpoint on exit, and the Agones SDK calls (against a fake sidecar).

Every test runs the real bustle-server with ``--metrics-bind 127.0.0.1:0`` (or
without it) and reads the endpoint over HTTP; the port comes from the stdout
line ``bustle-server metrics on <addr>:<port>`` that follows the listening line.
"""

import http.server
import json
import os
import queue
import re
import signal
import subprocess
import threading
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bustle_client import CommandStatus, ErrorCode, ErrorMessage, JobState, Observer, RejectReason
from conftest import SOURCE_DIR, clean_env, http_get, write_district_city
from snapshot_helpers import manual_command, operator, run_job

METRICS_LINE = re.compile(r"^bustle-server metrics on (\S+):(\d+)$")
SAMPLE_INTERVAL = 1.0  # the sim thread publishes its world sample once a second


def metrics_port(srv):
    line = srv.stdout_lines.get(timeout=5.0)
    m = METRICS_LINE.match(line or "")
    assert m, f"expected the metrics line after the listening line, got {line!r}"
    return int(m.group(2))


def scrape(port):
    """{sample name: {frozenset(labels): value}} and the families, parsed by prometheus_client."""
    status, text = http_get(port, "/metrics")
    assert status == 200, text
    families = list(text_string_to_metric_families(text))
    samples = {}
    for fam in families:
        for s in fam.samples:
            samples.setdefault(s.name, {})[frozenset(s.labels.items())] = s.value
    return samples, families


def value(samples, name, **labels):
    return samples[name][frozenset(labels.items())]


def bucket(samples, name, upper_bound):
    """The cumulative count of histogram `name`'s bucket with this upper bound."""
    for labels, v in samples[name + "_bucket"].items():
        if float(dict(labels)["le"]) == upper_bound:
            return v
    raise KeyError(f"{name}: no bucket le={upper_bound}")


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_metrics_parse_and_move_with_steps_and_commands(start_server):
    srv = start_server("--clock", "manual", "--metrics-bind", "127.0.0.1:0")
    port = metrics_port(srv)
    before, families = scrape(port)
    types = {f.name: f.type for f in families}
    assert types["bustle_step_duration_seconds"] == "histogram"
    assert types["bustle_steps"] == "counter"  # the parser drops the _total suffix
    assert types["bustle_clients"] == "gauge"
    assert value(before, "bustle_steps_total") == 0

    with operator(srv) as s:
        assert s.step(5).accepted
        bad = s.command("Step", count=0)  # InvalidArgument, answered by the sim thread
        assert bad.status == CommandStatus.Rejected and bad.reason == RejectReason.InvalidArgument
        assert s.stats().step == 5

        def moved():
            now, _ = scrape(port)
            return now if value(now, "bustle_sim_step") == 5 else None

        after = wait_for(moved, 3 * SAMPLE_INTERVAL, "the world sample to reach step 5")
        assert value(after, "bustle_steps_total") == 5
        assert value(after, "bustle_clients", role="operator") == 1
        assert value(after, "bustle_clients", role="viewer") == 0
        assert value(after, "bustle_commands_accepted_total") >= 2  # Step(5), QueryStats
        assert value(after, "bustle_commands_rejected_total", reason="invalid_argument") == 1
        assert value(after, "bustle_sent_bytes_total") > value(before, "bustle_sent_bytes_total")
        assert value(after, "bustle_frames_sent_total", type="answer") >= 3
        assert value(after, "bustle_connections_accepted_total") == 1
        peds = sum(v for k, v in after["bustle_entities"].items() if ("kind", "pedestrian") in k)
        assert peds == s.stats().pedestrians > 0

        # The histogram: cumulative, ending at +Inf == count == steps.
        buckets = sorted(((float(dict(k)["le"]), v) for k, v in after["bustle_step_duration_seconds_bucket"].items()))
        counts = [v for _, v in buckets]
        assert counts == sorted(counts), buckets
        assert buckets[-1][0] == float("inf") and buckets[-1][1] == 5
        assert value(after, "bustle_step_duration_seconds_count") == 5
        assert 0 < value(after, "bustle_step_duration_seconds_sum") < 5.0

    def disconnected():
        now, _ = scrape(port)
        return now if value(now, "bustle_disconnects_total", reason="peer_closed") == 1 else None

    last = wait_for(disconnected, 3.0, "the disconnect to be counted")
    assert value(last, "bustle_clients", role="operator") == 0


def test_vehicle_and_garage_metrics_on_the_corridor(start_server):
    srv = start_server("--clock", "fast", "--config", str(SOURCE_DIR / "configs" / "corridor.city.json"),
                       "--metrics-bind", "127.0.0.1:0")
    port = metrics_port(srv)

    def dispatched():
        now, _ = scrape(port)
        out = now.get("bustle_garage_dispatched", {}).get(frozenset({("garage", "g0")}), 0)
        return now if out == 18 else None  # the content plan fills the garage's capacity

    samples = wait_for(dispatched, 10.0, "18 vehicles dispatched from g0 in the metrics")
    vehicles = sum(v for k, v in samples["bustle_entities"].items() if ("kind", "vehicle") in k)
    assert vehicles == 18
    assert value(samples, "bustle_garage_capacity", garage="g0") == 18
    gates = {dict(k)["gate"]: v for k, v in samples["bustle_garage_gate_steps_total"].items()
             if ("garage", "g0") in k}
    assert set(gates) == {"dispatched", "queue_empty", "cooldown", "capacity", "entrance_blocked", "per_step_max"}
    assert gates["dispatched"] + gates["per_step_max"] >= 1
    assert sum(samples["bustle_vehicle_policies"].values()) == 18


def test_healthz_turns_unhealthy_while_the_sim_thread_is_stalled(start_server):
    # 20 Hz; step 30 comes 1.5 s after start, then the sim thread sleeps 3 s;
    # /healthz allows 10 steps (0.5 s), but at least 1 s.
    srv = start_server("--clock", "realtime", "--rate", "20", "--metrics-bind", "127.0.0.1:0",
                       "--health-max-lag-steps", "10", "--debug-stall-at-step", "30", "--debug-stall-ms", "3000")
    port = metrics_port(srv)
    status, body = http_get(port, "/healthz")
    assert status == 200 and body.startswith("ok"), body
    status, body = wait_for(lambda: (lambda r: r if r[0] == 503 else None)(http_get(port, "/healthz")), 6.0,
                            "/healthz to answer 503 during the stall")
    assert "stalled" in body, body
    samples, _ = scrape(port)  # the endpoint itself keeps answering
    assert value(samples, "bustle_healthy") == 0
    wait_for(lambda: http_get(port, "/healthz")[0] == 200, 6.0, "/healthz to recover after the stall")
    # Readiness is not about the stall.
    assert http_get(port, "/readyz")[0] == 200


def test_paused_and_manual_servers_are_healthy(start_server):
    srv = start_server("--clock", "manual", "--metrics-bind", "127.0.0.1:0", "--health-max-lag-steps", "1")
    port = metrics_port(srv)
    time.sleep(1.5)  # no step at all for longer than the limit (1 s)
    status, body = http_get(port, "/healthz")
    assert status == 200, body


def test_readyz_is_false_while_a_restore_is_in_flight(start_server):
    srv = start_server("--clock", "manual", "--metrics-bind", "127.0.0.1:0", "--debug-restore-delay-ms", "2500")
    port = metrics_port(srv)
    status, body = http_get(port, "/readyz")
    assert status == 200 and body.startswith("ready"), body
    with operator(srv) as s:
        assert s.step(3).accepted
        assert run_job(s, "Checkpoint", "ready-test")[-1].state == JobState.Committed
        assert s.step(2).accepted
        r = s.command("Restore", name="ready-test")
        assert r.status == CommandStatus.Accepted, r
        status, body = http_get(port, "/readyz")
        assert status == 503 and "restore" in body, body
        seen = s.wait_job(r.job.job_id, timeout=10.0)
        assert seen[-1].state == JobState.Applied, seen
    wait_for(lambda: http_get(port, "/readyz")[0] == 200, 3.0, "/readyz after the restore")
    samples, _ = scrape(port)
    assert value(samples, "bustle_snapshot_jobs_total", kind="restore", state="applied") == 1
    assert value(samples, "bustle_snapshot_jobs_total", kind="checkpoint", state="committed") == 1
    assert value(samples, "bustle_snapshot_restore_duration_seconds_count") == 1
    assert value(samples, "bustle_snapshot_restore_duration_seconds_sum") >= 2.5
    assert bucket(samples, "bustle_snapshot_restore_duration_seconds", 2.5) == 0
    assert bucket(samples, "bustle_snapshot_restore_duration_seconds", 120.0) == 1
    assert value(samples, "bustle_snapshot_commit_duration_seconds_count") == 1
    assert value(samples, "bustle_restores_in_flight") == 0


def test_json_logs_parse_line_by_line_with_event_names(start_server):
    srv = start_server("--clock", "manual", "--log-format", "json", "--log-level", "debug")
    with operator(srv) as s:
        assert s.command("Step", count=0).status == CommandStatus.Rejected
        spawn = manual_command(s, "SpawnPedestrian")  # the core logs the handle's states
        assert spawn.accepted and spawn.handle != 0, spawn
        assert s.step(10).accepted
        assert run_job(s, "Checkpoint", "json-log")[-1].state == JobState.Committed
        assert run_job(s, "Restore", "json-log")[-1].state == JobState.Applied
    time.sleep(0.2)
    srv.stop()
    events = set()
    lines = srv.stderr_path.read_text().splitlines()
    assert lines
    for line in lines:
        record = json.loads(line)  # every line is one JSON object
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$", record["ts"]), record
        assert record["level"] in ("trace", "debug", "info", "warning", "error", "critical")
        assert isinstance(record["msg"], str)
        if "event" in record:
            events.add(record["event"])
    for expected in ("client_connected", "client_joined", "command_rejected", "checkpoint_committed",
                     "restore_validated", "restore_applied", "client_disconnect", "shutdown_requested", "stopped",
                     "spawn_state"):
        assert expected in events, f"no {expected} event in {sorted(events)}"


def test_text_logs_have_utc_timestamps_with_offset(start_server):
    srv = start_server("--clock", "manual")
    srv.stop()
    first = srv.stderr_path.read_text().splitlines()[0]
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00 ", first), first


def test_sighup_is_logged_and_ignored(start_server):
    srv = start_server("--clock", "manual")
    srv.proc.send_signal(signal.SIGHUP)
    time.sleep(0.3)
    assert srv.proc.poll() is None, f"SIGHUP ended the server: {srv.stderr()}"
    with operator(srv) as s:
        assert s.step(1).accepted
    assert "SIGHUP ignored" in srv.stderr()
    srv.stop()  # and SIGTERM still shuts down cleanly (exit 0 within 3 s)


def test_sigterm_with_checkpoint_on_exit_restores_to_the_same_digest(start_server, tmp_path):
    db = tmp_path / "exit.db"
    srv = start_server("--clock", "manual", "--snapshot-db", str(db), "--checkpoint-on-exit", "on-exit")
    with operator(srv) as s:
        assert s.step(7).accepted
        s.send_command("SetPedestrianTarget", count=40)  # applies in the next step: state a fresh world lacks
        assert s.step(3).accepted
        st = s.stats()
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        seen = s.wait_closed(timeout=5.0)
        errors = [m for m in seen if isinstance(m, ErrorMessage)]
        assert errors and errors[-1].code == ErrorCode.ServerShuttingDown, seen
    assert srv.proc.wait(timeout=5.0) == 0, srv.stderr()
    srv.exit_seconds = time.monotonic() - t0
    assert srv.exit_seconds <= 3.0
    assert "checkpoint 'on-exit' committed" in srv.stderr_path.read_text()

    again = start_server("--clock", "manual", "--snapshot-db", str(db))
    with operator(again) as s:
        assert run_job(s, "Restore", "on-exit")[-1].state == JobState.Applied
        restored = s.stats()
        assert (restored.step, restored.digest) == (st.step, st.digest)


def test_a_second_sigterm_exits_at_once(start_server):
    # The sim thread sleeps 3 s after step 2, so the graceful shutdown the
    # first SIGTERM starts cannot finish before the second one arrives.
    srv = start_server("--clock", "realtime", "--debug-stall-at-step", "2", "--debug-stall-ms", "3000")
    wait_for(lambda: "debug_stall" in srv.stderr(), 3.0, "the sim thread to start its stall")
    t0 = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    assert srv.proc.poll() is None, "the first SIGTERM should still be shutting down"
    srv.proc.send_signal(signal.SIGTERM)
    code = srv.proc.wait(timeout=5.0)
    elapsed = time.monotonic() - t0
    srv.exit_seconds = elapsed
    assert code == 128 + signal.SIGTERM, srv.stderr()
    assert elapsed < 2.0, elapsed
    srv.killed = True  # exempt from the exit-0 check at teardown


def test_bustle_status_honours_bustle_host_and_port(start_server):
    cli = os.environ.get("BUSTLE_CLI")
    if not cli:
        pytest.skip("BUSTLE_CLI is not set")
    srv = start_server("--clock", "manual")
    p = subprocess.run([cli, "status"], env=clean_env({"BUSTLE_HOST": "127.0.0.1", "BUSTLE_PORT": str(srv.port)}),
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([cli, "status"], env=clean_env({"BUSTLE_PORT": "0"}), capture_output=True, text=True, timeout=10)
    assert p.returncode != 0 and "BUSTLE_PORT" in p.stderr, p.stderr


class FakeSidecar:
    """The Agones SDK sidecar's REST API on loopback: records every POST and
    GET; GET /gameserver answers ``gameserver`` (set it to allocate)."""

    def __init__(self):
        self.calls = queue.Queue()
        self.gameserver = {"object_meta": {"labels": {}}, "status": {"state": "Ready"}}
        calls = self.calls
        sidecar = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                calls.put((self.path, time.monotonic(), b"", None))
                body = json.dumps(sidecar.gameserver).encode()
                self.send_response(200 if self.path == "/gameserver" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                calls.put((self.path, time.monotonic(), body, self.headers.get("Content-Type")))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def next_call(self, timeout):
        return self.calls.get(timeout=timeout)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_agones_ready_then_periodic_health_then_shutdown(start_server):
    sidecar = FakeSidecar()
    try:
        srv = start_server("--clock", "realtime", "--agones", "--agones-health-ms", "300",
                           env={"AGONES_SDK_HTTP_PORT": str(sidecar.port)})
        path, t_ready, body, ctype = sidecar.next_call(timeout=5.0)
        assert path == "/ready" and body == b"{}" and ctype == "application/json"
        health = []
        while len(health) < 3:
            path, t, _, _ = sidecar.next_call(timeout=3.0)
            assert path == "/health", path
            health.append(t)
        gaps = [b - a for a, b in zip([t_ready, *health], health)]
        assert all(0.2 <= g <= 3.0 for g in gaps), gaps  # 0.3 s apart, with room for a busy machine
        srv.stop()
        paths = []
        while not sidecar.calls.empty():
            paths.append(sidecar.calls.get()[0])
        assert paths and paths[-1] == "/shutdown" and "/ready" not in paths, paths
    finally:
        sidecar.close()


def allocate(sidecar, district, peers=None):
    meta = {"labels": {"bustle.dev/district": district}}
    if peers:
        meta["annotations"] = {"bustle.dev/district-peers": peers}
    sidecar.gameserver = {"object_meta": meta, "status": {"state": "Allocated"}}


def test_agones_district_servers_take_their_district_from_the_allocation(start_server, tmp_path):
    """--agones-district: Ready, Health while unallocated, then the district
    (label) and its peers (annotation) from GET /gameserver; Ready is never
    sent again (that would put an allocated server back in the Fleet)."""
    city = write_district_city(tmp_path / "city.json", districts=2, grid=6, agents=200)
    sidecars = [FakeSidecar(), FakeSidecar()]
    try:
        allocate(sidecars[0], "d0")
        d0 = start_server("--config", str(city), "--clock", "fast", "--agones",
                          "--agones-district", "--agones-health-ms", "200",
                          env={"AGONES_SDK_HTTP_PORT": str(sidecars[0].port)})
        links = [l for l in d0.startup_lines if l.startswith("bustle-server district d0 links on")]
        assert links, d0.startup_lines
        port = links[0].rsplit(":", 1)[1]
        # d1 starts unallocated: it waits, healthy, until the allocation names it.
        threading.Timer(1.0, allocate, (sidecars[1], "d1", f"d0=127.0.0.1:{port}")).start()
        d1 = start_server("--config", str(city), "--clock", "fast", "--agones",
                          "--agones-district", "--agones-health-ms", "200",
                          env={"AGONES_SDK_HTTP_PORT": str(sidecars[1].port)})
        with d1.connect() as s:
            s.hello("it-agones-district")
            deadline = time.monotonic() + 20
            while s.stats().step < 200:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        calls = []
        while not sidecars[1].calls.empty():
            calls.append(sidecars[1].calls.get()[0])
        assert calls[0] == "/ready" and calls.count("/ready") == 1, calls
        assert "/gameserver" in calls and "/health" in calls, calls
        assert "allocated as district 'd1' (peers 'd0=127.0.0.1:" in d1.stderr()
        d1.stop()
        d0.stop()
    finally:
        for s in sidecars:
            s.close()


def test_agones_unreachable_sidecar_is_not_fatal(start_server):
    # Nothing listens there: the server logs, keeps serving and exits 0.
    srv = start_server("--clock", "manual", "--agones", "--agones-health-ms", "200",
                       env={"AGONES_SDK_HTTP_PORT": "9"})
    time.sleep(0.5)
    with operator(srv) as s:
        assert s.step(1).accepted
    assert "agones:" in srv.stderr()
    srv.stop()


def test_metrics_bind_errors_refuse_to_start(start_server):
    bad = start_server("--metrics-bind", "localhost", may_refuse=True)
    assert bad.refused and bad.returncode == 2
    assert "--metrics-bind" in bad.stderr()
    busy = start_server("--clock", "manual", "--metrics-bind", "127.0.0.1:0")
    port = metrics_port(busy)
    clash = start_server("--clock", "manual", "--metrics-bind", f"127.0.0.1:{port}", may_refuse=True)
    assert clash.refused and clash.returncode == 1, clash.stderr()


def test_frame_metrics_show_what_the_interest_coverage_poses(start_server, tmp_path):
    """bustle_frame_entities and bustle_frame_coverage_discs: a whole-city
    client makes the frame hold everyone; once its one observer watches one
    of two rings 1 km apart, the frame poses that ring only."""
    from test_stream import _two_rings_city
    srv = start_server("--clock", "manual", "--metrics-bind", "127.0.0.1:0",
                       "--config", _two_rings_city(tmp_path / "rings.json"))
    port = metrics_port(srv)
    with srv.connect() as op, srv.connect() as c:
        op.hello("it-frame-metrics-op", role="operator")
        c.hello("it-frame-metrics")
        op.step(10)
        everyone = op.stats().pedestrians
        assert everyone > 0
        c.subscribe()
        c.next_delta(timeout=5.0)

        def posed(entities, discs):
            def check():
                samples, _ = scrape(port)
                got = (value(samples, "bustle_frame_entities"), value(samples, "bustle_frame_coverage_discs"))
                return got if entities(got[0]) and got[1] == discs else None
            return check

        wait_for(posed(lambda n: n == everyone, 0), 10.0, "a whole frame in the metrics")
        c.update_interest(observers=[Observer(15.0, 5.0, radius_m=40.0)])
        c.next_delta(timeout=5.0)
        n, _ = wait_for(posed(lambda n: 0 < n < everyone, 1), 10.0, "a frame of the west ring in the metrics")
        assert n < everyone
