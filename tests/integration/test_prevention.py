"""Prevention over the socket (seed 000 §3): SetPreventionLevel queues
response units that the real server places within their own per-step
budget, counts them per level in QueryPopulation, cancels and despawns them
when the level drops (DespawnReason PreventionLowered); KillPedestrian turns a
walking pedestrian into a corpse that stops (QueryEntity ``corpse``) and that
corpse cleanup deletes once it is far from every observer (CorpseForced).
Bad levels, stale ids and viewers are refused and change nothing. Also the
CLI's ``bustle prevention`` / ``bustle kill`` and the population counters in
text and JSON."""

import json

from population_helpers import DEFAULT_CITY, City, start_city
from test_cli_json import bustle, one

from bustle_client import CommandStatus, RejectReason, Session, id_text

PREVENTION = {"units_per_level": [2, 3], "spawn_per_step": 1, "max_units": 8,
              "ring_min_m": 0, "ring_max_m": 100000, "cleanup_every_steps": 2,
              "corpse_keep_m": 1, "corpse_force_m": 2}


def _city_file(tmp_path):
    city = json.loads(DEFAULT_CITY.read_text())
    city["prevention"] = PREVENTION
    path = tmp_path / "prevention.city.json"
    path.write_text(json.dumps(city))
    return path


def _active_units(city):
    return city.op.population().units_active


def test_units_by_level_raised_counted_and_lowered(start_server, tmp_path):
    srv = start_city(start_server, config=_city_file(tmp_path))
    with City(srv, "prevention") as city:
        r = city.apply("SetPreventionLevel", level=2)
        assert r.accepted, r
        p = city.op.population()
        assert p.prevention_level == 2 and p.units_queued == 5 and p.units_active == 0
        assert list(p.level_queued[:2]) == [2, 3]
        seen = []
        for _ in range(5):
            city.step(1)
            seen.append(_active_units(city))
        assert seen == [1, 2, 3, 4, 5]  # one per step (spawn_per_step)
        p = city.op.population()
        assert list(p.level_spawned[:2]) == [2, 3]

        bad = city.apply("SetPreventionLevel", level=3)
        assert bad.status == CommandStatus.Rejected and bad.reason == RejectReason.InvalidArgument
        assert "level: 3" in bad.message
        assert city.op.population().prevention_level == 2

        with Session.connect("127.0.0.1", srv.port, timeout=5.0) as viewer:
            viewer.hello("prevention-viewer", role="viewer")
            r = viewer.command("SetPreventionLevel", level=0)
            assert r.status == CommandStatus.Rejected, r
        assert city.op.population().prevention_level == 2

        r = city.apply("SetPreventionLevel", level=1)
        assert r.accepted, r
        city.step(1)
        p = city.op.population()
        assert p.prevention_level == 1 and p.units_active == 2 and p.units_retiring == 0
        assert list(p.level_despawned[:2]) == [0, 3]
        city.step(15)  # past the fade
        stats = city.op.population()
        assert stats.despawned_by_reason[7] == 3  # PreventionLowered


def test_a_killed_pedestrian_stops_and_far_corpses_are_deleted(start_server, tmp_path):
    srv = start_city(start_server, config=_city_file(tmp_path))
    with City(srv, "corpse") as city:
        city.step(5)
        peds = sorted(city.mirror.pedestrians(), key=lambda p: (p.id.index, p.id.generation))
        victim = peds[0]
        r = city.apply("KillPedestrian", index=victim.id.index, generation=victim.id.generation)
        assert r.accepted, r
        q = city.op.query_entity(victim.id)
        p = city.op.population()
        assert p.corpses_killed == 1
        # Killed on a cleanup step or just before one: either still a corpse
        # that does not move, or already deleted (it is > 2 m from the observer).
        if q.accepted:
            info = q.entity_info
            assert info.corpse and p.corpses == 1
            at = (info.lane, info.s_m)
            city.step(1)
            q = city.op.query_entity(victim.id)
            assert not q.accepted or (q.entity_info.lane, q.entity_info.s_m) == at
        city.step(3)
        p = city.op.population()
        assert p.corpses == 0 and p.corpses_killed == 1 and p.corpses_force_deleted == 1
        assert p.despawned_by_reason[9] == 1  # CorpseForced, at once
        gone = city.op.query_entity(victim.id)
        assert not gone.accepted and "is not alive" in gone.message

        r = city.apply("KillPedestrian", index=victim.id.index, generation=victim.id.generation)
        assert r.status == CommandStatus.Rejected and "is not a walking pedestrian" in r.message
        assert city.op.population().corpses_killed == 1


def test_bustle_prevention_and_kill_through_the_cli(start_server, tmp_path):
    srv = start_city(start_server, config=_city_file(tmp_path))
    assert one(srv, "prevention", "1", "--step")["accepted"]
    pop = one(srv, "population")["population"]["prevention"]
    assert pop["level"] == 1 and pop["units_queued"] == 2 and pop["level_queued"][0] == 2
    text = bustle(srv, "population").stdout
    assert "prevention" in text and "level 1: queued 2" in text and "corpses" in text
    with City(srv, "corpse-cli") as city:
        city.step(2)
        victim = sorted(city.mirror.pedestrians(),
                        key=lambda p: (p.id.index, p.id.generation))[0]
        ident = id_text(victim.id)
    assert one(srv, "kill", ident, "--step")["accepted"]
    assert one(srv, "population")["population"]["prevention"]["corpses_killed"] == 1
    bad = bustle(srv, "prevention", "9", "--step", expect=3)
    assert "level: 9" in bad.stdout + bad.stderr


def test_a_killed_resident_is_deceased_for_good(start_server, tmp_path):
    """A community member can die too (seed 000): its corpse follows corpse
    cleanup, and its record stays deceased, never walking again, with its
    identity kept (QueryEntity answers lifecycle Deceased)."""
    from bustle_client import LifecycleState, PedestrianOrigin
    from population_helpers import LARGEBLOCK
    city_json = json.loads(LARGEBLOCK.read_text())
    city_json["prevention"] = PREVENTION
    path = tmp_path / "residents.city.json"
    path.write_text(json.dumps(city_json))
    srv = start_city(start_server, config=path)
    with City(srv, "resident-corpse") as city:
        city.step(30)
        residents = [p for p in sorted(city.mirror.pedestrians(), key=lambda p: p.id.index)
                     if city.op.entity(p.id).origin == PedestrianOrigin.Resident]
        assert residents, "no resident walks in the large block"
        victim = residents[0].id
        r = city.apply("KillPedestrian", index=victim.index, generation=victim.generation)
        assert r.accepted, r
        assert city.op.entity(victim).lifecycle == LifecycleState.Deceased
        for _ in range(30):  # corpse cleanup (every 2 steps) deletes the far corpse
            city.step(10)
            info = city.op.entity(victim)
            assert info.lifecycle == LifecycleState.Deceased, info
            assert victim not in city.mirror or city.mirror[victim].corpse
        assert victim not in city.mirror
        assert city.op.population().corpses_killed == 1
