"""Shared fixtures of the Python client unit tests."""

import socket

import pytest

import server_frames as sf
from bustle_client import Session, codec


class FakeServer:
    """The server end of a socketpair: reads client frames, writes server frames."""

    def __init__(self, sock):
        self.sock = sock
        self.sock.settimeout(2.0)
        self.decoder = codec.FrameDecoder(codec.SERVER_MAX_INBOUND_FRAME_BYTES)

    def read(self):
        while True:
            payload = self.decoder.next()
            if payload is not None:
                return sf.parse_client_frame(payload)
            data = self.sock.recv(65536)
            assert data, "client closed"
            self.decoder.feed(data)

    def send(self, *payloads):
        self.sock.sendall(b"".join(codec.encode_frame(p) for p in payloads))


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    session = Session(a, timeout=2.0)
    server = FakeServer(b)
    yield session, server
    a.close()
    b.close()
