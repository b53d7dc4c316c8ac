"""Blocking TCP session with a Bustle server.

One socket, one thread, no background work: every call reads what it needs
from the socket within its own deadline. Frames that arrive while waiting for
something else are kept (deltas while a command waits for its result, results
of earlier commands while waiting for a delta), so nothing is lost.

    with Session.connect("127.0.0.1", 7777) as s:
        welcome = s.hello("soak-1", role="operator")
        s.subscribe(budgets=RepresentationBudgets(markers=0))   # waits for its result
        mirror = s.mirror()                       # EntityMirror(welcome)
        for delta in s.deltas(timeout=2.0):
            mirror.apply(delta)                   # poses: mirror[id].x_m, ...
        print(s.query_stats().stats.step)

With the fast clock a subscribed session always has a socket buffer full of
deltas in front of any CommandResult; commands still work but their latency is
the time to read that backlog. Use a second, unsubscribed session for control.

Snapshot jobs (checkpoint, save, restore, load) answer with a CommandResult
carrying the job's first state; later states are pushed as JobUpdate messages
to this session and buffered like deltas until :meth:`wait_job` reads them:

    r = s.checkpoint("before-rush").raise_if_rejected()
    states = s.wait_job(r.job.job_id)          # [JobStatus(state=Committed, ...)]

Spawn handles work the same way: SpawnPedestrian answers with a handle
(``result.handle``); the handle's states are pushed as SpawnUpdate messages,
buffered, and collected with :meth:`wait_spawn`.
"""

from __future__ import annotations

import collections
import socket
import time
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from . import codec
from .mirror import EntityMirror
from .messages import (
    BustleError,
    BustleTimeout,
    CommandRejected,
    CommandResult,
    ConnectionClosed,
    Delta,
    EntityId,
    EntityInfo,
    ErrorMessage,
    GarageInfo,
    JobFailed,
    JobStatus,
    JobUpdate,
    PopulationInfo,
    ProtocolError,
    RejectReason,
    ServerError,
    SignalInfo,
    SnapshotInfo,
    SpawnFailed,
    SpawnState,
    LeaseSummary,
    Observer,
    RepresentationBudgets,
    SpawnStatus,
    SpawnUpdate,
    Stats,
    TERMINAL_SPAWN_STATES,
    VehicleInfo,
    Welcome,
)

# Argument types of the public API (annotations only; nothing is converted here).
#: An entity: EntityId or a plain (index, generation) tuple.
EntityRef = Union[EntityId, Tuple[int, int]]
#: An Observer or an (x_m, y_m[, z_m[, heading_rad[, radius_m]]]) tuple.
ObserverLike = Union[Observer, Sequence[Optional[float]]]
#: An enum member, its name or its value (e.g. a Role, PriorityClass, VehicleStrategy).
EnumLike = Union[int, str]
#: A spawn handle: its number, a CommandResult carrying it, or a SpawnStatus.
SpawnHandle = Union[int, CommandResult, SpawnStatus]
#: A snapshot job: its id or the CommandResult that started it.
JobRef = Union[int, CommandResult]
#: Anything a Session receives, decoded.
ServerMessage = Union[Welcome, Delta, CommandResult, JobUpdate, SpawnUpdate]

DEFAULT_TIMEOUT = 5.0
#: Deltas kept while the caller waits for something else; more is an error
#: (read deltas, or do not subscribe) rather than silent loss or unbounded memory.
MAX_BUFFERED_DELTAS = 100_000
#: Unread JobUpdates kept; more is an error (call wait_job()).
MAX_BUFFERED_JOB_UPDATES = 10_000
#: Unread SpawnUpdates kept; more is an error (call wait_spawn()/next_spawn_update()).
MAX_BUFFERED_SPAWN_UPDATES = 100_000


class Session:
    """A connection to one Bustle server. Use :meth:`connect` to create one."""

    def __init__(self, sock: socket.socket, *, timeout: float = DEFAULT_TIMEOUT,
                 max_frame_bytes: int = codec.MAX_INBOUND_FRAME_BYTES,
                 retry_rate_limited: bool = True) -> None:
        self._sock = sock
        self.timeout = timeout
        #: Resend a command answered RateLimited (nothing changed on the
        #: server) after a short back-off, within the command's timeout.
        self.retry_rate_limited = retry_rate_limited
        self._decoder = codec.FrameDecoder(max_frame_bytes)
        self._bytes_received = 0
        self._deltas: collections.deque = collections.deque()
        self._job_updates: collections.deque = collections.deque()  # JobStatus, arrival order
        self._spawn_updates: collections.deque = collections.deque()  # SpawnStatus, arrival order
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

    def __exit__(self, *exc: object) -> None:
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
            self._bytes_received += len(data)
            self._decoder.feed(data)

    @property
    def bytes_received(self) -> int:
        """Bytes read from the socket so far (length prefixes included)."""
        return self._bytes_received

    def _closed_text(self, what: str) -> str:
        text = f"server closed the connection while waiting for {what}"
        if self._decoder.buffered_bytes:
            text += f" ({self._decoder.buffered_bytes} bytes of an incomplete frame left)"
        return text

    @staticmethod
    def _keep(buffer: collections.deque, item, limit: int, what: str, readers: str) -> None:
        if len(buffer) >= limit:
            raise BustleError(f"more than {limit} unread {what} buffered; read them with {readers}")
        buffer.append(item)

    def _dispatch(self, msg) -> None:
        """Keep a message nobody asked for yet; raise on server errors."""
        if isinstance(msg, ErrorMessage):
            self.server_error = msg
            raise msg.to_exception()
        if isinstance(msg, Delta):
            self._keep(self._deltas, msg, MAX_BUFFERED_DELTAS, "deltas", "next_delta()/deltas()")
        elif isinstance(msg, CommandResult):
            self._results[msg.request_id] = msg
        elif isinstance(msg, JobUpdate):
            self._keep(self._job_updates, msg.job, MAX_BUFFERED_JOB_UPDATES, "job updates",
                       "wait_job()/next_job_update()")
        elif isinstance(msg, SpawnUpdate):
            self._keep(self._spawn_updates, msg.spawn, MAX_BUFFERED_SPAWN_UPDATES, "spawn updates",
                       "wait_spawn()/next_spawn_update()")
        elif isinstance(msg, Welcome):
            raise ProtocolError("unexpected second Welcome from the server")

    def recv(self, timeout: Optional[float] = None) -> ServerMessage:
        """Next message from the wire: Welcome, Delta, CommandResult, JobUpdate or SpawnUpdate.

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

    def hello(self, name: str, role: EnumLike = "viewer", token: Optional[str] = None,
              protocol_version: Optional[int] = None, timeout: Optional[float] = None) -> Welcome:
        """Send Hello and wait for Welcome. ``role`` is 'viewer' or 'operator'."""
        self.send_payload(codec.build_hello(name, role, token, protocol_version), timeout)
        msg = self.recv(timeout)
        if not isinstance(msg, Welcome):
            raise ProtocolError(f"expected Welcome after Hello, got {type(msg).__name__}")
        self.welcome = msg
        return msg

    def _new_request_id(self) -> int:
        request_id = self._next_request_id
        self._next_request_id = (self._next_request_id + 1) & 0xFFFFFFFF or 1
        return request_id

    def subscribe(self, kinds: Optional[Iterable[EnumLike]] = None,
                  observers: Optional[Sequence[ObserverLike]] = None,
                  budgets: Optional[RepresentationBudgets] = None,
                  motion_tolerance_mm: Optional[int] = None,
                  timeout: Optional[float] = None) -> CommandResult:
        """Start (or replace) the delta stream and wait for the server's answer.

        ``kinds``: EntityKinds (None: every kind); ``observers``: Observers or
        (x_m, y_m[, z_m[, heading_rad[, radius_m]]]) tuples (None: the whole
        city); ``budgets``: RepresentationBudgets (None: the server's
        defaults); ``motion_tolerance_mm``: None for the default 10 mm, 0 for
        exact poses at every step. Returns the Accepted CommandResult; a
        Rejected one (nothing changes then) raises CommandRejected naming the
        reason and message. Deltas arriving meanwhile are buffered: the new
        stream's baseline may come before or after the result. Deltas of an
        earlier subscription still buffered, or arriving before the new
        baseline, are dropped, so the next delta read once the baseline is in
        is the baseline.
        """
        self._deltas.clear()
        result = self._ask(lambda rid: codec.build_subscribe(
            kinds, observers, budgets, motion_tolerance_mm, request_id=rid), timeout)
        if not result.accepted:
            raise CommandRejected(result)
        for i, delta in enumerate(self._deltas):
            if delta.baseline:
                for _ in range(i):
                    self._deltas.popleft()
                break
        return result

    def update_interest(self, observers: Optional[Sequence[ObserverLike]] = None,
                        budgets: Optional[RepresentationBudgets] = None,
                        timeout: Optional[float] = None) -> CommandResult:
        """Change the observers and budgets of the subscription, without a new
        baseline (entities enter and leave as the new interest requires).
        Waits for the result like :meth:`subscribe`; raises CommandRejected
        when rejected (e.g. not subscribed)."""
        result = self._ask(lambda rid: codec.build_update_interest(
            observers, budgets, request_id=rid), timeout)
        if not result.accepted:
            raise CommandRejected(result)
        return result

    def mirror(self, strict: bool = True) -> EntityMirror:
        """An empty EntityMirror for this session's Welcome (after :meth:`hello`)."""
        if self.welcome is None:
            raise ProtocolError("no Welcome yet: call hello() first")
        return EntityMirror(self.welcome, strict=strict)

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

    def send_command(self, command: str, /, **fields) -> int:
        """Send a Command without waiting; returns its request id.

        ``fields`` are the body's fields, e.g. ``send_command("Step", count=3)``
        or ``send_command("Restore", name="cp")``."""
        request_id = self._new_request_id()
        self.send_payload(codec.build_command(request_id, command, **fields))
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

    def command(self, command: str, timeout: Optional[float] = None, /, **fields) -> CommandResult:
        """Send a Command and wait for its result (Accepted or Rejected).

        ``timeout`` is positional here (``command("Step", 2.0, count=1)``) or
        the keyword ``timeout=`` is taken as the wait, never as a body field."""
        timeout = fields.pop("timeout", timeout)
        return self._ask(lambda rid: codec.build_command(rid, command, **fields), timeout)

    def _ask(self, build, timeout: Optional[float]) -> CommandResult:
        """Send ``build(request_id)`` and wait for its result; a RateLimited
        answer is retried (fresh request id, back-off from 5 ms) while the
        deadline allows, when ``retry_rate_limited``."""
        deadline = self._deadline(timeout)
        delay = 0.005
        while True:
            request_id = self._new_request_id()
            self.send_payload(build(request_id))
            result = self.wait_result(request_id, max(deadline - time.monotonic(), 0.0))
            if (result.reason != RejectReason.RateLimited or not self.retry_rate_limited
                    or time.monotonic() + delay >= deadline):
                return result
            time.sleep(delay)
            delay = min(2 * delay, 0.1)

    def pause(self, timeout: Optional[float] = None) -> CommandResult:
        return self.command("Pause", timeout)

    def resume(self, timeout: Optional[float] = None) -> CommandResult:
        return self.command("Resume", timeout)

    def step(self, n: int = 1, timeout: Optional[float] = None) -> CommandResult:
        """Manual clock: run ``n`` steps; the result arrives after they ran."""
        return self.command("Step", timeout, count=n)

    def query_stats(self, timeout: Optional[float] = None,
                    step_time_window: int = 0) -> CommandResult:
        return self.command("QueryStats", timeout, step_time_window=step_time_window)

    def stats(self, timeout: Optional[float] = None, step_time_window: int = 0) -> Stats:
        """QueryStats, returning the Stats (raises CommandRejected if rejected).

        ``step_time_window``: the step timing covers the last 1 to 1024
        executed steps (0: all 1024)."""
        return _payload(self.query_stats(timeout, step_time_window), "stats", "QueryStats")

    def set_pedestrian_target(self, n: int, timeout: Optional[float] = None) -> CommandResult:
        return self.command("SetPedestrianTarget", timeout, count=n)

    def despawn(self, index: Union[int, EntityRef], generation: Optional[int] = None,
                timeout: Optional[float] = None) -> CommandResult:
        """Despawn by ``(index, generation)`` or an EntityId."""
        if generation is None:
            index, generation = EntityId(*index)
        return self.command("DespawnEntity", timeout, index=index, generation=generation)

    # --------------------------------------------------------------- vehicles
    #
    # GarageRequest, CancelGarageRequest, SetVehicleStrategy and SetObservers
    # are world commands (operator): they apply at the start of the next step,
    # so with the manual clock (or while paused) their result arrives only
    # after a Step; send them with send_command(...) and collect the result
    # with wait_result() after stepping. The queries answer at once, any role.

    def garage_request(self, garage: str, request_id: str, prototype: str, lane: str,
                       priority: int = 10, timeout: Optional[float] = None) -> CommandResult:
        """Queue a vehicle request. Accepted (``enqueue_ordinal`` is its
        EnqueueOrdinal; the message says "enqueue ordinal N" too), or Rejected
        with InvalidArgument (message starts with the field), Duplicate, QueueFull
        (``enqueue_ordinal`` None)."""
        return self.command("GarageRequest", timeout, garage=garage, request_id=request_id,
                            prototype=prototype, lane=lane, priority=priority)

    def cancel_garage_request(self, garage: str, request_id: str,
                              timeout: Optional[float] = None) -> CommandResult:
        """Remove a queued request; Rejected NotFound when it is not queued."""
        return self.command("CancelGarageRequest", timeout, garage=garage, request_id=request_id)

    def set_vehicle_strategy(self, id: EntityRef, strategy: EnumLike, timeout: Optional[float] = None) -> CommandResult:
        """``id``: EntityId or (index, generation); ``strategy``: VehicleStrategy,
        its name ('Parked') or value."""
        index, generation = EntityId(*id)
        return self.command("SetVehicleStrategy", timeout, index=index, generation=generation,
                            strategy=strategy)

    def set_observers(self, points: Sequence[Sequence[float]], timeout: Optional[float] = None, *,
                      views: Optional[Sequence[Any]] = None) -> CommandResult:
        """Replace the observers that drive simulation tiers (at most 64).

        ``points``: (x_m, y_m), (x_m, y_m, z_m) or (x_m, y_m, z_m, heading_rad
        or None) each; when any point has a height or heading, every point is
        sent with a view. ``views`` instead gives them explicitly (ObserverView
        or (z_m, heading_rad or None) each), sent as given."""
        return self.command("SetObservers", timeout, points=list(points), views=views)

    def follow(self, id: EntityRef, timeout: Optional[float] = None) -> CommandResult:
        """The operator observer follows entity ``id`` (a walking pedestrian or
        a vehicle) instead of fixed points; when it leaves, the observer stays
        at its last position (``set_observers`` ends a follow too)."""
        index, generation = EntityId(*id)
        return self.command("SetObservers", timeout, points=[], follow=(index, generation))

    def force_full(self, index: int, generation: int, on: bool = True,
                   timeout: Optional[float] = None) -> CommandResult:
        """Hold an entity in the Full tier (operator; refused at the hard safety cap)."""
        return self.command("ForceFull", timeout, index=index, generation=generation, on=on)

    def set_admission_mask(self, index: int, generation: int, masked: bool = True,
                           timeout: Optional[float] = None) -> CommandResult:
        """Hold a walking pedestrian's movement (``masked``) or release it
        (operator). Its tier and lifecycle are left as they are; QueryEntity's
        ``admission_masked`` and PopulationInfo's count show the mask."""
        return self.command("SetAdmissionMask", timeout, index=index, generation=generation,
                            masked=masked)

    def set_prevention_level(self, level: int,
                             timeout: Optional[float] = None) -> CommandResult:
        """Move the prevention (response) level (operator): raising it queues
        response units, lowering it cancels the queued ones of the levels
        above and despawns the active ones. PopulationInfo counts them."""
        return self.command("SetPreventionLevel", timeout, level=level)

    def kill_pedestrian(self, index: int, generation: int,
                        timeout: Optional[float] = None) -> CommandResult:
        """A pedestrian death event (operator): a walking, non-resident
        pedestrian becomes a corpse (QueryEntity ``corpse``) until corpse
        cleanup removes it."""
        return self.command("KillPedestrian", timeout, index=index, generation=generation)

    def close_lane(self, lane: Optional[str] = None, lane_index: Optional[int] = None,
                   timeout: Optional[float] = None) -> CommandResult:
        """Close a lane by id and/or index (operator): nobody enters it;
        pedestrians and vehicles reaching it take an open successor or wait
        at their lane end; spawns avoid it. PopulationInfo shows the closed
        lanes, who waits and the counters."""
        return self.command("CloseLane", timeout, lane=lane, lane_index=lane_index)

    def open_lane(self, lane: Optional[str] = None, lane_index: Optional[int] = None,
                  timeout: Optional[float] = None) -> CommandResult:
        """Open a closed lane again (operator); waiters move on when next due."""
        return self.command("OpenLane", timeout, lane=lane, lane_index=lane_index)

    def set_hour(self, hour: float, timeout: Optional[float] = None) -> CommandResult:
        """Set the time of day [0, 24) (operator; applied at the next step)."""
        return self.command("SetHour", timeout, hour=hour)

    def set_time_scale(self, scale: int, timeout: Optional[float] = None) -> CommandResult:
        """Game seconds per simulated second, 1..3600 (operator; applied at the next step)."""
        return self.command("SetTimeScale", timeout, scale=scale)

    def query_zones(self, timeout: Optional[float] = None) -> CommandResult:
        return self.command("QueryZones", timeout)

    def zones(self, timeout: Optional[float] = None) -> list:
        """QueryZones, returning [ZoneInfo] (raises CommandRejected if rejected)."""
        return list(_payload(self.query_zones(timeout), "zones", "QueryZones"))

    def query_garages(self, timeout: Optional[float] = None) -> CommandResult:
        return self.command("QueryGarages", timeout)

    def garages(self, timeout: Optional[float] = None) -> List[GarageInfo]:
        """QueryGarages, returning the list (raises CommandRejected if rejected)."""
        return list(_payload(self.query_garages(timeout), "garages", "QueryGarages"))

    def query_signals(self, timeout: Optional[float] = None) -> CommandResult:
        return self.command("QuerySignals", timeout)

    def signals(self, timeout: Optional[float] = None) -> List[SignalInfo]:
        """QuerySignals, returning the list (raises CommandRejected if rejected)."""
        return list(_payload(self.query_signals(timeout), "signals", "QuerySignals"))

    def query_vehicle(self, id: EntityRef, timeout: Optional[float] = None) -> CommandResult:
        """QueryVehicle by EntityId or (index, generation); Rejected UnknownEntity
        when it is not a live vehicle."""
        index, generation = EntityId(*id)
        return self.command("QueryVehicle", timeout, index=index, generation=generation)

    def vehicle(self, id: EntityRef, timeout: Optional[float] = None) -> VehicleInfo:
        """QueryVehicle, returning the VehicleInfo (raises CommandRejected if rejected)."""
        return _payload(self.query_vehicle(id, timeout), "vehicle", "QueryVehicle")

    # ------------------------------------------------------------- population
    #
    # SpawnPedestrian, CancelSpawn, SetLifecycle and LifecycleBatch are world
    # commands (operator), applied at the start of the next step: with the
    # manual clock use send_command(...), step(), then wait_result(). The
    # queries answer at once, any role. ReportAttached is not a world command:
    # the simulation's part of a spawn ends at RepresentationRequested, and
    # Attached / ReadyForGameplay come from leases (any subscribed client
    # reporting Assigned for the entity, see report_leases) or from the
    # ReportAttached shorthand, answered at once by any role.

    def spawn_pedestrian(self, zone: Optional[str] = None, lane: Optional[str] = None,
                         priority: EnumLike = "quest", timeout_ms: int = 0,
                         timeout: Optional[float] = None, *,
                         route: Optional[Sequence[str]] = None) -> CommandResult:
        """Ask for one pedestrian. Accepted with ``result.handle``; the handle's
        states then arrive as SpawnUpdates (see :meth:`wait_spawn`). ``zone`` /
        ``lane`` None: any sidewalk / any lane (of the zone); ``priority``: a
        PriorityClass, its name or value; ``timeout_ms`` 0: the scenario's.
        ``route``: lane ids, each a pedestrian successor of the one before (at
        most 256): it starts at the beginning of route[0] (``lane`` None or
        route[0]; with a zone, route[0] one of its lanes), follows the route,
        then wanders; a bad route is rejected naming the entry ("route[1]: ...")."""
        return self.command("SpawnPedestrian", timeout, zone=zone, lane=lane, priority=priority,
                            timeout_ms=timeout_ms, route=route)

    def cancel_spawn(self, handle: SpawnHandle, timeout: Optional[float] = None) -> CommandResult:
        """Cancel a spawn not yet registered; ``result.entity`` is the id given
        back (None when no identity had been created)."""
        return self.command("CancelSpawn", timeout, handle=_spawn_handle(handle))

    def report_attached(self, id: EntityRef, timeout: Optional[float] = None) -> CommandResult:
        """Report that this client holds a representation for a spawned entity
        (RepresentationRequested -> Attached; ReadyForGameplay follows at the
        next step). A shorthand for a lease Assigned: answered at once, any
        role, never part of the simulation or its digest. Rejected
        (UnknownEntity) when no handle waits for that entity, InvalidArgument
        when its handle is not at RepresentationRequested.
        ``id``: EntityId or (index, generation)."""
        index, generation = EntityId(*id)
        return self.command("ReportAttached", timeout, index=index, generation=generation)

    def set_lifecycle(self, growth_quota: Optional[int] = None, recycle_quota: Optional[int] = None,
                      interval_ms: Optional[int] = None, migration_budget: Optional[int] = None,
                      timeout: Optional[float] = None) -> CommandResult:
        """Change the runtime lifecycle settings. Settings left None keep their
        current values (read with QueryPopulation first); the command always
        carries all four."""
        given = dict(growth_quota=growth_quota, recycle_quota=recycle_quota,
                     interval_ms=interval_ms, migration_budget=migration_budget)
        if any(v is None for v in given.values()):
            current = self.population(timeout)
            given = {k: getattr(current, k) if v is None else v for k, v in given.items()}
        return self.command("SetLifecycle", timeout, **given)

    def lifecycle_batch(self, ops: Iterable[Any], timeout: Optional[float] = None) -> CommandResult:
        """Apply lifecycle operations atomically (operator). ``ops``: LifecycleOp
        (:func:`spawn_op`, :func:`despawn_op`), ('spawn', {fields}) or
        ('despawn', id). ``result.batch`` is RejectedNoChange or Committed;
        ``result.handles`` has one spawn handle per Spawn op."""
        return self.command("LifecycleBatch", timeout, ops=list(ops))

    def query_entity(self, id: EntityRef, timeout: Optional[float] = None) -> CommandResult:
        """QueryEntity (any role): every axis of one entity in ``result.entity_info``."""
        index, generation = EntityId(*id)
        return self.command("QueryEntity", timeout, index=index, generation=generation)

    def entity(self, id: EntityRef, timeout: Optional[float] = None) -> EntityInfo:
        """QueryEntity, returning the EntityInfo (raises CommandRejected if rejected)."""
        return _payload(self.query_entity(id, timeout), "entity_info", "QueryEntity")

    def query_population(self, timeout: Optional[float] = None) -> CommandResult:
        """QueryPopulation (any role): ``result.population``."""
        return self.command("QueryPopulation", timeout)

    def population(self, timeout: Optional[float] = None) -> PopulationInfo:
        """QueryPopulation, returning the PopulationInfo (raises CommandRejected if rejected)."""
        return _payload(self.query_population(timeout), "population", "QueryPopulation")

    def query_spawn(self, handle: SpawnHandle, timeout: Optional[float] = None) -> CommandResult:
        """QuerySpawn (any role): a live or recent handle's state in ``result.spawn``."""
        return self.command("QuerySpawn", timeout, handle=_spawn_handle(handle))

    def spawn_status(self, handle: SpawnHandle, timeout: Optional[float] = None) -> SpawnStatus:
        """QuerySpawn, returning the SpawnStatus (raises CommandRejected if rejected)."""
        return _payload(self.query_spawn(handle, timeout), "spawn", "QuerySpawn")

    def report_leases(self, leases: Iterable[Any], *, wait: bool = False,
                      timeout: Optional[float] = None) -> Optional[CommandResult]:
        """Send a LeaseReport (what this client applied; see :class:`Lease`).
        With ``wait``, ask for and return its CommandResult; else nothing is
        answered."""
        if not wait:
            self.send_payload(codec.build_lease_report(leases))
            return None
        return self._ask(lambda rid: codec.build_lease_report(leases, request_id=rid), timeout)

    def leases(self, timeout: Optional[float] = None) -> LeaseSummary:
        """QueryLeases (any role): this client's leases against the hints."""
        return _payload(self.command("QueryLeases", timeout), "leases", "QueryLeases")

    def next_spawn_update(self, timeout: Optional[float] = None) -> SpawnStatus:
        """The next pushed spawn state of any handle (buffered first)."""
        return self._next_pushed(self._spawn_updates, SpawnUpdate, "spawn", "a SpawnUpdate",
                                 timeout)

    @property
    def buffered_spawn_updates(self) -> int:
        return len(self._spawn_updates)

    def spawn_updates(self, handle: Optional[SpawnHandle] = None) -> List[SpawnStatus]:
        """Take the SpawnUpdates already buffered (of one handle, or all), without waiting."""
        if handle is None:
            taken, self._spawn_updates = list(self._spawn_updates), collections.deque()
            return taken
        handle = _spawn_handle(handle)
        taken = [u for u in self._spawn_updates if u.handle == handle]
        self._spawn_updates = collections.deque(
            u for u in self._spawn_updates if u.handle != handle)
        return taken

    def wait_spawn(self, handle: SpawnHandle, states: Any = None, timeout: Optional[float] = None,
                   check: bool = False) -> List[SpawnStatus]:
        """Collect the pushed states of one spawn handle, oldest first, until
        one of ``states`` (a SpawnState or a collection of them; default: any
        terminal state) or a terminal state arrived.

        ``handle``: the handle, a SpawnStatus or the SpawnPedestrian result.
        Buffered states count; updates of other handles stay buffered. With
        the manual clock, step first: states only change when steps run. With
        ``check``, a terminal state other than ReadyForGameplay raises
        SpawnFailed.
        """
        handle = _spawn_handle(handle)
        if states is None:
            wanted = TERMINAL_SPAWN_STATES
        elif isinstance(states, (int, SpawnState)):
            wanted = {states}
        else:
            wanted = set(states)
        names = ", ".join(sorted(getattr(x, "name", str(x)) for x in wanted))
        seen = self._wait_pushed(
            "_spawn_updates", SpawnUpdate, "spawn", "handle", handle,
            lambda u: u.terminal or u.state in wanted,
            f"spawn {handle} to reach {names}", timeout)
        last = seen[-1]
        if check and last.terminal and last.state != SpawnState.ReadyForGameplay:
            raise SpawnFailed(last)
        return seen

    # -------------------------------------------------------------- snapshots

    def checkpoint(self, name: str, timeout: Optional[float] = None) -> CommandResult:
        """Checkpoint (complete state). Accepted with job state Copied; then
        Committed or Failed arrives as a JobUpdate (see :meth:`wait_job`)."""
        return self.command("Checkpoint", timeout, name=name)

    def restore(self, name: str, timeout: Optional[float] = None) -> CommandResult:
        """Restore a checkpoint. Accepted with job state Queued; then Validated
        -> Applied, or Failed (the live world is untouched)."""
        return self.command("Restore", timeout, name=name)

    def save(self, name: str, timeout: Optional[float] = None) -> CommandResult:
        """Save (persistent facts only). Like :meth:`checkpoint`."""
        return self.command("Save", timeout, name=name)

    def load(self, name: str, timeout: Optional[float] = None) -> CommandResult:
        """Load a save. Accepted with Queued; then Validated -> SnapshotApplied
        -> ScheduleReconciled -> RepresentationRebuilt, or Failed."""
        return self.command("Load", timeout, name=name)

    def list_snapshots(self, timeout: Optional[float] = None) -> CommandResult:
        """ListSnapshots (any role); the result's ``snapshots`` lists them."""
        return self.command("ListSnapshots", timeout)

    def snapshots(self, timeout: Optional[float] = None) -> List[SnapshotInfo]:
        """ListSnapshots, returning the list (raises CommandRejected if rejected)."""
        result = self.list_snapshots(timeout).raise_if_rejected()
        return list(result.snapshots or [])

    def delete_snapshot(self, name: str, timeout: Optional[float] = None) -> CommandResult:
        """DeleteSnapshot; Rejected NotFound when there is no snapshot of that name."""
        return self.command("DeleteSnapshot", timeout, name=name)

    def query_job(self, job_id: int, timeout: Optional[float] = None) -> CommandResult:
        """QueryJob (any role): the job's latest state in ``result.job``."""
        return self.command("QueryJob", timeout, job_id=job_id)

    def _next_pushed(self, buffer: collections.deque, cls, attr: str, what: str,
                     timeout: Optional[float]):
        """The next pushed message of type ``cls`` (buffered first), as its ``attr``."""
        if buffer:
            return buffer.popleft()
        deadline = self._deadline(timeout)
        while True:
            msg = self._read_message(deadline, what)
            if isinstance(msg, cls):
                return getattr(msg, attr)
            self._dispatch(msg)

    def _wait_pushed(self, buffer_attr: str, cls, attr: str, key: str, wanted, done,
                     what: str, timeout: Optional[float]) -> list:
        """Collect the pushed states whose ``key`` equals ``wanted``, oldest
        first, until ``done(state)``; other updates stay buffered, deltas and
        results that arrive meanwhile are buffered too."""
        seen: list = []
        keep = collections.deque()
        finished = False
        for status in getattr(self, buffer_attr):
            if not finished and getattr(status, key) == wanted:
                seen.append(status)
                finished = done(status)
            else:
                keep.append(status)
        setattr(self, buffer_attr, keep)
        if finished:
            return seen
        deadline = self._deadline(timeout)
        while True:
            text = what
            if seen:
                text += f" (seen: {', '.join(getattr(x.state, 'name', str(x.state)) for x in seen)})"
            msg = self._read_message(deadline, text)
            if isinstance(msg, cls) and getattr(getattr(msg, attr), key) == wanted:
                seen.append(getattr(msg, attr))
                if done(seen[-1]):
                    return seen
                continue
            self._dispatch(msg)

    def next_job_update(self, timeout: Optional[float] = None) -> JobStatus:
        """The next pushed job state of any job (buffered first)."""
        return self._next_pushed(self._job_updates, JobUpdate, "job", "a JobUpdate", timeout)

    @property
    def buffered_job_updates(self) -> int:
        return len(self._job_updates)

    def wait_job(self, job_id: JobRef, terminal: bool = True, timeout: Optional[float] = None,
                 check: bool = False) -> List[JobStatus]:
        """Collect the pushed states of one job, oldest first.

        ``job_id`` is an id, a JobStatus or a CommandResult carrying a job.
        With ``terminal`` (default) waits until the state with terminal=True
        arrived; otherwise returns once at least one state is there. States
        already buffered count; updates of other jobs stay buffered. Deltas
        and results that arrive meanwhile are buffered too. With ``check``, a
        Failed last state raises JobFailed. The returned JobStatus objects
        carry ``state`` (the list of states seen is ``[j.state for j in ...]``)
        and ``message``.
        """
        if isinstance(job_id, CommandResult):
            if job_id.job is None:
                raise ValueError(f"CommandResult of request {job_id.request_id} carries no job")
            job_id = job_id.job.job_id
        elif isinstance(job_id, JobStatus):
            job_id = job_id.job_id
        seen = self._wait_pushed(
            "_job_updates", JobUpdate, "job", "job_id", job_id,
            lambda j: j.terminal or not terminal,
            f"{'the last state' if terminal else 'a state'} of job {job_id}", timeout)
        if check and seen and seen[-1].failed:
            raise JobFailed(seen[-1])
        return seen

    def run_job(self, command: str, name: str, timeout: Optional[float] = None,
                check: bool = False) -> List[JobStatus]:
        """Send Checkpoint/Save/Restore/Load ``name``, wait for the job's last
        state; returns every state, the result's first. Raises CommandRejected
        if the command is rejected (and JobFailed with ``check``)."""
        result = self.command(command, timeout, name=name).raise_if_rejected()
        if result.job is None:
            raise ProtocolError(f"{command} result without a job")
        if result.job.terminal:
            return [result.job]
        return [result.job, *self.wait_job(result.job.job_id, timeout=timeout, check=check)]


def _spawn_handle(handle) -> int:
    """A spawn handle from an int, a SpawnStatus or a CommandResult carrying one."""
    if isinstance(handle, CommandResult):
        if handle.handle:
            return handle.handle
        if handle.spawn is not None:
            return handle.spawn.handle
        raise ValueError(f"CommandResult of request {handle.request_id} carries no spawn handle")
    if isinstance(handle, SpawnStatus):
        return handle.handle
    return int(handle)


def _payload(result: CommandResult, attr: str, command: str):
    """``result.attr`` of an accepted result (raises CommandRejected / ProtocolError)."""
    value = getattr(result.raise_if_rejected(), attr)
    if value is None:
        raise ProtocolError(f"{command} result without {attr}")
    return value


__all__ = ["Session", "DEFAULT_TIMEOUT", "MAX_BUFFERED_DELTAS", "MAX_BUFFERED_JOB_UPDATES",
           "MAX_BUFFERED_SPAWN_UPDATES", "ServerError"]
