"""EntityMirror: baseline resets, enter/update/leave, strict invariant checks."""

import pytest

import server_frames as sf
from bustle_client import EntityKind, EntityMirror, MirrorError, SignalPhase, codec


def D(step, **kw):
    return codec.decode_server_frame(sf.delta(step=step, **kw))


def ped(index, gen=1, x=0, y=0):
    return (index, gen, x, y, 0, 100, 0)


def test_baseline_then_updates_and_leaves():
    m = EntityMirror()
    m.apply(D(10, baseline=True, entered=[ped(0), ped(1), ped(2)], digest=5))
    assert len(m) == 3 and m.step == 10 and m.digest == 5
    m.apply(D(11, updated=[ped(1, x=250)], left=[(2, 1)], entered=[ped(2, gen=2)]))
    assert sorted(m) == [(0, 1), (1, 1), (2, 2)]
    assert m[(1, 1)].x_m == pytest.approx(2.5)
    assert m[(0, 1)].x_m == 0.0
    assert len(m.by_kind(0)) == 3 and m.by_kind(1) == []


def test_baseline_replaces_everything():
    m = EntityMirror()
    m.apply(D(1, baseline=True, entered=[ped(0), ped(1)]))
    m.apply(D(5, baseline=True, entered=[ped(7)]))
    assert list(m) == [(7, 1)] and m.baselines == 2


def test_baseline_at_a_lower_step_is_accepted():
    """After a restore to an older checkpoint the server sends a baseline whose
    step is lower than the last one; the stream continues from there."""
    m = EntityMirror()
    m.apply(D(50, baseline=True, entered=[ped(0)]))
    m.apply(D(51, updated=[ped(0, x=5)]))
    m.apply(D(20, baseline=True, entered=[ped(3), ped(4)], digest=9))
    assert sorted(m) == [(3, 1), (4, 1)] and m.step == 20 and m.digest == 9
    m.apply(D(21, left=[(3, 1)]))
    assert list(m) == [(4, 1)] and m.step == 21
    with pytest.raises(MirrorError, match="step went from 21 to 21"):
        m.apply(D(21))


@pytest.mark.parametrize(
    "second, match",
    [
        (dict(step=2, updated=[ped(9)]), "unknown entity"),
        (dict(step=2, left=[(9, 1)]), "not present"),
        (dict(step=2, entered=[ped(0)]), "entered twice"),
        (dict(step=1, updated=[ped(0, x=1)]), "step went from 1 to 1"),
    ],
)
def test_strict_mode_rejects_inconsistent_deltas(second, match):
    m = EntityMirror()
    m.apply(D(1, baseline=True, entered=[ped(0)]))
    with pytest.raises(MirrorError, match=match):
        m.apply(D(**second))


def test_strict_mode_needs_a_baseline_first():
    with pytest.raises(MirrorError, match="before any baseline"):
        EntityMirror().apply(D(3, entered=[ped(0)]))


def test_lenient_mode_applies_what_it_can():
    m = EntityMirror(strict=False)
    m.apply(D(3, updated=[ped(4)], left=[(8, 8)]))
    assert list(m) == [(4, 1)]


def veh(index, gen=1, x=0, y=0):
    return (index, gen, x, y, 0, 800, 1)


def test_mirror_keeps_vehicles_and_signal_phases():
    m = EntityMirror()
    m.apply(D(1, baseline=True, entered=[ped(0), veh(3), veh(2)], signals=[(0, 0), (1, 2)]))
    assert [e.id for e in m.vehicles()] == [(2, 1), (3, 1)]
    assert [e.id for e in m.pedestrians()] == [(0, 1)]
    assert m.signals == {0: SignalPhase.Open, 1: SignalPhase.Closed}
    m.apply(D(2, updated=[veh(3, x=150)], left=[(2, 1)], signals=[(0, 1), (1, 2)]))
    assert [e.id for e in m.vehicles()] == [(3, 1)] and m[(3, 1)].x_m == pytest.approx(1.5)
    assert m[(3, 1)].kind == EntityKind.Vehicle
    assert m.signals == {0: SignalPhase.Yield, 1: SignalPhase.Closed}
    # a delta without signals keeps the last known phases; a baseline resets them
    m.apply(D(3))
    assert m.signals == {0: SignalPhase.Yield, 1: SignalPhase.Closed}
    m.apply(D(4, baseline=True, entered=[veh(5)], signals=[(0, 2)]))
    assert m.signals == {0: SignalPhase.Closed} and [e.id for e in m.vehicles()] == [(5, 1)]
