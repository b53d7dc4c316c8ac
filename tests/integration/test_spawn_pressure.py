"""Spawn pressure over the socket (issue 12): the server's --quality setting
sets the attached / unattached budgets of spawned handles (and the default
client budgets); ReportAttached beyond the attached budget leaves a handle
waiting in an unattached slot, beyond both fails it with
NoRepresentationSlot; a freed slot attaches the oldest waiting handle. A
spawn request displaces a weaker queued one at spawn.queue_depth and the
displaced handle's SpawnUpdate says so. None of it changes the digest.
Manual clock, large-block city."""

import json
import os
import subprocess

import pytest

from conftest import ServerProcess, clean_env
from population_helpers import LARGEBLOCK, City, start_city

from bustle_client import CommandStatus, RejectReason, SpawnFailure, SpawnState

LOW = {"attached": 16, "unattached": 32}  # quality.hpp, row "low"


def bustle(srv, *args):
    """The bustle CLI against `srv`; skips when BUSTLE_CLI is not set."""
    path = os.environ.get("BUSTLE_CLI")
    if not path:
        pytest.skip("BUSTLE_CLI is not set (the bustle CLI is not built in this tree)")
    p = subprocess.run([path, *args, "--host", srv.host, "--port", str(srv.port)],
                       capture_output=True, text=True, timeout=20.0, env=clean_env(None))
    return p


class Rig(City):
    """The population tests' operator and whole-city viewer (population_helpers.City),
    keeping the digest after each of its steps."""

    def __init__(self, srv, name):
        super().__init__(srv, name)
        self.digests = []

    def step(self, n=1):
        r = super().step(n)
        self.digests.append((self.step_index, self.op.stats().digest))
        return r

    def send_all(self, requests):
        """SpawnPedestrian requests applied in one step; their results in order."""
        return self.apply_all([("SpawnPedestrian", fields) for fields in requests])

    def report_attached(self, entity):
        return self.sub.command("ReportAttached", 5.0, index=entity.index,
                                generation=entity.generation)


def _requested(rig, count):
    """`count` spawns anywhere, stepped until each is RepresentationRequested:
    their (handle, entity), in handle order."""
    rig.step(1)
    results = rig.send_all([{} for _ in range(count)])
    assert all(r.accepted for r in results), results
    handles = [r.handle for r in results]
    for _ in range(count // 8 + 6):  # spawn.per_step_cap 8, three stages
        rig.step()
        if all(rig.op.spawn_status(h).state == SpawnState.RepresentationRequested for h in handles):
            break
    out = []
    for h in handles:
        s = rig.op.spawn_status(h)
        assert s.state == SpawnState.RepresentationRequested, s
        out.append((h, s.entity))
    return out


def test_low_quality_attaches_16_then_waits_in_32_unattached_slots_then_fails(start_server):
    # Many QuerySpawn and ReportAttached: above the default per-client rate.
    srv = start_city(start_server, "--quality", "low", "--client-commands-per-second", "100000")
    rig = Rig(srv, "budgets")
    pop = rig.op.population()
    assert pop.quality == "low"
    assert (pop.attached_limit, pop.unattached_limit) == (LOW["attached"], LOW["unattached"])
    assert (pop.attached_in_use, pop.unattached_in_use, pop.no_slot_total) == (0, 0, 0)
    spawned = _requested(rig, LOW["attached"] + LOW["unattached"] + 2)
    attached, waiting, beyond = (spawned[:16], spawned[16:48], spawned[48:])
    for h, e in attached:
        r = rig.report_attached(e)
        assert r.accepted and r.handle == h, r
        assert rig.op.spawn_status(h).state == SpawnState.Attached
    for h, e in waiting:
        r = rig.report_attached(e)
        assert r.accepted and r.handle == h, r
        assert "waits in an unattached slot: attached budget full (16/16)" in r.message, r
        assert rig.op.spawn_status(h).state == SpawnState.RepresentationRequested
    for h, e in beyond:
        r = rig.report_attached(e)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.QueueFull, r
        assert "attached budget full (16/16) and unattached budget full (32/32)" in r.message, r
        s = rig.op.spawn_status(h)
        assert (s.state, s.failure, s.terminal) == (SpawnState.Failed,
                                                    SpawnFailure.NoRepresentationSlot, True), s
        pushed = rig.op.wait_spawn(h, timeout=3.0)
        assert pushed[-1].failure == SpawnFailure.NoRepresentationSlot, pushed
    pop = rig.op.population()
    assert (pop.attached_in_use, pop.unattached_in_use, pop.no_slot_total) == (16, 32, 2), pop
    # The attached ones become ready and keep their slots while they walk.
    rig.step()
    assert all(rig.op.spawn_status(h).state == SpawnState.ReadyForGameplay for h, _ in attached)
    assert rig.op.population().attached_in_use == 16
    # Three attached entities leave: after their step, the three oldest
    # waiting handles take the freed slots.
    rids = [rig.op.send_command("DespawnEntity", index=e.index, generation=e.generation)
            for _, e in attached[:3]]
    rig.step()
    despawned = [rig.op.wait_result(rid, timeout=3.0) for rid in rids]
    assert all(r.accepted for r in despawned), despawned
    for _ in range(20):  # the fade (despawn.fade_ms) ends before the entity stops walking
        rig.step()
        if rig.op.population().attached_in_use == 16 and rig.op.population().unattached_in_use == 29:
            break
    pop = rig.op.population()
    assert (pop.attached_in_use, pop.unattached_in_use) == (16, 29), pop
    promoted = [rig.op.spawn_status(h).state for h, _ in waiting[:3]]
    assert all(s in (SpawnState.Attached, SpawnState.ReadyForGameplay) for s in promoted), promoted
    assert all(rig.op.spawn_status(h).state == SpawnState.RepresentationRequested
               for h, _ in waiting[3:])
    if os.environ.get("BUSTLE_CLI"):
        text = bustle(srv, "population")
        assert text.returncode == 0, text.stderr
        assert "quality low: attached 16/16, unattached 29/32, no slot 2" in text.stdout, text.stdout
        js = bustle(srv, "population", "--json")
        assert js.returncode == 0, js.stderr
        budgets = json.loads(js.stdout.splitlines()[0])["population"]["representation_budgets"]
        assert budgets == {"quality": "low", "attached_in_use": 16, "attached_limit": 16,
                           "unattached_in_use": 29, "unattached_limit": 32, "no_slot_total": 2}
    rig.close()


def _script(rig, attach):
    """The same world commands on every run; `attach` adds ReportAttached."""
    spawned = _requested(rig, 20)
    if attach:
        for _, e in spawned:
            rig.report_attached(e)
    rig.step(3)
    return rig.digests


def test_quality_and_budgets_never_change_the_digest_chain(start_server):
    chains = []
    for quality, attach in (("low", True), ("epic", True), ("high", False)):
        rig = Rig(start_city(start_server, "--quality", quality, "--client-commands-per-second",
                             "100000"), f"digest-{quality}")
        chains.append(_script(rig, attach))
        rig.close()
    assert chains[0] == chains[1] == chains[2]


def test_a_more_important_request_displaces_the_weakest_queued_one(start_server, tmp_path):
    city = json.loads(LARGEBLOCK.read_text())
    city["spawn"] = {"queue_depth": 2, "per_step_cap": 1}
    path = tmp_path / "pressure.city.json"
    path.write_text(json.dumps(city))
    srv = start_city(start_server, config=path)
    rig = Rig(srv, "displace")
    lane = "market.loop"
    r = rig.send_all([{"lane": lane, "priority": 3}, {"lane": lane, "priority": 3},
                      {"lane": lane, "priority": 0}, {"lane": lane, "priority": 3}])
    assert [x.status for x in r] == [CommandStatus.Accepted, CommandStatus.Accepted,
                                     CommandStatus.Accepted, CommandStatus.Rejected], r
    assert r[3].reason == RejectReason.QueueFull
    assert "no queued request is less important" in r[3].message, r[3]
    displaced = rig.op.spawn_status(r[1].handle)
    assert (displaced.state, displaced.failure) == (SpawnState.Canceled, SpawnFailure.Displaced)
    pushed = rig.op.wait_spawn(r[1].handle, timeout=3.0)
    assert (pushed[-1].state, pushed[-1].failure) == (SpawnState.Canceled, SpawnFailure.Displaced)
    # The story request is created first although its handle is later.
    rig.step()
    assert rig.op.spawn_status(r[2].handle).state == SpawnState.IdentityCreated
    assert rig.op.spawn_status(r[0].handle).state == SpawnState.Queued
    pop = rig.op.population()
    assert pop.spawn_displaced_total == 1
    assert pop.total(SpawnState.Canceled) == 1
    if os.environ.get("BUSTLE_CLI"):
        shown = bustle(srv, "spawn-status", str(r[1].handle))
        assert f"spawn {r[1].handle}: Canceled" in shown.stdout and "(Displaced)" in shown.stdout, \
            shown.stdout + shown.stderr
        text = bustle(srv, "population")
        assert "displaced 1" in text.stdout, text.stdout
    rig.close()


def test_a_bad_quality_is_refused_naming_the_flag_and_the_variable(tmp_path):
    srv = ServerProcess(["--quality", "ultra", "--port", "0"], tmp_path / "flag.stderr",
                        env=clean_env(None), may_refuse=True)
    assert srv.refused and srv.returncode != 0
    assert "--quality" in srv.stderr() and "expected low, medium, high or epic" in srv.stderr()
    srv = ServerProcess(["--port", "0"], tmp_path / "env.stderr",
                        env=clean_env({"BUSTLE_QUALITY": "x"}), may_refuse=True)
    assert srv.refused and "BUSTLE_QUALITY" in srv.stderr(), srv.stderr()
