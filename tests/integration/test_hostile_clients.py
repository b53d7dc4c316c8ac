"""Hostile and faulty clients against the real server.

Every per-client resource is bounded and one bad client never affects the
city or the other clients: a client that pipelines commands and never reads
the answers, a subscriber that never reads, a retry loop against a full
server, and client names of a megabyte. Memory is read from /proc (VmRSS).
"""

import os
import socket
import time

import pytest

from bustle_client import ErrorCode, ErrorMessage, ServerError, Session, codec

# The bound docs/protocol.md states: one hostile client never grows the server by more than
# its outbound budget (8 MiB soft, 16 MiB hard) plus buffers; 64 MB leaves
# room for the allocator and the test's own connections.
RSS_GROWTH_MAX = 64 << 20
OVERFLOW_MS = 1500


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def raw_client(server, name: str, subscribe: bool = False, motion_tolerance_mm=None,
               receive_buffer_bytes=None) -> socket.socket:
    """A joined viewer on a raw socket that this test reads only when it wants
    (with `receive_buffer_bytes`, a receive window that small, set before
    connecting so the kernel cannot absorb the backlog)."""
    sock = socket.socket(socket.AF_INET6 if ":" in server.host else socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer_bytes is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_bytes)
    sock.settimeout(5.0)
    sock.connect((server.host, server.port))
    sock.sendall(codec.encode_frame(codec.build_hello(name)))
    decoder = codec.FrameDecoder(codec.MAX_INBOUND_FRAME_BYTES)
    while decoder.next() is None:  # the Welcome
        data = sock.recv(65536)
        assert data, "server closed before Welcome"
        decoder.feed(data)
    if subscribe:
        sock.sendall(codec.encode_frame(codec.build_subscribe(motion_tolerance_mm=motion_tolerance_mm)))
    return sock


def flood_without_reading(sock: socket.socket, seconds: float, server) -> tuple:
    """Sends QueryStats commands as fast as the server takes them for
    `seconds`, never reading. Returns (bytes the kernel accepted, peak RSS)."""
    frame = codec.encode_frame(codec.build_command(1, "QueryStats"))
    batch = frame * 256
    sock.setblocking(False)
    sent, peak = 0, 0
    deadline = time.monotonic() + seconds
    next_sample = 0.0
    while time.monotonic() < deadline:
        try:
            sent += sock.send(batch)
        except BlockingIOError:
            time.sleep(0.005)  # the server stopped reading: TCP pushes back
        except (ConnectionResetError, BrokenPipeError):
            break
        now = time.monotonic()
        if now >= next_sample:
            peak = max(peak, rss_bytes(server.proc.pid))
            next_sample = now + 0.1
    sock.setblocking(True)
    return sent, max(peak, rss_bytes(server.proc.pid))


def read_until_closed(sock: socket.socket, timeout: float) -> list:
    """Every message until EOF (decoded; Error frames as ErrorMessage)."""
    sock.settimeout(timeout)
    decoder = codec.FrameDecoder(codec.MAX_INBOUND_FRAME_BYTES)
    messages = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = sock.recv(1 << 20)
        except (ConnectionResetError, socket.timeout):
            break
        if not data:
            break
        decoder.feed(data)
        for payload in decoder:
            messages.append(codec.decode_server_frame(payload))
    return messages


def assert_closed_for_overflow(srv):
    deadline = time.monotonic() + 3.0
    while "closing: OutboundOverflow" not in srv.stderr():
        assert time.monotonic() < deadline, f"no OutboundOverflow close in the log:\n{srv.stderr()[-1500:]}"
        time.sleep(0.05)


@pytest.fixture
def hostile_server(start_server):
    return start_server("--clock", "realtime", "--client-overflow-disconnect-ms", str(OVERFLOW_MS))


@pytest.mark.parametrize("subscribe", [False, True], ids=["unsubscribed", "subscribed"])
def test_pipelined_unread_results_stay_bounded(hostile_server, subscribe):
    """Defect: the answers of a client that never reads were queued without
    limit (1.2 GB in 11 s). Now every queued byte counts against the client's
    budget: reading pauses over the soft cap, the client is closed with
    OutboundOverflow, RSS stays bounded and other clients are served."""
    srv = hostile_server
    with srv.connect() as other:
        other.hello("bystander")
        base = rss_bytes(srv.proc.pid)
        hostile = raw_client(srv, "pipeliner", subscribe=subscribe)
        sent, peak = flood_without_reading(hostile, 1.0, srv)
        assert peak - base < RSS_GROWTH_MAX, (
            f"server RSS grew {(peak - base) >> 20} MiB under one client that does not read "
            f"({sent} bytes of commands accepted)")
        # Backpressure: the server stopped reading, so the client could only
        # hand the kernel a bounded amount of commands.
        assert sent < 64 << 20, f"{sent} bytes of commands accepted: the server kept reading"
        t0 = time.monotonic()
        stats = other.stats(timeout=2.0)
        assert time.monotonic() - t0 < 1.0, "a bystander waited for the hostile client"
        assert stats.clients >= 2
        # Still not reading: past the overflow time the client is closed. The
        # Error frame reaches it only if it reads before the close timer.
        time.sleep(OVERFLOW_MS / 1000.0 + 0.3)
        messages = read_until_closed(hostile, timeout=10.0)
        errors = [m for m in messages if isinstance(m, ErrorMessage)]
        assert all(e.code == ErrorCode.OutboundOverflow for e in errors), [e.code for e in errors]
        hostile.close()
        assert "'pipeliner' joined" in srv.stderr()
        assert_closed_for_overflow(srv)
        # The city never noticed.
        assert other.stats(timeout=2.0).step > stats.step


def test_slow_subscriber_is_bounded_and_closed(start_server):
    """A subscriber that never reads on a fast clock: deltas are coalesced,
    the server never queues more than the budget, and the client is closed
    with OutboundOverflow after the configured time."""
    # Tolerance 0 (a motion record whenever the prediction is off by a
    # millimetre) and a 64 KiB cap: v2 deltas at the default tolerance are so
    # small that the kernel's socket buffers alone would take minutes to fill.
    srv = start_server("--clock", "fast", "--client-overflow-disconnect-ms", str(OVERFLOW_MS),
                       "--client-outbound-max-bytes", "65536")
    base = rss_bytes(srv.proc.pid)
    # A 4 KiB receive window: the backlog stays in the server's queue, where
    # the budget sees it, instead of in megabytes of kernel buffers (which
    # took seconds to fill on a loaded machine and let the test time out).
    slow = raw_client(srv, "never-reads", subscribe=True, motion_tolerance_mm=0, receive_buffer_bytes=4096)
    peak = base
    # Never read until the server has closed it (within the overflow time of
    # passing the cap; the deadline only bounds a broken server).
    deadline = time.monotonic() + OVERFLOW_MS / 1000.0 + 30.0
    while "closing: OutboundOverflow" not in srv.stderr():
        assert time.monotonic() < deadline, f"no OutboundOverflow close in the log:\n{srv.stderr()[-1500:]}"
        peak = max(peak, rss_bytes(srv.proc.pid))
        time.sleep(0.05)
    assert peak - base < RSS_GROWTH_MAX, f"server RSS grew {(peak - base) >> 20} MiB under a slow reader"
    messages = read_until_closed(slow, timeout=10.0)
    errors = [m for m in messages if isinstance(m, ErrorMessage)]
    assert all(e.code == ErrorCode.OutboundOverflow for e in errors), [e.code for e in errors]
    slow.close()
    assert_closed_for_overflow(srv)


def test_refused_connections_do_not_hold_slots(start_server):
    """Defect: connections answered ServerFull stayed in the session list for
    about a second and counted against --max-clients, so a client retrying
    faster than that never got a freed slot."""
    srv = start_server("--clock", "realtime", "--max-clients", "2")
    a, b = srv.connect(), srv.connect()
    a.hello("first")
    b.hello("second")
    refused = []
    for k in range(5):  # refused connections the clients keep open for a while
        s = Session.connect(srv.host, srv.port)
        s.send_payload(codec.build_hello(f"refused-{k}"))
        with pytest.raises(ServerError) as info:
            s.recv(timeout=3.0)
        assert info.value.code == ErrorCode.ServerFull
        refused.append(s)
    assert b.stats(timeout=2.0).clients == 2, "refused connections must not count as clients"
    a.close()
    # The freed slot is usable at once, while the refused sockets are still open.
    deadline = time.monotonic() + 2.0
    joined = None
    while joined is None and time.monotonic() < deadline:
        c = srv.connect()
        try:
            c.hello("retry")
            joined = c
        except Exception:
            c.close()
            time.sleep(0.02)
    assert joined is not None, "a freed slot stayed taken while refused connections were open"
    assert b.stats(timeout=2.0).clients == 2
    for s in refused:
        s.close()
    joined.close()
    b.close()


def test_long_client_names_are_refused_and_never_logged_whole(start_server, tmp_path):
    """Defect: the client name from Hello was logged whole (20 names of 1 MB
    wrote 20 MB of stderr). Names over 256 bytes are refused with a clear
    error; shorter ones are logged escaped and cut to 64 bytes."""
    srv = start_server("--clock", "realtime")
    before = os.path.getsize(srv.stderr_path)
    for _ in range(20):
        with srv.connect() as s:
            s.send_payload(codec.build_hello("n" * 1_000_000), timeout=5.0)
            seen = s.wait_closed(timeout=5.0)
            errors = [m for m in seen if isinstance(m, ErrorMessage)]
            assert errors and errors[0].code == ErrorCode.MalformedFrame, seen
            assert "client_name" in errors[0].message and "256" in errors[0].message, errors[0].message
    with srv.connect() as s:
        s.hello("\x1b[31mred\nforged log line " + "x" * 200)
        s.stats(timeout=2.0)
    grown = os.path.getsize(srv.stderr_path) - before
    assert grown < 64 << 10, f"stderr grew {grown} bytes for 21 connections"
    log = srv.stderr()
    assert "\\x1b[31mred\\x0aforged log line" in log, log[-800:]
    assert "(225 bytes)" in log, log[-800:]
    assert "\nforged log line" not in log


def test_catch_up_after_a_burst_reaches_the_final_step(start_server):
    """Defect (streaming): a client over its outbound cap during a burst never
    received the final state until another step ran. With a manual clock no
    further step comes: the coalesced delta must be sent when the backlog
    drains."""
    srv = start_server("--clock", "manual", "--client-outbound-max-bytes", "4096")
    with srv.connect() as op:
        op.hello("operator", role="operator")
        viewer = raw_client(srv, "burst-viewer", subscribe=True)
        start = op.stats(timeout=2.0).step
        burst = 30000
        assert op.step(burst, timeout=10.0).status.name == "Accepted"
        deadline = time.monotonic() + 60.0
        while op.stats(timeout=2.0).step < start + burst:
            assert time.monotonic() < deadline, "the burst did not finish"
            time.sleep(0.05)
        final = op.stats(timeout=2.0)
        # Only now does the viewer read; nothing else will be published.
        viewer.settimeout(5.0)
        decoder = codec.FrameDecoder(codec.MAX_INBOUND_FRAME_BYTES)
        last = None
        read_deadline = time.monotonic() + 10.0
        while time.monotonic() < read_deadline and (last is None or last.step < final.step):
            try:
                data = viewer.recv(1 << 20)
            except socket.timeout:
                break
            assert data, "server closed the viewer"
            decoder.feed(data)
            for payload in decoder:
                msg = codec.decode_server_frame(payload)
                if type(msg).__name__ == "Delta":
                    last = msg
        assert last is not None, "no delta at all"
        assert last.step == final.step, f"the viewer stopped at step {last.step}, the world is at {final.step}"
        assert last.digest == final.digest
        viewer.close()


def test_memory_returns_after_a_spike_of_hostile_clients(hostile_server):
    """Defect: RSS stayed at 300-520 MB after 100 hostile clients left. Their
    buffers are freed when they go, and the server hands the freed memory
    back to the system (the allocator would otherwise keep it)."""
    import threading

    srv = hostile_server
    base = rss_bytes(srv.proc.pid)
    clients = [raw_client(srv, f"spike-{k}") for k in range(16)]
    peaks = []

    def flood(sock):
        peaks.append(flood_without_reading(sock, 1.0, srv)[1])

    threads = [threading.Thread(target=flood, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    peak = max(peaks)
    for c in clients:
        c.close()
    deadline = time.monotonic() + 5.0
    after = rss_bytes(srv.proc.pid)
    while after - base > 24 << 20 and time.monotonic() < deadline:
        time.sleep(0.1)
        after = rss_bytes(srv.proc.pid)
    assert after - base <= 24 << 20, (
        f"RSS {base >> 20} MiB before, {peak >> 20} MiB at the peak, still {after >> 20} MiB "
        f"5 s after 16 hostile clients left")
    with srv.connect() as s:
        s.hello("after-the-spike")
        assert s.stats(timeout=2.0).clients == 1
