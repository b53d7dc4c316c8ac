"""Plain-Python views of Bustle wire messages, enums and exceptions.

Decoded messages are frozen dataclasses (entity ids, entered entities, motion
records and changes are named tuples) holding ordinary Python values, so they
stay valid after the receive buffer is reused and compare/print nicely in tests.
Protocol v2 carries motion lane-relative in integer millimetres (EntityEnter,
Delta.motion); :class:`bustle_client.EntityMirror` turns them into poses.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import NamedTuple, Optional, Tuple

from ._wire import ENUMS, PROTOCOL_VERSION, SCHEMA, is_struct, none_sentinels

# Enums mirror the generated schema enums (names and values come from flatc's
# output, so they cannot drift from proto/fbs/*.fbs).
ClockMode = enum.IntEnum("ClockMode", ENUMS["ClockMode"])
CommandStatus = enum.IntEnum("CommandStatus", ENUMS["CommandStatus"])
EntityKind = enum.IntEnum("EntityKind", ENUMS["EntityKind"])
ErrorCode = enum.IntEnum("ErrorCode", ENUMS["ErrorCode"])
JobKind = enum.IntEnum("JobKind", ENUMS["JobKind"])
JobState = enum.IntEnum("JobState", ENUMS["JobState"])
LaneKind = enum.IntEnum("LaneKind", ENUMS["LaneKind"])
RejectReason = enum.IntEnum("RejectReason", ENUMS["RejectReason"])
Role = enum.IntEnum("Role", ENUMS["Role"])
SignalPhase = enum.IntEnum("SignalPhase", ENUMS["SignalPhase"])
DispatchGate = enum.IntEnum("DispatchGate", ENUMS["DispatchGate"])
ControlPolicy = enum.IntEnum("ControlPolicy", ENUMS["ControlPolicy"])
PolicyReason = enum.IntEnum("PolicyReason", ENUMS["PolicyReason"])
SimTier = enum.IntEnum("SimTier", ENUMS["SimTier"])
#: Strategy asked for by SetVehicleStrategy (client -> server).
VehicleStrategy = enum.IntEnum("VehicleStrategy", ENUMS["VehicleStrategy"])
#: Strategy reported in VehicleInfo (server -> client); same names and values.
VehicleStrategyState = enum.IntEnum("VehicleStrategyState", ENUMS["VehicleStrategyState"])
# Population: spawn pipeline, lifecycle batches, entity axes (QueryEntity).
PriorityClass = enum.IntEnum("PriorityClass", ENUMS["PriorityClass"])
SpawnState = enum.IntEnum("SpawnState", ENUMS["SpawnState"])
SpawnFailure = enum.IntEnum("SpawnFailure", ENUMS["SpawnFailure"])
BatchStatus = enum.IntEnum("BatchStatus", ENUMS["BatchStatus"])
LifecycleOpKind = enum.IntEnum("LifecycleOpKind", ENUMS["LifecycleOpKind"])
LifecycleState = enum.IntEnum("LifecycleState", ENUMS["LifecycleState"])
RepresentationHint = enum.IntEnum("RepresentationHint", ENUMS["RepresentationHint"])
PedestrianOrigin = enum.IntEnum("PedestrianOrigin", ENUMS["PedestrianOrigin"])
#: Which axis an EntityChange carries (SimTier, Representation, Policy).
EntityField = enum.IntEnum("EntityField", ENUMS["EntityField"])
#: Leases (LeaseReport): what a client applied for an entity, and why not.
LeaseState = enum.IntEnum("LeaseState", ENUMS["LeaseState"])
UnassignedReason = enum.IntEnum("UnassignedReason", ENUMS["UnassignedReason"])


#: Why an entity left (EntityInfo.retiring_reason, PopulationInfo.despawned_by_reason).
DespawnReason = enum.IntEnum("DespawnReason", ENUMS["DespawnReason"])


#: Spawn states after which no SpawnUpdate follows.
TERMINAL_SPAWN_STATES = frozenset({SpawnState.ReadyForGameplay, SpawnState.Failed,
                                   SpawnState.Canceled, SpawnState.TimedOut})


def _enum_or_int(enum_cls, value):
    """Enum member for a known value; the raw int for a value from a newer schema."""
    try:
        return enum_cls(value)
    except ValueError:
        return value


# --------------------------------------------------------------------------
# Reply tables generated from the schema
# --------------------------------------------------------------------------
#
# The dataclasses of the reply tables (Stats, SnapshotInfo, ZoneInfo,
# GarageInfo, SignalInfo, CommunityInfo, PopulationInfo, LeaseSummary,
# JobStatus, VehicleInfo, SpawnStatus, EntityInfo, CommandResult) and of the
# Welcome's GarageGeometry, SignalGeometry and LaneChain are
# not written out here: wire_dataclass() builds each from the schema
# (flatc --jsonschema of proto/fbs/server.fbs), one field per schema field,
# same name, same order, and codec.decode_table() fills every one of them.
# Adding a field to one of these tables in the schema adds it here.


class WireField(NamedTuple):
    """One schema field of a generated reply dataclass."""

    name: str
    kind: str  # "scalar" | "string" | "enum" | "struct" | "table" | "vector"
    ref: Optional[str] = None  # enum, struct or table name (for vectors: of the items)
    item_kind: Optional[str] = None  # vectors: kind of the items


def _field_of(name: str, spec: dict) -> WireField:
    if spec.get("type") == "array":
        item = _field_of(name, spec["items"])
        return WireField(name, "vector", item.ref, item.kind)
    if "$ref" in spec:
        ref = spec["$ref"].rsplit("_", 1)[-1]
        target = SCHEMA[ref]
        if "enum" in target:
            return WireField(name, "enum", ref)
        if is_struct(ref):
            if ref != "EntityId":
                raise TypeError(f"{name}: struct {ref} has no Python type here (only EntityId)")
            return WireField(name, "struct", ref)
        return WireField(name, "table", ref)
    if spec.get("type") == "string":
        return WireField(name, "string")
    return WireField(name, "scalar", spec.get("type"))


def wire_fields(table: str) -> Tuple[WireField, ...]:
    """The fields of a server.fbs table, in schema order."""
    return tuple(_field_of(n, spec) for n, spec in SCHEMA[table]["properties"].items())


#: Enum name -> the IntEnum of this module.
ENUM_CLASSES: dict = {name: globals()[name] for name in ENUMS if name in globals()}
#: Table name -> its generated dataclass.
WIRE_DATACLASSES: dict = {}

_SCALAR_DEFAULTS = {"integer": 0, "number": 0.0, "boolean": False}


def _field_spec(f: WireField, none: dict, envelope: bool):
    if f.name in none:
        return (f.name, Optional[int], field(default=None))
    if f.kind == "vector":
        if envelope:
            return (f.name, Optional[list], field(default=None))
        return (f.name, list, field(default_factory=list))
    if f.kind == "enum":
        cls = ENUM_CLASSES[f.ref]
        return (f.name, cls, field(default=_enum_or_int(cls, 0)))
    if f.kind == "string":
        return (f.name, str, field(default=""))
    if f.kind == "struct":
        if envelope:
            return (f.name, Optional[EntityId], field(default=None))
        return (f.name, EntityId, field(default=EntityId(0, 0)))
    if f.kind == "table":
        return (f.name, Optional[object], field(default=None))
    return (f.name, type(_SCALAR_DEFAULTS[f.ref]), field(default=_SCALAR_DEFAULTS[f.ref]))


def wire_dataclass(table: str, methods: type = object, doc: Optional[str] = None, *,
                   name: Optional[str] = None, envelope: bool = False) -> type:
    """A frozen dataclass with one field per field of ``table`` (defaults:
    0, 0.0, False, "", the enum's 0 member, [] for vectors, None for nested
    tables) and the methods/properties of ``methods`` (which must not
    declare fields).

    A scalar whose schema default is not zero means "none" at that default
    (_wire.none_sentinels): it decodes to None. An ``envelope`` table
    (CommandResult) keeps "not part of this answer" apart from "empty":
    an absent vector or struct is None there, not [] or EntityId(0, 0)."""
    from dataclasses import make_dataclass

    none = none_sentinels(table)
    specs = [_field_spec(f, none, envelope) for f in wire_fields(table)]
    bases = (methods,) if methods is not object else ()
    cls = make_dataclass(name or table, specs, bases=bases, frozen=True)
    cls.__module__ = __name__
    cls.__doc__ = doc or methods.__doc__ or f"The wire table {table} (every field of the schema)."
    cls.WIRE_TABLE = table
    cls.WIRE_FIELDS = wire_fields(table)
    cls.WIRE_NONE = none
    cls.WIRE_ENVELOPE = envelope
    WIRE_DATACLASSES[table] = cls
    return cls


# --------------------------------------------------------------------------
# Exceptions
# --------------------------------------------------------------------------


class BustleError(Exception):
    """Base class of every error raised by bustle_client."""


class ProtocolError(BustleError):
    """Inbound bytes that do not form a valid Bustle frame or message."""


class FrameTooLargeError(ProtocolError):
    """A length prefix declares more than the inbound frame cap."""

    def __init__(self, declared: int, limit: int):
        super().__init__(f"frame of {declared} bytes exceeds the {limit}-byte limit")
        self.declared = declared
        self.limit = limit


class MalformedFrameError(ProtocolError):
    """A frame payload that is not a decodable ServerFrame."""


class MotionError(MalformedFrameError):
    """Delta.motion bytes that are not valid records; ``offset`` is the byte
    offset named in the message (as proto read_motion reports it)."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


class ServerError(BustleError):
    """The server sent an Error frame (it closes the connection right after)."""

    def __init__(self, code, message: str):
        name = code.name if isinstance(code, ErrorCode) else f"code {code}"
        super().__init__(f"server error {name}: {message}")
        self.code = code
        self.message = message


class ConnectionClosed(BustleError):
    """The server closed the connection (EOF or reset)."""


class BustleTimeout(BustleError, TimeoutError):
    """A bounded wait ended before what was awaited arrived."""


class CommandRejected(BustleError):
    """Raised by CommandResult.raise_if_rejected() for a Rejected result."""

    def __init__(self, result: "CommandResult"):
        reason = result.reason.name if isinstance(result.reason, RejectReason) else result.reason
        super().__init__(
            f"command {result.request_id} rejected: {reason}"
            + (f" ({result.message})" if result.message else "")
        )
        self.result = result


class SpawnFailed(BustleError):
    """Raised by Session.wait_spawn(..., check=True) when a spawn ends in
    Failed, Canceled or TimedOut instead of ReadyForGameplay."""

    def __init__(self, spawn: "SpawnStatus"):
        state = getattr(spawn.state, "name", spawn.state)
        failure = getattr(spawn.failure, "name", spawn.failure)
        super().__init__(f"spawn {spawn.handle} ended {state}"
                         + (f" ({failure})" if spawn.failure else ""))
        self.spawn = spawn


class JobFailed(BustleError):
    """Raised by Session.wait_job(..., check=True) when a job ends in Failed."""

    def __init__(self, job: "JobStatus"):
        kind = job.kind.name if isinstance(job.kind, JobKind) else job.kind
        super().__init__(f"{kind} job {job.job_id} '{job.name}' failed: {job.message}")
        self.job = job


# --------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------


class EntityId(NamedTuple):
    """Generation-checked entity handle; hashes and compares like (index, generation)."""

    index: int
    generation: int


def id_text(entity_id) -> str:
    """``"index:generation"``: the one text form of an entity id (the server's
    core::id_text, the C++ SDK's client::id_text), as ``bustle entity``,
    ``bustle mask`` and the other CLI commands take it. Accepts an EntityId
    or any (index, generation) pair."""
    index, generation = entity_id
    return f"{index}:{generation}"


class EntityEnter(NamedTuple):
    """An entity this client starts to receive (Delta.entered). Its motion
    anchor is (lane, s_mm, speed_mmps) at the Delta's step."""

    id: EntityId
    lane: int  # index into Welcome.lanes
    s_mm: int  # distance along the lane, millimetres
    speed_mmps: int  # along the lane, millimetres per second
    archetype: int  # index into Welcome.archetypes
    kind: EntityKind
    sim_tier: SimTier
    representation: RepresentationHint  # never None_ (a None entity is not sent)
    policy: ControlPolicy  # vehicles; RouteFollow for pedestrians
    corpse: bool = False  # a corpse (KillPedestrian), lying where it died


class MotionRecord(NamedTuple):
    """One record of Delta.motion: the entity's new anchor at the Delta's step.
    ``lane`` is None when the lane is the one of the client's anchor."""

    index: int  # EntityId.index
    lane: Optional[int]
    s_mm: int
    speed_mmps: int


class EntityChange(NamedTuple):
    """One axis of an entity the client already has changed (Delta.changes);
    ``value`` is a SimTier, RepresentationHint or ControlPolicy per ``field``,
    1 for ``Corpse`` (the entity died while received; sent once), the raw int
    for a value from a newer schema."""

    index: int  # EntityId.index
    field: EntityField
    value: object


#: EntityChange.field -> the enum of its value.
CHANGE_VALUE_ENUMS = {
    EntityField.SimTier: SimTier,
    EntityField.Representation: RepresentationHint,
    EntityField.Policy: ControlPolicy,
}


@dataclass(frozen=True)
class Observer:
    """Where a client looks from (Subscribe/UpdateInterest.observers): drives
    which entities it receives and their representation hints. ``heading_rad``
    None: no heading. ``radius_m``: area of interest, (0, 100000]."""

    x_m: float
    y_m: float
    z_m: float = 0.0
    heading_rad: Optional[float] = None
    radius_m: float = 150.0


class Lease(NamedTuple):
    """One LeaseReport entry: what this client applied for ``id``.
    ``representation`` matters for Assigned / Preserved, ``reason`` for
    Unassigned."""

    id: "EntityId"
    state: LeaseState
    representation: RepresentationHint = RepresentationHint.Actor
    reason: UnassignedReason = UnassignedReason(0)


LeaseSummary = wire_dataclass("LeaseSummary", doc="""QueryLeases: this client's leases against the server's hints. Lists
are per hint (Actor, Instanced, Marker) or per UnassignedReason.""")


@dataclass(frozen=True)
class RepresentationBudgets:
    """How many entities a client can draw per representation (the server
    never hints more; entities beyond are hinted None and not sent)."""

    actors: int = 256  # [0, 4096]
    instances: int = 4096  # [0, 65536]
    markers: int = 16384  # [0, 1048576]


@dataclass(frozen=True)
class Lane:
    index: int
    id: str
    kind: LaneKind
    points: list  # [(x_m, y_m), ...] doubles: poses are derived from them
    length_m: float
    speed_limit_mps: float
    successors: list  # lane indices
    length_mm: int = 0  # round(length_m x 1000): where dead reckoning stops
    elevation_m: float = 0.0  # height of the whole lane: an entity's z


GarageGeometry = wire_dataclass("GarageGeometry", doc="""Welcome.garages: a garage's id, entrance lane
and route (lane indices).""")


SignalGeometry = wire_dataclass("SignalGeometry", doc="""Welcome.signals: a signal's id, lane index,
stop line and start of the yielding approach (fractions of the lane's length).""")


LaneChain = wire_dataclass("LaneChainInfo", name="LaneChain", doc="""A lane chain (Welcome.chains): lanes
(indices in travel order) distant dots follow without decisions; cyclic,
pedestrian (else roads), length_m. Its position in Welcome.chains is the chain
id used by Delta.dots.""")


class ChainDots(NamedTuple):
    """Anonymous density on one lane chain (Delta.dots): no ids, no gameplay."""

    chain: int  # index into Welcome.chains
    count: int


class SignalPhaseState(NamedTuple):
    """One signal's phase after a step (Delta.signals); ``index`` is into Welcome.signals."""

    index: int
    phase: SignalPhase


@dataclass(frozen=True)
class Welcome:
    server_version: str
    protocol_version: int
    session_id: int
    role: Role
    step_us: int
    clock_mode: ClockMode
    scenario_id: str
    current_step: int
    lanes: list = field(default_factory=list, repr=False)
    garages: list = field(default_factory=list, repr=False)  # [GarageGeometry]
    signals: list = field(default_factory=list, repr=False)  # [SignalGeometry]
    chains: list = field(default_factory=list, repr=False)  # [LaneChain]; index = chain id
    dots_every_steps: int = 0  # Delta.dots arrives on steps divisible by this
    #: What an entity looks like (EntityEnter.archetype indexes this).
    archetypes: list = field(default_factory=list, repr=False)

    @property
    def rate_hz(self) -> float:
        return 1e6 / self.step_us if self.step_us else 0.0


@dataclass(frozen=True)
class ErrorMessage:
    """A decoded Error frame. Session.recv() raises it as ServerError instead."""

    code: ErrorCode
    message: str

    def to_exception(self) -> ServerError:
        return ServerError(self.code, self.message)


@dataclass(frozen=True)
class Delta:
    """One step of the stream (what changed since the last Delta this client
    received). Motion is dead-reckoned: see :mod:`bustle_client.motion`."""

    step: int
    sim_time_us: int
    digest: int
    baseline: bool
    entered: list = field(default_factory=list)  # [EntityEnter]
    labels: dict = field(default_factory=dict)  # EntityId.index -> label, for entered entities
    motion: list = field(default_factory=list)  # [MotionRecord], indices increasing
    changes: list = field(default_factory=list)  # [EntityChange]
    left: list = field(default_factory=list)  # [EntityId]
    signals: list = field(default_factory=list)  # [SignalPhaseState], every signal
    #: [ChainDots], every chain, only when a dot step happened since the last
    #: Delta: pedestrians this client does NOT receive with identity.
    dots: list = field(default_factory=list)
    retiring: list = field(default_factory=list)  # [EntityId] this client learns are fading
    interest_truncated: int = 0  # entities in interest not sent: budgets full


DistrictStatus = wire_dataclass("DistrictStatus", doc="""Stats.districts: one district server as a
gateway sees it (id, streaming, step, digest, entities).""")
Stats = wire_dataclass("Stats", doc="""QueryStats: counts, clock, leases and step timing (every field of
the schema's Stats table; see proto/fbs/server.fbs for each field).""")


class _JobStatusMethods:
    """One state of a snapshot job (checkpoint, save, restore, load, autosave).

    Writes: Queued -> Copied -> Committed | Failed. Restore: Queued ->
    Validated -> Applied | Failed. Load: Queued -> Validated ->
    SnapshotApplied -> ScheduleReconciled -> RepresentationRebuilt | Failed.
    ``terminal`` is true on the last state; ``message`` says why on Failed.
    """

    @property
    def failed(self) -> bool:
        return self.state == JobState.Failed


JobStatus = wire_dataclass("JobStatus", _JobStatusMethods)


@dataclass(frozen=True)
class JobUpdate:
    """Pushed by the server to the client that started a job, on every state change."""

    job: JobStatus


SnapshotInfo = wire_dataclass("SnapshotInfo", doc="ListSnapshots: one snapshot (kind: checkpoint | save).")


WorkPointInfo = wire_dataclass("WorkPointInfo", doc="ZoneInfo.work_points: a work-point's slots, how many are held, how many wait.")
ZoneInfo = wire_dataclass("ZoneInfo", doc="QueryZones: one zone's lifecycle coordinator state (last interval).")


QueuedRequestInfo = wire_dataclass("QueuedRequestInfo", doc="GarageInfo.queue: one queued request in dispatch order, with its EnqueueOrdinal.")
MouthVehicleInfo = wire_dataclass("MouthVehicleInfo", doc="GarageInfo.mouth: a dispatched vehicle waiting for the entrance, front (next onto the road) first.")


class _GarageInfoMethods:
    """QueryGarages: one garage's queue, dispatch counters and gate history."""

    def gate_count(self, gate) -> int:
        """Steps whose dispatch attempt ended at ``gate`` (a DispatchGate or its name)."""
        g = DispatchGate[gate] if isinstance(gate, str) else int(gate)
        return self.gate_steps[g] if g < len(self.gate_steps) else 0


GarageInfo = wire_dataclass("GarageInfo", _GarageInfoMethods)


SignalInfo = wire_dataclass("SignalInfo", doc="QuerySignals: one signal controller.")


class _VehicleInfoMethods:
    """QueryVehicle: one vehicle's identity, position, strategy, policy and tier."""

    @property
    def has_leader(self) -> bool:
        return self.leader != (0, 0)


VehicleInfo = wire_dataclass("VehicleInfo", _VehicleInfoMethods)


class _SpawnStatusMethods:
    """One state of a spawn handle (CommandResult.spawn, SpawnUpdate).

    Queued -> IdentityCreated -> Registered -> RepresentationRequested ->
    Attached -> ReadyForGameplay, or Failed(failure) / Canceled / TimedOut;
    ``terminal`` is true on the last state. The simulation's part ends at
    RepresentationRequested; Attached comes from any client's lease Assigned
    for the entity (or ReportAttached), ReadyForGameplay one step later,
    Failed(EntityGone) if the entity leaves first. ``entity`` is
    EntityId(0, 0) until IdentityCreated, ``zone`` "" and ``lane`` None when
    any.
    """

    @property
    def has_entity(self) -> bool:
        return self.entity.generation != 0


SpawnStatus = wire_dataclass("SpawnStatus", _SpawnStatusMethods)


@dataclass(frozen=True)
class SpawnUpdate:
    """Pushed by the server to the client that asked for a spawn, on every state change."""

    spawn: SpawnStatus


EntityInfo = wire_dataclass("EntityInfo", doc="""QueryEntity: every axis of one entity (identity,
lifecycle, tier, representation, importance class, origin, community / zone /
work point: "" when none; work_slot and lane None when none; retiring_reason
and release_step meaningful when Retiring).""")


CommunityInfo = wire_dataclass("CommunityInfo", doc="PopulationInfo.communities: one community at the current hour.")


def _count(values: list, key) -> int:
    """values[key] for an enum member or its value; 0 past the end (older server)."""
    i = int(key)
    return values[i] if 0 <= i < len(values) else 0


class _PopulationInfoMethods:
    """QueryPopulation: communities, lifecycle settings, spawn pipeline, tiers
    and lane density ledger. Per-state/per-reason/per-tier vectors are indexed
    by the enum value; use :meth:`live`, :meth:`total`, :meth:`despawned` and
    :meth:`tier` to read them by member."""

    def live(self, state) -> int:
        """Live spawn handles in ``state`` (a SpawnState)."""
        return _count(self.spawn_live, state)

    def total(self, state) -> int:
        """Spawn handles that entered ``state`` since start."""
        return _count(self.spawn_totals, state)

    def despawned(self, reason) -> int:
        return _count(self.despawned_by_reason, reason)

    def tier(self, tier) -> int:
        return _count(self.tiers, tier)

    @property
    def residents_dormant(self) -> int:
        return sum(c.dormant for c in self.communities)

    def community(self, community_id: str) -> CommunityInfo:
        for c in self.communities:
            if c.id == community_id:
                return c
        raise KeyError(community_id)


PopulationInfo = wire_dataclass("PopulationInfo", _PopulationInfoMethods)


@dataclass(frozen=True)
class ObserverView:
    """What an observer adds to its position (SetObservers.views): height and,
    optionally, where it looks (radians, 0 = +x, counter-clockwise)."""

    z_m: float = 0.0
    heading_rad: Optional[float] = None


def route_lanes(route) -> tuple:
    """A spawn route as a tuple of lane ids: None means no route; a str is
    refused (one lane id would otherwise become a route of its characters)."""
    if route is None:
        return ()
    if isinstance(route, (str, bytes)):
        raise TypeError("route must be a sequence of lane ids (e.g. ['market.loop', "
                        f"'x.market.office']), not a {type(route).__name__}")
    lanes = tuple(route)
    for i, lane in enumerate(lanes):
        if not isinstance(lane, str):
            raise TypeError(f"route[{i}] must be a str (a lane id), not {type(lane).__name__}")
    return lanes


@dataclass(frozen=True)
class SpawnRequest:
    """A SpawnPedestrian body (also one Spawn op of a lifecycle batch).
    ``priority``: PriorityClass, its name ('quest', case-insensitive) or value.
    ``route``: lane ids, each a pedestrian successor of the one before (at most
    256); the pedestrian starts at the beginning of route[0] (``lane`` must be
    None or route[0]; with a zone, route[0] must be one of its lanes), follows
    the route, then wanders. The server judges it and names the entry of a bad
    route ("route[2]: 'b' does not follow 'a'")."""

    zone: Optional[str] = None  # None: any sidewalk
    lane: Optional[str] = None  # None: any pedestrian lane (of the zone)
    priority: object = PriorityClass.Quest
    timeout_ms: int = 0  # 0: the scenario's spawn.timeout_ms
    route: tuple = ()  # lane ids; () (or None): no route, wander from the start

    def __post_init__(self):
        object.__setattr__(self, "route", route_lanes(self.route))


@dataclass(frozen=True)
class LifecycleOp:
    """One operation of a LifecycleBatch; build with :func:`spawn_op` / :func:`despawn_op`."""

    kind: LifecycleOpKind
    spawn: Optional[SpawnRequest] = None  # kind Spawn
    id: Optional[EntityId] = None  # kind Despawn


def spawn_op(zone: Optional[str] = None, lane: Optional[str] = None, priority="quest",
             timeout_ms: int = 0, route=None) -> LifecycleOp:
    """A Spawn op; the fields are those of :class:`SpawnRequest`."""
    return LifecycleOp(LifecycleOpKind.Spawn,
                       spawn=SpawnRequest(zone, lane, priority, timeout_ms, route))


def despawn_op(id) -> LifecycleOp:
    """``id``: EntityId or (index, generation)."""
    return LifecycleOp(LifecycleOpKind.Despawn, id=EntityId(*id))


class _CommandResultMethods:
    """The answer to one command. The parts of other answers are None
    (stats for QueryStats, job for snapshot commands and QueryJob, snapshots
    / garages / signals / zones lists, vehicle, entity (the id given back by
    CancelSpawn / DespawnEntity of an unregistered spawn), handles
    (LifecycleBatch), entity_info, population, spawn, leases); ``handle`` is
    0 and ``batch`` BatchStatus.None_ when not part of the answer."""

    @property
    def accepted(self) -> bool:
        return self.status == CommandStatus.Accepted

    def raise_if_rejected(self):
        if not self.accepted:
            raise CommandRejected(self)
        return self


CommandResult = wire_dataclass("CommandResult", _CommandResultMethods, envelope=True)


__all__ = [
    "PROTOCOL_VERSION",
    "id_text",
    "ClockMode",
    "CommandStatus",
    "EntityKind",
    "ErrorCode",
    "JobKind",
    "JobState",
    "LaneKind",
    "RejectReason",
    "Role",
    "SignalPhase",
    "DispatchGate",
    "ControlPolicy",
    "PolicyReason",
    "SimTier",
    "VehicleStrategy",
    "VehicleStrategyState",
    "PriorityClass",
    "SpawnState",
    "SpawnFailure",
    "BatchStatus",
    "LifecycleOpKind",
    "LifecycleState",
    "RepresentationHint",
    "PedestrianOrigin",
    "EntityField",
    "LeaseState",
    "UnassignedReason",
    "Lease",
    "LeaseSummary",
    "CHANGE_VALUE_ENUMS",
    "DespawnReason",
    "TERMINAL_SPAWN_STATES",
    "BustleError",
    "ProtocolError",
    "FrameTooLargeError",
    "MalformedFrameError",
    "ServerError",
    "ConnectionClosed",
    "BustleTimeout",
    "CommandRejected",
    "MotionError",
    "EntityId",
    "EntityEnter",
    "MotionRecord",
    "EntityChange",
    "Observer",
    "RepresentationBudgets",
    "Lane",
    "GarageGeometry",
    "SignalGeometry",
    "LaneChain",
    "ChainDots",
    "SignalPhaseState",
    "Welcome",
    "ErrorMessage",
    "Delta",
    "DistrictStatus",
    "Stats",
    "JobStatus",
    "JobUpdate",
    "SnapshotInfo",
    "GarageInfo",
    "WorkPointInfo",
    "QueuedRequestInfo",
    "MouthVehicleInfo",
    "ZoneInfo",
    "SignalInfo",
    "VehicleInfo",
    "CommandResult",
    "JobFailed",
    "SpawnFailed",
    "SpawnStatus",
    "SpawnUpdate",
    "EntityInfo",
    "CommunityInfo",
    "PopulationInfo",
    "ObserverView",
    "SpawnRequest",
    "LifecycleOp",
    "spawn_op",
    "despawn_op",
]
