"""The admission mask over the socket (SetAdmissionMask, seed 001): a masked
walking pedestrian is not advanced, neither in the server's state nor in the
stream a viewer mirrors, while its neighbours walk on; QueryEntity and
QueryPopulation show it; its tier is still resolved; releasing it lets it
walk again; bad targets and viewers are refused and change nothing. Also
the CLI's ``bustle mask`` against the same server."""

from population_helpers import DEFAULT_CITY, City, start_city
from test_cli_json import bustle, one

from bustle_client import CommandStatus, RejectReason, Session, id_text


def _walkers(city):
    for _ in range(40):
        peds = city.mirror.pedestrians()
        if len(peds) >= 2:
            return sorted(peds, key=lambda p: (p.id.index, p.id.generation))
        city.step(1)
    raise AssertionError("the default city has no walking pedestrians")


def test_a_masked_pedestrian_is_held_in_state_and_stream_and_released(start_server):
    srv = start_city(start_server, config=DEFAULT_CITY)
    with City(srv, "mask") as city:
        held, other = _walkers(city)[:2]
        r = city.apply("SetAdmissionMask", index=held.id.index, generation=held.id.generation,
                       masked=True)
        assert r.accepted, r
        info = city.op.entity(held.id)
        assert info.admission_masked and not city.op.entity(other.id).admission_masked
        assert city.op.population().admission_masked == 1
        at = (info.lane, info.s_m)
        seen = city.mirror[held.id]
        other_at = (city.op.entity(other.id).lane, city.op.entity(other.id).s_m)
        city.step(20)
        info = city.op.entity(held.id)
        assert (info.lane, info.s_m) == at, info       # not advanced in 20 steps
        assert info.lifecycle.name == "Active" and info.tier is not None
        o = city.op.entity(other.id)
        assert (o.lane, o.s_m) != other_at, o           # its neighbour walked on
        mirrored = city.mirror[held.id]
        assert (mirrored.x_m, mirrored.y_m) == (seen.x_m, seen.y_m)  # the stream agrees

        r = city.apply("SetAdmissionMask", index=held.id.index, generation=held.id.generation,
                       masked=False)
        assert r.accepted, r
        city.step(10)
        info = city.op.entity(held.id)
        assert not info.admission_masked and (info.lane, info.s_m) != at
        assert city.op.population().admission_masked == 0

        r = city.apply("SetAdmissionMask", index=999, generation=7, masked=True)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.UnknownEntity
        assert "is not a walking pedestrian" in r.message
        assert city.op.population().admission_masked == 0

        with Session.connect("127.0.0.1", srv.port, timeout=5.0) as viewer:
            viewer.hello("mask-viewer", role="viewer")
            r = viewer.command("SetAdmissionMask", index=held.id.index,
                               generation=held.id.generation, masked=True)
            assert r.status == CommandStatus.Rejected, r
        assert city.op.population().admission_masked == 0


def test_bustle_mask_through_the_cli(start_server):
    srv = start_city(start_server, config=DEFAULT_CITY)
    with City(srv, "mask-cli") as city:
        held = _walkers(city)[0]
        ident = id_text(held.id)
    assert one(srv, "mask", ident, "--step")["accepted"]
    assert one(srv, "entity", ident)["entity"]["admission_masked"] is True
    assert "movement held" in bustle(srv, "entity", ident).stdout
    assert one(srv, "population")["population"]["admission_masked"] == 1
    assert one(srv, "mask", ident, "--off", "--step")["accepted"]
    assert one(srv, "entity", ident)["entity"]["admission_masked"] is False
    bad = bustle(srv, "mask", "999:7", "--step", expect=3)
    assert "is not a walking pedestrian" in bad.stdout + bad.stderr


def test_a_standing_pedestrian_is_streamed_standing_at_every_step(start_server):
    """A masked pedestrian stands, so the stream carries speed 0 for it: a
    client with motion tolerance 0 has it exactly where the server has it at
    every step, whatever its tier. (It was streamed at its lane's limit, so
    clients slid it ahead and snapped it back at each correction: s_mm
    alternated 40005 / 40145 for a Simulated one.)"""
    srv = start_city(start_server, config=DEFAULT_CITY)
    with City(srv, "mask-still", motion_tolerance_mm=0) as city:
        _walkers(city)
        city.step(20)  # tiers resolved: some walkers are Simulated or Coarse
        by_tier = {}
        for p in city.mirror.pedestrians():
            by_tier.setdefault(city.op.entity(p.id).tier, []).append(p)
        held = [p for tier in sorted(by_tier) for p in by_tier[tier][:3]]
        assert len(by_tier) >= 2, f"every walker has one tier: {list(by_tier)}"
        results = city.apply_all([
            ("SetAdmissionMask", dict(index=p.id.index, generation=p.id.generation, masked=True))
            for p in held])
        assert all(r.accepted for r in results), results
        tiers = set()
        for _ in range(17):  # more than the longest stride (8), twice
            city.step(1)
            for p in held:
                info = city.op.entity(p.id)
                e = city.mirror[p.id]
                tiers.add(info.tier)
                assert e.speed_mmps == 0, (p.id, info.tier, e)
                assert e.lane == info.lane, (p.id, info, e)
                assert abs(e.predicted_s_mm - info.s_m * 1000) <= 1, (p.id, info.tier, info.s_m, e)
        assert tiers, "no tier observed"
