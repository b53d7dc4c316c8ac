"""Session against a scripted fake server on a socketpair (no real server)."""

import socket
import threading
import time

import pytest

import server_frames as sf
from conftest import FakeServer
from bustle.wire.ClientMessage import ClientMessage
from bustle.wire.CommandBody import CommandBody
from bustle_client import (
    BustleTimeout,
    CommandRejected,
    ConnectionClosed,
    DispatchGate,
    EntityId,
    ErrorCode,
    ErrorMessage,
    FrameTooLargeError,
    JobFailed,
    JobKind,
    JobState,
    Observer,
    ProtocolError,
    RejectReason,
    RepresentationBudgets,
    Role,
    ServerError,
    Session,
    SignalPhase,
    VehicleStrategy,
    codec,
)


def test_hello_sends_hello_and_returns_welcome(pair):
    s, srv = pair
    srv.send(sf.welcome(session_id=11, role=Role.Operator, current_step=3))
    w = s.hello("t", role="operator")
    t, hello = srv.read()
    assert t == ClientMessage.Hello and hello.Role() == Role.Operator
    assert w.session_id == 11 and w.role == Role.Operator and w.current_step == 3
    assert s.welcome is w


def test_bytes_received_counts_every_byte_read(pair):
    s, srv = pair
    assert s.bytes_received == 0
    welcome = sf.welcome(session_id=1)
    srv.send(welcome)
    s.hello("t")
    assert s.bytes_received == len(codec.encode_frame(welcome))


def test_hello_answered_by_error_raises_server_error(pair):
    s, srv = pair
    srv.send(sf.error(ErrorCode.ProtocolVersionMismatch, "want 2"))
    with pytest.raises(ServerError) as info:
        s.hello("t", protocol_version=1)
    assert info.value.code == ErrorCode.ProtocolVersionMismatch
    assert info.value.message == "want 2"
    assert s.server_error.code == ErrorCode.ProtocolVersionMismatch


def test_command_buffers_deltas_and_foreign_results_until_its_result(pair):
    s, srv = pair
    # the result for request 1 arrives after two deltas and a stale result
    srv.send(sf.delta(1, baseline=True, entered=[sf.enter(0)]),
             sf.command_result(77, applied_step=1),
             sf.delta(2),
             sf.command_result(1, status=1, reason=RejectReason.WrongClockMode, applied_step=2))
    r = s.step(5)
    assert r.request_id == 1 and r.reason == RejectReason.WrongClockMode and not r.accepted
    with pytest.raises(CommandRejected, match="WrongClockMode"):
        r.raise_if_rejected()
    t, cmd = srv.read()
    assert t == ClientMessage.Command and cmd.RequestId() == 1
    assert cmd.BodyType() == CommandBody.Step
    assert s.buffered_deltas == 2
    assert [s.next_delta().step, s.next_delta().step] == [1, 2]
    # the stale result is kept for whoever waits for it
    assert s.wait_result(77, timeout=0).applied_step == 1


def test_request_ids_increase(pair):
    s, srv = pair
    srv.send(sf.command_result(1), sf.command_result(2, stats={"Step": 4, "Pedestrians": 9}))
    s.pause()
    st = s.stats()
    assert (st.step, st.pedestrians) == (4, 9)
    assert [srv.read()[1].RequestId() for _ in range(2)] == [1, 2]


def test_command_timeout_is_bounded(pair):
    s, srv = pair
    srv.send(sf.delta(1))
    t0 = time.monotonic()
    with pytest.raises(BustleTimeout, match="CommandResult of request 1"):
        s.resume(timeout=0.2)
    assert time.monotonic() - t0 < 1.0
    assert s.buffered_deltas == 1


def test_next_delta_timeout_is_bounded(pair):
    s, _ = pair
    t0 = time.monotonic()
    with pytest.raises(BustleTimeout):
        s.next_delta(timeout=0.2)
    assert 0.15 < time.monotonic() - t0 < 1.0


def test_error_frame_while_waiting_for_delta_raises(pair):
    s, srv = pair
    srv.send(sf.delta(1), sf.error(ErrorCode.OutboundOverflow, "too slow"))
    assert s.next_delta().step == 1
    with pytest.raises(ServerError) as info:
        s.next_delta()
    assert info.value.code == ErrorCode.OutboundOverflow


def test_eof_raises_connection_closed_after_buffered_frames(pair):
    s, srv = pair
    srv.send(sf.delta(1), sf.delta(2))
    srv.sock.close()
    steps = [d.step for d in (s.next_delta(), s.next_delta())]
    assert steps == [1, 2]
    with pytest.raises(ConnectionClosed):
        s.next_delta()
    assert s.closed_by_server


def test_incomplete_frame_at_eof_is_reported(pair):
    s, srv = pair
    srv.sock.sendall(codec.encode_frame(sf.delta(1))[:-3])
    srv.sock.close()
    with pytest.raises(ConnectionClosed, match="incomplete frame"):
        s.next_delta()


def test_wait_closed_returns_error_frame(pair):
    s, srv = pair
    srv.send(sf.error(ErrorCode.MalformedFrame, "bad"))
    srv.sock.close()
    seen = s.wait_closed(timeout=1.0)
    assert seen == [ErrorMessage(ErrorCode.MalformedFrame, "bad")]


def test_wait_closed_times_out_if_connection_stays_open(pair):
    s, _ = pair
    with pytest.raises(BustleTimeout):
        s.wait_closed(timeout=0.2)


def test_oversize_inbound_frame_raises(pair):
    s, srv = pair
    srv.sock.sendall((64 * 1024 * 1024 + 1).to_bytes(4, "little"))
    with pytest.raises(FrameTooLargeError):
        s.next_delta(timeout=1.0)


def test_garbage_from_server_raises_protocol_error(pair):
    s, srv = pair
    srv.send(b"\x00" * 4 + b"XXXX" + b"\x00" * 8)
    with pytest.raises(ProtocolError, match="identifier"):
        s.next_delta(timeout=1.0)


class AnswerSubscribe:
    """Plays the server for one Subscribe/UpdateInterest: reads it in a thread
    and answers with ``before`` frames, the CommandResult, then ``after``."""

    def __init__(self, srv, before=(), after=(), status=0, reason=0, message=""):
        self.request = None
        self._thread = threading.Thread(target=self._serve, args=(srv, before, after, status,
                                                                   reason, message), daemon=True)
        self._thread.start()

    def _serve(self, srv, before, after, status, reason, message):
        t, table = srv.read()
        self.request = (t, table)
        srv.send(*before, sf.command_result(table.RequestId(), status=status, reason=reason,
                                            message=message, applied_step=3), *after)

    def join(self):
        self._thread.join(timeout=2.0)
        assert not self._thread.is_alive()
        return self.request


def test_subscribe_waits_for_its_result_keeping_a_baseline_that_came_first(pair):
    s, srv = pair
    answer = AnswerSubscribe(srv, before=[sf.delta(4, baseline=True, entered=[sf.enter(2)]), sf.delta(5)],
                             after=[sf.delta(6)])
    result = s.subscribe(kinds=[0], observers=[(1.0, 2.0)], budgets=RepresentationBudgets(markers=0),
                         motion_tolerance_mm=0)
    t, sub = answer.join()
    assert t == ClientMessage.Subscribe and sub.KindsLength() == 1
    assert result.accepted and result.request_id == sub.RequestId() == 1
    assert (sub.ObserversLength(), sub.Budgets().Markers(), sub.MotionToleranceMm()) == (1, 0, 0)
    assert s.buffered_deltas == 2
    gen = s.deltas(timeout=1.0)
    first = next(gen)
    assert first.baseline and first.entered[0].id == (2, 1)
    assert [next(gen).step, next(gen).step] == [5, 6]


def test_subscribe_keeps_a_baseline_that_comes_after_the_result(pair):
    s, srv = pair
    answer = AnswerSubscribe(srv, after=[sf.delta(7, baseline=True)])
    s.subscribe()
    answer.join()
    assert s.next_delta(timeout=1.0).baseline


def test_resubscribe_drops_the_old_streams_deltas_before_the_new_baseline(pair):
    s, srv = pair
    answer = AnswerSubscribe(srv, before=[sf.delta(1, baseline=True), sf.delta(2)])
    s.subscribe()
    answer.join()
    assert s.buffered_deltas == 2  # not read
    answer = AnswerSubscribe(srv, before=[sf.delta(3), sf.delta(9, baseline=True), sf.delta(10)],
                             after=[sf.delta(11)])
    s.subscribe()
    answer.join()
    assert s.buffered_deltas == 2
    assert [s.next_delta().step for _ in range(3)] == [9, 10, 11]


def test_rejected_subscribe_raises_with_the_servers_message(pair):
    s, srv = pair
    answer = AnswerSubscribe(srv, before=[sf.delta(2)], status=1, reason=RejectReason.InvalidArgument,
                             message="observers[0].radius_m: must be in (0, 100000]")
    with pytest.raises(CommandRejected, match=r"InvalidArgument \(observers\[0\]\.radius_m: must be") as info:
        s.subscribe(observers=[Observer(0, 0, radius_m=0)])
    answer.join()
    assert info.value.result.reason == RejectReason.InvalidArgument
    assert s.buffered_deltas == 1  # the old stream goes on


def test_subscribe_result_timeout_is_bounded(pair):
    s, srv = pair
    srv.send(sf.delta(1, baseline=True))
    with pytest.raises(BustleTimeout, match="CommandResult of request 1"):
        s.subscribe(timeout=0.2)
    assert s.buffered_deltas == 1


def test_update_interest_sends_observers_and_waits_for_its_result(pair):
    s, srv = pair
    answer = AnswerSubscribe(srv, before=[sf.delta(8)])
    assert s.update_interest([Observer(5.0, 6.0, heading_rad=1.0, radius_m=30.0)],
                             RepresentationBudgets(actors=2)).accepted
    t, ui = answer.join()
    assert t == ClientMessage.UpdateInterest and ui.RequestId() == 1
    o = ui.Observers(0)
    assert (o.XM(), o.YM(), o.HasHeading(), o.HeadingRad(), o.RadiusM()) == (5.0, 6.0, True, 1.0, 30.0)
    assert ui.Budgets().Actors() == 2 and s.buffered_deltas == 1
    answer = AnswerSubscribe(srv, status=1, reason=RejectReason.InvalidArgument, message="not subscribed")
    with pytest.raises(CommandRejected, match="not subscribed"):
        s.update_interest()
    assert answer.join()[1].RequestId() == 2


def test_subscribe_and_commands_share_request_ids(pair):
    s, srv = pair
    srv.send(sf.command_result(1))
    s.pause()
    srv.read()  # the Pause
    answer = AnswerSubscribe(srv)
    assert s.subscribe().request_id == 2
    answer.join()


def test_mirror_follows_the_sessions_welcome(pair):
    s, srv = pair
    with pytest.raises(ProtocolError, match="hello"):
        s.mirror()
    srv.send(sf.welcome(lanes=[sf.STRAIGHT_LANE], step_us=50_000))
    s.hello("m")
    m = s.mirror()
    m.apply(codec.decode_server_frame(sf.delta(1, baseline=True, entered=[sf.enter(0, speed_mmps=2000)])))
    assert m.pose((0, 1), step=11).x_m == 1.0  # 2 m/s for ten 50 ms steps


def test_despawn_accepts_entity_id(pair):
    s, srv = pair
    srv.send(sf.command_result(1), sf.command_result(2))
    s.despawn((3, 4))
    s.despawn(5, 6)
    got = []
    for _ in range(2):
        _, cmd = srv.read()
        _, body = sf.parse_command_body(cmd)
        got.append((body.Id().Index(), body.Id().Generation()))
    assert got == [(3, 4), (5, 6)]


def test_spawn_pedestrian_sends_its_route(pair):
    s, srv = pair
    srv.send(sf.command_result(1, handle=4), sf.command_result(2, handle=5))
    assert s.spawn_pedestrian(lane="market.loop", route=["market.loop", "x.market.office"]).handle == 4
    assert s.spawn_pedestrian("market").handle == 5
    got = []
    for _ in range(2):
        _, cmd = srv.read()
        t, body = sf.parse_command_body(cmd)
        assert t == CommandBody.SpawnPedestrian
        got.append((body.Lane(), [body.Route(i) for i in range(body.RouteLength())]))
    assert got == [(b"market.loop", [b"market.loop", b"x.market.office"]), (None, [])]


def test_connect_refused_is_a_clear_error():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens on this port now
    with pytest.raises(ConnectionClosed, match="cannot connect"):
        Session.connect("127.0.0.1", port, timeout=1.0)


def test_connect_over_tcp_loopback():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]

    def serve():
        conn, _ = listener.accept()
        with conn:
            FakeServer(conn).read()
            conn.sendall(codec.encode_frame(sf.welcome(session_id=5)))
            conn.recv(1)  # until the client closes

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    with Session.connect("127.0.0.1", port, timeout=2.0) as s:
        assert s.hello("tcp").session_id == 5
    t.join(timeout=2.0)
    listener.close()
    assert not t.is_alive()


# ---------------------------------------------------------------- snapshot jobs


def _job(job_id, state, terminal=False, name="cp", kind=JobKind.Checkpoint, **kw):
    return sf.job_update(job_id, state, kind=kind, terminal=terminal, name=name, **kw)


def test_checkpoint_sends_name_and_wait_job_collects_states(pair):
    s, srv = pair
    # Committed may be pushed before the Accepted result reaches the client
    srv.send(sf.delta(1, baseline=True),
             _job(5, JobState.Committed, terminal=True),
             sf.command_result(1, job=dict(job_id=5, kind=JobKind.Checkpoint,
                                           state=JobState.Copied, name="cp", step=1)))
    r = s.checkpoint("cp")
    _, cmd = srv.read()
    t, body = sf.parse_command_body(cmd)
    assert t == CommandBody.Checkpoint and body.Name() == b"cp"
    assert r.job.state == JobState.Copied and r.job.job_id == 5
    assert s.buffered_job_updates == 1 and s.buffered_deltas == 1
    states = s.wait_job(r)
    assert [j.state for j in states] == [JobState.Committed] and states[-1].terminal
    assert s.buffered_job_updates == 0


def test_wait_job_keeps_other_jobs_and_waits_for_terminal(pair):
    s, srv = pair
    srv.send(_job(2, JobState.Validated, kind=JobKind.Load),
             _job(3, JobState.Committed, terminal=True),
             sf.delta(4),
             _job(2, JobState.SnapshotApplied, kind=JobKind.Load),
             sf.command_result(99),
             _job(2, JobState.ScheduleReconciled, kind=JobKind.Load),
             _job(2, JobState.RepresentationRebuilt, terminal=True, kind=JobKind.Load),
             _job(2, JobState.Failed, terminal=True, kind=JobKind.Load))  # never read
    states = s.wait_job(2, timeout=1.0)
    assert [j.state for j in states] == [JobState.Validated, JobState.SnapshotApplied,
                                         JobState.ScheduleReconciled,
                                         JobState.RepresentationRebuilt]
    assert s.buffered_deltas == 1 and s.wait_result(99, timeout=0).request_id == 99
    assert [j.job_id for j in s.wait_job(3, timeout=0)] == [3]


def test_wait_job_non_terminal_returns_after_one_state(pair):
    s, srv = pair
    srv.send(_job(7, JobState.Validated, kind=JobKind.Restore))
    assert [j.state for j in s.wait_job(7, terminal=False, timeout=1.0)] == [JobState.Validated]
    srv.send(_job(7, JobState.Applied, terminal=True, kind=JobKind.Restore, step=3))
    last = s.wait_job(7, timeout=1.0)[-1]
    assert last.state == JobState.Applied and last.step == 3


def test_wait_job_timeout_names_job_and_states_seen(pair):
    s, srv = pair
    srv.send(_job(8, JobState.Validated, kind=JobKind.Restore))
    with pytest.raises(BustleTimeout, match="job 8.*Validated"):
        s.wait_job(8, timeout=0.2)


def test_wait_job_check_raises_job_failed(pair):
    s, srv = pair
    srv.send(_job(4, JobState.Failed, terminal=True, kind=JobKind.Restore, name="x",
                  message="no snapshot named 'x'"))
    with pytest.raises(JobFailed, match="no snapshot named 'x'") as info:
        s.wait_job(4, check=True, timeout=1.0)
    assert info.value.job.state == JobState.Failed


def test_run_job_returns_result_state_then_updates(pair):
    s, srv = pair
    srv.send(sf.command_result(1, job=dict(job_id=6, kind=JobKind.Restore, state=JobState.Queued,
                                           name="r")),
             _job(6, JobState.Validated, kind=JobKind.Restore),
             _job(6, JobState.Applied, terminal=True, kind=JobKind.Restore))
    states = s.run_job("Restore", "r", timeout=1.0)
    assert [j.state for j in states] == [JobState.Queued, JobState.Validated, JobState.Applied]


def test_run_job_raises_when_rejected(pair):
    s, srv = pair
    srv.send(sf.command_result(1, status=1, reason=RejectReason.InvalidArgument, message="bad"))
    with pytest.raises(CommandRejected, match="InvalidArgument"):
        s.run_job("Checkpoint", "keyframe.x", timeout=1.0)


def test_snapshot_helpers_encode_their_commands(pair):
    s, srv = pair
    srv.send(*(sf.command_result(i) for i in range(1, 7)),
             sf.command_result(7, snapshots=[("a", "save", "c", 1, 2, 3, 4, 5)]))
    s.restore("r1")
    s.save("s1")
    s.load("s1")
    s.delete_snapshot("d1")
    assert s.query_job(42).request_id == 5
    assert s.list_snapshots().snapshots is None
    assert [i.name for i in s.snapshots()] == ["a"]
    got = []
    for _ in range(7):
        _, cmd = srv.read()
        t, body = sf.parse_command_body(cmd)
        got.append((t, body.Name() if hasattr(body, "Name") else
                    body.JobId() if body is not None else None))
    assert got == [(CommandBody.Restore, b"r1"), (CommandBody.Save, b"s1"),
                   (CommandBody.Load, b"s1"), (CommandBody.DeleteSnapshot, b"d1"),
                   (CommandBody.QueryJob, 42), (CommandBody.ListSnapshots, None),
                   (CommandBody.ListSnapshots, None)]


def test_next_job_update_and_buffer_during_next_delta(pair):
    s, srv = pair
    srv.send(_job(1, JobState.Committed, terminal=True), sf.delta(3))
    assert s.next_delta(timeout=1.0).step == 3
    assert s.buffered_job_updates == 1
    assert s.next_job_update(timeout=0).job_id == 1
    with pytest.raises(BustleTimeout, match="JobUpdate"):
        s.next_job_update(timeout=0.1)


def test_vehicle_helpers_encode_their_commands(pair):
    s, srv = pair
    srv.send(*(sf.command_result(i) for i in range(1, 5)))
    assert s.garage_request("g0", "r1", "sedan", "lane0", priority=40).request_id == 1
    s.cancel_garage_request("g0", "r1")
    s.set_vehicle_strategy(EntityId(7, 2), "Parked")
    s.set_observers([(1, 2), (3.5, -4)])
    got = []
    for _ in range(4):
        _, cmd = srv.read()
        got.append(sf.parse_command_body(cmd))
    (t0, g), (t1, c), (t2, st), (t3, ob) = got
    assert (t0, g.Garage(), g.RequestId(), g.Prototype(), g.Lane(), g.Priority()) == (
        CommandBody.GarageRequest, b"g0", b"r1", b"sedan", b"lane0", 40)
    assert (t1, c.Garage(), c.RequestId()) == (CommandBody.CancelGarageRequest, b"g0", b"r1")
    assert (t2, st.Id().Index(), st.Id().Generation(), st.Strategy()) == (
        CommandBody.SetVehicleStrategy, 7, 2, VehicleStrategy.Parked)
    assert t3 == CommandBody.SetObservers
    assert [(ob.Points(i).X(), ob.Points(i).Y()) for i in range(ob.PointsLength())] == [(1, 2), (3.5, -4)]


def test_vehicle_queries_return_their_payloads(pair):
    s, srv = pair
    srv.send(sf.command_result(1, garages=[{"id": "g0", "queued": ["a"], "gate_steps": [0, 2],
                                            "Dispatched": 3}]),
             sf.command_result(2, signals=[("s1", 1, 2, 10, 3)]),
             sf.command_result(3, vehicle={"Id": (4, 1), "VehicleId": "vehicle.g0.000003"}),
             sf.command_result(4, status=1, reason=RejectReason.UnknownEntity, message="not a vehicle"),
             sf.command_result(5))
    (g,) = s.garages()
    assert (g.id, g.queued, g.dispatched, g.gate_count(DispatchGate.QueueEmpty)) == ("g0", ["a"], 3, 2)
    (sig,) = s.signals()
    assert (sig.id, sig.phase, sig.cycles) == ("s1", SignalPhase.Closed, 3)
    v = s.vehicle((4, 1))
    assert (v.id, v.vehicle_id) == (EntityId(4, 1), "vehicle.g0.000003")
    with pytest.raises(CommandRejected, match="UnknownEntity"):
        s.vehicle(EntityId(9, 9))
    with pytest.raises(ProtocolError, match="without garages"):
        s.garages()
    got = []
    for _ in range(5):
        _, cmd = srv.read()
        t, body = sf.parse_command_body(cmd)
        got.append((t, (body.Id().Index(), body.Id().Generation()) if body is not None else None))
    assert got == [(CommandBody.QueryGarages, None), (CommandBody.QuerySignals, None),
                   (CommandBody.QueryVehicle, (4, 1)), (CommandBody.QueryVehicle, (9, 9)),
                   (CommandBody.QueryGarages, None)]


def test_rate_limited_commands_are_retried_unless_disabled(pair):
    s, srv = pair
    srv.send(sf.command_result(1, status=1, reason=RejectReason.RateLimited, message="slow down"),
             sf.command_result(2, stats={"Step": 8}))
    assert s.stats().step == 8  # the second try, with a fresh request id
    assert [srv.read()[1].RequestId() for _ in range(2)] == [1, 2]
    s.retry_rate_limited = False
    srv.send(sf.command_result(3, status=1, reason=RejectReason.RateLimited, message="slow down"))
    assert s.query_stats().reason == RejectReason.RateLimited
