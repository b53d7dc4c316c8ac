"""Bustle framing and message codec (no sockets here).

A frame is a 4-byte little-endian payload length followed by the payload, one
FlatBuffer with a file identifier: ``BCL1`` client->server, ``BSV1``
server->client. Clients encode ClientFrames (Hello, Subscribe, UpdateInterest,
Command) and decode ServerFrames (Welcome, Error, Delta, CommandResult, JobUpdate,
SpawnUpdate) into the dataclasses of :mod:`bustle_client.messages`.

Python's FlatBuffers runtime has no Verifier, so decoding checks the length and
file identifier up front and turns any out-of-bounds read of a corrupt buffer
into :class:`MalformedFrameError`; it never returns partly decoded garbage.
Delta.motion is decoded too (:func:`bustle_client.motion.read_motion`); bad
records raise :class:`MotionError`, a MalformedFrameError naming the byte.
"""

from __future__ import annotations

import importlib
import re
import struct
from typing import Iterator, Optional, Union

from . import _wire as w
from .motion import read_motion
from .messages import (
    CHANGE_VALUE_ENUMS,
    PROTOCOL_VERSION,
    BatchStatus,
    ChainDots,
    ClockMode,
    CommandResult,
    CommunityInfo,
    CommandStatus,
    ControlPolicy,
    Delta,
    DispatchGate,
    DespawnReason,
    ENUM_CLASSES,
    WIRE_DATACLASSES,
    EntityId,
    EntityInfo,
    EntityChange,
    EntityEnter,
    EntityField,
    EntityKind,
    ErrorCode,
    ErrorMessage,
    FrameTooLargeError,
    GarageGeometry,
    GarageInfo,
    ZoneInfo,
    JobKind,
    JobState,
    JobStatus,
    Lease,
    LeaseState,
    LeaseSummary,
    JobUpdate,
    Lane,
    LaneChain,
    LaneKind,
    LifecycleOp,
    LifecycleOpKind,
    LifecycleState,
    MalformedFrameError,
    Observer,
    ObserverView,
    PedestrianOrigin,
    PolicyReason,
    PopulationInfo,
    PriorityClass,
    RejectReason,
    RepresentationBudgets,
    RepresentationHint,
    Role,
    SignalGeometry,
    SignalInfo,
    SignalPhase,
    SignalPhaseState,
    SimTier,
    SnapshotInfo,
    SpawnFailure,
    SpawnRequest,
    SpawnState,
    SpawnStatus,
    SpawnUpdate,
    Stats,
    VehicleInfo,
    VehicleStrategy,
    VehicleStrategyState,
    Welcome,
    _enum_or_int,
    route_lanes,
)

LENGTH_PREFIX_BYTES = 4
CLIENT_IDENTIFIER = b"BCL1"
SERVER_IDENTIFIER = b"BSV1"
#: Cap on frames this client accepts (a baseline Delta of a large city is big).
MAX_INBOUND_FRAME_BYTES = 64 << 20
#: The server's cap on client frames; larger frames get Error FrameTooLarge.
SERVER_MAX_INBOUND_FRAME_BYTES = 1 << 20

_PREFIX = struct.Struct("<I")
# EntityEnter struct: id {index u32, generation u32}, lane u32, s_mm u32,
# speed_mmps u32, archetype u16, kind u8, sim_tier u8, representation u8,
# policy u8, corpse bool, 1 byte padding.
_ENTITY_ENTER = struct.Struct("<IIIIIHBBBB?x")
# EntityChange struct: index u32, field u8, value u8, 2 bytes padding.
_ENTITY_CHANGE = struct.Struct("<IBB2x")
_ENTITY_ID = struct.Struct("<II")
_VEC2D = struct.Struct("<dd")
# SignalPhaseState struct: index u16, phase u8, 1 byte padding.
_SIGNAL_PHASE = struct.Struct("<HBx")
# ChainDots struct: chain u32, count u16, 2 bytes padding.
_CHAIN_DOTS = struct.Struct("<IH2x")
# Fails at import if the schema changes the struct layout without this module.
assert _ENTITY_ENTER.size == w.EntityEnterStruct.EntityEnter.SizeOf()
assert _ENTITY_CHANGE.size == w.EntityChangeStruct.EntityChange.SizeOf()
assert _VEC2D.size == w.Vec2d.Vec2d.SizeOf()
assert _ENTITY_ID.size == w.EntityId.EntityId.SizeOf()
assert _SIGNAL_PHASE.size == w.SignalPhaseState.SignalPhaseState.SizeOf()
assert _CHAIN_DOTS.size == w.ChainDots.ChainDots.SizeOf()

#: SpawnStatus.lane / LaneInfo index meaning "no lane".
NO_LANE = 0xFFFFFFFF

Message = Union[Welcome, ErrorMessage, Delta, CommandResult, JobUpdate, SpawnUpdate]


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


def _client_frame(table: str, fields: dict, size: int = 128) -> bytes:
    """A ClientFrame holding the client.fbs table `table` built from `fields`
    (schema names; see _fill below)."""
    b = w.flatbuffers.Builder(size)
    message_type = getattr(w.ClientMessage.ClientMessage, table)
    return _finish_client_frame(b, message_type, _fill(table, fields).Pack(b))


def build_hello(name: str, role="viewer", token: Optional[str] = None,
                protocol_version: Optional[int] = None) -> bytes:
    """Hello payload. ``protocol_version`` defaults to the schema's version."""
    return _client_frame("Hello", {
        "protocol_version": PROTOCOL_VERSION if protocol_version is None else protocol_version,
        "client_name": name, "token": token, "role": _role(role)})


def observer(value) -> Observer:
    """An Observer, a tuple (x_m, y_m[, z_m[, heading_rad or None[, radius_m]]])
    or a dict of Observer's fields."""
    if isinstance(value, Observer):
        return value
    if isinstance(value, dict):
        return Observer(**value)
    if not 2 <= len(value) <= 5:
        raise ValueError(f"observer {value!r}: expected (x_m, y_m[, z_m[, heading_rad[, radius_m]]])")
    return Observer(*value)


def budgets_of(value) -> RepresentationBudgets:
    """RepresentationBudgets from itself, a dict of its fields or (actors, instances, markers)."""
    if isinstance(value, RepresentationBudgets):
        return value
    if isinstance(value, dict):
        return RepresentationBudgets(**value)
    return RepresentationBudgets(*value)


def _uint(what: str, value, bits: int = 32) -> int:
    number = int(value)
    if not 0 <= number < 1 << bits:
        raise ValueError(f"{what} {number} does not fit an unsigned {bits}-bit field")
    return number  # the server judges the range the schema documents


def _observer_t(o: Observer):
    t = w.Observer.ObserverT()
    t.xM, t.yM, t.zM = float(o.x_m), float(o.y_m), float(o.z_m)
    t.hasHeading = o.heading_rad is not None
    t.headingRad = 0.0 if o.heading_rad is None else float(o.heading_rad)
    t.radiusM = float(o.radius_m)
    return t


def _budgets_t(budgets):
    r = budgets_of(budgets)
    t = w.RepresentationBudgets.RepresentationBudgetsT()
    t.actors = _uint("budgets.actors", r.actors)
    t.instances = _uint("budgets.instances", r.instances)
    t.markers = _uint("budgets.markers", r.markers)
    return t


def _interest_fields(request_id, observers, budgets) -> dict:
    """The fields Subscribe and UpdateInterest share. No observers: none
    sent (the whole city); no budgets: the server's defaults."""
    return {"request_id": _uint("request_id", request_id),
            "observers": [_observer_t(observer(o)) for o in observers] if observers else None,
            "budgets": _budgets_t(budgets) if budgets is not None else None}


def build_subscribe(kinds=None, observers=None, budgets=None, motion_tolerance_mm=None, *,
                    request_id: int = 0) -> bytes:
    """Subscribe payload. ``kinds`` None or empty: every kind; ``observers``
    (see :func:`observer`) None or empty: the whole city; ``budgets`` None:
    the server's defaults (256 actors, 4096 instances, 16384 markers);
    ``motion_tolerance_mm`` None: the schema default (10 mm). Answered by a
    CommandResult with ``request_id``."""
    fields = _interest_fields(request_id, observers, budgets)
    fields["kinds"] = [int(EntityKind(k)) for k in kinds] if kinds else None
    if motion_tolerance_mm is not None:
        fields["motion_tolerance_mm"] = _uint("motion_tolerance_mm", motion_tolerance_mm, 16)
    return _client_frame("Subscribe", fields)


def build_update_interest(observers=None, budgets=None, *, request_id: int = 0) -> bytes:
    """UpdateInterest payload (a subscribed client's new observers and
    budgets, without a new baseline); answered like Subscribe."""
    return _client_frame("UpdateInterest", _interest_fields(request_id, observers, budgets))


#: A LeaseReport carries at most this many entries (the server refuses more).
LEASE_ENTRIES_MAX = 4096


def build_lease_report(leases, *, request_id: int = 0) -> bytes:
    """LeaseReport payload: what this client applied (:class:`Lease` or
    (id, state[, representation[, reason]]) tuples; id as EntityId or
    (index, generation)). ``request_id`` 0: the server does not answer."""
    entries = [lease if isinstance(lease, Lease) else Lease(*lease) for lease in leases]
    if len(entries) > LEASE_ENTRIES_MAX:
        raise ValueError(f"a LeaseReport carries at most {LEASE_ENTRIES_MAX} entries, got {len(entries)}")
    return _client_frame("LeaseReport", {"request_id": _uint("request_id", request_id),
                                         "entries": [_lease_entry_t(e) for e in entries]},
                         size=64 + 12 * len(entries))


def _lease_entry_t(lease: Lease):
    t = w.LeaseEntry.LeaseEntryT()
    t.id = _entity_id_t(lease.id)
    t.state, t.representation, t.reason = int(LeaseState(lease.state)), int(lease.representation), int(lease.reason)
    return t




def _text(field: str, value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a str, not {type(value).__name__}")
    return value


def _ubyte_enum(enum_cls, what: str, value) -> int:
    """A member of ``enum_cls``, its name (case-insensitive) or its value."""
    if isinstance(value, str):
        for member in enum_cls:
            if member.name.lower() == value.lower():
                return int(member)
        raise ValueError(f"unknown {what} {value!r}; known: "
                         f"{', '.join(m.name for m in enum_cls)}")
    number = int(value)
    if not 0 <= number <= 255:
        raise ValueError(f"{what} {number} does not fit a ubyte")
    return number  # out-of-range values are sent as they are; the server judges them


def vehicle_strategy(strategy) -> int:
    """A VehicleStrategy member, its name ('Parked', case-insensitive) or its value."""
    return _ubyte_enum(VehicleStrategy, "vehicle strategy", strategy)


def priority_class(priority) -> int:
    """A PriorityClass member, its name ('quest', case-insensitive) or its value."""
    return _ubyte_enum(PriorityClass, "priority class", priority)


def observer_view(view) -> ObserverView:
    """An ObserverView, a (z_m, heading_rad or None) pair or a bare z_m."""
    if isinstance(view, ObserverView):
        return view
    if isinstance(view, (int, float)):
        return ObserverView(float(view))
    z, heading = view
    return ObserverView(float(z), None if heading is None else float(heading))


def split_observers(points):
    """(x, y) pairs and ObserverViews (or None) from points given as (x, y),
    (x, y, z) or (x, y, z, heading_rad or None). Views are derived only when
    some point carries a height or heading; then every point gets one."""
    xy, views, extra = [], [], False
    for p in points:
        if not 2 <= len(p) <= 4:
            raise ValueError(f"observer point {p!r}: expected (x, y[, z[, heading_rad]])")
        xy.append((float(p[0]), float(p[1])))
        extra = extra or len(p) > 2
        views.append(ObserverView(float(p[2]) if len(p) > 2 else 0.0,
                                  None if len(p) < 4 or p[3] is None else float(p[3])))
    return xy, (views if extra else None)


def _offsets_vector(b, start_vector, offs):
    start_vector(b, len(offs))
    for off in reversed(offs):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def lifecycle_op(op) -> LifecycleOp:
    """A LifecycleOp, ('spawn', SpawnRequest or dict of its fields) or ('despawn', id)."""
    if isinstance(op, LifecycleOp):
        return op
    kind, arg = op
    kind = LifecycleOpKind(_ubyte_enum(LifecycleOpKind, "lifecycle op kind", kind))
    if kind == LifecycleOpKind.Spawn:
        return LifecycleOp(kind, spawn=arg if isinstance(arg, SpawnRequest) else SpawnRequest(**arg))
    return LifecycleOp(kind, id=EntityId(*arg))


# Command bodies, from the schema. flatc's Python object API
# (--gen-object-api) gives every table of client.fbs a class <Table>T whose
# attributes start at the schema's defaults and whose Pack() writes the
# table; flatc --jsonschema (client.schema.json) gives each field's type.
# So a command is built from keyword arguments named as its schema fields
# (snake_case), each converted by its schema type, and a field added to a
# command in client.fbs is accepted here without a line of this module.
# What the schema cannot say is below: the argument conventions of this
# client (an entity as index=, generation=; enum members by name; which
# fields a script must give; observer points as tuples).

#: Fields a script must give, per command (the schema leaves most fields
#: optional on the wire, so a forgotten one would silently mean its default).
_REQUIRED = {
    "GarageRequest": ("garage", "request_id", "prototype", "lane"),
    "CancelGarageRequest": ("garage", "request_id"),
    "SetVehicleStrategy": ("id", "strategy"),
    "SetPedestrianTarget": ("count",),
    "SetHour": ("hour",),
    "SetTimeScale": ("scale",),
    "SetPreventionLevel": ("level",),
    "QueryJob": ("job_id",),
    "CancelSpawn": ("handle",),
    "QuerySpawn": ("handle",),
    "SetObservers": ("points",),
    "LifecycleBatch": ("ops",),
    **{name: ("name",) for name in ("Checkpoint", "Restore", "Save", "Load", "DeleteSnapshot")},
}


def _camel(field_name: str) -> str:
    """The object API's attribute of a schema field: timeout_ms -> timeoutMs."""
    head, *rest = field_name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _schema_ref(spec: dict) -> Optional[str]:
    ref = spec.get("$ref", "")
    return ref.rsplit("_", 1)[-1] if ref else None


def _entity_id_t(value):
    """An EntityIdT from an EntityId or an (index, generation) pair."""
    index, generation = value
    t = w.EntityId.EntityIdT()
    t.index, t.generation = int(index), int(generation)
    return t


def _field_value(table: str, field: str, spec: dict, value):
    """A keyword argument as the object API holds the schema field `spec`."""
    ref = _schema_ref(spec)
    if ref == "EntityId":
        return _entity_id_t(value)
    if ref in ENUM_CLASSES:
        return _ubyte_enum(ENUM_CLASSES[ref], _words(ref), value)
    kind = spec.get("type")
    if kind == "string":
        return _text(field, value)
    if kind == "integer":
        return int(value)
    if kind == "number":
        return float(value)
    if kind == "boolean":
        return bool(value)
    if kind == "array" and spec["items"].get("type") == "string":
        return [_text(f"{field}[{k}]", v) for k, v in enumerate(value)]
    item_ref = _schema_ref(spec.get("items", {}))
    if kind == "array" and item_ref in ENUM_CLASSES:
        return [_ubyte_enum(ENUM_CLASSES[item_ref], _words(item_ref), v) for v in value]
    # Vectors of structs or tables have their own argument forms (_ADAPTERS).
    raise TypeError(f"{table}.{field}: no conversion for schema type {spec}")


def _words(name: str) -> str:
    """PriorityClass -> 'priority class' (how errors name an enum)."""
    return re.sub(r"(?<!^)(?=[A-Z])", " ", name).lower()


def _fill(table: str, fields: dict):
    """The object API instance of `table` with `fields` (schema names) set."""
    spec = w.CLIENT_SCHEMA[table]["properties"]
    unknown = [f for f in fields if f not in spec]
    if unknown:
        raise TypeError(f"{table} has no field {', '.join(unknown)} (fields: {', '.join(spec)})")
    obj = getattr(importlib.import_module(f"bustle.wire.{table}"), f"{table}T")()
    for field, value in fields.items():
        if value is None:
            continue  # absent: the schema's default
        if not _is_object_api(value):
            value = _field_value(table, field, spec[field], value)
        setattr(obj, _camel(field), value)
    return obj


def _is_object_api(value) -> bool:
    """Already in the object API's form (an adapter built it)."""
    if isinstance(value, list):
        return all(hasattr(v, "Pack") for v in value)
    return hasattr(value, "Pack")


def _entity_fields(fields: dict) -> dict:
    """This client's form of an entity id, index= and generation=, as the
    schema's ``id`` field."""
    if "index" in fields or "generation" in fields:
        if "id" in fields:
            raise TypeError("give the entity as id= or as index= and generation=, not both")
        index, generation = fields.pop("index", None), fields.pop("generation", None)
        if index is None or generation is None:
            raise TypeError("an entity needs both index= and generation=")
        fields["id"] = (index, generation)
    return fields


def _lane_closure(fields: dict) -> dict:
    if fields.get("lane") is None and fields.get("lane_index") is None:
        raise ValueError("lane closure: give lane (an id) or lane_index")
    return fields


def _spawn_fields(fields: dict) -> dict:
    """SpawnPedestrian: ``route`` (lane ids) is checked and sent when not
    empty; the server judges the ids, their succession and their number."""
    if "route" in fields:
        fields["route"] = route_lanes(fields["route"]) or None
    return fields


def _observer_fields(fields: dict) -> dict:
    """SetObservers: ``points`` as (x, y[, z[, heading_rad]]); ``views``
    (optional) sent as given, one per point normally (a length that differs
    is the server's to reject); ``follow`` (optional, (index, generation)):
    the observer follows that entity."""
    points, derived = split_observers(fields.get("points", ()))
    views = fields.get("views")
    if views is not None and derived is not None:
        raise ValueError("give heights/headings either in the points or as views, not both")
    views = derived if views is None else [observer_view(v) for v in views]
    fields["points"] = [_vec2_t(x, y) for x, y in points]
    if views is not None:
        fields["views"] = [_observer_view_t(v) for v in views]
    return fields


def _vec2_t(x: float, y: float):
    t = w.Vec2.Vec2T()
    t.x, t.y = x, y
    return t


def _observer_view_t(view: ObserverView):
    t = w.ObserverView.ObserverViewT()
    t.zM, t.hasHeading, t.headingRad = view.z_m, view.heading_rad is not None, view.heading_rad or 0.0
    return t


def _lifecycle_fields(fields: dict) -> dict:
    """LifecycleBatch: ``ops`` as LifecycleOps or (kind, argument) pairs."""
    ops = []
    for op in map(lifecycle_op, fields.get("ops", ())):
        t = w.LifecycleOp.LifecycleOpT()
        t.kind = int(op.kind)
        if op.spawn is not None:
            r = op.spawn
            t.spawn = _fill("SpawnPedestrian", _spawn_fields(
                {"zone": r.zone, "lane": r.lane, "priority": r.priority, "timeout_ms": r.timeout_ms,
                 "route": r.route}))
        if op.id is not None:
            t.id = _entity_id_t(op.id)
        ops.append(t)
    fields["ops"] = ops
    return fields


#: Argument conventions per command, applied before the schema's fields are
#: filled in (every command with an ``id`` field also takes index=, generation=).
_ADAPTERS = {
    "CloseLane": _lane_closure,
    "OpenLane": _lane_closure,
    "SpawnPedestrian": _spawn_fields,
    "SetObservers": _observer_fields,
    "LifecycleBatch": _lifecycle_fields,
}


def _command_body(command: str):
    """Body builder (builder, **fields) -> offset for a command table."""
    def build(b, **fields):
        fields = _entity_fields(dict(fields))
        missing = [f for f in _REQUIRED.get(command, ()) if fields.get(f) is None]
        if "id" in w.CLIENT_SCHEMA[command].get("required", ()) and fields.get("id") is None:
            missing.append("index, generation")
        if missing:
            raise TypeError(f"{command} needs {', '.join(missing)}")
        adapt = _ADAPTERS.get(command)
        obj = _fill(command, adapt(fields) if adapt else fields)
        return obj.Pack(b)
    return build


_CB = w.CommandBody.CommandBody
#: Command name -> (union type, body builder taking (builder, **fields)): every
#: member of the schema's CommandBody union.
COMMANDS = {name: (value, _command_body(name)) for name, value in vars(_CB).items()
            if not name.startswith("_") and name != "NONE" and isinstance(value, int)}


def build_command(request_id: int, command: str, /, **fields) -> bytes:
    """Command payload, e.g. ``build_command(3, "Step", count=5)``,
    ``build_command(4, "Checkpoint", name="cp")``, ``build_command(5,
    "GarageRequest", garage="g0", request_id="r1", prototype="sedan",
    lane="lane0", priority=10)``, ``build_command(6, "SetVehicleStrategy",
    index=3, generation=1, strategy="Parked")``, ``build_command(7,
    "SetObservers", points=[(25.0, 25.0), (0, 0, 1.8, 3.14)])``,
    ``build_command(8, "SpawnPedestrian", zone="market", priority="story",
    route=["market.loop", "x.market.office"])``
    or ``build_command(9, "LifecycleBatch", ops=[spawn_op(), despawn_op((4, 1))])``."""
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


def _accessor(field_name: str) -> str:
    """flatc's Python accessor of a schema field: sim_time_us -> SimTimeUs."""
    return "".join(part[:1].upper() + part[1:] for part in field_name.split("_"))


def _decode_value(kind: str, ref, value):
    if kind == "string":
        return _str(value)
    if kind == "enum":
        return _enum_or_int(ENUM_CLASSES[ref], value)
    if kind == "struct":
        return _entity_id(value)
    if kind == "table":
        if value is None:
            return None
        if ref not in WIRE_DATACLASSES:
            raise MalformedFrameError(f"no generated dataclass for nested table {ref}")
        return decode_table(WIRE_DATACLASSES[ref], value)
    return value


def decode_table(cls, table):
    """Every schema field of a generated reply dataclass (messages.wire_dataclass)
    read from the flatc accessor object ``table``: scalars as they are, enums
    as members (raw ints for values from a newer schema), strings decoded,
    EntityId structs as EntityId, nested tables recursively, vectors as lists
    (empty when absent), a scalar at its "none" default (cls.WIRE_NONE) as
    None. In an envelope (CommandResult) an absent vector, and an absent or null
    (generation 0) EntityId, is None."""
    values = {}
    none, envelope = cls.WIRE_NONE, cls.WIRE_ENVELOPE
    for f in cls.WIRE_FIELDS:
        name = _accessor(f.name)
        if f.kind == "vector":
            if envelope and getattr(table, name + "IsNone")():
                values[f.name] = None
                continue
            at = getattr(table, name)
            values[f.name] = [_decode_value(f.item_kind, f.ref, at(j))
                              for j in range(getattr(table, name + "Length")())]
            continue
        raw = getattr(table, name)()
        if envelope and f.kind == "struct" and (raw is None or raw.Generation() == 0):
            values[f.name] = None  # absent, or the null id (generation 0 is never issued)
        elif f.name in none and raw == none[f.name]:
            values[f.name] = None
        else:
            values[f.name] = _decode_value(f.kind, f.ref, raw)
    return cls(**values)


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


def _members(enum_cls) -> dict:
    return {m.value: m for m in enum_cls}


_KINDS = _members(EntityKind)
_TIERS = _members(SimTier)
_HINTS = _members(RepresentationHint)
_POLICIES = _members(ControlPolicy)
_FIELDS = _members(EntityField)
_CHANGE_VALUES = {f: _members(e) for f, e in CHANGE_VALUE_ENUMS.items()}


def _entered(buf, length: int, at) -> list:
    rows = _struct_vector(buf, at(0) if length else None, length, _ENTITY_ENTER)
    kinds, tiers, hints, policies = _KINDS, _TIERS, _HINTS, _POLICIES
    return [EntityEnter(EntityId(i, g), lane, s_mm, speed, archetype, kinds.get(k, k),
                        tiers.get(t, t), hints.get(r, r), policies.get(p, p), corpse)
            for i, g, lane, s_mm, speed, archetype, k, t, r, p, corpse in rows]


def _changes(buf, length: int, at) -> list:
    out = []
    for index, f, value in _struct_vector(buf, at(0) if length else None, length, _ENTITY_CHANGE):
        field_ = _FIELDS.get(f, f)
        values = _CHANGE_VALUES.get(field_)
        out.append(EntityChange(index, field_, values.get(value, value) if values else value))
    return out


def _ubyte_vector(buf, table, vtable_offset: int) -> bytes:
    """The bytes of a [ubyte] field (by its vtable offset), bounds-checked."""
    tab = table._tab
    o = tab.Offset(vtable_offset)
    if o == 0:
        return b""
    start, n = tab.Vector(o), tab.VectorLen(o)
    if start < 0 or start + n > len(buf):
        raise MalformedFrameError("byte vector runs past the end of the frame")
    return bytes(buf[start : start + n])


_DELTA_MOTION_FIELD = 16  # vtable offset of Delta.motion (the codec tests round-trip it)


def _entity_ids(buf, length: int, at) -> list:
    return [EntityId(i, g) for i, g in
            _struct_vector(buf, at(0) if length else None, length, _ENTITY_ID)]


def _decode_delta(buf, d) -> Delta:
    return Delta(
        step=d.Step(),
        sim_time_us=d.SimTimeUs(),
        digest=d.Digest(),
        baseline=d.Baseline(),
        entered=_entered(buf, d.EnteredLength(), d.Entered),
        labels={lb.Index(): _str(lb.Label()) for lb in map(d.Labels, range(d.LabelsLength()))},
        motion=read_motion(_ubyte_vector(buf, d, _DELTA_MOTION_FIELD)),
        changes=_changes(buf, d.ChangesLength(), d.Changes),
        left=_entity_ids(buf, d.LeftLength(), d.Left),
        signals=[SignalPhaseState(i, _enum_or_int(SignalPhase, p)) for i, p in _struct_vector(
            buf, d.Signals(0) if d.SignalsLength() else None, d.SignalsLength(), _SIGNAL_PHASE)],
        dots=[ChainDots(c, n) for c, n in _struct_vector(
            buf, d.Dots(0) if d.DotsLength() else None, d.DotsLength(), _CHAIN_DOTS)],
        retiring=_entity_ids(buf, d.RetiringLength(), d.Retiring),
        interest_truncated=d.InterestTruncated(),
    )


def _decode_lane(buf, lane) -> Lane:
    n = lane.PointsLength()
    points = _struct_vector(buf, lane.Points(0) if n else None, n, _VEC2D)
    return Lane(
        index=lane.Index(),
        id=_str(lane.Id()),
        kind=_enum_or_int(LaneKind, lane.Kind()),
        points=points,
        length_m=lane.LengthM(),
        speed_limit_mps=lane.SpeedMpsLimit(),
        successors=[lane.Successors(j) for j in range(lane.SuccessorsLength())],
        length_mm=lane.LengthMm(),
        elevation_m=lane.ElevationM(),
    )


def _decode_garage_geometry(g) -> GarageGeometry:
    return decode_table(GarageGeometry, g)


def _decode_signal_geometry(g) -> SignalGeometry:
    return decode_table(SignalGeometry, g)


def _decode_chain(c) -> LaneChain:
    return decode_table(LaneChain, c)


def _decode_welcome(buf, m) -> Welcome:
    return Welcome(
        server_version=_str(m.ServerVersion()),
        protocol_version=m.ProtocolVersion(),
        session_id=m.SessionId(),
        role=_enum_or_int(Role, m.Role()),
        step_us=m.StepUs(),
        clock_mode=_enum_or_int(ClockMode, m.ClockMode()),
        scenario_id=_str(m.ScenarioId()),
        current_step=m.CurrentStep(),
        lanes=[_decode_lane(buf, m.Lanes(j)) for j in range(m.LanesLength())],
        garages=[_decode_garage_geometry(m.Garages(j)) for j in range(m.GaragesLength())],
        signals=[_decode_signal_geometry(m.Signals(j)) for j in range(m.SignalsLength())],
        chains=[_decode_chain(m.Chains(j)) for j in range(m.ChainsLength())],
        dots_every_steps=m.DotsEverySteps(),
        archetypes=[_str(m.Archetypes(j)) for j in range(m.ArchetypesLength())],
    )






def _decode_job(j) -> JobStatus:
    return decode_table(JobStatus, j)








def _entity_id(struct_or_none) -> EntityId:
    if struct_or_none is None:
        return EntityId(0, 0)
    return EntityId(struct_or_none.Index(), struct_or_none.Generation())




def _decode_spawn_status(st) -> SpawnStatus:
    return decode_table(SpawnStatus, st)


def _decode_spawn_update(m) -> SpawnUpdate:
    spawn = m.Spawn()
    if spawn is None:
        raise MalformedFrameError("SpawnUpdate without a spawn status")
    return SpawnUpdate(_decode_spawn_status(spawn))


def _decode_entity_info(e) -> EntityInfo:
    return decode_table(EntityInfo, e)










def _decode_command_result(m) -> CommandResult:
    return decode_table(CommandResult, m)


def _decode_job_update(m) -> JobUpdate:
    job = m.Job()
    if job is None:
        raise MalformedFrameError("JobUpdate without a job")
    return JobUpdate(_decode_job(job))


_SM = w.ServerMessage.ServerMessage
_SERVER_MESSAGES = {
    _SM.Welcome: (w.Welcome.Welcome, _decode_welcome),
    _SM.Error: (w.Error.Error,
                lambda buf, m: ErrorMessage(_enum_or_int(ErrorCode, m.Code()), _str(m.Message()))),
    _SM.Delta: (w.Delta.Delta, _decode_delta),
    _SM.CommandResult: (w.CommandResult.CommandResult, lambda buf, m: _decode_command_result(m)),
    _SM.JobUpdate: (w.JobUpdate.JobUpdate, lambda buf, m: _decode_job_update(m)),
    _SM.SpawnUpdate: (w.SpawnUpdate.SpawnUpdate, lambda buf, m: _decode_spawn_update(m)),
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
