"""EntityMirror v2: anchors from entered and motion records, poses reconstructed
from the Welcome's lanes, changes, retiring, left, strict invariant checks."""

import math

import pytest

import server_frames as sf
from bustle_client import (
    ControlPolicy,
    EntityField,
    EntityId,
    EntityKind,
    EntityMirror,
    MirrorError,
    RepresentationHint,
    SignalPhase,
    SimTier,
    codec,
)
from bustle_client.messages import MotionRecord
from bustle_client.motion import write_motion

LANES = [
    (0, "east", 2, [(0.0, 0.0), (100.0, 0.0)], 100.0, 13.9, [1]),        # 100 m along +x
    (1, "north", 2, [(100.0, 0.0), (100.0, 50.0)], 50.0, 13.9, [], 50_000, 4.0),  # raised 4 m
    (2, "bend", 0, [(0.0, 0.0), (3.0, 4.0), (3.0, 10.0)], 11.0, 1.5, []),  # 5 m, then 6 m north
]
WELCOME = codec.decode_server_frame(sf.welcome(step_us=100_000, lanes=LANES,
                                               archetypes=["pedestrian", "vehicle.sedan"]))


def near(*values):
    """Floats as the lane interpolation gives them (x0 + dx * s / length is
    not always the decimal one expects); integers stay exact."""
    return pytest.approx(values, abs=1e-12)


def D(step, motion=None, **kw):
    """A decoded Delta; ``motion``: MotionRecords (packed by the client's writer)."""
    if motion is not None:
        kw["motion"] = write_motion(motion)
    return codec.decode_server_frame(sf.delta(step=step, **kw))


def ped(index, gen=1, lane=0, s_mm=0, speed_mmps=0, **kw):
    return sf.enter(index, gen, lane=lane, s_mm=s_mm, speed_mmps=speed_mmps, **kw)


def veh(index, gen=1, lane=0, s_mm=0, speed_mmps=0, **kw):
    return sf.enter(index, gen, lane=lane, s_mm=s_mm, speed_mmps=speed_mmps, archetype=1,
                    kind=EntityKind.Vehicle, **kw)


def mirror(strict=True):
    return EntityMirror(WELCOME, strict=strict)


def test_baseline_places_entities_and_dead_reckons_them():
    m = mirror()
    m.apply(D(10, baseline=True, digest=5, labels={3: "vehicle.g0.000001"},
              entered=[ped(0, s_mm=1000, speed_mmps=1400), veh(3, lane=2, s_mm=2500, tier=1, rep=1)]))
    assert len(m) == 2 and m.step == 10 and m.digest == 5 and m.baselines == 1
    a = m[(0, 1)]
    assert (a.x_m, a.y_m, a.z_m, a.heading_rad) == (1.0, 0.0, 0.0, 0.0)
    assert a.speed_mps == 1.4 and a.kind == EntityKind.Pedestrian and a.label is None
    assert a.archetype_name == "pedestrian" and a.anchor == (0, 1000, 1400, 10)
    v = m[EntityId(3, 1)]
    assert (v.x_m, v.y_m, v.heading_rad) == (1.5, 2.0, math.atan2(4, 3))
    assert (v.kind, v.label, v.archetype_name) == (EntityKind.Vehicle, "vehicle.g0.000001", "vehicle.sedan")
    assert (v.sim_tier, v.representation, v.policy) == (
        SimTier.Simulated, RepresentationHint.Instanced, ControlPolicy.RouteFollow)
    # five steps of 0.1 s at 1.4 m/s without any motion record: 0.7 m further
    m.apply(D(15))
    a = m[(0, 1)]
    assert (a.predicted_s_mm, a.step) == (1700, 15) and a.x_m == pytest.approx(1.7, abs=1e-12)
    assert a.s_mm == 1000 and a.anchor_step == 10  # the anchor is unchanged
    assert m[(3, 1)].x_m == 1.5  # at rest


def test_motion_records_move_anchors_across_lanes():
    m = mirror()
    m.apply(D(10, baseline=True, entered=[ped(0, s_mm=99_000, speed_mmps=2000), ped(1, s_mm=0, speed_mmps=1000)]))
    # the client's prediction stops at the end of lane 0 ...
    m.apply(D(20))
    assert m.positions_at(20)[(0, 1)] == (0, 100_000, 100.0, 0.0)
    assert m.pose((0, 1), step=30) == (100.0, 0.0, 0.0, 0.0)
    # ... until a record puts it on lane 1 (4 m up) at this step
    m.apply(D(21, motion=[MotionRecord(0, 1, 200, 2000)]))
    e = m[(0, 1)]
    assert (e.lane, e.s_mm, e.anchor_step) == (1, 200, 21)
    assert (e.x_m, e.y_m, e.z_m, e.heading_rad) == (100.0, 0.2, 4.0, math.pi / 2)
    # three steps later: 0.6 m further along lane 1
    assert m.pose((0, 1), step=24) == (100.0, 0.8, 4.0, math.pi / 2)
    # a record without a lane keeps the anchor's lane (a speed change here)
    m.apply(D(25, motion=[MotionRecord(0, None, 1000, 500), MotionRecord(1, None, 1600, 0)]))
    e = m[(0, 1)]
    assert (e.lane, e.s_mm, e.speed_mmps) == (1, 1000, 500)
    assert m.positions_at(27) == {(0, 1): (1, 1100, 100.0, 1.1), (1, 1): (0, 1600, 1.6, 0.0)}


def test_a_coalesced_delta_after_a_gap_only_moves_what_it_names():
    m = mirror()
    m.apply(D(1, baseline=True, entered=[ped(4, s_mm=0, speed_mmps=1000), ped(9, s_mm=0, speed_mmps=1000)]))
    m.apply(D(2))
    # the client fell behind: one delta at step 40 instead of steps 3..40
    m.apply(D(40, motion=[MotionRecord(9, 2, 500, 0)]))
    assert m.step == 40
    p = m.positions_at()
    assert p[(4, 1)] == (0, 3900, 3.9, 0.0)  # predicted from its step-1 anchor
    assert p[(9, 1)] == near(2, 500, 0.3, 0.4)    # the record, on the bend
    assert m.predicted_s_mm((4, 1), step=41) == 4000


def test_changes_update_tier_representation_and_policy():
    m = mirror()
    m.apply(D(1, baseline=True, entered=[veh(2, policy=ControlPolicy.RouteFollow)]))
    m.apply(D(2, changes=[(2, EntityField.SimTier, SimTier.Coarse),
                          (2, EntityField.Representation, RepresentationHint.Marker),
                          (2, EntityField.Policy, ControlPolicy.WaitingAtSignal)]))
    v = m[(2, 1)]
    assert (v.sim_tier, v.representation, v.policy) == (
        SimTier.Coarse, RepresentationHint.Marker, ControlPolicy.WaitingAtSignal)
    assert m.by_representation(RepresentationHint.Marker) == [v]
    # a field from a newer schema is ignored, the rest still applies
    m.apply(D(3, changes=[(2, 7, 1), (2, EntityField.Policy, ControlPolicy.Parked)]))
    assert m[(2, 1)].policy == ControlPolicy.Parked and m[(2, 1)].sim_tier == SimTier.Coarse


def test_retiring_entities_stay_until_they_leave():
    m = mirror()
    m.apply(D(1, baseline=True, entered=[ped(1, s_mm=5000, speed_mmps=1000), ped(2)]))
    # retiring: the server stops it with a record in the same delta
    m.apply(D(2, retiring=[(1, 1)], motion=[MotionRecord(1, None, 5100, 0)]))
    assert m.retiring == {EntityId(1, 1)} and m[(1, 1)].retiring and not m[(2, 1)].retiring
    m.apply(D(9))
    assert m[(1, 1)].x_m == 5.1  # standing still
    m.apply(D(10, left=[(1, 1)]))
    assert (1, 1) not in m and not m.retiring and sorted(m) == [(2, 1)]


def test_corpses_enter_dead_or_die_while_received_and_stay_until_they_leave():
    m = mirror()
    m.apply(D(1, baseline=True, entered=[ped(1, corpse=True), ped(2), ped(3)]))
    assert m.corpses == {EntityId(1, 1)} and m[(1, 1)].corpse and not m[(2, 1)].corpse
    d = D(2, changes=[(2, EntityField.Corpse, 1)])
    assert [(c.index, c.field, c.value) for c in d.changes] == [(2, EntityField.Corpse, 1)]
    m.apply(d)
    assert m.corpses == {EntityId(1, 1), EntityId(2, 1)} and m[(2, 1)].corpse
    assert not m[(3, 1)].corpse
    m.apply(D(3, left=[(2, 1)]))
    assert m.corpses == {EntityId(1, 1)}
    m.apply(D(4, baseline=True, entered=[ped(3)]))
    assert not m.corpses


def test_baseline_replaces_everything_at_any_step():
    """After a restore to an older checkpoint the server sends a baseline whose
    step is lower than the last one; the stream continues from there."""
    m = mirror()
    m.apply(D(50, baseline=True, entered=[ped(0), ped(1)], retiring=[(1, 1)], signals=[(0, 2)]))
    m.apply(D(51, motion=[MotionRecord(0, None, 5, 5)]))
    m.apply(D(20, baseline=True, entered=[ped(3), ped(0, gen=2, s_mm=7000)], digest=9))
    assert sorted(m) == [(0, 2), (3, 1)] and m.step == 20 and m.digest == 9
    assert m.baselines == 2 and not m.retiring and m.signals == {}
    assert m[(0, 2)].x_m == pytest.approx(7.0, abs=1e-12) and m[(0, 2)].anchor_step == 20
    m.apply(D(21, left=[(3, 1)]))
    assert list(m) == [(0, 2)] and m.step == 21
    m.apply(D(21, entered=[ped(5)]))  # an UpdateInterest applied at the current step
    assert sorted(m) == [(0, 2), (5, 1)]
    with pytest.raises(MirrorError, match="step went from 21 to 20"):
        m.apply(D(20))


def test_an_index_may_leave_and_enter_again_with_a_new_generation_in_one_delta():
    m = mirror()
    m.apply(D(1, baseline=True, entered=[ped(3, s_mm=1000)]))
    m.apply(D(2, left=[(3, 1)], entered=[ped(3, gen=2, lane=1, s_mm=0, speed_mmps=1000)],
              labels={3: "market.001"}))
    assert list(m) == [(3, 2)] and m.by_index(3) == (3, 2) and m[(3, 2)].label == "market.001"
    m.apply(D(3, motion=[MotionRecord(3, None, 2000, 0)]))  # motion names the index: the new entity
    assert m[(3, 2)].y_m == 2.0


@pytest.mark.parametrize("second, match", [
    (dict(motion=[MotionRecord(9, None, 0, 0)]), "motion record for unknown entity index 9"),
    (dict(changes=[(9, 0, 1)]), "change of SimTier for unknown entity index 9"),
    (dict(left=[(9, 1)]), "entity EntityId\\(index=9, generation=1\\) left but was not present"),
    (dict(left=[(0, 2)]), "left but was not present"),  # right index, wrong generation
    (dict(entered=[ped(0)]), "entered twice"),
    (dict(entered=[ped(0, gen=2)]), "same index\\) is present"),
    (dict(entered=[ped(5, lane=3)]), "lane 3 is not in the Welcome"),
    (dict(motion=[MotionRecord(0, 3, 0, 0)]), "motion record of .*: lane 3 is not in the Welcome"),
    (dict(labels={0: "x"}), "label for index 0, which did not enter in this delta"),
    (dict(retiring=[(9, 1)]), "began retiring but is not present"),
    (dict(step=0), "step went from 1 to 0"),
])
def test_strict_mode_rejects_inconsistent_deltas(second, match):
    m = mirror()
    m.apply(D(1, baseline=True, entered=[ped(0)]))
    second.setdefault("step", 2)
    with pytest.raises(MirrorError, match=match):
        m.apply(D(**second))


def test_strict_mode_needs_a_baseline_first():
    with pytest.raises(MirrorError, match="before any baseline"):
        mirror().apply(D(3, entered=[ped(0)]))


def test_lenient_mode_applies_what_it_can():
    m = mirror(strict=False)
    m.apply(D(3, entered=[ped(4, s_mm=10)], left=[(8, 8)], motion=[MotionRecord(2, None, 1, 1)],
              changes=[(6, 0, 1)], labels={7: "x"}))
    assert list(m) == [(4, 1)] and m[(4, 1)].x_m == 0.01
    m.apply(D(2, entered=[ped(4, gen=2)]))  # an older step and a reused index: replaced
    assert list(m) == [(4, 2)]


def test_mirror_without_a_welcome_tracks_anchors_but_cannot_place():
    m = EntityMirror()
    m.apply(D(1, baseline=True, entered=[ped(0, lane=7, s_mm=3)]))
    assert m.record((0, 1)).s_mm == 3 and (0, 1) in m
    with pytest.raises(MirrorError, match="no Welcome"):
        m.pose((0, 1))


def test_mirror_keeps_vehicles_and_signal_phases():
    m = mirror()
    m.apply(D(1, baseline=True, entered=[ped(0), veh(3), veh(2)], signals=[(0, 0), (1, 2)]))
    assert [e.id for e in m.vehicles()] == [(2, 1), (3, 1)]
    assert [e.id for e in m.pedestrians()] == [(0, 1)]
    assert m.signals == {0: SignalPhase.Open, 1: SignalPhase.Closed}
    m.apply(D(2, left=[(2, 1)], signals=[(0, 1), (1, 2)], interest_truncated=4))
    assert [e.id for e in m.vehicles()] == [(3, 1)] and m.interest_truncated == 4
    assert m.signals == {0: SignalPhase.Yield, 1: SignalPhase.Closed}
    # a delta without signals keeps the last known phases
    m.apply(D(3))
    assert m.signals == {0: SignalPhase.Yield, 1: SignalPhase.Closed} and m.interest_truncated == 0


def test_items_values_and_views_are_snapshots():
    m = mirror()
    m.apply(D(1, baseline=True, entered=[ped(0, speed_mmps=1000)]))
    before = m[(0, 1)]
    m.apply(D(11))
    assert before.x_m == 0.0 and m[(0, 1)].x_m == 1.0
    assert dict(m.items()) == {(0, 1): m[(0, 1)]} and list(m.values()) == [m[(0, 1)]]
    assert m.at(6)[(0, 1)].x_m == 0.5
