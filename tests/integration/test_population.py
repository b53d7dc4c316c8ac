"""Population over the socket on the large-block city (configs/largeblock.city.json):
time of day, the zone lifecycle queue with quotas, identities kept while dormant."""

import os

from bustle_client import CommandStatus, RejectReason, Session

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LARGEBLOCK = os.path.join(REPO, "configs", "largeblock.city.json")


def _operator(port):
    s = Session.connect("127.0.0.1", port, timeout=5.0)
    s.hello("population-test", role="operator")
    return s


def test_hour_switch_grows_zones_within_quotas_and_keeps_identities(start_server):
    srv = start_server("--clock", "manual", "--config", LARGEBLOCK)
    with _operator(srv.port) as op:
        assert op.step(60).status == CommandStatus.Accepted
        st = op.stats()
        assert st.residents == 72
        assert st.residents_active == 48          # 06:00: 12 vendors, 12 clerks, 24 technicians
        assert 6.0 <= st.hour < 6.1
        before = {z.id: z for z in op.zones()}
        assert before["facilities"].active == 24 and before["market"].active == 12

        rid = op.send_command("SetHour", hour=12.0)
        assert op.step(1).status == CommandStatus.Accepted
        assert op.wait_result(rid).status == CommandStatus.Accepted
        # Within the interval after the switch, at most 2 per zone move; the rest is deferred.
        assert op.step(3).status == CommandStatus.Accepted
        zones = {z.id: z for z in op.zones()}
        assert zones["office"].target == 24            # technicians on rounds (all 24)
        assert zones["office"].activated <= 2
        assert zones["office"].rejected_by_capacity == 0  # held back by quotas, not refused
        # Per community: the arriving technicians and the leaving clerks are both pending.
        assert zones["office"].pending_spawn > 0 and zones["office"].pending_recycle > 0
        assert zones["office"].deferred_by_quota > 0 or zones["office"].active == zones["office"].target
        assert op.step(300).status == CommandStatus.Accepted
        zones = {z.id: z for z in op.zones()}
        for z in zones.values():
            assert z.active == z.target, z
            assert z.deferred_by_quota == 0
        st = op.stats()
        assert st.residents == 72 and st.residents_active == 72

        bad = op.send_command("SetHour", hour=24.0)
        assert op.step(1).status == CommandStatus.Accepted
        r = op.wait_result(bad)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.InvalidArgument


def test_viewers_may_query_zones_but_not_set_the_hour(start_server):
    srv = start_server("--clock", "manual", "--config", LARGEBLOCK)
    with Session.connect("127.0.0.1", srv.port, timeout=5.0) as viewer:
        viewer.hello("viewer", role="viewer")
        assert len(viewer.zones()) == 3
        r = viewer.command("SetHour", hour=12.0)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.NotAuthorized


def test_largeblock_shows_the_seed_tier_mix_at_noon(start_server):
    """Seed 001's demo mix on the acceptance city: at 12:00 all 72 identities
    are active, 24 Full / 32 Simulated / 16 Coarse with the scenario's
    observer at the block's centre (tiers caps 24 and 32); moving the
    observer away takes them all to Coarse."""
    srv = start_server("--clock", "manual", "--config", LARGEBLOCK)
    with _operator(srv.port) as op:
        rid = op.send_command("SetHour", hour=12.0)
        assert op.step(300).status == CommandStatus.Accepted
        assert op.wait_result(rid).status == CommandStatus.Accepted
        p = op.population()
        st = op.stats()
        assert st.residents == 72 and st.residents_active == 72
        assert list(p.tiers) == [24, 32, 16], p.tiers
        rid = op.send_command("SetObservers", points=[(80.0, 1000.0)])
        assert op.step(60).status == CommandStatus.Accepted  # 8 transitions a step, sliced cadence
        assert op.wait_result(rid).status == CommandStatus.Accepted
        assert list(op.population().tiers) == [0, 0, 72]
