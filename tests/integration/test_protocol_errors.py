"""Protocol violations: Error frame, then that connection (only) is closed."""

import random
import struct
import time

import flatbuffers
import pytest
from bustle.wire import ClientFrame, Pause

from bustle_client import (
    PROTOCOL_VERSION,
    SERVER_MAX_INBOUND_FRAME_BYTES,
    ErrorCode,
    ErrorMessage,
    ServerError,
    codec,
)

CLOSE_TIMEOUT = 3.0


def expect_error_then_close(session, code):
    seen = session.wait_closed(timeout=CLOSE_TIMEOUT)
    errors = [m for m in seen if isinstance(m, ErrorMessage)]
    assert errors and errors[0].code == code, f"expected Error {code.name} then EOF, got {seen}"
    assert seen[-1] == errors[0] and len(errors) == 1, f"frames after the Error: {seen}"
    assert errors[0].message, "Error frames should say what was wrong"


@pytest.mark.parametrize(
    "version", [1, 2, PROTOCOL_VERSION + 1], ids=["v1-client", "v2-client", "newer"]
)
def test_wrong_protocol_version_is_rejected_and_closed(server, version):
    """A protocol v1 or v2 client (or a newer one) is refused at the handshake;
    an older one is told what changed (a v2 decoder would refuse a corpse
    change mid-stream, so it is stopped here instead)."""
    assert PROTOCOL_VERSION == 3
    with server.connect() as s:
        with pytest.raises(ServerError) as info:
            s.hello("it-version", protocol_version=version)
        assert info.value.code == ErrorCode.ProtocolVersionMismatch
        if version < PROTOCOL_VERSION:
            assert "corpses" in info.value.message, info.value.message
        assert s.wait_closed(timeout=CLOSE_TIMEOUT) == []


def garbage_payload(seed=1234, size=64):
    data = bytearray(random.Random(seed).randbytes(size))
    assert data[4:8] != b"BCL1"
    return bytes(data)


def corrupt_payload_with_identifier():
    """Right identifier, root offset pointing far outside the buffer."""
    return struct.pack("<I", 0x7FFFFFF0) + b"BCL1" + bytes(24)


def unknown_union_payload():
    """A well-formed ClientFrame whose message type is not in the union."""
    b = flatbuffers.Builder(32)
    Pause.Start(b)
    table = Pause.End(b)
    ClientFrame.Start(b)
    ClientFrame.AddMessageType(b, 200)
    ClientFrame.AddMessage(b, table)
    b.Finish(ClientFrame.End(b), file_identifier=b"BCL1")
    return bytes(b.Output())


@pytest.mark.parametrize("payload, code", [
    (garbage_payload(), ErrorCode.MalformedFrame),
    (corrupt_payload_with_identifier(), ErrorCode.MalformedFrame),
    (unknown_union_payload(), ErrorCode.UnknownMessage),
], ids=["random-bytes", "bad-offsets", "unknown-union-type"])
def test_bad_frame_closes_only_that_connection(server, payload, code):
    with server.connect() as watcher, server.connect() as bad:
        watcher.hello("it-watcher")
        watcher.subscribe()
        before = [watcher.next_delta(timeout=5.0).step for _ in range(3)]

        bad.hello("it-bad")
        bad.send_payload(payload)
        expect_error_then_close(bad, code)

        after = [watcher.next_delta(timeout=5.0).step for _ in range(10)]
        steps = before + after
        assert all(b > a for a, b in zip(steps, steps[1:])), f"watcher steps: {steps}"


def test_oversize_length_prefix_gets_frame_too_large(server):
    with server.connect() as watcher, server.connect() as s:
        watcher.hello("it-watcher")
        s.hello("it-big")
        s.send_raw(struct.pack("<I", SERVER_MAX_INBOUND_FRAME_BYTES + 1))
        expect_error_then_close(s, ErrorCode.FrameTooLarge)
        assert watcher.stats().step >= 0  # the server still serves others


def test_oversize_before_hello_gets_frame_too_large(server):
    with server.connect() as s:
        s.send_raw(struct.pack("<I", 64 << 20))
        expect_error_then_close(s, ErrorCode.FrameTooLarge)


@pytest.mark.parametrize("first", [
    codec.build_subscribe(),
    codec.build_update_interest(),
    codec.build_command(1, "QueryStats"),
], ids=["subscribe", "update-interest", "command"])
def test_first_frame_must_be_hello(server, first):
    with server.connect() as s:
        s.send_payload(first)
        expect_error_then_close(s, ErrorCode.HandshakeRequired)


def test_handshake_deadline(start_server):
    srv = start_server("--clock", "fast", "--handshake-timeout-ms", "300")
    with srv.connect() as quiet, srv.connect() as prompt:
        prompt.hello("it-prompt")
        t0 = time.monotonic()
        expect_error_then_close(quiet, ErrorCode.HandshakeTimeout)
        elapsed = time.monotonic() - t0
        assert 0.2 <= elapsed <= 2.5, f"closed after {elapsed:.2f} s with a 300 ms deadline"
        # a client that completed its handshake is not subject to the deadline
        time.sleep(0.4)
        assert prompt.stats().step >= 0


def test_default_handshake_deadline_is_not_short(server):
    """Default deadline is 5 s: a client that waits 1 s before Hello is still welcome."""
    with server.connect() as s:
        time.sleep(1.0)
        assert s.hello("it-slow").protocol_version == PROTOCOL_VERSION
