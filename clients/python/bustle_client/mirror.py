"""Client-side copy of the entities a subscription receives (protocol v2).

The stream is lane-relative and dead-reckoned: each entity has an anchor
(lane, s_mm, speed_mmps, anchor step) set by ``Delta.entered`` or by a record
of ``Delta.motion``, and its pose at any later step follows from the lane
polyline of the Welcome (:mod:`bustle_client.motion`, the arithmetic the
server uses for its own copy of this client's prediction).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Dict, Iterator, NamedTuple, Optional

from .messages import (
    BustleError,
    ControlPolicy,
    Delta,
    EntityField,
    EntityId,
    EntityKind,
    RepresentationHint,
    SimTier,
    Welcome,
)
from .motion import LanePolyline, LanePose, MotionAnchor, predict_s_mm, sample_lane


class MirrorError(BustleError):
    """A delta that does not fit the mirror's state (strict mode), or a pose
    asked for an entity or lane the mirror does not know."""


class EntityRecord(NamedTuple):
    """What the mirror keeps per entity: its axes and its motion anchor."""

    id: EntityId
    kind: EntityKind
    archetype: int  # index into Welcome.archetypes
    label: Optional[str]  # VehicleId / "<community>.<member:03>", None when it has none
    sim_tier: SimTier
    representation: RepresentationHint
    policy: ControlPolicy
    lane: int  # anchor: lane index
    s_mm: int  # anchor: distance along the lane
    speed_mmps: int  # anchor: speed along the lane
    anchor_step: int  # the step the anchor was set at


class MirroredEntity(NamedTuple):
    """One entity as the mirror places it at ``step`` (returned by ``mirror[id]``,
    ``values()``, ``items()``): the record's fields, whether it is fading
    out, and the pose reconstructed from the anchor."""

    id: EntityId
    kind: EntityKind
    archetype: int
    label: Optional[str]
    sim_tier: SimTier
    representation: RepresentationHint
    policy: ControlPolicy
    lane: int
    s_mm: int  # the anchor's (see predicted_s_mm for the distance at ``step``)
    speed_mmps: int
    anchor_step: int
    retiring: bool
    corpse: bool  # a corpse (entered as one, or a Corpse change): lies still until it leaves
    archetype_name: Optional[str]  # Welcome.archetypes[archetype], None when out of range
    step: int  # the step this pose is for
    predicted_s_mm: int
    x_m: float
    y_m: float
    z_m: float
    heading_rad: float

    @property
    def speed_mps(self) -> float:
        return self.speed_mmps / 1000.0

    @property
    def s_m(self) -> float:
        return self.predicted_s_mm / 1000.0

    @property
    def anchor(self) -> MotionAnchor:
        return MotionAnchor(self.lane, self.s_mm, self.speed_mmps, self.anchor_step)


_FIELD_ATTR = {
    EntityField.SimTier: "sim_tier",
    EntityField.Representation: "representation",
    EntityField.Policy: "policy",
}


class EntityMirror(Mapping):
    """Mapping EntityId -> :class:`MirroredEntity` at the mirror's current
    step, kept current by :meth:`apply`.

    ``welcome`` gives the lanes (polylines, length_mm, elevation), step_us and
    archetypes that poses need; a mirror without one tracks anchors and axes
    but cannot place entities (``pose`` and lookups then raise MirrorError).

    Keys are EntityId named tuples, so plain ``(index, generation)`` tuples
    look entities up too. A baseline delta replaces everything, at any step:
    after a restore or load the server sends a new baseline whose step may be
    lower than the last one. Other deltas apply, in this order: ``left``
    (removed), ``entered`` (added with their anchor at the delta's step and
    their label), ``motion`` (new anchors at the delta's step), ``changes``
    (tier, representation or policy), ``retiring``. In strict mode (default)
    anything inconsistent raises MirrorError: a non-baseline delta before the
    first baseline, a step that goes back (the same step again is valid: an
    UpdateInterest is applied at once, at the current step), entering an entity (or an
    index) already present, a label for an entity not entered in the same
    delta, a motion record, change, retiring or left for an entity that is
    not present, a lane the Welcome does not have.

    ``retiring`` is the set of entities fading out (Delta.retiring) that have
    not left yet; ``corpses`` the set of corpses present (EntityEnter.corpse,
    or a ``Corpse`` change when one died while received). ``signals`` maps a signal's index to its phase after the
    last delta; ``dots`` maps a lane chain to its anonymous dot count from the
    last delta that carried dots (``dots_step``); ``interest_truncated`` is the
    last delta's count of entities not sent because the budgets are full.
    """

    def __init__(self, welcome: Optional[Welcome] = None, strict: bool = True):
        self.strict = strict
        self.welcome = welcome
        self.step_us = welcome.step_us if welcome is not None else 0
        self._lanes: Dict[int, LanePolyline] = {}
        if welcome is not None:
            self._lanes = {lane.index: LanePolyline.from_lane(lane) for lane in welcome.lanes}
        self._archetypes = list(welcome.archetypes) if welcome is not None else []
        self._records: Dict[EntityId, EntityRecord] = {}
        self._by_index: Dict[int, EntityId] = {}
        self.step: Optional[int] = None
        self.digest: Optional[int] = None
        self.baselines = 0
        self.signals: dict = {}  # signal index -> SignalPhase
        self.retiring: set = set()  # EntityIds fading out, still present
        self.corpses: set = set()  # EntityIds that are corpses, still present
        self.dots: dict = {}  # chain index -> count (last delta with dots)
        self.dots_step: Optional[int] = None
        self.interest_truncated = 0

    # ------------------------------------------------------------ mapping API

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[EntityId]:
        return iter(self._records)

    def __contains__(self, key) -> bool:
        try:
            return EntityId(*key) in self._records
        except TypeError:
            return False

    def __getitem__(self, key) -> MirroredEntity:
        return self._view(self._records[EntityId(*key)], self.step)

    def record(self, key) -> EntityRecord:
        """The stored record (axes and anchor) of one entity."""
        return self._records[EntityId(*key)]

    def by_index(self, index: int) -> Optional[EntityId]:
        """The EntityId present with this index, if any."""
        return self._by_index.get(index)

    # ----------------------------------------------------------------- poses

    def _lane(self, lane: int) -> LanePolyline:
        try:
            return self._lanes[lane]
        except KeyError:
            if self.welcome is None:
                raise MirrorError("this mirror has no Welcome: it cannot place entities") from None
            raise MirrorError(f"lane {lane} is not in the Welcome") from None

    def _place(self, r: EntityRecord, step: Optional[int]):
        """(predicted s_mm, LanePose) of a record at ``step`` (None: the mirror's)."""
        lane = self._lane(r.lane)
        s_mm = predict_s_mm(MotionAnchor(r.lane, r.s_mm, r.speed_mmps, r.anchor_step),
                            self.step if step is None else step, self.step_us, lane.length_mm)
        return s_mm, sample_lane(lane, s_mm / 1000.0)

    def predicted_s_mm(self, key, step: Optional[int] = None) -> int:
        """The entity's distance along its anchor lane at ``step`` (default:
        the mirror's step), exactly as the server predicts it."""
        return self._place(self._records[EntityId(*key)], step)[0]

    def pose(self, key, step: Optional[int] = None) -> LanePose:
        """(x_m, y_m, z_m, heading_rad) of an entity at ``step`` (default: the
        mirror's step): the predicted distance sampled on its lane."""
        return self._place(self._records[EntityId(*key)], step)[1]

    def _view(self, r: EntityRecord, step: Optional[int]) -> MirroredEntity:
        s_mm, pose = self._place(r, step)
        name = self._archetypes[r.archetype] if r.archetype < len(self._archetypes) else None
        return MirroredEntity(*r, r.id in self.retiring, r.id in self.corpses, name,
                              self.step if step is None else step, s_mm, *pose)

    def at(self, step: int) -> Dict[EntityId, MirroredEntity]:
        """Every entity placed at ``step`` (a step at or after their anchors)."""
        return {eid: self._view(r, step) for eid, r in self._records.items()}

    def positions_at(self, step: Optional[int] = None) -> dict:
        """{EntityId: (lane, s_mm, x_m, y_m)} at ``step`` (default: the mirror's step)."""
        out = {}
        for eid, r in self._records.items():
            s_mm, p = self._place(r, step)
            out[eid] = (r.lane, s_mm, p.x_m, p.y_m)
        return out

    # ----------------------------------------------------------------- apply

    def _fail(self, delta: Delta, text: str) -> None:
        if self.strict:
            raise MirrorError(f"step {delta.step}: {text}")

    def _check_lane(self, delta: Delta, lane: int, what: str) -> None:
        if self.welcome is not None and lane not in self._lanes:
            self._fail(delta, f"{what}: lane {lane} is not in the Welcome")

    def _remove(self, eid: EntityId) -> None:
        del self._records[eid]
        if self._by_index.get(eid.index) == eid:
            del self._by_index[eid.index]
        self.retiring.discard(eid)
        self.corpses.discard(eid)

    def apply(self, delta: Delta) -> "EntityMirror":
        if delta.baseline:
            self._records.clear()
            self._by_index.clear()
            self.retiring.clear()
            self.corpses.clear()
            self.signals = {}
            self.baselines += 1
        elif self.strict:
            if self.step is None:
                raise MirrorError(f"delta for step {delta.step} arrived before any baseline")
            if delta.step < self.step:
                raise MirrorError(f"step went from {self.step} to {delta.step}")
        step = delta.step
        for eid in delta.left:
            eid = EntityId(*eid)
            if eid in self._records:
                self._remove(eid)
            else:
                self._fail(delta, f"entity {eid} left but was not present")
        entered_now = set()
        for e in delta.entered:
            if e.id in self._records:
                self._fail(delta, f"entity {e.id} entered twice")
            other = self._by_index.get(e.id.index)
            if other is not None and other != e.id:
                self._fail(delta, f"entity {e.id} entered while {other} (same index) is present")
                self._remove(other)
            self._check_lane(delta, e.lane, f"entity {e.id} entered")
            self._records[e.id] = EntityRecord(
                e.id, e.kind, e.archetype, delta.labels.get(e.id.index), e.sim_tier,
                e.representation, e.policy, e.lane, e.s_mm, e.speed_mmps, step)
            self._by_index[e.id.index] = e.id
            if getattr(e, "corpse", False):
                self.corpses.add(e.id)
            entered_now.add(e.id.index)
        for index in delta.labels:
            if index not in entered_now:
                self._fail(delta, f"label for index {index}, which did not enter in this delta")
        for m in delta.motion:
            eid = self._by_index.get(m.index)
            if eid is None:
                self._fail(delta, f"motion record for unknown entity index {m.index}")
                continue
            r = self._records[eid]
            lane = r.lane if m.lane is None else m.lane
            if m.lane is not None:
                self._check_lane(delta, lane, f"motion record of {eid}")
            self._records[eid] = r._replace(lane=lane, s_mm=m.s_mm, speed_mmps=m.speed_mmps,
                                            anchor_step=step)
        for c in delta.changes:
            eid = self._by_index.get(c.index)
            attr = _FIELD_ATTR.get(c.field)
            if eid is None:
                self._fail(delta, f"change of {getattr(c.field, 'name', c.field)} for unknown "
                                  f"entity index {c.index}")
                continue
            if c.field == EntityField.Corpse:
                self.corpses.add(eid)  # died while received; never undone
            elif attr is not None:  # a field from a newer schema is ignored
                self._records[eid] = self._records[eid]._replace(**{attr: c.value})
        left_now = {EntityId(*eid) for eid in delta.left} if delta.retiring else ()
        for eid in delta.retiring:
            eid = EntityId(*eid)
            if eid in left_now:
                continue  # began and ended its fade in this delta (nothing to fade)
            if eid not in self._records:
                self._fail(delta, f"entity {eid} began retiring but is not present")
            self.retiring.add(eid)
        for sig in delta.signals:
            self.signals[sig.index] = sig.phase
        if delta.dots:
            self.dots = {d.chain: d.count for d in delta.dots}
            self.dots_step = step
        self.interest_truncated = delta.interest_truncated
        self.step = step
        self.digest = delta.digest
        return self

    # --------------------------------------------------------------- queries

    def by_kind(self, kind) -> list:
        return [self._view(r, self.step) for r in self._records.values() if r.kind == kind]

    def vehicles(self) -> list:
        """Vehicle entities, ordered by EntityId."""
        return sorted(self.by_kind(EntityKind.Vehicle))

    def pedestrians(self) -> list:
        """Pedestrian entities, ordered by EntityId."""
        return sorted(self.by_kind(EntityKind.Pedestrian))

    def by_representation(self, hint) -> list:
        """Entities hinted ``hint`` (a RepresentationHint), ordered by EntityId."""
        return sorted(self._view(r, self.step) for r in self._records.values()
                      if r.representation == hint)


__all__ = ["EntityMirror", "EntityRecord", "MirroredEntity", "MirrorError"]
