"""Import shim for the FlatBuffers modules that flatc generates at build time.

The generated package ``bustle.wire`` lives in ``<build>/python`` (CMake target
``bustle_python_wire``); nothing generated is committed. Everything else in
``bustle_client`` imports the generated code through this module so a missing
build step fails with one clear message.
"""

try:
    import flatbuffers  # noqa: F401  (Debian: python3-flatbuffers)
    from bustle.wire import (
        CancelGarageRequest,
        Checkpoint,
        ClientFrame,
        ClientMessage,
        ClockMode as _ClockMode,
        Command,
        CommandBody,
        CommandResult,
        CommandStatus as _CommandStatus,
        ControlPolicy as _ControlPolicy,
        Delta,
        DeleteSnapshot,
        DespawnEntity,
        DispatchGate as _DispatchGate,
        EntityId,
        EntityKind as _EntityKind,
        EntityState as EntityStateStruct,
        Error,
        ErrorCode as _ErrorCode,
        ForceFull,
        GarageGeometry,
        GarageInfo,
        GarageRequest,
        Hello,
        JobKind as _JobKind,
        JobState as _JobState,
        JobStatus,
        JobUpdate,
        LaneKind as _LaneKind,
        ListSnapshots,
        Load,
        Pause,
        PolicyReason as _PolicyReason,
        Protocol as _Protocol,
        QueryGarages,
        QueryJob,
        QuerySignals,
        QueryStats,
        QueryVehicle,
        QueryZones,
        RejectReason as _RejectReason,
        Restore,
        Resume,
        Role as _Role,
        Save,
        ServerFrame,
        ServerMessage,
        SetHour,
        SetObservers,
        SetPedestrianTarget,
        SetTimeScale,
        SetVehicleStrategy,
        SignalGeometry,
        SignalInfo,
        SignalPhase as _SignalPhase,
        SignalPhaseState,
        SimTier as _SimTier,
        SnapshotInfo,
        Step,
        Subscribe,
        Vec2,
        VehicleInfo,
        VehicleStrategy as _VehicleStrategy,
        VehicleStrategyState as _VehicleStrategyState,
        Welcome,
        ZoneInfo,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "bustle_client needs the FlatBuffers modules generated at build time "
        "(package 'bustle.wire', CMake target 'bustle_python_wire') and the "
        "'flatbuffers' package. Build the project and run with "
        "PYTHONPATH=clients/python:<build>/python using /usr/bin/python3. "
        f"Original error: {exc}"
    ) from exc

__all__ = [
    "flatbuffers",
    "CancelGarageRequest",
    "Checkpoint",
    "ClientFrame",
    "ClientMessage",
    "Command",
    "CommandBody",
    "CommandResult",
    "Delta",
    "DeleteSnapshot",
    "DespawnEntity",
    "EntityId",
    "EntityStateStruct",
    "Error",
    "ForceFull",
    "GarageGeometry",
    "GarageInfo",
    "GarageRequest",
    "Hello",
    "JobStatus",
    "JobUpdate",
    "ListSnapshots",
    "Load",
    "Pause",
    "QueryGarages",
    "QueryJob",
    "QuerySignals",
    "QueryStats",
    "QueryVehicle",
    "QueryZones",
    "Restore",
    "Resume",
    "Save",
    "ServerFrame",
    "ServerMessage",
    "SetHour",
    "SetObservers",
    "SetPedestrianTarget",
    "SetTimeScale",
    "SetVehicleStrategy",
    "SignalGeometry",
    "SignalInfo",
    "SignalPhaseState",
    "SnapshotInfo",
    "Step",
    "Subscribe",
    "Vec2",
    "VehicleInfo",
    "Welcome",
    "ZoneInfo",
]


def enum_members(module):
    """Name -> value of a generated enum (flatc emits a plain class per enum)."""
    cls = getattr(module, module.__name__.rsplit(".", 1)[-1])
    return {k: v for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


ENUMS = {
    "ClockMode": enum_members(_ClockMode),
    "CommandStatus": enum_members(_CommandStatus),
    "ControlPolicy": enum_members(_ControlPolicy),
    "DispatchGate": enum_members(_DispatchGate),
    "EntityKind": enum_members(_EntityKind),
    "ErrorCode": enum_members(_ErrorCode),
    "JobKind": enum_members(_JobKind),
    "JobState": enum_members(_JobState),
    "LaneKind": enum_members(_LaneKind),
    "PolicyReason": enum_members(_PolicyReason),
    "RejectReason": enum_members(_RejectReason),
    "Role": enum_members(_Role),
    "SignalPhase": enum_members(_SignalPhase),
    "SimTier": enum_members(_SimTier),
    "VehicleStrategy": enum_members(_VehicleStrategy),
    "VehicleStrategyState": enum_members(_VehicleStrategyState),
}
PROTOCOL_VERSION = _Protocol.Protocol.Version
