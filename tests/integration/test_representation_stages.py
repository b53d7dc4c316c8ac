"""Spawn handles on the representation axis over the socket: the simulation's
part of a handle ends at RepresentationRequested; Attached comes from any
client's lease Assigned for the entity (or the ReportAttached shorthand, any
role, answered at once), ReadyForGameplay one step later, Failed(EntityGone)
when the entity leaves first. None of it changes the digest chain; Stats
count the leases. Manual clock, large-block city (no background pedestrians),
so every run with the same commands is the same history."""

import time

from population_helpers import PIPELINE, start_city, states_of, step_following
from snapshot_helpers import run_job

from bustle_client import (
    CommandStatus,
    JobState,
    Lease,
    LeaseState,
    RejectReason,
    RepresentationHint,
    SpawnFailure,
    SpawnState,
)


class Rig:
    """One operator (asks for spawns, steps, receives SpawnUpdates) and one
    subscribed viewer (whole city) whose mirror follows every step."""

    def __init__(self, srv, name):
        self.op = srv.connect()
        self.op.hello(f"{name}-op", role="operator")
        self.viewer = srv.connect()
        self.viewer.hello(f"{name}-viewer")
        self.viewer.subscribe()
        self.mirror = self.viewer.mirror()
        self.mirror.apply(self.viewer.next_delta(timeout=5.0))
        self.digests = []

    def step(self, n=1):
        self.digests += step_following(self.op, self.viewer, self.mirror, n)

    def spawn(self, count=1, **fields):
        rids = [self.op.send_command("SpawnPedestrian", **fields) for _ in range(count)]
        self.step()
        results = [self.op.wait_result(rid, timeout=3.0) for rid in rids]
        assert all(r.accepted for r in results), results
        return [r.handle for r in results]

    def step_until(self, handle, state, max_steps=8):
        for _ in range(max_steps):
            if self.op.spawn_status(handle).state == state:
                return self.op.spawn_status(handle)
            self.step()
        now = self.op.spawn_status(handle)
        assert now.state == state, f"spawn {handle} is {now.state!r}, not {state!r}"
        return now

    def close(self):
        self.viewer.close()
        self.op.close()


def requested_spawn(start_server, name):
    """A rig with one market spawn that has just reached RepresentationRequested:
    (rig, handle, entity)."""
    rig = Rig(start_city(start_server), name)
    rig.step(1)
    (h,) = rig.spawn(1, zone="market")
    return rig, h, rig.step_until(h, SpawnState.RepresentationRequested).entity


def test_a_lease_assigned_attaches_and_the_next_step_makes_it_ready(start_server):
    srv = start_city(start_server)
    rig = Rig(srv, "lease-attach")
    rig.step(2)
    early, late = rig.spawn(2, zone="market")
    registered = rig.step_until(early, SpawnState.Registered)
    e_early = registered.entity
    assert e_early in rig.mirror, "a registered spawn walks and is streamed"
    # The viewer draws it at once, while the handle is still Registered: the
    # lease is remembered and attaches the handle when it is requested.
    assert rig.viewer.report_leases([Lease(e_early, LeaseState.Assigned, RepresentationHint.Actor)],
                                    wait=True, timeout=5.0).accepted
    assert rig.op.spawn_status(early).state == SpawnState.Registered
    rig.step()
    requested_at = rig.digests[-1][0]
    a = rig.op.spawn_status(early)
    assert (a.state, a.state_step) == (SpawnState.Attached, requested_at), a
    b = rig.op.spawn_status(late)
    assert b.state == SpawnState.RepresentationRequested, b
    # A lease of the second one, as a Marker: any representation attaches it,
    # between steps, without a step.
    assert rig.viewer.report_leases([Lease(b.entity, LeaseState.Assigned, RepresentationHint.Marker)],
                                    wait=True, timeout=5.0).accepted
    b = rig.op.spawn_status(late)
    assert (b.state, b.state_step) == (SpawnState.Attached, requested_at), b
    rig.step()
    for h in (early, late):
        updates = rig.op.wait_spawn(h, timeout=3.0)
        assert states_of(updates) == PIPELINE, (h, updates)
        assert updates[-1].terminal and updates[-1].state_step == requested_at + 1, updates[-1]
        final = rig.op.spawn_status(h)
        assert (final.state, final.terminal) == (SpawnState.ReadyForGameplay, True), final
    info = rig.op.entity(e_early)
    assert info.spawn_state == SpawnState.ReadyForGameplay, info
    pop = rig.op.population()
    assert pop.total(SpawnState.Attached) == 2 and pop.total(SpawnState.ReadyForGameplay) == 2, pop
    stats = rig.op.stats()
    assert (stats.spawn_attached_total, stats.spawn_ready_total, stats.spawn_awaiting_representation) == (2, 2, 0)
    rig.close()


def _script(rig, with_leases):
    """The same commands and steps on every run; with_leases adds lease
    reports and a ReportAttached, which must not change one digest."""
    rig.step(2)
    handles = rig.spawn(3)
    rig.step_until(handles[0], SpawnState.RepresentationRequested)
    entities = [rig.op.spawn_status(h).entity for h in handles]
    if with_leases:
        assert rig.viewer.report_leases([Lease(entities[0], LeaseState.Assigned)], wait=True,
                                        timeout=5.0).accepted
        assert rig.viewer.command("ReportAttached", index=entities[1].index,
                                  generation=entities[1].generation, timeout=5.0).accepted
        # Every entity it receives, as the viewer's pool would apply them.
        leases = [Lease(eid, LeaseState.Assigned, e.representation) for eid, e in rig.mirror.items()
                  if e.representation != RepresentationHint.None_]
        assert rig.viewer.report_leases(leases, wait=True, timeout=5.0).accepted
    rig.step(6)
    return [rig.op.spawn_status(h).state for h in handles]


def test_lease_reports_and_report_attached_never_change_the_digest_chain(start_server):
    runs = []
    for with_leases in (True, False):
        srv = start_city(start_server)
        rig = Rig(srv, f"lease-digest-{with_leases}")
        states = _script(rig, with_leases)
        runs.append((states, rig.digests))
        rig.close()
        srv.stop(check=True)
    (leased_states, leased), (plain_states, plain) = runs
    # The representation axis differs...
    assert leased_states == [SpawnState.ReadyForGameplay] * 3, leased_states
    assert plain_states == [SpawnState.RepresentationRequested] * 3, plain_states
    # ...and the simulation does not notice.
    assert len(leased) == len(plain) >= 10
    assert leased == plain


def test_report_attached_is_a_shorthand_for_any_role_answered_at_once(start_server):
    srv = start_city(start_server)
    rig = Rig(srv, "shorthand")
    stranger = srv.connect()
    stranger.hello("not-subscribed-viewer")  # a viewer without a subscription may report it too
    rig.step(1)
    (h,) = rig.spawn(1)
    registered = rig.step_until(h, SpawnState.Registered)
    eid = registered.entity
    too_early = stranger.command("ReportAttached", index=eid.index, generation=eid.generation, timeout=5.0)
    assert (too_early.status, too_early.reason) == (CommandStatus.Rejected, RejectReason.InvalidArgument), too_early
    assert "representation_requested" in too_early.message, too_early.message
    rig.step()
    now = rig.op.stats().step
    attached = stranger.command("ReportAttached", index=eid.index, generation=eid.generation, timeout=5.0)
    assert attached.accepted and attached.handle == h and attached.applied_step == now, attached
    assert rig.op.spawn_status(h).state == SpawnState.Attached, "answered and applied without a step"
    again = stranger.command("ReportAttached", index=eid.index, generation=eid.generation, timeout=5.0)
    assert (again.status, again.reason) == (CommandStatus.Rejected, RejectReason.InvalidArgument), again
    unknown = stranger.command("ReportAttached", index=60000, generation=1, timeout=5.0)
    assert (unknown.status, unknown.reason) == (CommandStatus.Rejected, RejectReason.UnknownEntity), unknown
    rig.step()
    assert rig.op.spawn_status(h).state == SpawnState.ReadyForGameplay
    finished = stranger.command("ReportAttached", index=eid.index, generation=eid.generation, timeout=5.0)
    assert finished.status == CommandStatus.Rejected, "a finished handle cannot be attached again"
    stranger.close()
    rig.close()


def test_an_entity_despawned_before_any_lease_fails_the_handle_entity_gone(start_server):
    rig, h, eid = requested_spawn(start_server, "gone")
    rid = rig.op.send_command("DespawnEntity", index=eid.index, generation=eid.generation)
    rig.step()
    assert rig.op.wait_result(rid, timeout=3.0).accepted
    updates = rig.op.wait_spawn(h, timeout=3.0)
    last = updates[-1]
    assert (last.state, last.failure, last.terminal) == (SpawnState.Failed, SpawnFailure.EntityGone, True), last
    assert SpawnState.Attached not in [u.state for u in updates]
    # A lease that comes too late changes nothing.
    assert rig.viewer.report_leases([Lease(eid, LeaseState.Assigned)], wait=True, timeout=5.0).accepted
    assert rig.op.spawn_status(h).state == SpawnState.Failed
    rig.close()


def test_stats_count_the_leases_of_every_client(start_server):
    srv = start_city(start_server, "--lease-grace-steps", "2")
    rig = Rig(srv, "lease-stats")
    rig.step(3)
    before = rig.op.stats()
    assert (before.leases_assigned, before.lease_reports_total) == (0, 0), before
    hinted = [eid for eid, e in rig.mirror.items() if e.representation != RepresentationHint.None_]
    assert len(hinted) >= 4, "the large block streams its residents"
    assert before.leases_unassigned == len(hinted), "nothing applied yet: every hint waits"
    held, released, preserved = hinted[:2], hinted[2], hinted[3]
    leases = [Lease(eid, LeaseState.Assigned, rig.mirror[eid].representation) for eid in held]
    leases += [Lease(released, LeaseState.Released), Lease(preserved, LeaseState.Preserved,
                                                              rig.mirror[preserved].representation)]
    assert rig.viewer.report_leases(leases, wait=True, timeout=5.0).accepted
    after = rig.op.stats()
    assert after.leases_assigned == 3, after  # two Assigned, one Preserved
    assert (after.leases_released_total, after.leases_preserved_total, after.lease_reports_total) == (1, 1, 1)
    assert after.leases_unassigned < before.leases_unassigned
    rig.step(4)
    late = rig.op.stats()
    assert late.leases_unassigned_past_grace > 0, late
    assert len(late.leases_past_grace_by_reason) == 5
    assert sum(late.leases_past_grace_by_reason) == late.leases_unassigned_past_grace
    rig.viewer.close()
    deadline = time.monotonic() + 3.0
    while True:  # the server notices the close on its own time
        gone = rig.op.stats()
        if gone.clients == 1 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert (gone.leases_assigned, gone.leases_unassigned) == (0, 0), "only connected clients count"
    rig.op.close()


def test_after_a_restore_the_stages_restart_and_re_reported_leases_attach_again(start_server):
    rig, h, eid = requested_spawn(start_server, "restore")
    assert run_job(rig.op, "Checkpoint", "waiting")[-1].state == JobState.Committed
    assert rig.viewer.report_leases([Lease(eid, LeaseState.Assigned)], wait=True, timeout=5.0).accepted
    rig.step()
    assert rig.op.spawn_status(h).state == SpawnState.ReadyForGameplay
    assert run_job(rig.op, "Restore", "waiting")[-1].state == JobState.Applied
    # Representation stages are not in the checkpoint: the handle waits again
    # for a lease, and the viewer's baseline brings the entity back.
    assert rig.op.spawn_status(h).state == SpawnState.RepresentationRequested
    rig.mirror = rig.viewer.mirror()
    while True:
        d = rig.viewer.next_delta(timeout=5.0)
        if d.baseline:
            rig.mirror.apply(d)
            break
    assert eid in rig.mirror
    assert rig.viewer.report_leases([Lease(eid, LeaseState.Assigned)], wait=True, timeout=5.0).accepted
    assert rig.op.spawn_status(h).state == SpawnState.Attached
    rig.step()
    assert rig.op.spawn_status(h).state == SpawnState.ReadyForGameplay
    rig.close()
