"""Builders for server->client frames (BSV1), so codec and Session tests can
play the server's side without one. Built with the flatc-generated Python code,
independently of bustle_client's decoder."""

import flatbuffers
from bustle.wire import (
    CancelGarageRequest,
    CancelSpawn,
    ChainDots,
    Checkpoint,
    ClientFrame,
    ClientMessage,
    Command,
    CommandBody,
    CommandResult,
    CommunityInfo,
    Delta,
    DeleteSnapshot,
    DespawnEntity,
    EntityInfo,
    EntityLabel,
    Error,
    GarageGeometry,
    GarageInfo,
    GarageRequest,
    Hello,
    JobStatus,
    JobUpdate,
    LaneChainInfo,
    LaneInfo,
    LifecycleBatch,
    Load,
    PopulationInfo,
    QueryEntity,
    QueryJob,
    QuerySpawn,
    QueryVehicle,
    ReportAttached,
    Restore,
    Save,
    ServerFrame,
    ServerMessage,
    SetLifecycle,
    SetObservers,
    SetPedestrianTarget,
    SetVehicleStrategy,
    SignalGeometry,
    SignalInfo,
    SignalPhaseState,
    SnapshotInfo,
    SpawnPedestrian,
    SpawnStatus,
    SpawnUpdate,
    Stats,
    Step,
    Subscribe,
    UpdateInterest,
    Vec2d,
    VehicleInfo,
    Welcome,
)
from bustle.wire.EntityChange import CreateEntityChange
from bustle.wire.EntityEnter import CreateEntityEnter
from bustle.wire.EntityId import CreateEntityId

SM = ServerMessage.ServerMessage


def _finish(b, msg_type, msg, identifier=b"BSV1"):
    ServerFrame.Start(b)
    ServerFrame.AddMessageType(b, msg_type)
    ServerFrame.AddMessage(b, msg)
    b.Finish(ServerFrame.End(b), file_identifier=identifier)
    return bytes(b.Output())


def error(code, message="", identifier=b"BSV1"):
    b = flatbuffers.Builder(64)
    m = b.CreateString(message)
    Error.Start(b)
    Error.AddCode(b, int(code))
    Error.AddMessage(b, m)
    return _finish(b, SM.Error, Error.End(b), identifier)


def _offsets_vector(b, start_vector, offs):
    start_vector(b, len(offs))
    for off in reversed(offs):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _uint_vector(b, start_vector, values, prepend="PrependUint32"):
    start_vector(b, len(values))
    for v in reversed(list(values)):
        getattr(b, prepend)(v)
    return b.EndVector()


#: A lane 0 from (0, 0) to (100, 0) for welcome(lanes=[...]).
STRAIGHT_LANE = (0, "straight", 0, [(0.0, 0.0), (100.0, 0.0)], 100.0, 1.5, [])


def welcome(session_id=7, role=0, step_us=100_000, clock_mode=0, current_step=0, lanes=(),
            garages=None, signals=None, chains=None, dots_every_steps=0, archetypes=None,
            protocol_version=3):
    """lanes: iterable of (index, id, kind, [(x, y), ...], length_m, speed,
    [successors][, length_mm[, elevation_m]]); length_mm defaults to
    round(length_m * 1000). archetypes: list of names.
    garages: (id, entrance_lane, [route lane indices]); signals: (id, lane, stop_alpha, yield_alpha).
    chains: ([lane indices], cyclic, pedestrian, length_m)."""
    b = flatbuffers.Builder(256)
    garages_vec = signals_vec = chains_vec = None
    if chains is not None:
        offs = [_table(b, LaneChainInfo, {"Lanes": _uint_vector(b, LaneChainInfo.StartLanesVector, lanes_of),
                                          "Cyclic": cyclic, "Pedestrian": pedestrian, "LengthM": length_m})
                for lanes_of, cyclic, pedestrian, length_m in chains]
        chains_vec = _offsets_vector(b, Welcome.StartChainsVector, offs)
    if garages is not None:
        offs = []
        for gid, entrance, route in garages:
            id_off = b.CreateString(gid)
            GarageGeometry.StartRouteVector(b, len(route))
            for r in reversed(route):
                b.PrependUint32(r)
            route_off = b.EndVector()
            GarageGeometry.Start(b)
            GarageGeometry.AddId(b, id_off)
            GarageGeometry.AddEntranceLane(b, entrance)
            GarageGeometry.AddRoute(b, route_off)
            offs.append(GarageGeometry.End(b))
        garages_vec = _offsets_vector(b, Welcome.StartGaragesVector, offs)
    if signals is not None:
        offs = []
        for sid, lane, stop_alpha, yield_alpha in signals:
            id_off = b.CreateString(sid)
            SignalGeometry.Start(b)
            SignalGeometry.AddId(b, id_off)
            SignalGeometry.AddLane(b, lane)
            SignalGeometry.AddStopAlpha(b, stop_alpha)
            SignalGeometry.AddYieldAlpha(b, yield_alpha)
            offs.append(SignalGeometry.End(b))
        signals_vec = _offsets_vector(b, Welcome.StartSignalsVector, offs)
    archetypes_vec = None
    if archetypes is not None:
        archetypes_vec = _offsets_vector(b, Welcome.StartArchetypesVector,
                                         [b.CreateString(a) for a in archetypes])
    lane_offs = []
    for index, lane_id, kind, points, length_m, speed, successors, *extra in lanes:
        length_mm = extra[0] if extra else round(length_m * 1000)
        elevation = extra[1] if len(extra) > 1 else 0.0
        id_off = b.CreateString(lane_id)
        LaneInfo.StartPointsVector(b, len(points))
        for x, y in reversed(points):
            Vec2d.CreateVec2d(b, x, y)
        pts = b.EndVector()
        LaneInfo.StartSuccessorsVector(b, len(successors))
        for s in reversed(successors):
            b.PrependUint32(s)
        succ = b.EndVector()
        LaneInfo.Start(b)
        LaneInfo.AddIndex(b, index)
        LaneInfo.AddId(b, id_off)
        LaneInfo.AddKind(b, kind)
        LaneInfo.AddPoints(b, pts)
        LaneInfo.AddLengthM(b, length_m)
        LaneInfo.AddSpeedMpsLimit(b, speed)
        LaneInfo.AddSuccessors(b, succ)
        LaneInfo.AddLengthMm(b, length_mm)
        LaneInfo.AddElevationM(b, elevation)
        lane_offs.append(LaneInfo.End(b))
    Welcome.StartLanesVector(b, len(lane_offs))
    for off in reversed(lane_offs):
        b.PrependUOffsetTRelative(off)
    lanes_vec = b.EndVector()
    version = b.CreateString("bustle-test 0.0")
    scenario = b.CreateString("test-city")
    Welcome.Start(b)
    Welcome.AddServerVersion(b, version)
    Welcome.AddProtocolVersion(b, protocol_version)
    Welcome.AddSessionId(b, session_id)
    Welcome.AddRole(b, role)
    Welcome.AddStepUs(b, step_us)
    Welcome.AddClockMode(b, clock_mode)
    Welcome.AddScenarioId(b, scenario)
    Welcome.AddCurrentStep(b, current_step)
    Welcome.AddLanes(b, lanes_vec)
    if garages_vec is not None:
        Welcome.AddGarages(b, garages_vec)
    if signals_vec is not None:
        Welcome.AddSignals(b, signals_vec)
    if chains_vec is not None:
        Welcome.AddChains(b, chains_vec)
    Welcome.AddDotsEverySteps(b, dots_every_steps)
    if archetypes_vec is not None:
        Welcome.AddArchetypes(b, archetypes_vec)
    return _finish(b, SM.Welcome, Welcome.End(b))


def enter(index, gen=1, lane=0, s_mm=0, speed_mmps=0, archetype=0, kind=0, tier=0, rep=0, policy=0,
          corpse=False):
    """One EntityEnter tuple for delta(entered=...)."""
    return (index, gen, lane, s_mm, speed_mmps, archetype, kind, tier, rep, policy, corpse)


def _entered(b, start_vector, entered):
    """entered: EntityEnter tuples (see enter())."""
    start_vector(b, len(entered))
    for e in reversed(list(entered)):
        CreateEntityEnter(b, *e)
    return b.EndVector()


def _ids(b, start_vector, ids):
    start_vector(b, len(ids))
    for index, generation in reversed(list(ids)):
        CreateEntityId(b, index, generation)
    return b.EndVector()


def delta(step, sim_time_us=None, digest=0, baseline=False, entered=(), left=(),
          signals=None, dots=None, retiring=None, labels=None, motion=None, changes=None,
          interest_truncated=0):
    """entered: EntityEnter tuples (see enter()); labels: {index: label};
    motion: the packed bytes of Delta.motion; changes: (index, field, value)
    triples; signals: (index, phase) pairs, or None for no vector; dots:
    (chain, count) pairs; retiring: (index, generation) pairs."""
    b = flatbuffers.Builder(256)
    signals_off = dots_off = retiring_off = labels_off = motion_off = changes_off = None
    if labels is not None:
        offs = [_table(b, EntityLabel, {"Index": i, "Label": text}, strings=("Label",))
                for i, text in labels.items()]
        labels_off = _offsets_vector(b, Delta.StartLabelsVector, offs)
    if motion is not None:
        motion_off = b.CreateByteVector(bytes(motion))
    if changes is not None:
        Delta.StartChangesVector(b, len(changes))
        for index, field, value in reversed(list(changes)):
            CreateEntityChange(b, index, field, value)
        changes_off = b.EndVector()
    if dots is not None:
        Delta.StartDotsVector(b, len(dots))
        for chain, count in reversed(list(dots)):
            ChainDots.CreateChainDots(b, chain, count)
        dots_off = b.EndVector()
    if retiring is not None:
        retiring_off = _ids(b, Delta.StartRetiringVector, retiring)
    if signals is not None:
        Delta.StartSignalsVector(b, len(signals))
        for index, phase in reversed(list(signals)):
            SignalPhaseState.CreateSignalPhaseState(b, index, phase)
        signals_off = b.EndVector()
    entered_off = _entered(b, Delta.StartEnteredVector, entered)
    left_off = _ids(b, Delta.StartLeftVector, left)
    Delta.Start(b)
    Delta.AddStep(b, step)
    Delta.AddSimTimeUs(b, step * 100_000 if sim_time_us is None else sim_time_us)
    Delta.AddDigest(b, digest)
    Delta.AddBaseline(b, baseline)
    Delta.AddEntered(b, entered_off)
    Delta.AddLeft(b, left_off)
    for add, off in ((Delta.AddLabels, labels_off), (Delta.AddMotion, motion_off),
                     (Delta.AddChanges, changes_off)):
        if off is not None:
            add(b, off)
    Delta.AddInterestTruncated(b, interest_truncated)
    if signals_off is not None:
        Delta.AddSignals(b, signals_off)
    if dots_off is not None:
        Delta.AddDots(b, dots_off)
    if retiring_off is not None:
        Delta.AddRetiring(b, retiring_off)
    return _finish(b, SM.Delta, Delta.End(b))


STATS_FIELDS = [
    "Step", "SimTimeUs", "Digest", "StepUs", "ClockMode", "Paused", "Pedestrians",
    "PedestrianTarget", "EntityCapacity", "Clients", "SpawnedTotal", "DespawnedTotal",
    "CommandsAccepted", "CommandsRejected", "DroppedSteps",
    "Recording", "RecordingFailed", "RecordedTicks",
    "Vehicles", "VehiclesFull", "VehiclesSimulated", "VehiclesCoarse", "VehiclesMoving",
    "VehiclesWaiting", "VehiclesYielding", "TierTransitionsDeferred",
]

GARAGE_INFO_FIELDS = [
    "Dispatched", "Managed", "Capacity", "FrameIndex", "NextVehicleOrdinal", "LastGate",
    "Turnarounds", "RejectedInvalid", "RejectedDuplicate", "RejectedQueueFull", "Canceled",
    "PlanTotal", "PlanInjected",
]


def _job(b, job):
    """job: dict with job_id, kind, state, terminal, name, step, message."""
    name = b.CreateString(job.get("name", ""))
    message = b.CreateString(job.get("message", ""))
    JobStatus.Start(b)
    JobStatus.AddJobId(b, job["job_id"])
    JobStatus.AddKind(b, int(job.get("kind", 0)))
    JobStatus.AddState(b, int(job.get("state", 0)))
    JobStatus.AddTerminal(b, bool(job.get("terminal", False)))
    JobStatus.AddName(b, name)
    JobStatus.AddStep(b, job.get("step", 0))
    JobStatus.AddMessage(b, message)
    return JobStatus.End(b)


def _snapshot_info(b, info):
    """info: tuple (name, kind, scenario_id, step, sim_time_us, digest, pedestrians, created_unix_ms)."""
    name, kind, scenario_id, step, sim_time_us, digest, pedestrians, created = info
    offs = [b.CreateString(x) for x in (name, kind, scenario_id)]
    SnapshotInfo.Start(b)
    SnapshotInfo.AddName(b, offs[0])
    SnapshotInfo.AddKind(b, offs[1])
    SnapshotInfo.AddScenarioId(b, offs[2])
    SnapshotInfo.AddStep(b, step)
    SnapshotInfo.AddSimTimeUs(b, sim_time_us)
    SnapshotInfo.AddDigest(b, digest)
    SnapshotInfo.AddPedestrians(b, pedestrians)
    SnapshotInfo.AddCreatedUnixMs(b, created)
    return SnapshotInfo.End(b)


def _garage_info(b, g):
    """g: dict with id, queued (list), gate_steps (list) and GARAGE_INFO_FIELDS (CamelCase)."""
    id_off = b.CreateString(g["id"])
    queued = [b.CreateString(q) for q in g.get("queued", [])]
    queued_off = _offsets_vector(b, GarageInfo.StartQueuedVector, queued)
    gates = g.get("gate_steps", [])
    GarageInfo.StartGateStepsVector(b, len(gates))
    for n in reversed(gates):
        b.PrependUint64(n)
    gates_off = b.EndVector()
    GarageInfo.Start(b)
    GarageInfo.AddId(b, id_off)
    GarageInfo.AddQueued(b, queued_off)
    GarageInfo.AddGateSteps(b, gates_off)
    for name in GARAGE_INFO_FIELDS:
        if name in g:
            getattr(GarageInfo, "Add" + name)(b, g[name])
    return GarageInfo.End(b)


def _signal_info(b, info):
    """info: (id, lane, phase, phase_elapsed_us, cycles)."""
    sid, lane, phase, elapsed, cycles = info
    id_off = b.CreateString(sid)
    SignalInfo.Start(b)
    SignalInfo.AddId(b, id_off)
    SignalInfo.AddLane(b, lane)
    SignalInfo.AddPhase(b, phase)
    SignalInfo.AddPhaseElapsedUs(b, elapsed)
    SignalInfo.AddCycles(b, cycles)
    return SignalInfo.End(b)


def _vehicle_info(b, v):
    """v: dict of VehicleInfo fields (CamelCase); Id and Leader as (index, generation)."""
    return _table(b, VehicleInfo, v, strings=("VehicleId", "Garage", "RequestId", "Prototype"),
                  ids=("Id", "Leader"))


def _table(b, module, fields, strings=(), ids=()):
    """A table from a dict of CamelCase field -> value; ``strings`` name the
    string fields, ``ids`` the EntityId struct fields ((index, generation))."""
    offs = {k: b.CreateString(fields[k]) for k in strings if k in fields}
    module.Start(b)
    for name, value in fields.items():
        if name in offs:
            value = offs[name]
        elif name in ids:
            value = CreateEntityId(b, *value)
        getattr(module, "Add" + name)(b, value)
    return module.End(b)


def spawn_status(b, st):
    """st: dict of SpawnStatus fields (CamelCase); Entity as (index, generation)."""
    return _table(b, SpawnStatus, st, strings=("Zone",), ids=("Entity",))


def entity_info(b, e):
    """e: dict of EntityInfo fields (CamelCase); Id as (index, generation)."""
    return _table(b, EntityInfo, e, strings=("Community", "Zone", "WorkPoint"), ids=("Id",))


POPULATION_VECTORS = {  # field -> Prepend method
    "SpawnLive": "PrependUint32", "SpawnTotals": "PrependUint64",
    "DespawnedByReason": "PrependUint64", "Tiers": "PrependUint32",
}


def population_info(b, p):
    """p: dict of PopulationInfo fields (CamelCase); Communities as a list of
    CommunityInfo dicts; the vector fields of POPULATION_VECTORS as lists."""
    p = dict(p)
    if "Communities" in p:
        offs = [_table(b, CommunityInfo, c, strings=("Id", "Zone")) for c in p["Communities"]]
        p["Communities"] = _offsets_vector(b, PopulationInfo.StartCommunitiesVector, offs)
    for name, prepend in POPULATION_VECTORS.items():
        if name in p:
            p[name] = _uint_vector(b, getattr(PopulationInfo, f"Start{name}Vector"), p[name], prepend)
    return _table(b, PopulationInfo, p)


def spawn_update(spawn=None):
    """spawn: dict of SpawnStatus fields (None: an update without a status)."""
    b = flatbuffers.Builder(128)
    off = spawn_status(b, spawn) if spawn is not None else None
    SpawnUpdate.Start(b)
    if off is not None:
        SpawnUpdate.AddSpawn(b, off)
    return _finish(b, SM.SpawnUpdate, SpawnUpdate.End(b))


def command_result(request_id, status=0, reason=0, message="", applied_step=0, stats=None,
                   job=None, snapshots=None, garages=None, signals=None, vehicle=None,
                   handle=None, entity=None, batch=None, handles=None, entity_info_=None,
                   population=None, spawn=None):
    """stats: dict of Stats field name (CamelCase as in STATS_FIELDS) -> value.
    job: dict (see _job). snapshots: list of SnapshotInfo tuples (see _snapshot_info).
    garages: list of dicts (see _garage_info); signals: list of tuples (see
    _signal_info); vehicle: dict (see _vehicle_info). entity: (index,
    generation); handles: list; entity_info_, population, spawn: dicts (see
    entity_info, population_info, spawn_status)."""
    b = flatbuffers.Builder(128)
    garages_off = signals_off = vehicle_off = None
    handles_off = _uint_vector(b, CommandResult.StartHandlesVector, handles, "PrependUint64") \
        if handles is not None else None
    info_off = entity_info(b, entity_info_) if entity_info_ is not None else None
    population_off = population_info(b, population) if population is not None else None
    spawn_off = spawn_status(b, spawn) if spawn is not None else None
    if garages is not None:
        garages_off = _offsets_vector(b, CommandResult.StartGaragesVector,
                                      [_garage_info(b, g) for g in garages])
    if signals is not None:
        signals_off = _offsets_vector(b, CommandResult.StartSignalsVector,
                                      [_signal_info(b, i) for i in signals])
    if vehicle is not None:
        vehicle_off = _vehicle_info(b, vehicle)
    stats_off = None
    if stats is not None:
        Stats.Start(b)
        for name, value in stats.items():
            getattr(Stats, "Add" + name)(b, value)
        stats_off = Stats.End(b)
    job_off = _job(b, job) if job is not None else None
    snaps_off = None
    if snapshots is not None:
        offs = [_snapshot_info(b, info) for info in snapshots]
        CommandResult.StartSnapshotsVector(b, len(offs))
        for off in reversed(offs):
            b.PrependUOffsetTRelative(off)
        snaps_off = b.EndVector()
    msg = b.CreateString(message)
    CommandResult.Start(b)
    CommandResult.AddRequestId(b, request_id)
    CommandResult.AddStatus(b, status)
    CommandResult.AddReason(b, reason)
    CommandResult.AddMessage(b, msg)
    CommandResult.AddAppliedStep(b, applied_step)
    if stats_off is not None:
        CommandResult.AddStats(b, stats_off)
    if job_off is not None:
        CommandResult.AddJob(b, job_off)
    if snaps_off is not None:
        CommandResult.AddSnapshots(b, snaps_off)
    if garages_off is not None:
        CommandResult.AddGarages(b, garages_off)
    if signals_off is not None:
        CommandResult.AddSignals(b, signals_off)
    if vehicle_off is not None:
        CommandResult.AddVehicle(b, vehicle_off)
    if handle is not None:
        CommandResult.AddHandle(b, handle)
    if entity is not None:
        CommandResult.AddEntity(b, CreateEntityId(b, *entity))
    if batch is not None:
        CommandResult.AddBatch(b, batch)
    for add, off in ((CommandResult.AddHandles, handles_off), (CommandResult.AddEntityInfo, info_off),
                     (CommandResult.AddPopulation, population_off), (CommandResult.AddSpawn, spawn_off)):
        if off is not None:
            add(b, off)
    return _finish(b, SM.CommandResult, CommandResult.End(b))


def job_update(job_id, state, kind=0, terminal=False, name="", step=0, message="", with_job=True):
    b = flatbuffers.Builder(128)
    job_off = None
    if with_job:
        job_off = _job(b, dict(job_id=job_id, kind=kind, state=state, terminal=terminal,
                               name=name, step=step, message=message))
    JobUpdate.Start(b)
    if job_off is not None:
        JobUpdate.AddJob(b, job_off)
    return _finish(b, SM.JobUpdate, JobUpdate.End(b))


# ---------------------------------------------------------------- client side

_CLIENT_TABLES = {
    ClientMessage.ClientMessage.Hello: Hello.Hello,
    ClientMessage.ClientMessage.Subscribe: Subscribe.Subscribe,
    ClientMessage.ClientMessage.Command: Command.Command,
    ClientMessage.ClientMessage.UpdateInterest: UpdateInterest.UpdateInterest,
}
_COMMAND_TABLES = {
    CommandBody.CommandBody.Step: Step.Step,
    CommandBody.CommandBody.SetPedestrianTarget: SetPedestrianTarget.SetPedestrianTarget,
    CommandBody.CommandBody.DespawnEntity: DespawnEntity.DespawnEntity,
    CommandBody.CommandBody.Checkpoint: Checkpoint.Checkpoint,
    CommandBody.CommandBody.Restore: Restore.Restore,
    CommandBody.CommandBody.Save: Save.Save,
    CommandBody.CommandBody.Load: Load.Load,
    CommandBody.CommandBody.DeleteSnapshot: DeleteSnapshot.DeleteSnapshot,
    CommandBody.CommandBody.QueryJob: QueryJob.QueryJob,
    CommandBody.CommandBody.GarageRequest: GarageRequest.GarageRequest,
    CommandBody.CommandBody.CancelGarageRequest: CancelGarageRequest.CancelGarageRequest,
    CommandBody.CommandBody.SetVehicleStrategy: SetVehicleStrategy.SetVehicleStrategy,
    CommandBody.CommandBody.SetObservers: SetObservers.SetObservers,
    CommandBody.CommandBody.QueryVehicle: QueryVehicle.QueryVehicle,
    CommandBody.CommandBody.SpawnPedestrian: SpawnPedestrian.SpawnPedestrian,
    CommandBody.CommandBody.CancelSpawn: CancelSpawn.CancelSpawn,
    CommandBody.CommandBody.ReportAttached: ReportAttached.ReportAttached,
    CommandBody.CommandBody.SetLifecycle: SetLifecycle.SetLifecycle,
    CommandBody.CommandBody.LifecycleBatch: LifecycleBatch.LifecycleBatch,
    CommandBody.CommandBody.QueryEntity: QueryEntity.QueryEntity,
    CommandBody.CommandBody.QuerySpawn: QuerySpawn.QuerySpawn,
}


def parse_client_frame(payload):
    """(message type, generated table object) of a ClientFrame payload."""
    assert ClientFrame.ClientFrame.ClientFrameBufferHasIdentifier(payload, 0)
    frame = ClientFrame.ClientFrame.GetRootAs(payload, 0)
    t = frame.MessageType()
    table = frame.Message()
    obj = _CLIENT_TABLES[t]()
    obj.Init(table.Bytes, table.Pos)
    return t, obj


def parse_command_body(command):
    """(body type, generated table object or None for empty bodies)."""
    t = command.BodyType()
    cls = _COMMAND_TABLES.get(t)
    if cls is None:
        return t, None
    table = command.Body()
    obj = cls()
    obj.Init(table.Bytes, table.Pos)
    return t, obj
