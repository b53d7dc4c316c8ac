"""Codec unit tests: framing, client-frame encoding, server-frame decoding."""

import random
import struct

import pytest

import server_frames as sf
from bustle.wire.ClientMessage import ClientMessage
from bustle.wire.CommandBody import CommandBody

from bustle_client import PROTOCOL_VERSION, codec
from bustle_client.messages import (
    ClockMode,
    CommandResult,
    CommandStatus,
    ControlPolicy,
    Delta,
    DispatchGate,
    EntityChange,
    EntityEnter,
    EntityField,
    EntityId,
    EntityKind,
    ErrorCode,
    ErrorMessage,
    FrameTooLargeError,
    GarageGeometry,
    GarageInfo,
    JobKind,
    JobState,
    JobStatus,
    JobUpdate,
    LaneKind,
    MalformedFrameError,
    MotionError,
    MotionRecord,
    Observer,
    PolicyReason,
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
    VehicleInfo,
    VehicleStrategy,
    VehicleStrategyState,
    Welcome,
)

ENTERED = [
    sf.enter(0, 1, lane=3, s_mm=12345, speed_mmps=1400, archetype=2, kind=0, tier=1, rep=1),
    sf.enter(1, 3, lane=0, s_mm=0, speed_mmps=0, archetype=0, kind=1, tier=0, rep=0, policy=3),
    sf.enter(2**32 - 1, 2**32 - 1, lane=2**32 - 1, s_mm=2**32 - 1, speed_mmps=2**32 - 1,
             archetype=65535, kind=0, tier=2, rep=2, policy=6),
]
# two records: index 5 (lane kept, s 300, speed 1400), index 7 (lane 2, s 1000, speed 0)
MOTION = bytes([5, 0, 0xAC, 0x02, 0xF8, 0x0A, 2, 3, 0xE8, 0x07, 0])


def sample_delta_payload():
    return sf.delta(step=42, sim_time_us=4_200_000, digest=0xDEADBEEFCAFEF00D,
                    baseline=True, entered=ENTERED, left=[(5, 2), (6, 9)],
                    labels={1: "vehicle.g0.000001", 0: "market.007"}, motion=MOTION,
                    changes=[(5, 0, 2), (7, 1, 3), (7, 2, 4), (9, 9, 9)], interest_truncated=12)


# ------------------------------------------------------------------ framing


def test_encode_frame_prefixes_little_endian_length():
    frame = codec.encode_frame(b"\x01\x02\x03")
    assert frame == b"\x03\x00\x00\x00\x01\x02\x03"
    big = codec.encode_frame(b"x" * 0x01020304)
    assert big[:4] == b"\x04\x03\x02\x01"


def test_encode_frame_rejects_empty_payload():
    with pytest.raises(ValueError):
        codec.encode_frame(b"")


def test_frame_round_trip_through_decoder():
    payload = sample_delta_payload()
    dec = codec.FrameDecoder()
    dec.feed(codec.encode_frame(payload))
    assert dec.next() == payload
    assert dec.next() is None
    assert dec.buffered_bytes == 0


def test_decoder_handles_byte_by_byte_partial_reads():
    payloads = [sample_delta_payload(), sf.error(ErrorCode.MalformedFrame, "x"), b"\xAA"]
    stream = b"".join(codec.encode_frame(p) for p in payloads)
    dec = codec.FrameDecoder()
    got = []
    for i in range(len(stream)):
        dec.feed(stream[i : i + 1])
        frame = dec.next()
        if frame is not None:
            got.append(frame)
            # a frame completes exactly when its last byte arrives
            assert sum(4 + len(p) for p in got) == i + 1
    assert got == payloads
    assert dec.next() is None


def test_decoder_handles_random_chunking_and_many_frames_per_read():
    rng = random.Random(1234)
    payloads = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) for _ in range(200)]
    stream = b"".join(codec.encode_frame(p) for p in payloads)
    dec = codec.FrameDecoder()
    got, pos = [], 0
    while pos < len(stream):
        n = rng.randrange(1, 700)
        dec.feed(stream[pos : pos + n])
        pos += n
        got.extend(dec)
    assert got == payloads


def test_decoder_rejects_oversize_length_before_payload_arrives():
    dec = codec.FrameDecoder()
    dec.feed(struct.pack("<I", codec.MAX_INBOUND_FRAME_BYTES + 1))
    with pytest.raises(FrameTooLargeError) as info:
        dec.next()
    assert info.value.declared == codec.MAX_INBOUND_FRAME_BYTES + 1
    assert info.value.limit == 64 * 1024 * 1024
    # the stream is unusable from now on
    with pytest.raises(FrameTooLargeError):
        dec.next()
    with pytest.raises(FrameTooLargeError):
        dec.feed(b"more")


def test_decoder_accepts_length_exactly_at_cap_and_waits_for_payload():
    dec = codec.FrameDecoder()
    dec.feed(struct.pack("<I", codec.MAX_INBOUND_FRAME_BYTES))
    assert dec.next() is None


def test_decoder_custom_cap():
    dec = codec.FrameDecoder(max_frame_bytes=16)
    dec.feed(codec.encode_frame(b"y" * 16))
    assert dec.next() == b"y" * 16
    dec.feed(codec.encode_frame(b"y" * 17))
    with pytest.raises(FrameTooLargeError):
        dec.next()


def test_decoder_rejects_zero_length_frame():
    dec = codec.FrameDecoder()
    dec.feed(b"\x00\x00\x00\x00")
    with pytest.raises(MalformedFrameError):
        dec.next()


# -------------------------------------------------------------- client frames


def test_hello_encodes_all_fields():
    payload = codec.build_hello("soak-7", role="operator", token="s3cret", protocol_version=9)
    assert payload[4:8] == b"BCL1"
    t, hello = sf.parse_client_frame(payload)
    assert t == ClientMessage.Hello
    assert hello.ClientName() == b"soak-7"
    assert hello.Token() == b"s3cret"
    assert hello.Role() == Role.Operator
    assert hello.ProtocolVersion() == 9


def test_hello_defaults_to_schema_version_viewer_and_no_token():
    t, hello = sf.parse_client_frame(codec.build_hello("v"))
    assert hello.ProtocolVersion() == 3 == PROTOCOL_VERSION
    assert hello.Role() == Role.Viewer
    assert hello.Token() is None


def test_hello_rejects_unknown_role():
    with pytest.raises(ValueError, match="role"):
        codec.build_hello("x", role="admin")


def test_subscribe_kinds():
    t, sub = sf.parse_client_frame(codec.build_subscribe())
    assert t == ClientMessage.Subscribe
    assert sub.KindsIsNone()
    t, sub = sf.parse_client_frame(codec.build_subscribe([EntityKind.Vehicle, EntityKind.Pedestrian]))
    assert [sub.Kinds(i) for i in range(sub.KindsLength())] == [1, 0]


def test_subscribe_defaults_leave_interest_budgets_and_tolerance_absent():
    _, sub = sf.parse_client_frame(codec.build_subscribe(request_id=9))
    assert sub.RequestId() == 9
    assert sub.ObserversIsNone() and sub.Budgets() is None
    assert sub.MotionToleranceMm() == 10  # the schema default, not sent


def _observers(table):
    out = []
    for i in range(table.ObserversLength()):
        o = table.Observers(i)
        out.append((o.XM(), o.YM(), o.ZM(), o.HasHeading(), o.HeadingRad(), o.RadiusM()))
    return out


def test_subscribe_encodes_observers_budgets_and_tolerance():
    payload = codec.build_subscribe(
        [EntityKind.Pedestrian],
        [Observer(1.5, -2.25), (10.0, 20.0, 1.8, 3.0, 40.0), {"x_m": 0, "y_m": 0, "heading_rad": 0.0}],
        RepresentationBudgets(actors=0, instances=5, markers=1 << 20), 0, request_id=2**32 - 1)
    _, sub = sf.parse_client_frame(payload)
    assert sub.RequestId() == 2**32 - 1 and sub.MotionToleranceMm() == 0
    assert _observers(sub) == [(1.5, -2.25, 0.0, False, 0.0, 150.0),
                               (10.0, 20.0, 1.8, True, 3.0, 40.0),
                               (0.0, 0.0, 0.0, True, 0.0, 150.0)]
    b = sub.Budgets()
    assert (b.Actors(), b.Instances(), b.Markers()) == (0, 5, 1 << 20)
    # partial budgets keep the other defaults
    _, sub = sf.parse_client_frame(codec.build_subscribe(budgets={"markers": 0}))
    b = sub.Budgets()
    assert (b.Actors(), b.Instances(), b.Markers()) == (256, 4096, 0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(motion_tolerance_mm=65536), "motion_tolerance_mm 65536"),
    (dict(motion_tolerance_mm=-1), "motion_tolerance_mm -1"),
    (dict(budgets=RepresentationBudgets(markers=-5)), "budgets.markers"),
    (dict(observers=[(1.0,)]), "expected \\(x_m, y_m"),
])
def test_subscribe_refuses_values_the_wire_cannot_carry(kwargs, match):
    with pytest.raises(ValueError, match=match):
        codec.build_subscribe(**kwargs)


def test_update_interest_encodes_observers_and_budgets():
    t, ui = sf.parse_client_frame(codec.build_update_interest(
        [(5.0, 6.0)], RepresentationBudgets(1, 2, 3), request_id=4))
    assert t == ClientMessage.UpdateInterest and ui.RequestId() == 4
    assert _observers(ui) == [(5.0, 6.0, 0.0, False, 0.0, 150.0)]
    assert (ui.Budgets().Actors(), ui.Budgets().Instances(), ui.Budgets().Markers()) == (1, 2, 3)
    _, ui = sf.parse_client_frame(codec.build_update_interest(request_id=5))
    assert ui.ObserversIsNone() and ui.Budgets() is None


@pytest.mark.parametrize(
    "name, fields, body_type, check",
    [
        ("Pause", {}, CommandBody.Pause, None),
        ("Resume", {}, CommandBody.Resume, None),
        ("QueryStats", {}, CommandBody.QueryStats, None),
        ("Step", {"count": 5}, CommandBody.Step, lambda b: b.Count() == 5),
        ("Step", {}, CommandBody.Step, lambda b: b.Count() == 1),
        ("SetPedestrianTarget", {"count": 10**9}, CommandBody.SetPedestrianTarget,
         lambda b: b.Count() == 10**9),
        ("DespawnEntity", {"index": 17, "generation": 4}, CommandBody.DespawnEntity,
         lambda b: (b.Id().Index(), b.Id().Generation()) == (17, 4)),
        ("Checkpoint", {"name": "cp-1"}, CommandBody.Checkpoint, lambda b: b.Name() == b"cp-1"),
        ("Restore", {"name": "cp.2"}, CommandBody.Restore, lambda b: b.Name() == b"cp.2"),
        ("Save", {"name": "s_3"}, CommandBody.Save, lambda b: b.Name() == b"s_3"),
        ("Load", {"name": "s_3"}, CommandBody.Load, lambda b: b.Name() == b"s_3"),
        # names the server rejects are still encoded as given (the server judges them)
        ("DeleteSnapshot", {"name": "bad name/"}, CommandBody.DeleteSnapshot,
         lambda b: b.Name() == b"bad name/"),
        ("ListSnapshots", {}, CommandBody.ListSnapshots, None),
        ("QueryJob", {"job_id": 2**64 - 1}, CommandBody.QueryJob,
         lambda b: b.JobId() == 2**64 - 1),
        ("GarageRequest", dict(garage="g0", request_id="r-1", prototype="sedan", lane="lane0",
                               priority=-7), CommandBody.GarageRequest,
         lambda b: (b.Garage(), b.RequestId(), b.Prototype(), b.Lane(), b.Priority()) == (
             b"g0", b"r-1", b"sedan", b"lane0", -7)),
        # priority defaults to the schema's 10
        ("GarageRequest", dict(garage="g", request_id="r", prototype="p", lane="l"),
         CommandBody.GarageRequest, lambda b: b.Priority() == 10),
        ("GarageRequest", dict(garage="g", request_id="r", prototype="p", lane="l", priority=2**31 - 1),
         CommandBody.GarageRequest, lambda b: b.Priority() == 2**31 - 1),
        ("CancelGarageRequest", dict(garage="g0", request_id="r-1"), CommandBody.CancelGarageRequest,
         lambda b: (b.Garage(), b.RequestId()) == (b"g0", b"r-1")),
        ("SetVehicleStrategy", dict(index=9, generation=2, strategy=VehicleStrategy.Parked),
         CommandBody.SetVehicleStrategy,
         lambda b: (b.Id().Index(), b.Id().Generation(), b.Strategy()) == (9, 2, 2)),
        ("SetVehicleStrategy", dict(index=1, generation=1, strategy="manual"),
         CommandBody.SetVehicleStrategy, lambda b: b.Strategy() == 3),
        # out-of-range values are encoded as given (the server rejects them)
        ("SetVehicleStrategy", dict(index=1, generation=1, strategy=9),
         CommandBody.SetVehicleStrategy, lambda b: b.Strategy() == 9),
        ("SetObservers", dict(points=[(25, 25), (-1.5, 1e6)]), CommandBody.SetObservers,
         lambda b: [(b.Points(i).X(), b.Points(i).Y()) for i in range(b.PointsLength())] == [
             (25.0, 25.0), (-1.5, 1e6)]),
        ("SetObservers", dict(points=[]), CommandBody.SetObservers,
         lambda b: b.PointsLength() == 0 and not b.PointsIsNone()),
        ("QueryGarages", {}, CommandBody.QueryGarages, None),
        ("QuerySignals", {}, CommandBody.QuerySignals, None),
        ("QueryVehicle", dict(index=2**32 - 1, generation=3), CommandBody.QueryVehicle,
         lambda b: (b.Id().Index(), b.Id().Generation()) == (2**32 - 1, 3)),
    ],
)
def test_commands_encode_request_id_and_body(name, fields, body_type, check):
    t, cmd = sf.parse_client_frame(codec.build_command(4_000_000_000, name, **fields))
    assert t == ClientMessage.Command
    assert cmd.RequestId() == 4_000_000_000
    got_type, body = sf.parse_command_body(cmd)
    assert got_type == body_type
    if check is not None:
        assert check(body)


def test_vehicle_command_arguments_are_checked():
    with pytest.raises(ValueError, match="unknown vehicle strategy"):
        codec.build_command(1, "SetVehicleStrategy", index=1, generation=1, strategy="Hover")
    with pytest.raises(TypeError, match="request_id"):
        codec.build_command(1, "GarageRequest", garage="g", request_id=5, prototype="p", lane="l")
    with pytest.raises(TypeError):
        codec.build_command(1, "GarageRequest", garage="g", request_id="r")  # fields missing


def test_unknown_command_name_is_rejected():
    with pytest.raises(ValueError, match="unknown command"):
        codec.build_command(1, "Teleport")


# -------------------------------------------------------------- server frames


def test_delta_decodes_entered_labels_motion_and_changes():
    d = codec.decode_server_frame(sample_delta_payload())
    assert isinstance(d, Delta)
    assert (d.step, d.sim_time_us, d.digest, d.baseline) == (42, 4_200_000, 0xDEADBEEFCAFEF00D, True)
    a, b, c = d.entered
    assert a == EntityEnter(EntityId(0, 1), 3, 12345, 1400, 2, EntityKind.Pedestrian, SimTier.Simulated,
                            RepresentationHint.Instanced, ControlPolicy.RouteFollow)
    assert b.kind == EntityKind.Vehicle and b.policy == ControlPolicy.WaitingAtSignal
    assert b.sim_tier == SimTier.Full and b.representation == RepresentationHint.Actor
    assert c.id == (2**32 - 1, 2**32 - 1) and (c.lane, c.s_mm, c.speed_mmps) == (2**32 - 1,) * 3
    assert c.archetype == 65535 and c.sim_tier == SimTier.Coarse
    assert c.representation == RepresentationHint.Marker and c.policy == ControlPolicy.DespawnPending
    assert d.labels == {0: "market.007", 1: "vehicle.g0.000001"}
    assert d.motion == [MotionRecord(5, None, 300, 1400), MotionRecord(7, 2, 1000, 0)]
    assert d.changes == [EntityChange(5, EntityField.SimTier, SimTier.Coarse),
                         EntityChange(7, EntityField.Representation, RepresentationHint.None_),
                         EntityChange(7, EntityField.Policy, ControlPolicy.Parked),
                         EntityChange(9, 9, 9)]  # a field from a newer schema stays an int
    assert isinstance(d.changes[0].value, SimTier)
    assert d.left == [EntityId(5, 2), EntityId(6, 9)]
    assert d.interest_truncated == 12


def test_empty_delta_decodes():
    d = codec.decode_server_frame(sf.delta(step=1))
    assert d == Delta(step=1, sim_time_us=100_000, digest=0, baseline=False)
    assert d.motion == [] and d.labels == {} and d.changes == [] and d.interest_truncated == 0


def test_delta_with_bad_motion_bytes_names_the_byte():
    with pytest.raises(MotionError, match=r"motion\[byte 4\]: truncated or over-long varint \(speed_mmps\)") as info:
        codec.decode_server_frame(sf.delta(3, motion=MOTION[:5]))
    assert info.value.offset == 4
    assert isinstance(info.value, MalformedFrameError)


def test_welcome_decodes_lanes():
    payload = sf.welcome(session_id=3, role=1, step_us=100_000, clock_mode=2, current_step=99,
                         lanes=[(0, "sw-0", 0, [(0.0, 0.0), (10.0, 0.5)], 10.012492197250394, 1.5,
                                 [1], 10012, 2.5),
                                (1, "cr-1", 1, [(10.0, 0.5)], 0.0, 1.0, [])],
                         archetypes=["pedestrian", "vehicle.sedan"])
    w = codec.decode_server_frame(payload)
    assert isinstance(w, Welcome)
    assert (w.session_id, w.role, w.step_us, w.clock_mode, w.current_step) == (
        3, Role.Operator, 100_000, ClockMode.Manual, 99)
    assert w.rate_hz == pytest.approx(10.0)
    assert w.server_version == "bustle-test 0.0" and w.scenario_id == "test-city"
    assert [lane.id for lane in w.lanes] == ["sw-0", "cr-1"]
    assert w.lanes[0].points == [(0.0, 0.0), (10.0, 0.5)]
    assert w.lanes[0].successors == [1] and w.lanes[1].kind == LaneKind.Crossing
    # doubles survive exactly (poses are derived from them)
    assert w.lanes[0].length_m == 10.012492197250394
    assert (w.lanes[0].length_mm, w.lanes[0].elevation_m) == (10012, 2.5)
    assert (w.lanes[1].length_mm, w.lanes[1].elevation_m) == (0, 0.0)
    assert w.protocol_version == 3 and w.archetypes == ["pedestrian", "vehicle.sedan"]


def test_welcome_lane_points_keep_double_precision():
    x = 1234567.123456789
    w = codec.decode_server_frame(sf.welcome(lanes=[(0, "a", 2, [(x, -x), (x + 1e-9, 0.1)], 1.0, 9.0, [])]))
    assert w.lanes[0].points == [(x, -x), (x + 1e-9, 0.1)]


def test_v2_enum_values():
    assert ErrorCode.IdleTimeout == 11 and ErrorCode.TooManyConnections == 12
    assert RejectReason.RateLimited == 14
    assert [f.name for f in EntityField] == ["SimTier", "Representation", "Policy", "Corpse"]
    assert RepresentationHint.None_ == 3


def test_welcome_decodes_garages_and_signals():
    w = codec.decode_server_frame(sf.welcome(garages=[("g0", 0, [0, 1, 2, 3]), ("g1", 4, [])],
                                             signals=[("s1", 1, 0.82, 0.35)]))
    assert w.garages == [GarageGeometry("g0", 0, [0, 1, 2, 3]), GarageGeometry("g1", 4, [])]
    (sig,) = w.signals
    assert (sig.id, sig.lane) == ("s1", 1) and isinstance(sig, SignalGeometry)
    assert sig.stop_alpha == pytest.approx(0.82) and sig.yield_alpha == pytest.approx(0.35)
    # a server without vehicles sends neither
    w = codec.decode_server_frame(sf.welcome())
    assert w.garages == [] and w.signals == []


def test_delta_decodes_signal_phases():
    d = codec.decode_server_frame(sf.delta(3, signals=[(0, 2), (1, 0), (65535, 1)]))
    assert d.signals == [SignalPhaseState(0, SignalPhase.Closed), SignalPhaseState(1, SignalPhase.Open),
                         SignalPhaseState(65535, SignalPhase.Yield)]
    assert codec.decode_server_frame(sf.delta(3, signals=[(0, 7)])).signals == [(0, 7)]
    assert codec.decode_server_frame(sf.delta(3)).signals == []


def test_error_decodes():
    e = codec.decode_server_frame(sf.error(ErrorCode.FrameTooLarge, "frame too large"))
    assert e == ErrorMessage(ErrorCode.FrameTooLarge, "frame too large")
    assert e.to_exception().code == ErrorCode.FrameTooLarge
    assert "FrameTooLarge" in str(e.to_exception())


def test_command_result_with_stats_decodes():
    stats = {name: i + 1 for i, name in enumerate(sf.STATS_FIELDS)}
    stats.update(Paused=True, ClockMode=ClockMode.Fast, Recording=True, RecordingFailed=False)
    r = codec.decode_server_frame(sf.command_result(9, status=1, reason=5, message="not manual",
                                                    applied_step=77, stats=stats))
    assert isinstance(r, CommandResult)
    assert (r.request_id, r.status, r.reason, r.message, r.applied_step) == (
        9, CommandStatus.Rejected, RejectReason.WrongClockMode, "not manual", 77)
    assert not r.accepted
    assert r.stats.step == 1 and r.stats.paused is True and r.stats.clock_mode == ClockMode.Fast
    assert r.stats.dropped_steps == sf.STATS_FIELDS.index("DroppedSteps") + 1
    assert r.stats.recorded_ticks == sf.STATS_FIELDS.index("RecordedTicks") + 1
    assert r.stats.tier_transitions_deferred == len(sf.STATS_FIELDS)
    assert r.stats.recording is True and r.stats.recording_failed is False
    assert codec.decode_server_frame(sf.command_result(1)).stats is None


def test_stats_vehicle_fields_decode():
    names = ["Vehicles", "VehiclesFull", "VehiclesSimulated", "VehiclesCoarse", "VehiclesMoving",
             "VehiclesWaiting", "VehiclesYielding", "TierTransitionsDeferred"]
    r = codec.decode_server_frame(sf.command_result(1, stats={n: 100 + i for i, n in enumerate(names)}))
    st = r.stats
    assert (st.vehicles, st.vehicles_full, st.vehicles_simulated, st.vehicles_coarse, st.vehicles_moving,
            st.vehicles_waiting, st.vehicles_yielding, st.tier_transitions_deferred) == tuple(
        range(100, 108))
    st = codec.decode_server_frame(sf.command_result(1, stats={"Step": 1})).stats
    assert st.vehicles == st.vehicles_coarse == st.tier_transitions_deferred == 0


def test_stats_recording_fields_decode():
    r = codec.decode_server_frame(sf.command_result(
        1, stats={"Recording": True, "RecordingFailed": False, "RecordedTicks": 2**40}))
    assert r.stats.recording is True and r.stats.recording_failed is False
    assert r.stats.recorded_ticks == 2**40
    r = codec.decode_server_frame(sf.command_result(1, stats={"RecordingFailed": True}))
    assert (r.stats.recording, r.stats.recording_failed, r.stats.recorded_ticks) == (False, True, 0)


def test_snapshot_name_must_be_a_string():
    with pytest.raises(TypeError):
        codec.build_command(1, "Checkpoint", name=b"bytes")


def test_command_result_with_job_decodes():
    r = codec.decode_server_frame(sf.command_result(
        3, applied_step=12, job=dict(job_id=2**63 + 5, kind=JobKind.Checkpoint,
                                     state=JobState.Copied, terminal=False, name="cp", step=12)))
    assert r.accepted and r.snapshots is None and r.stats is None
    assert r.job == JobStatus(job_id=2**63 + 5, kind=JobKind.Checkpoint, state=JobState.Copied,
                              terminal=False, name="cp", step=12, message="")
    assert not r.job.failed
    assert codec.decode_server_frame(sf.command_result(1)).job is None


def test_command_result_with_snapshots_decodes():
    r = codec.decode_server_frame(sf.command_result(4, snapshots=[
        ("a", "checkpoint", "city", 10, 1_000_000, 2**64 - 1, 120, -5),
        ("b", "save", "city", 0, 0, 0, 0, 1_700_000_000_000),
    ]))
    assert r.snapshots == [
        SnapshotInfo("a", "checkpoint", "city", 10, 1_000_000, 2**64 - 1, 120, -5),
        SnapshotInfo("b", "save", "city", 0, 0, 0, 0, 1_700_000_000_000),
    ]
    # an empty list is not "absent"
    assert codec.decode_server_frame(sf.command_result(4, snapshots=[])).snapshots == []


def test_command_result_with_garages_decodes():
    g = {"id": "g0", "queued": ["r02", "r01"], "gate_steps": [1, 278, 136, 0, 168, 17],
         "Dispatched": 18, "Managed": 17, "Capacity": 18, "FrameIndex": 600, "NextVehicleOrdinal": 18,
         "LastGate": DispatchGate.EntranceBlocked, "Turnarounds": 7, "RejectedInvalid": 1,
         "RejectedDuplicate": 2, "RejectedQueueFull": 3, "Canceled": 4, "PlanTotal": 18,
         "PlanInjected": 2**40}
    r = codec.decode_server_frame(sf.command_result(5, garages=[g, {"id": "empty"}]))
    assert r.garages[0] == GarageInfo(
        id="g0", queued=["r02", "r01"], dispatched=18, managed=17, capacity=18, frame_index=600,
        next_vehicle_ordinal=18, last_gate=DispatchGate.EntranceBlocked,
        gate_steps=[1, 278, 136, 0, 168, 17], turnarounds=7, rejected_invalid=1, rejected_duplicate=2,
        rejected_queue_full=3, canceled=4, plan_total=18, plan_injected=2**40)
    assert r.garages[0].gate_count(DispatchGate.Cooldown) == 136
    assert r.garages[0].gate_count("PerStepMax") == 17
    e = r.garages[1]
    assert (e.id, e.queued, e.gate_steps, e.last_gate) == ("empty", [], [], DispatchGate.Dispatched)
    assert e.gate_count(DispatchGate.Capacity) == 0
    assert r.signals is None and r.vehicle is None
    assert codec.decode_server_frame(sf.command_result(5, garages=[])).garages == []
    assert codec.decode_server_frame(sf.command_result(5)).garages is None


def test_command_result_with_signals_decodes():
    r = codec.decode_server_frame(sf.command_result(6, signals=[("s1", 1, 1, 1_500_000, 2**33)]))
    assert r.signals == [SignalInfo("s1", 1, SignalPhase.Yield, 1_500_000, 2**33)]
    assert r.garages is None and r.vehicle is None


def test_command_result_with_vehicle_decodes():
    v = {"Id": (8, 1), "VehicleId": "vehicle.g0.000000", "Garage": "g0", "RequestId": "r00",
         "Prototype": "sedan", "RouteIndex": 1, "Lane": 1, "SM": 7.44, "Alpha": 0.1488, "XM": 50.0,
         "YM": 7.44, "SpeedMps": 4.2, "Strategy": 2, "Policy": ControlPolicy.WaitingAtSignal,
         "Reason": PolicyReason.SignalClosed, "Tier": SimTier.Coarse, "Leader": (25, 3),
         "StepsAdvanced": 208, "AwaitingTurnaround": True, "DespawnRequested": True}
    r = codec.decode_server_frame(sf.command_result(7, vehicle=v))
    assert r.vehicle == VehicleInfo(
        id=EntityId(8, 1), vehicle_id="vehicle.g0.000000", garage="g0", request_id="r00",
        prototype="sedan", route_index=1, lane=1, s_m=7.44, alpha=0.1488, x_m=50.0, y_m=7.44,
        speed_mps=4.2, strategy=VehicleStrategyState.Parked, policy=ControlPolicy.WaitingAtSignal,
        reason=PolicyReason.SignalClosed, tier=SimTier.Coarse, leader=EntityId(25, 3),
        steps_advanced=208, awaiting_turnaround=True, despawn_requested=True)
    assert r.vehicle.has_leader
    bare = codec.decode_server_frame(sf.command_result(7, vehicle={"Id": (1, 1)})).vehicle
    assert bare.leader == EntityId(0, 0) and not bare.has_leader
    assert (bare.policy, bare.reason, bare.tier) == (ControlPolicy.RouteFollow, PolicyReason.Clear, SimTier.Full)


def test_vehicle_enums_match_the_schema():
    assert [(p.name, p.value) for p in ControlPolicy] == [
        ("RouteFollow", 0), ("LaneFollow", 1), ("Yielding", 2), ("WaitingAtSignal", 3), ("Parked", 4),
        ("Manual", 5), ("DespawnPending", 6)]
    assert [g.name for g in DispatchGate] == [
        "Dispatched", "QueueEmpty", "Cooldown", "Capacity", "EntranceBlocked", "PerStepMax"]
    assert [s.name for s in VehicleStrategy] == [s.name for s in VehicleStrategyState] == [
        "RouteFollow", "LaneFollow", "Parked", "Manual"]
    assert [t.name for t in SimTier] == ["Full", "Simulated", "Coarse"]
    assert [p.name for p in SignalPhase] == ["Open", "Yield", "Closed"]
    assert PolicyReason.NotDue == 10 and PolicyReason.AwaitingTurnaround == 9
    assert (RejectReason.Duplicate, RejectReason.QueueFull) == (11, 12)


@pytest.mark.parametrize("state", list(JobState))
def test_job_update_decodes(state):
    u = codec.decode_server_frame(sf.job_update(9, state, kind=JobKind.Load, terminal=True,
                                                name="n", step=7, message="why"))
    assert u == JobUpdate(JobStatus(9, JobKind.Load, state, True, "n", 7, "why"))
    assert u.job.failed == (state == JobState.Failed)


def test_job_update_without_job_is_malformed():
    with pytest.raises(MalformedFrameError, match="without a job"):
        codec.decode_server_frame(sf.job_update(1, 0, with_job=False))


def test_job_enums_match_the_documented_values():
    assert [(s.name, s.value) for s in JobState] == [
        ("Queued", 0), ("Copied", 1), ("Committed", 2), ("Validated", 3), ("Applied", 4),
        ("SnapshotApplied", 5), ("ScheduleReconciled", 6), ("RepresentationRebuilt", 7),
        ("Failed", 8)]
    assert [k.name for k in JobKind] == ["Checkpoint", "Save", "Restore", "Load", "Autosave"]
    assert (RejectReason.NotFound, RejectReason.StorageError, RejectReason.WorldReplaced) == (8, 9, 10)


def test_unknown_enum_value_is_kept_as_int():
    e = codec.decode_server_frame(sf.error(999, "from a newer server"))
    assert e.code == 999


def test_wrong_identifier_rejected():
    with pytest.raises(MalformedFrameError, match="identifier"):
        codec.decode_server_frame(sf.error(ErrorCode.Unknown, "x", identifier=b"BCL1"))
    # a client frame is not a server frame
    with pytest.raises(MalformedFrameError, match="identifier"):
        codec.decode_server_frame(codec.build_hello("x"))


def test_too_short_payload_rejected():
    with pytest.raises(MalformedFrameError, match="too short"):
        codec.decode_server_frame(b"\x08\x00\x00\x00BSV")


def test_frame_without_message_rejected():
    import flatbuffers
    from bustle.wire import ServerFrame
    b = flatbuffers.Builder(16)
    ServerFrame.Start(b)
    b.Finish(ServerFrame.End(b), file_identifier=b"BSV1")
    with pytest.raises(MalformedFrameError, match="no message"):
        codec.decode_server_frame(bytes(b.Output()))


def test_truncated_frames_raise_only_malformed_frame_error():
    payload = sample_delta_payload()
    failures = 0
    for n in range(8, len(payload)):
        try:
            codec.decode_server_frame(payload[:n])
        except MalformedFrameError:
            failures += 1
    # vectors sit at the end of the buffer: almost every cut must be detected
    assert failures >= (len(payload) - 8) * 0.9


def test_random_garbage_with_server_identifier_never_escapes_as_other_errors():
    rng = random.Random(99)
    for _ in range(500):
        body = bytearray(rng.randbytes(rng.randrange(8, 120)))
        body[4:8] = b"BSV1"
        try:
            codec.decode_server_frame(bytes(body))
        except MalformedFrameError:
            pass
