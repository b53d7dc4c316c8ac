"""Import shim for the FlatBuffers modules that flatc generates at build time.

The generated package ``bustle.wire`` lives in ``<build>/python`` (CMake target
``bustle_python_wire``); nothing generated is committed. Everything else in
``bustle_client`` imports the generated code through this module so a missing
build step fails with one clear message.
"""

try:
    import flatbuffers  # noqa: F401  (Debian: python3-flatbuffers)
    from bustle.wire import (
        Checkpoint,
        ClientFrame,
        ClientMessage,
        ClockMode as _ClockMode,
        Command,
        CommandBody,
        CommandResult,
        CommandStatus as _CommandStatus,
        Delta,
        DeleteSnapshot,
        DespawnEntity,
        EntityId,
        EntityKind as _EntityKind,
        EntityState as EntityStateStruct,
        Error,
        ErrorCode as _ErrorCode,
        Hello,
        JobKind as _JobKind,
        JobState as _JobState,
        JobStatus,
        JobUpdate,
        LaneKind as _LaneKind,
        ListSnapshots,
        Load,
        Pause,
        Protocol as _Protocol,
        QueryJob,
        QueryStats,
        RejectReason as _RejectReason,
        Restore,
        Resume,
        Role as _Role,
        Save,
        ServerFrame,
        ServerMessage,
        SetPedestrianTarget,
        SnapshotInfo,
        Step,
        Subscribe,
        Welcome,
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
    "Hello",
    "JobStatus",
    "JobUpdate",
    "ListSnapshots",
    "Load",
    "Pause",
    "QueryJob",
    "QueryStats",
    "Restore",
    "Resume",
    "Save",
    "ServerFrame",
    "ServerMessage",
    "SetPedestrianTarget",
    "SnapshotInfo",
    "Step",
    "Subscribe",
    "Welcome",
]


def enum_members(module):
    """Name -> value of a generated enum (flatc emits a plain class per enum)."""
    cls = getattr(module, module.__name__.rsplit(".", 1)[-1])
    return {k: v for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


ENUMS = {
    "ClockMode": enum_members(_ClockMode),
    "CommandStatus": enum_members(_CommandStatus),
    "EntityKind": enum_members(_EntityKind),
    "ErrorCode": enum_members(_ErrorCode),
    "JobKind": enum_members(_JobKind),
    "JobState": enum_members(_JobState),
    "LaneKind": enum_members(_LaneKind),
    "RejectReason": enum_members(_RejectReason),
    "Role": enum_members(_Role),
}
PROTOCOL_VERSION = _Protocol.Protocol.Version
