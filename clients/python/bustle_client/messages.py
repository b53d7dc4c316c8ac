"""Plain-Python views of Bustle wire messages, enums and exceptions.

Decoded messages are frozen dataclasses (entity ids and states are named
tuples) holding ordinary Python values, so they stay valid after the receive
buffer is reused and compare/print nicely in tests.
Quantized wire values are converted to SI units: centimetres -> metres,
1/65536 turn -> radians, cm/s -> m/s.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from ._wire import ENUMS, PROTOCOL_VERSION

# Enums mirror the generated schema enums (names and values come from flatc's
# output, so they cannot drift from proto/schema/*.fbs).
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


def _enum_or_int(enum_cls, value):
    """Enum member for a known value; the raw int for a value from a newer schema."""
    try:
        return enum_cls(value)
    except ValueError:
        return value


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


class EntityState(NamedTuple):
    """One entity's quantized state in SI units (a tuple: cheap to build by the thousand)."""

    id: EntityId
    kind: EntityKind
    x_m: float
    y_m: float
    heading_rad: float
    speed_mps: float


@dataclass(frozen=True)
class Lane:
    index: int
    id: str
    kind: LaneKind
    points: list  # [(x_m, y_m), ...]
    length_m: float
    speed_limit_mps: float
    successors: list  # lane indices


@dataclass(frozen=True)
class GarageGeometry:
    id: str
    entrance_lane: int  # lane index
    route: list  # lane indices


@dataclass(frozen=True)
class SignalGeometry:
    id: str
    lane: int  # lane index
    stop_alpha: float  # stop line, as a fraction of the lane's length
    yield_alpha: float  # start of the yielding approach


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
    step: int
    sim_time_us: int
    digest: int
    baseline: bool
    entered: list = field(default_factory=list)  # [EntityState]
    updated: list = field(default_factory=list)  # [EntityState]
    left: list = field(default_factory=list)  # [EntityId]
    signals: list = field(default_factory=list)  # [SignalPhaseState], every signal


@dataclass(frozen=True)
class Stats:
    step: int
    sim_time_us: int
    digest: int
    step_us: int
    clock_mode: ClockMode
    paused: bool
    pedestrians: int
    pedestrian_target: int
    entity_capacity: int
    clients: int
    spawned_total: int
    despawned_total: int
    commands_accepted: int
    commands_rejected: int
    dropped_steps: int
    recording: bool = False  # a session recording is being written (--record)
    recording_failed: bool = False  # the recording stopped after a write failure
    recorded_ticks: int = 0  # ticks committed to the recording
    vehicles: int = 0
    vehicles_full: int = 0  # per simulation tier
    vehicles_simulated: int = 0
    vehicles_coarse: int = 0
    vehicles_moving: int = 0  # advanced on the last step
    vehicles_waiting: int = 0  # WaitingAtSignal on the last step
    vehicles_yielding: int = 0  # Yielding on the last step
    tier_transitions_deferred: int = 0
    hour: float = 0.0  # time of day
    time_scale: int = 1  # game seconds per simulated second
    residents: int = 0  # community identities, active + dormant
    residents_active: int = 0


@dataclass(frozen=True)
class JobStatus:
    """One state of a snapshot job (checkpoint, save, restore, load, autosave).

    Writes: Queued -> Copied -> Committed | Failed. Restore: Queued ->
    Validated -> Applied | Failed. Load: Queued -> Validated ->
    SnapshotApplied -> ScheduleReconciled -> RepresentationRebuilt | Failed.
    ``terminal`` is true on the last state; ``message`` says why on Failed.
    """

    job_id: int
    kind: JobKind
    state: JobState
    terminal: bool
    name: str
    step: int  # step captured (writes) or restored to (restore/load)
    message: str = ""

    @property
    def failed(self) -> bool:
        return self.state == JobState.Failed


@dataclass(frozen=True)
class JobUpdate:
    """Pushed by the server to the client that started a job, on every state change."""

    job: JobStatus


@dataclass(frozen=True)
class SnapshotInfo:
    name: str
    kind: str  # "checkpoint" | "save"
    scenario_id: str
    step: int
    sim_time_us: int
    digest: int
    pedestrians: int
    created_unix_ms: int


@dataclass(frozen=True)
class ZoneInfo:
    """QueryZones: one zone's lifecycle coordinator state (last interval)."""

    id: str
    target: int
    active: int
    dormant: int
    pending_spawn: int
    pending_recycle: int
    activated: int
    recycled: int
    deferred_by_quota: int  # held back by quotas: deferred, never failed
    rejected_by_capacity: int
    activated_total: int
    recycled_total: int
    capacity: int
    migrated_in: int = 0  # dormant records handed over from other zones (last interval)
    deferred_by_migration: int = 0  # held back by the migration budget, not failed


@dataclass(frozen=True)
class GarageInfo:
    """QueryGarages: one garage's queue, dispatch counters and gate history."""

    id: str
    queued: list  # request ids in dispatch order
    dispatched: int  # requests that received a vehicle
    managed: int  # vehicles now on the road from this garage
    capacity: int
    frame_index: int
    next_vehicle_ordinal: int
    last_gate: DispatchGate  # what this step's dispatch attempt ran into
    gate_steps: list  # steps per DispatchGate value (index = value)
    turnarounds: int
    rejected_invalid: int
    rejected_duplicate: int
    rejected_queue_full: int
    canceled: int
    plan_total: int  # content plan (all garages)
    plan_injected: int

    def gate_count(self, gate) -> int:
        """Steps whose dispatch attempt ended at ``gate`` (a DispatchGate or its name)."""
        g = DispatchGate[gate] if isinstance(gate, str) else int(gate)
        return self.gate_steps[g] if g < len(self.gate_steps) else 0


@dataclass(frozen=True)
class SignalInfo:
    """QuerySignals: one signal controller."""

    id: str
    lane: int
    phase: SignalPhase
    phase_elapsed_us: int
    cycles: int


@dataclass(frozen=True)
class VehicleInfo:
    """QueryVehicle: one vehicle's identity, position, strategy, policy and tier."""

    id: EntityId
    vehicle_id: str  # vehicle.<garage>.<ordinal:06>
    garage: str
    request_id: str
    prototype: str
    route_index: int
    lane: int
    s_m: float
    alpha: float  # s_m / lane length
    x_m: float
    y_m: float
    speed_mps: float
    strategy: VehicleStrategyState
    policy: ControlPolicy
    reason: PolicyReason
    tier: SimTier
    leader: EntityId  # EntityId(0, 0) when none
    steps_advanced: int
    awaiting_turnaround: bool
    despawn_requested: bool

    @property
    def has_leader(self) -> bool:
        return self.leader != (0, 0)


@dataclass(frozen=True)
class CommandResult:
    request_id: int
    status: CommandStatus
    reason: RejectReason
    message: str
    applied_step: int
    stats: Optional[Stats] = None
    job: Optional[JobStatus] = None  # snapshot commands and QueryJob
    snapshots: Optional[list] = None  # ListSnapshots: [SnapshotInfo]
    garages: Optional[list] = None  # QueryGarages: [GarageInfo]
    signals: Optional[list] = None  # QuerySignals: [SignalInfo]
    vehicle: Optional[VehicleInfo] = None  # QueryVehicle
    zones: Optional[list] = None  # QueryZones: [ZoneInfo]

    @property
    def accepted(self) -> bool:
        return self.status == CommandStatus.Accepted

    def raise_if_rejected(self) -> "CommandResult":
        if not self.accepted:
            raise CommandRejected(self)
        return self


__all__ = [
    "PROTOCOL_VERSION",
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
    "BustleError",
    "ProtocolError",
    "FrameTooLargeError",
    "MalformedFrameError",
    "ServerError",
    "ConnectionClosed",
    "BustleTimeout",
    "CommandRejected",
    "EntityId",
    "EntityState",
    "Lane",
    "GarageGeometry",
    "SignalGeometry",
    "SignalPhaseState",
    "Welcome",
    "ErrorMessage",
    "Delta",
    "Stats",
    "JobStatus",
    "JobUpdate",
    "SnapshotInfo",
    "GarageInfo",
    "ZoneInfo",
    "SignalInfo",
    "VehicleInfo",
    "CommandResult",
    "JobFailed",
]
