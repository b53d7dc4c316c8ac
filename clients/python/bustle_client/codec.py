"""Bustle framing and message codec (no sockets here).

A frame is a 4-byte little-endian payload length followed by the payload, one
FlatBuffer with a file identifier: ``BCL1`` client->server, ``BSV1``
server->client. Clients encode ClientFrames (Hello, Subscribe, Command) and
decode ServerFrames (Welcome, Error, Delta, CommandResult, JobUpdate) into the
dataclasses of :mod:`bustle_client.messages`.

Python's FlatBuffers runtime has no Verifier, so decoding checks the length and
file identifier up front and turns any out-of-bounds read of a corrupt buffer
into :class:`MalformedFrameError`; it never returns partly decoded garbage.
"""

from __future__ import annotations

import math
import struct
from typing import Iterator, Optional, Union

from . import _wire as w
from .messages import (
    PROTOCOL_VERSION,
    ClockMode,
    CommandResult,
    CommandStatus,
    ControlPolicy,
    Delta,
    DispatchGate,
    EntityId,
    EntityKind,
    EntityState,
    ErrorCode,
    ErrorMessage,
    FrameTooLargeError,
    GarageGeometry,
    GarageInfo,
    ZoneInfo,
    JobKind,
    JobState,
    JobStatus,
    JobUpdate,
    Lane,
    LaneKind,
    MalformedFrameError,
    PolicyReason,
    RejectReason,
    Role,
    SignalGeometry,
    SignalInfo,
    SignalPhase,
    SignalPhaseState,
    SimTier,
    SnapshotInfo,
    Stats,
    VehicleInfo,
    VehicleStrategy,
    VehicleStrategyState,
    Welcome,
    _enum_or_int,
)

LENGTH_PREFIX_BYTES = 4
CLIENT_IDENTIFIER = b"BCL1"
SERVER_IDENTIFIER = b"BSV1"
#: Cap on frames this client accepts (a baseline Delta of a large city is big).
MAX_INBOUND_FRAME_BYTES = 64 << 20
#: The server's cap on client frames; larger frames get Error FrameTooLarge.
SERVER_MAX_INBOUND_FRAME_BYTES = 1 << 20

_PREFIX = struct.Struct("<I")
# EntityState struct: id {index u32, generation u32}, x_cm i32, y_cm i32,
# heading_q u16, speed_cmps u16, kind u8, 3 bytes padding.
_ENTITY_STATE = struct.Struct("<IIiiHHB3x")
_ENTITY_ID = struct.Struct("<II")
# SignalPhaseState struct: index u16, phase u8, 1 byte padding.
_SIGNAL_PHASE = struct.Struct("<HBx")
# Fails at import if the schema changes the struct layout without this module.
assert _ENTITY_STATE.size == w.EntityStateStruct.EntityState.SizeOf()
assert _ENTITY_ID.size == w.EntityId.EntityId.SizeOf()
assert _SIGNAL_PHASE.size == w.SignalPhaseState.SignalPhaseState.SizeOf()

Message = Union[Welcome, ErrorMessage, Delta, CommandResult, JobUpdate]


# --------------------------------------------------------------------------
# Framing
# --------------------------------------------------------------------------


def encode_frame(payload: bytes) -> bytes:
    """Length prefix + payload."""
    if not payload:
        raise ValueError("a frame payload cannot be empty")
    return _PREFIX.pack(len(payload)) + bytes(payload)


class FrameDecoder:
    """Reassembles frames from a byte stream.

    ``feed()`` bytes as they arrive, then call ``next()`` until it returns None
    (or iterate). A length prefix above ``max_frame_bytes`` raises
    FrameTooLargeError as soon as the prefix is seen, before any payload is
    buffered; a zero length raises MalformedFrameError. After an error the
    decoder keeps raising it: the stream is unusable and must be closed.
    """

    def __init__(self, max_frame_bytes: int = MAX_INBOUND_FRAME_BYTES):
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()
        self._pos = 0
        self._error: Optional[Exception] = None

    @property
    def buffered_bytes(self) -> int:
        return len(self._buf) - self._pos

    def feed(self, data: bytes) -> None:
        if self._error is not None:
            raise self._error
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data

    def next(self) -> Optional[bytes]:
        """One complete payload, or None if more bytes are needed."""
        if self._error is not None:
            raise self._error
        avail = len(self._buf) - self._pos
        if avail < LENGTH_PREFIX_BYTES:
            return None
        (n,) = _PREFIX.unpack_from(self._buf, self._pos)
        if n == 0:
            self._error = MalformedFrameError("zero-length frame")
            raise self._error
        if n > self.max_frame_bytes:
            self._error = FrameTooLargeError(n, self.max_frame_bytes)
            raise self._error
        if avail < LENGTH_PREFIX_BYTES + n:
            return None
        start = self._pos + LENGTH_PREFIX_BYTES
        payload = bytes(self._buf[start : start + n])
        self._pos = start + n
        return payload

    def __iter__(self) -> Iterator[bytes]:
        while (payload := self.next()) is not None:
            yield payload


# --------------------------------------------------------------------------
# Client -> server
# --------------------------------------------------------------------------


def _finish_client_frame(b, message_type: int, message) -> bytes:
    w.ClientFrame.Start(b)
    w.ClientFrame.AddMessageType(b, message_type)
    w.ClientFrame.AddMessage(b, message)
    b.Finish(w.ClientFrame.End(b), file_identifier=CLIENT_IDENTIFIER)
    return bytes(b.Output())


def _role(role) -> int:
    if isinstance(role, str):
        try:
            return Role[role.capitalize()]
        except KeyError:
            raise ValueError(f"role must be 'viewer' or 'operator', not {role!r}") from None
    return int(Role(role))


def build_hello(name: str, role="viewer", token: Optional[str] = None,
                protocol_version: Optional[int] = None) -> bytes:
    """Hello payload. ``protocol_version`` defaults to the schema's version."""
    b = w.flatbuffers.Builder(128)
    name_off = b.CreateString(name)
    token_off = b.CreateString(token) if token is not None else None
    w.Hello.Start(b)
    w.Hello.AddProtocolVersion(
        b, PROTOCOL_VERSION if protocol_version is None else protocol_version)
    w.Hello.AddClientName(b, name_off)
    if token_off is not None:
        w.Hello.AddToken(b, token_off)
    w.Hello.AddRole(b, _role(role))
    return _finish_client_frame(b, w.ClientMessage.ClientMessage.Hello, w.Hello.End(b))


def build_subscribe(kinds=None) -> bytes:
    """Subscribe payload; ``kinds`` None or empty means every kind."""
    b = w.flatbuffers.Builder(64)
    kinds_off = None
    if kinds:
        values = [int(EntityKind(k)) for k in kinds]
        w.Subscribe.StartKindsVector(b, len(values))
        for v in reversed(values):
            b.PrependUint8(v)
        kinds_off = b.EndVector()
    w.Subscribe.Start(b)
    if kinds_off is not None:
        w.Subscribe.AddKinds(b, kinds_off)
    return _finish_client_frame(b, w.ClientMessage.ClientMessage.Subscribe, w.Subscribe.End(b))


def _empty(module):
    def build(b):
        module.Start(b)
        return module.End(b)
    return build


def _step(b, count: int = 1):
    w.Step.Start(b)
    w.Step.AddCount(b, count)
    return w.Step.End(b)


def _set_pedestrian_target(b, count: int):
    w.SetPedestrianTarget.Start(b)
    w.SetPedestrianTarget.AddCount(b, count)
    return w.SetPedestrianTarget.End(b)


def _despawn(b, index: int, generation: int):
    w.DespawnEntity.Start(b)
    w.DespawnEntity.AddId(b, w.EntityId.CreateEntityId(b, index, generation))
    return w.DespawnEntity.End(b)


def _force_full(b, index: int, generation: int, on: bool = True):
    w.ForceFull.Start(b)
    w.ForceFull.AddId(b, w.EntityId.CreateEntityId(b, index, generation))
    w.ForceFull.AddOn(b, bool(on))
    return w.ForceFull.End(b)


def _set_hour(b, hour: float):
    w.SetHour.Start(b)
    w.SetHour.AddHour(b, float(hour))
    return w.SetHour.End(b)


def _set_time_scale(b, scale: int):
    w.SetTimeScale.Start(b)
    w.SetTimeScale.AddScale(b, int(scale))
    return w.SetTimeScale.End(b)


def _text(field: str, value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a str, not {type(value).__name__}")
    return value


def _garage_request(b, garage: str, request_id: str, prototype: str, lane: str,
                    priority: int = 10):
    offs = [b.CreateString(_text(f, v)) for f, v in (
        ("garage", garage), ("request_id", request_id), ("prototype", prototype), ("lane", lane))]
    w.GarageRequest.Start(b)
    w.GarageRequest.AddGarage(b, offs[0])
    w.GarageRequest.AddRequestId(b, offs[1])
    w.GarageRequest.AddPrototype(b, offs[2])
    w.GarageRequest.AddLane(b, offs[3])
    w.GarageRequest.AddPriority(b, int(priority))  # schema default 10 (omitted when equal)
    return w.GarageRequest.End(b)


def _cancel_garage_request(b, garage: str, request_id: str):
    g = b.CreateString(_text("garage", garage))
    r = b.CreateString(_text("request_id", request_id))
    w.CancelGarageRequest.Start(b)
    w.CancelGarageRequest.AddGarage(b, g)
    w.CancelGarageRequest.AddRequestId(b, r)
    return w.CancelGarageRequest.End(b)


def vehicle_strategy(strategy) -> int:
    """A VehicleStrategy member, its name ('Parked', case-insensitive) or its value."""
    if isinstance(strategy, str):
        for member in VehicleStrategy:
            if member.name.lower() == strategy.lower():
                return int(member)
        raise ValueError(f"unknown vehicle strategy {strategy!r}; known: "
                         f"{', '.join(m.name for m in VehicleStrategy)}")
    value = int(strategy)
    if not 0 <= value <= 255:
        raise ValueError(f"vehicle strategy {value} does not fit a ubyte")
    return value  # out-of-range values are sent as they are; the server judges them


def _set_vehicle_strategy(b, index: int, generation: int, strategy):
    value = vehicle_strategy(strategy)
    w.SetVehicleStrategy.Start(b)
    w.SetVehicleStrategy.AddId(b, w.EntityId.CreateEntityId(b, index, generation))
    w.SetVehicleStrategy.AddStrategy(b, value)
    return w.SetVehicleStrategy.End(b)


def _set_observers(b, points):
    pts = [(float(x), float(y)) for x, y in points]
    w.SetObservers.StartPointsVector(b, len(pts))
    for x, y in reversed(pts):
        w.Vec2.CreateVec2(b, x, y)
    vec = b.EndVector()
    w.SetObservers.Start(b)
    w.SetObservers.AddPoints(b, vec)
    return w.SetObservers.End(b)


def _query_vehicle(b, index: int, generation: int):
    w.QueryVehicle.Start(b)
    w.QueryVehicle.AddId(b, w.EntityId.CreateEntityId(b, index, generation))
    return w.QueryVehicle.End(b)


def _named(module):
    """Body builder for the snapshot commands that carry only a name."""
    def build(b, name: str):
        if not isinstance(name, str):
            raise TypeError(f"snapshot name must be a str, not {type(name).__name__}")
        name_off = b.CreateString(name)
        module.Start(b)
        module.AddName(b, name_off)
        return module.End(b)
    return build


def _query_job(b, job_id: int):
    w.QueryJob.Start(b)
    w.QueryJob.AddJobId(b, job_id)
    return w.QueryJob.End(b)


_CB = w.CommandBody.CommandBody
#: Command name -> (union type, body builder taking (builder, **fields)).
COMMANDS = {
    "Pause": (_CB.Pause, _empty(w.Pause)),
    "Resume": (_CB.Resume, _empty(w.Resume)),
    "Step": (_CB.Step, _step),
    "QueryStats": (_CB.QueryStats, _empty(w.QueryStats)),
    "SetPedestrianTarget": (_CB.SetPedestrianTarget, _set_pedestrian_target),
    "DespawnEntity": (_CB.DespawnEntity, _despawn),
    "Checkpoint": (_CB.Checkpoint, _named(w.Checkpoint)),
    "Restore": (_CB.Restore, _named(w.Restore)),
    "Save": (_CB.Save, _named(w.Save)),
    "Load": (_CB.Load, _named(w.Load)),
    "ListSnapshots": (_CB.ListSnapshots, _empty(w.ListSnapshots)),
    "DeleteSnapshot": (_CB.DeleteSnapshot, _named(w.DeleteSnapshot)),
    "QueryJob": (_CB.QueryJob, _query_job),
    "GarageRequest": (_CB.GarageRequest, _garage_request),
    "CancelGarageRequest": (_CB.CancelGarageRequest, _cancel_garage_request),
    "SetVehicleStrategy": (_CB.SetVehicleStrategy, _set_vehicle_strategy),
    "SetObservers": (_CB.SetObservers, _set_observers),
    "QueryGarages": (_CB.QueryGarages, _empty(w.QueryGarages)),
    "QuerySignals": (_CB.QuerySignals, _empty(w.QuerySignals)),
    "QueryVehicle": (_CB.QueryVehicle, _query_vehicle),
    "SetHour": (_CB.SetHour, _set_hour),
    "SetTimeScale": (_CB.SetTimeScale, _set_time_scale),
    "QueryZones": (_CB.QueryZones, _empty(w.QueryZones)),
    "ForceFull": (_CB.ForceFull, _force_full),
}


def build_command(request_id: int, command: str, /, **fields) -> bytes:
    """Command payload, e.g. ``build_command(3, "Step", count=5)``,
    ``build_command(4, "Checkpoint", name="cp")``, ``build_command(5,
    "GarageRequest", garage="g0", request_id="r1", prototype="sedan",
    lane="lane0", priority=10)``, ``build_command(6, "SetVehicleStrategy",
    index=3, generation=1, strategy="Parked")`` or ``build_command(7,
    "SetObservers", points=[(25.0, 25.0)])``."""
    try:
        body_type, build_body = COMMANDS[command]
    except KeyError:
        raise ValueError(f"unknown command {command!r}; known: {', '.join(COMMANDS)}") from None
    b = w.flatbuffers.Builder(64)
    body = build_body(b, **fields)
    w.Command.Start(b)
    w.Command.AddRequestId(b, request_id)
    w.Command.AddBodyType(b, body_type)
    w.Command.AddBody(b, body)
    return _finish_client_frame(b, w.ClientMessage.ClientMessage.Command, w.Command.End(b))


# --------------------------------------------------------------------------
# Server -> client
# --------------------------------------------------------------------------


def _str(value) -> str:
    return value.decode("utf-8") if value is not None else ""


def _struct_vector(buf, first, count: int, fmt: struct.Struct):
    """Unpack a vector of fixed-size structs starting at element 0's table."""
    if count == 0:
        return []
    base = first._tab.Pos
    if base < 0 or base + count * fmt.size > len(buf):
        raise MalformedFrameError("struct vector runs past the end of the frame")
    return list(fmt.iter_unpack(memoryview(buf)[base : base + count * fmt.size]))


_KINDS = {k.value: k for k in EntityKind}
_HEADING_RAD = 2.0 * math.pi / 65536.0


def _entity_states(buf, length: int, at) -> list:
    rows = _struct_vector(buf, at(0) if length else None, length, _ENTITY_STATE)
    kinds, q = _KINDS, _HEADING_RAD
    return [EntityState(EntityId(i, g), kinds.get(k, k), x / 100.0, y / 100.0, h * q, s / 100.0)
            for i, g, x, y, h, s, k in rows]


def _decode_delta(buf, d) -> Delta:
    left_rows = _struct_vector(buf, d.Left(0) if d.LeftLength() else None,
                               d.LeftLength(), _ENTITY_ID)
    return Delta(
        step=d.Step(),
        sim_time_us=d.SimTimeUs(),
        digest=d.Digest(),
        baseline=d.Baseline(),
        entered=_entity_states(buf, d.EnteredLength(), d.Entered),
        updated=_entity_states(buf, d.UpdatedLength(), d.Updated),
        left=[EntityId(i, g) for i, g in left_rows],
        signals=[SignalPhaseState(i, _enum_or_int(SignalPhase, p)) for i, p in _struct_vector(
            buf, d.Signals(0) if d.SignalsLength() else None, d.SignalsLength(), _SIGNAL_PHASE)],
    )


def _decode_lane(lane) -> Lane:
    points = []
    for j in range(lane.PointsLength()):
        p = lane.Points(j)
        points.append((p.X(), p.Y()))
    return Lane(
        index=lane.Index(),
        id=_str(lane.Id()),
        kind=_enum_or_int(LaneKind, lane.Kind()),
        points=points,
        length_m=lane.LengthM(),
        speed_limit_mps=lane.SpeedMpsLimit(),
        successors=[lane.Successors(j) for j in range(lane.SuccessorsLength())],
    )


def _decode_garage_geometry(g) -> GarageGeometry:
    return GarageGeometry(
        id=_str(g.Id()),
        entrance_lane=g.EntranceLane(),
        route=[g.Route(j) for j in range(g.RouteLength())],
    )


def _decode_signal_geometry(g) -> SignalGeometry:
    return SignalGeometry(id=_str(g.Id()), lane=g.Lane(), stop_alpha=g.StopAlpha(),
                          yield_alpha=g.YieldAlpha())


def _decode_welcome(m) -> Welcome:
    return Welcome(
        server_version=_str(m.ServerVersion()),
        protocol_version=m.ProtocolVersion(),
        session_id=m.SessionId(),
        role=_enum_or_int(Role, m.Role()),
        step_us=m.StepUs(),
        clock_mode=_enum_or_int(ClockMode, m.ClockMode()),
        scenario_id=_str(m.ScenarioId()),
        current_step=m.CurrentStep(),
        lanes=[_decode_lane(m.Lanes(j)) for j in range(m.LanesLength())],
        garages=[_decode_garage_geometry(m.Garages(j)) for j in range(m.GaragesLength())],
        signals=[_decode_signal_geometry(m.Signals(j)) for j in range(m.SignalsLength())],
    )


def _decode_stats(s) -> Stats:
    return Stats(
        step=s.Step(),
        sim_time_us=s.SimTimeUs(),
        digest=s.Digest(),
        step_us=s.StepUs(),
        clock_mode=_enum_or_int(ClockMode, s.ClockMode()),
        paused=s.Paused(),
        pedestrians=s.Pedestrians(),
        pedestrian_target=s.PedestrianTarget(),
        entity_capacity=s.EntityCapacity(),
        clients=s.Clients(),
        spawned_total=s.SpawnedTotal(),
        despawned_total=s.DespawnedTotal(),
        commands_accepted=s.CommandsAccepted(),
        commands_rejected=s.CommandsRejected(),
        dropped_steps=s.DroppedSteps(),
        recording=s.Recording(),
        recording_failed=s.RecordingFailed(),
        recorded_ticks=s.RecordedTicks(),
        vehicles=s.Vehicles(),
        vehicles_full=s.VehiclesFull(),
        vehicles_simulated=s.VehiclesSimulated(),
        vehicles_coarse=s.VehiclesCoarse(),
        vehicles_moving=s.VehiclesMoving(),
        vehicles_waiting=s.VehiclesWaiting(),
        vehicles_yielding=s.VehiclesYielding(),
        tier_transitions_deferred=s.TierTransitionsDeferred(),
        hour=s.Hour(),
        time_scale=s.TimeScale(),
        residents=s.Residents(),
        residents_active=s.ResidentsActive(),
    )


def _decode_zone_info(z) -> ZoneInfo:
    return ZoneInfo(
        id=_str(z.Id()), target=z.Target(), active=z.Active(), dormant=z.Dormant(),
        pending_spawn=z.PendingSpawn(), pending_recycle=z.PendingRecycle(),
        activated=z.Activated(), recycled=z.Recycled(), deferred_by_quota=z.DeferredByQuota(),
        rejected_by_capacity=z.RejectedByCapacity(), activated_total=z.ActivatedTotal(),
        recycled_total=z.RecycledTotal(), capacity=z.Capacity(), migrated_in=z.MigratedIn(),
        deferred_by_migration=z.DeferredByMigration())


def _decode_job(j) -> JobStatus:
    return JobStatus(
        job_id=j.JobId(),
        kind=_enum_or_int(JobKind, j.Kind()),
        state=_enum_or_int(JobState, j.State()),
        terminal=j.Terminal(),
        name=_str(j.Name()),
        step=j.Step(),
        message=_str(j.Message()),
    )


def _decode_snapshot_info(i) -> SnapshotInfo:
    return SnapshotInfo(
        name=_str(i.Name()),
        kind=_str(i.Kind()),
        scenario_id=_str(i.ScenarioId()),
        step=i.Step(),
        sim_time_us=i.SimTimeUs(),
        digest=i.Digest(),
        pedestrians=i.Pedestrians(),
        created_unix_ms=i.CreatedUnixMs(),
    )


def _decode_garage_info(g) -> GarageInfo:
    return GarageInfo(
        id=_str(g.Id()),
        queued=[_str(g.Queued(j)) for j in range(g.QueuedLength())],
        dispatched=g.Dispatched(),
        managed=g.Managed(),
        capacity=g.Capacity(),
        frame_index=g.FrameIndex(),
        next_vehicle_ordinal=g.NextVehicleOrdinal(),
        last_gate=_enum_or_int(DispatchGate, g.LastGate()),
        gate_steps=[g.GateSteps(j) for j in range(g.GateStepsLength())],
        turnarounds=g.Turnarounds(),
        rejected_invalid=g.RejectedInvalid(),
        rejected_duplicate=g.RejectedDuplicate(),
        rejected_queue_full=g.RejectedQueueFull(),
        canceled=g.Canceled(),
        plan_total=g.PlanTotal(),
        plan_injected=g.PlanInjected(),
    )


def _decode_signal_info(i) -> SignalInfo:
    return SignalInfo(id=_str(i.Id()), lane=i.Lane(), phase=_enum_or_int(SignalPhase, i.Phase()),
                      phase_elapsed_us=i.PhaseElapsedUs(), cycles=i.Cycles())


def _entity_id(struct_or_none) -> EntityId:
    if struct_or_none is None:
        return EntityId(0, 0)
    return EntityId(struct_or_none.Index(), struct_or_none.Generation())


def _decode_vehicle_info(v) -> VehicleInfo:
    return VehicleInfo(
        id=_entity_id(v.Id()),
        vehicle_id=_str(v.VehicleId()),
        garage=_str(v.Garage()),
        request_id=_str(v.RequestId()),
        prototype=_str(v.Prototype()),
        route_index=v.RouteIndex(),
        lane=v.Lane(),
        s_m=v.SM(),
        alpha=v.Alpha(),
        x_m=v.XM(),
        y_m=v.YM(),
        speed_mps=v.SpeedMps(),
        strategy=_enum_or_int(VehicleStrategyState, v.Strategy()),
        policy=_enum_or_int(ControlPolicy, v.Policy()),
        reason=_enum_or_int(PolicyReason, v.Reason()),
        tier=_enum_or_int(SimTier, v.Tier()),
        leader=_entity_id(v.Leader()),
        steps_advanced=v.StepsAdvanced(),
        awaiting_turnaround=v.AwaitingTurnaround(),
        despawn_requested=v.DespawnRequested(),
    )


def _decode_command_result(m) -> CommandResult:
    stats = m.Stats()
    job = m.Job()
    vehicle = m.Vehicle()
    snapshots = garages = signals = None
    if not m.SnapshotsIsNone():
        snapshots = [_decode_snapshot_info(m.Snapshots(j)) for j in range(m.SnapshotsLength())]
    if not m.GaragesIsNone():
        garages = [_decode_garage_info(m.Garages(j)) for j in range(m.GaragesLength())]
    if not m.SignalsIsNone():
        signals = [_decode_signal_info(m.Signals(j)) for j in range(m.SignalsLength())]
    zones = None
    if not m.ZonesIsNone():
        zones = [_decode_zone_info(m.Zones(j)) for j in range(m.ZonesLength())]
    return CommandResult(
        request_id=m.RequestId(),
        status=_enum_or_int(CommandStatus, m.Status()),
        reason=_enum_or_int(RejectReason, m.Reason()),
        message=_str(m.Message()),
        applied_step=m.AppliedStep(),
        stats=_decode_stats(stats) if stats is not None else None,
        job=_decode_job(job) if job is not None else None,
        snapshots=snapshots,
        garages=garages,
        signals=signals,
        vehicle=_decode_vehicle_info(vehicle) if vehicle is not None else None,
        zones=zones,
    )


def _decode_job_update(m) -> JobUpdate:
    job = m.Job()
    if job is None:
        raise MalformedFrameError("JobUpdate without a job")
    return JobUpdate(_decode_job(job))


_SM = w.ServerMessage.ServerMessage
_SERVER_MESSAGES = {
    _SM.Welcome: (w.Welcome.Welcome, lambda buf, m: _decode_welcome(m)),
    _SM.Error: (w.Error.Error,
                lambda buf, m: ErrorMessage(_enum_or_int(ErrorCode, m.Code()), _str(m.Message()))),
    _SM.Delta: (w.Delta.Delta, _decode_delta),
    _SM.CommandResult: (w.CommandResult.CommandResult, lambda buf, m: _decode_command_result(m)),
    _SM.JobUpdate: (w.JobUpdate.JobUpdate, lambda buf, m: _decode_job_update(m)),
}


def has_identifier(payload: bytes, identifier: bytes) -> bool:
    return len(payload) >= 8 and bytes(payload[4:8]) == identifier


def decode_server_frame(payload: bytes) -> Message:
    """Decode one ServerFrame payload (without the length prefix)."""
    payload = bytes(payload)
    if len(payload) < 8:
        raise MalformedFrameError(f"frame of {len(payload)} bytes is too short for a FlatBuffer")
    if not has_identifier(payload, SERVER_IDENTIFIER):
        raise MalformedFrameError(
            f"file identifier is {payload[4:8]!r}, expected {SERVER_IDENTIFIER!r}")
    try:
        frame = w.ServerFrame.ServerFrame.GetRootAs(payload, 0)
        msg_type = frame.MessageType()
        table = frame.Message()
        if table is None or msg_type == _SM.NONE:
            raise MalformedFrameError("ServerFrame carries no message")
        if msg_type not in _SERVER_MESSAGES:
            raise MalformedFrameError(f"unknown ServerMessage type {msg_type}")
        cls, decode = _SERVER_MESSAGES[msg_type]
        msg = cls()
        msg.Init(table.Bytes, table.Pos)
        return decode(payload, msg)
    except MalformedFrameError:
        raise
    except (struct.error, IndexError, ValueError, TypeError, UnicodeDecodeError) as exc:
        raise MalformedFrameError(f"corrupt ServerFrame: {exc}") from exc
