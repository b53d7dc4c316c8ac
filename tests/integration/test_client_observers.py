"""Client observers feed the tier resolver (DESIGN §6): the server unites the
observers every connected client declared (Subscribe / UpdateInterest) into
one recorded SetClientObservers, kept apart from the scenario's observers, so
entities near a client become Full tier, drop back when it leaves, and a
recording verifies bit for bit. Manual clock, default city (its scenario
observer at (90, 30); Full within 25 m)."""

import json
import math
import time

from conftest import SOURCE_DIR, replay_binary, run_replay
from population_helpers import step_following
from snapshot_helpers import JOB_TIMEOUT, manual_command, operator, run_job, sql, step_digests, viewer

from bustle_client import EntityKind, JobState, SimTier

DEFAULT_CITY = SOURCE_DIR / "configs" / "default.city.json"
SCENARIO_OBSERVER = (90.0, 30.0)


def start(start_server, *args):
    return start_server("--clock", "manual", "--config", str(DEFAULT_CITY), *args)


class Watcher:
    """An operator subscribed to the whole city, its mirror kept per step."""

    def __init__(self, srv):
        self.op = operator(srv, "obs-op")
        self.op.subscribe()
        self.mirror = self.op.mirror()
        self.mirror.apply(self.op.next_delta(timeout=5.0))

    def step(self, n):
        step_following(self.op, self.op, self.mirror, n)

    def pedestrians_near(self, x, y, r):
        return [e for e in self.mirror.values()
                if e.kind == EntityKind.Pedestrian and math.hypot(e.x_m - x, e.y_m - y) <= r]

    def full_near(self, x, y, r):
        return [e for e in self.pedestrians_near(x, y, r) if e.sim_tier == SimTier.Full]

    def wait_clients(self, n):
        deadline = time.monotonic() + 3.0
        while self.op.stats().clients != n:
            assert time.monotonic() < deadline, "the server did not notice the client leaving"
            time.sleep(0.05)


def far_point(w):
    """A pedestrian's position far (> 60 m) from the scenario observer."""
    far = max(w.pedestrians_near(0, 0, 1e9), key=lambda e: math.dist((e.x_m, e.y_m), SCENARIO_OBSERVER))
    assert math.dist((far.x_m, far.y_m), SCENARIO_OBSERVER) > 60.0, far
    return far.x_m, far.y_m


def test_a_viewer_observer_makes_entities_near_it_full_and_they_drop_back_when_it_leaves(start_server):
    srv = start(start_server)
    w = Watcher(srv)
    w.step(12)
    x, y = far_point(w)
    assert w.pedestrians_near(x, y, 10.0), "someone walks there"
    assert not w.full_near(x, y, 10.0), "far from the scenario observer nobody is Full"
    assert w.op.stats().client_observers == 0

    v = viewer(srv, "obs-viewer")
    v.subscribe(observers=[(x, y)])
    w.step(12)
    assert w.full_near(x, y, 10.0), "the viewer's observer ranks them like the scenario's"
    assert w.op.stats().client_observers == 1
    v.close()
    w.wait_clients(1)
    w.step(12)
    assert w.op.stats().client_observers == 0
    assert not w.full_near(x, y, 10.0), "back to the scenario's observers only"


def test_a_recording_with_client_observers_verifies_bit_for_bit(start_server, tmp_path):
    replay_binary()  # skip early when bustle-replay is not built
    rec = tmp_path / "observers.bustle"
    srv = start(start_server, "--record", str(rec))
    w = Watcher(srv)
    w.step(5)
    a = viewer(srv, "obs-a")
    a.subscribe(observers=[(10.0, 0.0)])
    w.step(5)
    a.update_interest(observers=[(170.0, 60.0, 2.0, 1.5), (20.0, 70.0)])
    b = viewer(srv, "obs-b")
    b.subscribe(observers=[(100.0, -10.0)])
    w.step(5)
    assert w.op.stats().client_observers == 3
    a.close()
    w.wait_clients(2)
    w.step(5)
    assert w.op.stats().client_observers == 1
    b.close()
    w.op.close()
    srv.stop(check=True)
    rows = sql(rec, "SELECT args FROM recording_commands WHERE kind = 'set_client_observers' ORDER BY tick, seq")
    # One command per change of the union before a step: a joins; a moves and
    # b joins (same step: one union, a's first, the older session); a leaves.
    points = [[tuple(p[:2]) for p in json.loads(args)["points"]] for (args,) in rows]
    assert points == [[(10.0, 0.0)], [(170.0, 60.0), (20.0, 70.0), (100.0, -10.0)], [(100.0, -10.0)]], points
    p = run_replay("verify", str(rec))
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert p.stdout.startswith("OK verified"), p.stdout


def test_checkpoint_restore_keeps_the_digest_chain_with_client_observers(start_server):
    srv = start(start_server)
    op = operator(srv, "obs-cp")
    v = viewer(srv, "obs-cp-viewer")
    v.subscribe(observers=[(10.0, 0.0), (170.0, 60.0)])
    step_digests(op, 4)
    seen = run_job(op, "Checkpoint", "with-observers")
    assert seen[-1].state == JobState.Committed, seen
    after = step_digests(op, 10)
    seen = run_job(op, "Restore", "with-observers", timeout=JOB_TIMEOUT)
    assert seen[-1].state == JobState.Applied, seen
    # The same viewer is still there: the restored set is the current union,
    # so the continuation is the one already seen.
    again = step_digests(op, 10)
    assert again == after
    assert op.stats().client_observers == 2
    # Once it has gone, a restore replaces the checkpoint's set with the
    # union of the clients connected now (none).
    v.close()
    deadline = time.monotonic() + 3.0
    while op.stats().clients != 1:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert run_job(op, "Restore", "with-observers")[-1].state == JobState.Applied
    alone = step_digests(op, 10)
    assert op.stats().client_observers == 0
    assert alone != after, "without the viewer's observers the tiers differ"
    op.close()


def test_a_schema_2_recording_still_verifies_read_only(start_server, tmp_path):
    """A recording of an older build (schema 2: no client_observers table),
    made here by taking migration 0003 back out of a fresh recording without
    client observers: bustle-replay opens it read-only and verifies it."""
    replay_binary()
    rec = tmp_path / "old.bustle"
    srv = start(start_server, "--record", str(rec))
    op = operator(srv, "old-op")
    step_digests(op, 6)
    assert manual_command(op, "SetPedestrianTarget", count=60).accepted
    step_digests(op, 6)
    op.close()
    srv.stop(check=True)
    sql(rec, "DROP TABLE client_observers")
    sql(rec, "UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    sql(rec, "UPDATE snapshots SET schema_version = 2")
    sql(rec, "PRAGMA user_version=2")
    p = run_replay("verify", str(rec))
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert p.stdout.startswith("OK verified"), p.stdout
    assert sql(rec, "PRAGMA user_version") == [(2,)], "verified read-only, not migrated"
