"""Import shim for the FlatBuffers modules that flatc generates at build time.

The generated package ``bustle.wire`` lives in ``<build>/python`` (CMake target
``bustle_python_wire``), or beside ``bustle_client`` in site-packages when the
package is installed (``pip install clients/python``: setup.py runs flatc into
the wheel); nothing generated is committed. Everything else in
``bustle_client`` imports the generated code through this module so a missing
build step fails with one clear message.
"""

import importlib.util
import os
import sys

if importlib.util.find_spec("bustle") is None:
    # An editable install (pip install -e clients/python) generates the wire
    # modules into clients/python/build/wire-python (setup.py); appended, so
    # a build tree on PYTHONPATH still comes first.
    _editable = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "build", "wire-python")
    if os.path.isdir(os.path.join(_editable, "bustle", "wire")):
        sys.path.append(_editable)

try:
    import flatbuffers  # noqa: F401  (Debian: python3-flatbuffers)
    from bustle.wire import (
        BatchStatus as _BatchStatus,
        CancelGarageRequest,
        CancelSpawn,
        ChainDots,
        Checkpoint,
        CommunityInfo,
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
        DespawnReason as _DespawnReason,
        DespawnEntity,
        DispatchGate as _DispatchGate,
        EntityId,
        EntityInfo,
        EntityKind as _EntityKind,
        EntityChange as EntityChangeStruct,
        EntityEnter as EntityEnterStruct,
        EntityField as _EntityField,
        EntityLabel,
        Error,
        ErrorCode as _ErrorCode,
        ForceFull,
        SetAdmissionMask,
        SetPreventionLevel,
        KillPedestrian,
        CloseLane,
        OpenLane,
        GarageGeometry,
        GarageInfo,
        GarageRequest,
        Hello,
        JobKind as _JobKind,
        JobState as _JobState,
        JobStatus,
        JobUpdate,
        LaneChainInfo,
        LaneKind as _LaneKind,
        LeaseEntry,
        LeaseReport,
        LeaseState as _LeaseState,
        LeaseSummary,
        LifecycleBatch,
        LifecycleOp,
        LifecycleOpKind as _LifecycleOpKind,
        LifecycleState as _LifecycleState,
        ListSnapshots,
        Load,
        Observer,
        ObserverView,
        Pause,
        PedestrianOrigin as _PedestrianOrigin,
        PolicyReason as _PolicyReason,
        PopulationInfo,
        PriorityClass as _PriorityClass,
        Protocol as _Protocol,
        QueryEntity,
        QueryGarages,
        QueryJob,
        QueryLeases,
        QueryPopulation,
        QuerySignals,
        QuerySpawn,
        QueryStats,
        QueryVehicle,
        QueryZones,
        RejectReason as _RejectReason,
        ReportAttached,
        RepresentationHint as _RepresentationHint,
        Restore,
        RepresentationBudgets,
        Resume,
        Role as _Role,
        Save,
        ServerFrame,
        ServerMessage,
        SetHour,
        SetLifecycle,
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
        SpawnFailure as _SpawnFailure,
        SpawnPedestrian,
        SpawnState as _SpawnState,
        SpawnStatus,
        SpawnUpdate,
        Step,
        Subscribe,
        UnassignedReason as _UnassignedReason,
        UpdateInterest,
        Vec2,
        Vec2d,
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
        "'flatbuffers' package. Either install the package (pip install "
        "clients/python: flatc generates them into the wheel), or build the "
        "project and run with PYTHONPATH=clients/python:<build>/python using "
        "/usr/bin/python3. "
        f"Original error: {exc}"
    ) from exc

__all__ = [
    "flatbuffers",
    "LeaseEntry",
    "LeaseReport",
    "LeaseSummary",
    "QueryLeases",
    "CancelGarageRequest",
    "CancelSpawn",
    "ChainDots",
    "Checkpoint",
    "CommunityInfo",
    "ClientFrame",
    "ClientMessage",
    "Command",
    "CommandBody",
    "CommandResult",
    "Delta",
    "DeleteSnapshot",
    "DespawnEntity",
    "EntityId",
    "EntityInfo",
    "EntityChangeStruct",
    "EntityEnterStruct",
    "EntityLabel",
    "Error",
    "ForceFull",
    "SetAdmissionMask",
    "SetPreventionLevel",
    "KillPedestrian",
    "CloseLane",
    "OpenLane",
    "GarageGeometry",
    "GarageInfo",
    "GarageRequest",
    "Hello",
    "JobStatus",
    "JobUpdate",
    "LaneChainInfo",
    "LifecycleBatch",
    "LifecycleOp",
    "ListSnapshots",
    "Load",
    "Observer",
    "ObserverView",
    "Pause",
    "PopulationInfo",
    "QueryEntity",
    "QueryGarages",
    "QueryJob",
    "QueryPopulation",
    "QuerySignals",
    "QuerySpawn",
    "QueryStats",
    "QueryVehicle",
    "QueryZones",
    "ReportAttached",
    "RepresentationBudgets",
    "Restore",
    "Resume",
    "Save",
    "ServerFrame",
    "ServerMessage",
    "SetHour",
    "SetLifecycle",
    "SetObservers",
    "SetPedestrianTarget",
    "SetTimeScale",
    "SetVehicleStrategy",
    "SignalGeometry",
    "SignalInfo",
    "SignalPhaseState",
    "SnapshotInfo",
    "SpawnPedestrian",
    "SpawnStatus",
    "SpawnUpdate",
    "Step",
    "Subscribe",
    "UpdateInterest",
    "Vec2",
    "Vec2d",
    "VehicleInfo",
    "Welcome",
    "ZoneInfo",
]


def enum_members(module):
    """Name -> value of a generated enum (flatc emits a plain class per enum)."""
    cls = getattr(module, module.__name__.rsplit(".", 1)[-1])
    return {k: v for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


ENUMS = {
    "BatchStatus": enum_members(_BatchStatus),
    "ClockMode": enum_members(_ClockMode),
    "CommandStatus": enum_members(_CommandStatus),
    "ControlPolicy": enum_members(_ControlPolicy),
    "DespawnReason": enum_members(_DespawnReason),
    "DispatchGate": enum_members(_DispatchGate),
    "EntityField": enum_members(_EntityField),
    "EntityKind": enum_members(_EntityKind),
    "ErrorCode": enum_members(_ErrorCode),
    "JobKind": enum_members(_JobKind),
    "JobState": enum_members(_JobState),
    "LaneKind": enum_members(_LaneKind),
    "LeaseState": enum_members(_LeaseState),
    "LifecycleOpKind": enum_members(_LifecycleOpKind),
    "LifecycleState": enum_members(_LifecycleState),
    "PedestrianOrigin": enum_members(_PedestrianOrigin),
    "PolicyReason": enum_members(_PolicyReason),
    "PriorityClass": enum_members(_PriorityClass),
    "RejectReason": enum_members(_RejectReason),
    "RepresentationHint": enum_members(_RepresentationHint),
    "Role": enum_members(_Role),
    "SignalPhase": enum_members(_SignalPhase),
    "SimTier": enum_members(_SimTier),
    "SpawnFailure": enum_members(_SpawnFailure),
    "SpawnState": enum_members(_SpawnState),
    "UnassignedReason": enum_members(_UnassignedReason),
    "VehicleStrategy": enum_members(_VehicleStrategy),
    "VehicleStrategyState": enum_members(_VehicleStrategyState),
}
PROTOCOL_VERSION = _Protocol.Protocol.Version


def _load_schema(name: str = "server"):
    """The tables of <name>.fbs as flatc --jsonschema describes them: field
    names in schema order with their types (generated beside the modules at
    build time; what bustle_client.messages builds its reply dataclasses
    from, and bustle_client.codec its command bodies)."""
    import json
    import bustle.wire as _pkg
    path = os.path.join(os.path.dirname(_pkg.__file__), f"{name}.schema.json")
    try:
        with open(path, encoding="utf-8") as f:
            definitions = json.load(f)["definitions"]
    except OSError as exc:  # pragma: no cover - depends on the build
        raise ImportError(f"bustle_client needs {path} (flatc --jsonschema, generated with the wire "
                          "modules by CMake target 'bustle_python_wire' or setup.py)") from exc
    return {k.rsplit("_", 1)[-1] if k.startswith("bustle_wire_") else k: v for k, v in definitions.items()}


#: Table name -> its JSON Schema definition (``properties`` in schema order).
SCHEMA = _load_schema()
#: The same for client.fbs: the tables a client sends (command bodies).
CLIENT_SCHEMA = _load_schema("client")


def is_struct(name: str) -> bool:
    """Whether a schema type is a struct (flatc gives struct classes SizeOf;
    the JSON Schema does not tell structs from tables)."""
    module = importlib.import_module(f"bustle.wire.{name}")
    return hasattr(getattr(module, name), "SizeOf")


def none_sentinels(table: str) -> dict:
    """The scalar fields of a table whose schema default is not zero, with
    that default (what the generated accessor returns for an absent field).
    The schema uses such a default to mean "none" (SpawnStatus.lane
    4294967295, EntityInfo.lane / work_slot -1); the decoder turns it into
    None, so no list of such fields is kept by hand."""
    import flatbuffers as _fb
    cls = getattr(importlib.import_module(f"bustle.wire.{table}"), table)
    b = _fb.Builder(16)
    b.StartObject(0)
    b.Finish(b.EndObject())
    empty = cls.GetRootAs(bytes(b.Output()), 0)
    out = {}
    for name, spec in SCHEMA[table]["properties"].items():
        if spec.get("type") not in ("integer", "number"):
            continue
        value = getattr(empty, "".join(p[:1].upper() + p[1:] for p in name.split("_")))()
        if value != 0:
            out[name] = value
    return out
