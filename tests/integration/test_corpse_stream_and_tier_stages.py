"""Over the socket: (1) a corpse in the stream — a viewer watching a
pedestrian when KillPedestrian kills it receives an EntityChange of field
``Corpse`` in that step's delta (its mirror marks it), and a viewer that
subscribes later receives the corpse flag in the entity's entered record;
(2) the three tier stages of one identity in QueryEntity (``requested_tier``,
``capacity_tier``, ``tier``) through the Python client and ``bustle entity``
(text and --json)."""

import json

from population_helpers import DEFAULT_CITY, LARGEBLOCK, City, start_city
from test_cli_json import bustle, one

from bustle_client import EntityField, SimTier, id_text

# Corpses are kept while within 100 km of an observer: cleanup never removes
# the one this test watches.
KEEP = {"units_per_level": [1], "spawn_per_step": 1, "max_units": 4,
        "ring_min_m": 0, "ring_max_m": 100000, "cleanup_every_steps": 2,
        "corpse_keep_m": 100000, "corpse_force_m": 200000, "corpse_pressure_count": 1000}


def _city_file(tmp_path):
    city = json.loads(DEFAULT_CITY.read_text())
    city["prevention"] = KEEP
    path = tmp_path / "corpse-stream.city.json"
    path.write_text(json.dumps(city))
    return path


def test_a_watching_viewer_sees_the_kill_and_a_late_viewer_sees_a_corpse_enter(start_server,
                                                                               tmp_path):
    srv = start_city(start_server, config=_city_file(tmp_path))
    with City(srv, "corpse-watch") as city:
        city.step(5)
        victim = sorted(city.mirror.pedestrians(), key=lambda p: (p.id.index, p.id.generation))[0]
        other = sorted(city.mirror.pedestrians(), key=lambda p: (p.id.index, p.id.generation))[1]
        assert not city.mirror[victim.id].corpse and not city.mirror.corpses
        r = city.apply("KillPedestrian", index=victim.id.index, generation=victim.id.generation)
        assert r.accepted, r
        kill_delta = city.deltas[city.step_index]
        corpse_changes = [c for c in kill_delta.changes if c.field == EntityField.Corpse]
        assert [(c.index, c.value) for c in corpse_changes] == [(victim.id.index, 1)]
        assert city.mirror[victim.id].corpse and city.mirror.corpses == {victim.id}
        assert not city.mirror[other.id].corpse
        assert city.op.query_entity(victim.id).entity_info.corpse
        # Announced once: later deltas carry no second Corpse change.
        city.step_each(3)
        later = [c for s in range(city.step_index - 2, city.step_index + 1)
                 for c in city.deltas[s].changes if c.field == EntityField.Corpse]
        assert later == []
        assert city.mirror[victim.id].corpse

        with City(srv, "corpse-late") as late:
            # Only the baseline was read: the flag came in the entered record.
            assert late.mirror.baselines == 1
            assert late.mirror[victim.id].corpse
            assert late.mirror.corpses == {victim.id}
            assert not late.mirror[other.id].corpse


def test_query_entity_shows_distance_capacity_and_applied_tiers(start_server, tmp_path):
    # The large block with a Full cap of 2 and one transition a step: near
    # the observer, distance asks Full for more residents than the cap admits.
    city_cfg = json.loads(LARGEBLOCK.read_text())
    city_cfg.pop("$schema", None)
    city_cfg["tiers"].update({"full_cap": 2, "transitions_per_step": 1})
    path = tmp_path / "tier-stages.city.json"
    path.write_text(json.dumps(city_cfg))
    srv = start_city(start_server, config=path)
    with City(srv, "tiers") as city:
        city.step(120)
        infos = [city.op.query_entity(p.id).entity_info for p in city.mirror.pedestrians()]
        assert len(infos) > 2
        full_targets = [i for i in infos if i.capacity_tier == SimTier.Full]
        assert 0 < len(full_targets) <= 2  # each slice stays within what the cap leaves
        capped = [i for i in infos
                  if i.requested_tier == SimTier.Full and i.capacity_tier != SimTier.Full]
        assert capped, [(i.requested_tier, i.capacity_tier, i.tier) for i in infos]
        # Far observer: the targets drop to Coarse once resolved, the budget
        # lowers one applied tier a step.
        assert city.apply("SetObservers", points=[(80.0, 100000.0)]).accepted
        city.step(4)  # every slice resolved once (pedestrian_resolve_every_steps)
        infos = [city.op.query_entity(p.id).entity_info for p in city.mirror.pedestrians()]
        assert all(i.capacity_tier == SimTier.Coarse for i in infos)
        held = [i for i in infos if i.tier != SimTier.Coarse]
        assert held, "the transition budget should still hold some above Coarse"
        ident = id_text(held[0].id)
    e = one(srv, "entity", ident)["entity"]
    assert e["capacity_tier"] == "Coarse" and e["requested_tier"] == "Coarse"
    assert e["tier"] != "Coarse"
    text = bustle(srv, "entity", ident).stdout
    assert f"distance asks Coarse, capacity target Coarse, applied {e['tier']}" in text
