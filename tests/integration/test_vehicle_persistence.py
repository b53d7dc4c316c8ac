"""Vehicles and persistence on the corridor: a checkpoint taken mid-dispatch
continues exactly after a restore, and a recording with vehicle commands from
two operators verifies with bustle-replay (and diverges where it was altered)."""

import re
import time

from conftest import replay_binary, run_replay

from bustle_client import CommandStatus, JobState, RejectReason, VehicleStrategy

from snapshot_helpers import copy_db, integrity_check, run_job, sql
from vehicle_helpers import Corridor, start_corridor

DIVERGED = re.compile(
    r"^DIVERGED at tick (\d+) step (\d+): recorded ([0-9a-f]{16}) replayed ([0-9a-f]{16})$")

#: World commands sent before step (key + 1) runs, identically in both runs.
SCRIPT = {
    60: ("GarageRequest", dict(garage="g0", request_id="extra", prototype="sedan", lane="lane0",
                               priority=50)),
    80: ("SetObservers", dict(points=[(5000.0, 5000.0)])),
    120: ("SetObservers", dict(points=[(25.0, 25.0)])),
}
CHECK_AT = (35, 60, 100, 150, 200)


def _run(c, start, stop, parked):
    """Steps start+1..stop one at a time with the script; returns ({step: delta
    digest}, {step: QueryGarages}, VehicleInfos at ``stop``, {step: the
    viewer's reconstructed positions})."""
    digests, garages, positions = {}, {}, {}
    for i in range(start, stop):
        rid = None
        if i in SCRIPT:
            name, fields = SCRIPT[i]
            rid = c.op.send_command(name, **fields)
        if i in (90, 140):
            rid = c.op.send_command("SetVehicleStrategy", index=parked.index, generation=parked.generation,
                                    strategy=VehicleStrategy.Parked if i == 90 else VehicleStrategy.RouteFollow)
        c.step(1)
        if rid is not None:
            assert c.op.wait_result(rid, timeout=3.0).accepted
        assert c.mirror.step == i + 1
        digests[i + 1] = c.mirror.digest
        positions[i + 1] = c.mirror.positions_at()
        if i + 1 in CHECK_AT:
            garages[i + 1] = c.op.garages()
    assert c.op.stats().digest == digests[stop]
    return digests, garages, c.infos(), positions


def test_checkpoint_mid_dispatch_restores_exactly(start_server):
    srv = start_corridor(start_server)
    with Corridor(srv, "cp") as c:
        c.step_to(35, chunk=35)
        at35 = c.op.garages()
        (g,) = at35
        assert g.queued, "requests are queued at the checkpoint"
        assert g.plan_injected < g.plan_total, "planned requests are not all offered yet"
        assert 0 < g.dispatched < 18
        assert run_job(c.op, "Checkpoint", "mid-dispatch")[-1].state == JobState.Committed
        parked = sorted(c.infos())[0]

        first_digests, first_garages, first_infos, first_positions = _run(c, 35, 200, parked)
        assert first_garages[200][0].dispatched > g.dispatched
        assert any(i.request_id == "extra" for i in first_infos.values())

        assert run_job(c.op, "Restore", "mid-dispatch")[-1].state == JobState.Applied
        assert c.op.stats().step == 35
        while True:  # the subscriber's baseline after the restore
            delta = c.sub.next_delta(timeout=3.0)
            c.mirror.apply(delta)
            if delta.baseline:
                break
        c.step_index = 35
        assert c.mirror.step == 35
        assert c.op.garages() == at35

        second_digests, second_garages, second_infos, second_positions = _run(c, 35, 200, parked)
        assert second_digests == first_digests
        assert second_garages == first_garages
        assert second_infos == first_infos
        # the stream after the restore's baseline places every entity where the first run did
        assert second_positions == first_positions


class TwoOperators(Corridor):
    """The Corridor driver plus a second operator, ``b``."""

    def __init__(self, srv):
        super().__init__(srv, "rec")
        self.b = srv.connect()
        self.b.hello("rec-b", role="operator")
        self.pending = []
        self.ticks = self.step_index
        self.digest_at_tick = {}

    def close(self):
        self.b.close()
        super().close()

    def queue(self, who, name, expect=CommandStatus.Accepted, reason=RejectReason.None_, **fields):
        """Send a world command and make sure the server has queued it before
        anything else happens (a query on the same connection is answered
        after it), so the order across the two clients is the order written here."""
        s = self.op if who == "a" else self.b
        rid = s.send_command(name, **fields)
        s.stats()
        self.pending.append((s, rid, expect, reason))

    def run(self, n=1):
        self.step(n)
        self.ticks += n
        self.digest_at_tick[self.ticks] = self.op.stats().digest
        for s, rid, expect, reason in self.pending:
            r = s.wait_result(rid, timeout=3.0)
            assert r.status == expect and r.reason == reason, r
        self.pending.clear()


def test_recording_with_vehicle_commands_verifies_and_diverges_when_altered(start_server, tmp_path):
    replay_binary()  # skip early when bustle-replay is not built
    rec = tmp_path / "vehicles.bustle"
    srv = start_corridor(start_server, "--record", str(rec))
    d = TwoOperators(srv)
    try:
        d.run(40)
        first = sorted(d.infos())[0]
        # one tick, both clients, interleaved
        d.queue("a", "GarageRequest", garage="g0", request_id="ext1", prototype="sedan",
                lane="lane0", priority=20)
        d.queue("b", "SetObservers", points=[(25.0, 25.0), (0.0, 0.0)])
        d.queue("b", "GarageRequest", expect=CommandStatus.Rejected, reason=RejectReason.InvalidArgument,
                garage="g0", request_id="bad", prototype="truck", lane="lane0")
        d.queue("a", "SetVehicleStrategy", index=first.index, generation=first.generation,
                strategy=VehicleStrategy.Parked)
        d.run()
        ext_tick = d.ticks
        assert d.garage().queued, "ext1 competes with queued planned requests"
        d.run(5)
        d.queue("b", "GarageRequest", garage="g0", request_id="ext2", prototype="sedan",
                lane="lane0", priority=15)
        d.queue("a", "CancelGarageRequest", expect=CommandStatus.Rejected, reason=RejectReason.NotFound,
                garage="g0", request_id="never")
        d.run(3)
        d.queue("b", "SetObservers", points=[(5000.0, 5000.0)])
        d.queue("a", "SetVehicleStrategy", index=first.index, generation=first.generation,
                strategy=VehicleStrategy.RouteFollow)
        d.run(20)
        d.queue("a", "SetObservers", points=[(25.0, 25.0)])
        d.queue("b", "DespawnEntity", index=first.index, generation=first.generation)
        d.run(30)
        deadline = time.monotonic() + 5.0
        while d.op.stats().recorded_ticks < d.ticks:
            assert time.monotonic() < deadline, d.op.stats()
            time.sleep(0.02)
        st = d.op.stats()
        assert st.recording and not st.recording_failed and st.recorded_ticks == d.ticks, st
    finally:
        d.close()
    srv.stop(check=True)
    assert integrity_check(rec) == ["ok"]

    kinds = {k for (k,) in sql(rec, "SELECT DISTINCT kind FROM recording_commands")}
    assert kinds == {"garage_request", "set_observers", "set_vehicle_strategy",
                     "cancel_garage_request", "despawn_entity"}, kinds

    p = run_replay("verify", str(rec))
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert f"OK verified {d.ticks} ticks" in p.stdout, p.stdout

    # ext1's priority altered (20 -> 5, below the queued planned requests)
    bad = copy_db(rec, tmp_path / "altered.bustle")
    (tick,) = sql(bad, "SELECT tick FROM recording_commands WHERE kind = 'garage_request' "
                       "AND json_extract(args, '$.request_id') = 'ext1'")[0]
    assert tick == ext_tick
    sql(bad, "UPDATE recording_commands SET args = json_set(args, '$.priority', 5) "
             "WHERE kind = 'garage_request' AND json_extract(args, '$.request_id') = 'ext1'")
    assert sql(bad, "SELECT json_extract(args, '$.priority') FROM recording_commands "
                    "WHERE json_extract(args, '$.request_id') = 'ext1'") == [(5,)]
    p = run_replay("verify", str(bad))
    assert p.returncode == 1, (p.stdout, p.stderr)
    m = DIVERGED.match(p.stdout.strip().splitlines()[-1])
    assert m, p.stdout
    assert int(m.group(1)) == ext_tick and int(m.group(2)) == ext_tick, p.stdout
    assert int(m.group(3), 16) == d.digest_at_tick[ext_tick], p.stdout
