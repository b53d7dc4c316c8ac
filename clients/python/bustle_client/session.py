"""Blocking TCP session with a Bustle server.

One socket, one thread, no background work: every call reads what it needs
from the socket within its own deadline. Frames that arrive while waiting for
something else are kept (deltas while a command waits for its result, results
of earlier commands while waiting for a delta), so nothing is lost.

    with Session.connect("127.0.0.1", 7777) as s:
        welcome = s.hello("soak-1", role="operator")
        s.subscribe()
        for delta in s.deltas(timeout=2.0):
            ...
        print(s.query_stats().stats.step)

With the fast clock a subscribed session always has a socket buffer full of
deltas in front of any CommandResult; commands still work but their latency is
the time to read that backlog. Use a second, unsubscribed session for control.
"""

from __future__ import annotations

import collections
import socket
import time
from typing import Dict, Iterator, List, Optional

from . import codec
from .messages import (
    BustleError,
    BustleTimeout,
    CommandResult,
    ConnectionClosed,
    Delta,
    EntityId,
    ErrorMessage,
    ProtocolError,
    ServerError,
    Stats,
    Welcome,
)

DEFAULT_TIMEOUT = 5.0
#: Deltas kept while the caller waits for something else; more is an error
#: (read deltas, or do not subscribe) rather than silent loss or unbounded memory.
MAX_BUFFERED_DELTAS = 100_000


class Session:
    """A connection to one Bustle server. Use :meth:`connect` to create one."""

    def __init__(self, sock: socket.socket, *, timeout: float = DEFAULT_TIMEOUT,
                 max_frame_bytes: int = codec.MAX_INBOUND_FRAME_BYTES):
        self._sock = sock
        self.timeout = timeout
        self._decoder = codec.FrameDecoder(max_frame_bytes)
        self._deltas: collections.deque = collections.deque()
        self._results: Dict[int, CommandResult] = {}
        self._next_request_id = 1
        self._eof = False
        self.welcome: Optional[Welcome] = None
        #: The Error frame the server sent before closing, if any.
        self.server_error: Optional[ErrorMessage] = None

    # ------------------------------------------------------------------ setup

    @classmethod
    def connect(cls, host: str, port: int, timeout: float = DEFAULT_TIMEOUT, **kwargs) -> "Session":
        """Open a TCP connection; ``timeout`` bounds the connect and is the default wait."""
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except socket.timeout:
            raise BustleTimeout(f"connect to {host}:{port} timed out after {timeout} s") from None
        except OSError as exc:
            raise ConnectionClosed(f"cannot connect to {host}:{port}: {exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock, timeout=timeout, **kwargs)

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def closed_by_server(self) -> bool:
        return self._eof

    # -------------------------------------------------------------- transport

    def _deadline(self, timeout: Optional[float]) -> float:
        return time.monotonic() + (self.timeout if timeout is None else timeout)

    def send_raw(self, data: bytes, timeout: Optional[float] = None) -> None:
        """Send bytes as they are (tests use this for deliberately bad frames)."""
        self._sock.settimeout(self.timeout if timeout is None else timeout)
        try:
            self._sock.sendall(data)
        except socket.timeout:
            raise BustleTimeout(f"sending {len(data)} bytes timed out") from None
        except OSError as exc:  # BrokenPipe, ConnectionReset
            raise ConnectionClosed(f"send failed: {exc}") from exc

    def send_payload(self, payload: bytes, timeout: Optional[float] = None) -> None:
        """Send one FlatBuffer payload with its length prefix."""
        self.send_raw(codec.encode_frame(payload), timeout)

    def _read_message(self, deadline: float, what: str):
        """Next decoded message from the wire (Error frames are returned, not raised)."""
        while True:
            payload = self._decoder.next()
            if payload is not None:
                return codec.decode_server_frame(payload)
            if self._eof:
                raise ConnectionClosed(self._closed_text(what))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BustleTimeout(f"timed out waiting for {what}")
            self._sock.settimeout(remaining)
            try:
                data = self._sock.recv(1 << 16)
            except socket.timeout:
                raise BustleTimeout(f"timed out waiting for {what}") from None
            except ConnectionResetError:
                data = b""
            except OSError as exc:
                raise ConnectionClosed(f"receive failed while waiting for {what}: {exc}") from exc
            if not data:
                self._eof = True
                continue  # drain complete frames already buffered, then raise
            self._decoder.feed(data)

    def _closed_text(self, what: str) -> str:
        text = f"server closed the connection while waiting for {what}"
        if self._decoder.buffered_bytes:
            text += f" ({self._decoder.buffered_bytes} bytes of an incomplete frame left)"
        return text

    def _dispatch(self, msg) -> None:
        """Keep a message nobody asked for yet; raise on server errors."""
        if isinstance(msg, ErrorMessage):
            self.server_error = msg
            raise msg.to_exception()
        if isinstance(msg, Delta):
            if len(self._deltas) >= MAX_BUFFERED_DELTAS:
                raise BustleError(
                    f"more than {MAX_BUFFERED_DELTAS} unread deltas buffered; "
                    "read them with next_delta()/deltas()")
            self._deltas.append(msg)
        elif isinstance(msg, CommandResult):
            self._results[msg.request_id] = msg
        elif isinstance(msg, Welcome):
            raise ProtocolError("unexpected second Welcome from the server")

    def recv(self, timeout: Optional[float] = None):
        """Next message from the wire: Welcome, Delta or CommandResult.

        Does not look at buffered deltas/results. An Error frame raises
        ServerError; EOF raises ConnectionClosed.
        """
        msg = self._read_message(self._deadline(timeout), "a server message")
        if isinstance(msg, ErrorMessage):
            self.server_error = msg
            raise msg.to_exception()
        return msg

    def wait_closed(self, timeout: Optional[float] = None) -> List[object]:
        """Read until the server closes the connection; returns what arrived first.

        Error frames are returned (as ErrorMessage), not raised. Raises
        BustleTimeout if the connection is still open at the deadline.
        """
        deadline = self._deadline(timeout)
        seen: List[object] = []
        while True:
            try:
                msg = self._read_message(deadline, "the server to close the connection")
            except ConnectionClosed:
                return seen
            if isinstance(msg, ErrorMessage):
                self.server_error = msg
            seen.append(msg)

    # -------------------------------------------------------------- handshake

    def hello(self, name: str, role="viewer", token: Optional[str] = None,
              protocol_version: Optional[int] = None, timeout: Optional[float] = None) -> Welcome:
        """Send Hello and wait for Welcome. ``role`` is 'viewer' or 'operator'."""
        self.send_payload(codec.build_hello(name, role, token, protocol_version), timeout)
        msg = self.recv(timeout)
        if not isinstance(msg, Welcome):
            raise ProtocolError(f"expected Welcome after Hello, got {type(msg).__name__}")
        self.welcome = msg
        return msg

    def subscribe(self, kinds=None, timeout: Optional[float] = None) -> None:
        """Start the delta stream; the first Delta after this is a baseline.

        Deltas of an earlier subscription still buffered are dropped, so the
        next delta read is the new stream's (after any already in flight).
        """
        self._deltas.clear()
        self.send_payload(codec.build_subscribe(kinds), timeout)

    # ----------------------------------------------------------------- deltas

    def next_delta(self, timeout: Optional[float] = None) -> Delta:
        """The next Delta (buffered first), waiting at most ``timeout`` seconds."""
        if self._deltas:
            return self._deltas.popleft()
        deadline = self._deadline(timeout)
        while True:
            msg = self._read_message(deadline, "a Delta")
            if isinstance(msg, Delta):
                return msg
            self._dispatch(msg)

    def deltas(self, timeout: Optional[float] = None) -> Iterator[Delta]:
        """Endless generator of deltas; each one must arrive within ``timeout``."""
        while True:
            yield self.next_delta(timeout)

    @property
    def buffered_deltas(self) -> int:
        return len(self._deltas)

    # --------------------------------------------------------------- commands

    def send_command(self, name: str, **fields) -> int:
        """Send a Command without waiting; returns its request id."""
        request_id = self._next_request_id
        self._next_request_id = (self._next_request_id + 1) & 0xFFFFFFFF or 1
        self.send_payload(codec.build_command(request_id, name, **fields))
        return request_id

    def wait_result(self, request_id: int, timeout: Optional[float] = None) -> CommandResult:
        """Wait for the CommandResult of ``request_id``, buffering deltas meanwhile."""
        if request_id in self._results:
            return self._results.pop(request_id)
        deadline = self._deadline(timeout)
        while True:
            msg = self._read_message(deadline, f"the CommandResult of request {request_id}")
            if isinstance(msg, CommandResult) and msg.request_id == request_id:
                return msg
            self._dispatch(msg)

    def command(self, name: str, timeout: Optional[float] = None, **fields) -> CommandResult:
        """Send a Command and wait for its result (Accepted or Rejected)."""
        return self.wait_result(self.send_command(name, **fields), timeout)

    def pause(self, timeout: Optional[float] = None) -> CommandResult:
        return self.command("Pause", timeout)

    def resume(self, timeout: Optional[float] = None) -> CommandResult:
        return self.command("Resume", timeout)

    def step(self, n: int = 1, timeout: Optional[float] = None) -> CommandResult:
        """Manual clock: run ``n`` steps; the result arrives after they ran."""
        return self.command("Step", timeout, count=n)

    def query_stats(self, timeout: Optional[float] = None) -> CommandResult:
        return self.command("QueryStats", timeout)

    def stats(self, timeout: Optional[float] = None) -> Stats:
        """QueryStats, returning the Stats (raises CommandRejected if rejected)."""
        result = self.query_stats(timeout).raise_if_rejected()
        if result.stats is None:
            raise ProtocolError("QueryStats result without stats")
        return result.stats

    def set_pedestrian_target(self, n: int, timeout: Optional[float] = None) -> CommandResult:
        return self.command("SetPedestrianTarget", timeout, count=n)

    def despawn(self, index, generation: Optional[int] = None,
                timeout: Optional[float] = None) -> CommandResult:
        """Despawn by ``(index, generation)`` or an EntityId."""
        if generation is None:
            index, generation = EntityId(*index)
        return self.command("DespawnEntity", timeout, index=index, generation=generation)


__all__ = ["Session", "DEFAULT_TIMEOUT", "MAX_BUFFERED_DELTAS", "ServerError"]
