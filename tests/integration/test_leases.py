"""Leases over the socket (protocol v2): a client reports what it applied; the
server keeps requested against applied per client and entity, counts what
waits past the grace period by reason, and the simulation never notices."""

import pytest

from bustle_client import (
    Lease,
    LeaseState,
    RejectReason,
    RepresentationBudgets,
    RepresentationHint,
    UnassignedReason,
)


def _stepped(srv_args, start_server, steps, report):
    """A manual-clock server, one viewer subscribed with budgets, `steps`
    steps; `report(viewer, mirror)` may send leases after every step.
    Returns (digests per step, viewer, operator)."""
    srv = start_server("--clock", "manual", *srv_args)
    op = srv.connect()
    op.hello("lease-op", role="operator")
    viewer = srv.connect()
    viewer.hello("lease-viewer")
    viewer.subscribe(budgets=RepresentationBudgets(actors=4, instances=8, markers=16))
    mirror = viewer.mirror()
    mirror.apply(viewer.next_delta(timeout=5.0))
    digests = []
    for _ in range(steps):
        op.step(1, timeout=5.0)
        d = viewer.next_delta(timeout=5.0)
        mirror.apply(d)
        digests.append((d.step, d.digest))
        report(viewer, mirror)
    return digests, viewer, op


def test_leases_count_requested_applied_and_waiting_past_grace(start_server):
    applied_ids = []

    def report(viewer, mirror):
        if applied_ids:
            return
        # Take every Actor hint except one, which the pool cannot hold.
        actors = [eid for eid, e in mirror.items() if e.representation == RepresentationHint.Actor]
        assert len(actors) >= 2, "the default city should hint several actors"
        applied_ids.extend(actors[1:])
        leases = [Lease(eid, LeaseState.Assigned, RepresentationHint.Actor) for eid in actors[1:]]
        leases.append(Lease(actors[0], LeaseState.Unassigned, reason=UnassignedReason.PoolAtCap))
        leases.append(Lease((60000, 1), LeaseState.Assigned))  # not received: unknown
        assert viewer.report_leases(leases, wait=True, timeout=5.0).accepted

    _, viewer, op = _stepped(["--lease-grace-steps", "5"], start_server, 12, report)
    summary = viewer.leases(timeout=5.0)
    assert summary.grace_steps == 5
    assert summary.requested[0] == 4  # the Actor budget
    assert summary.entries == len(applied_ids) + 2 and summary.unknown_entries == 1
    # Hints move as people walk; every Actor lease still matching counts as applied.
    assert 1 <= summary.applied[0] <= len(applied_ids)
    assert summary.waiting >= 1
    # The PoolAtCap one (and the never-reported Instanced/Marker ones) wait past 5 steps.
    assert summary.waiting_past_grace >= 1
    assert summary.past_grace_by_reason[int(UnassignedReason.PoolAtCap)] <= 1
    assert summary.past_grace_by_reason[0] >= 1  # never reported: reason None
    viewer.close()
    op.close()


def test_lease_reports_never_change_the_digest_chain(start_server):
    def reporting(viewer, mirror):
        leases = [Lease(eid, LeaseState.Assigned, e.representation) for eid, e in mirror.items()]
        viewer.report_leases(leases)

    with_reports, v1, o1 = _stepped([], start_server, 15, reporting)
    without, v2, o2 = _stepped([], start_server, 15, lambda viewer, mirror: None)
    assert with_reports == without
    assert v1.leases(timeout=5.0).reports == 15
    for s in (v1, o1, v2, o2):
        s.close()


def test_bad_lease_reports_are_rejected(start_server):
    srv = start_server("--clock", "manual")
    with srv.connect() as s:
        s.hello("lease-bad")
        r = s.report_leases([Lease((1, 1), LeaseState.Released)], wait=True, timeout=5.0)
        assert r.reason == RejectReason.InvalidArgument and "not subscribed" in r.message
        s.subscribe()
        with pytest.raises(ValueError):
            s.report_leases([Lease((k, 1), LeaseState.Released) for k in range(4097)])
