"""Client-side copy of the entities a subscription has seen."""

from __future__ import annotations

from typing import Optional

from .messages import BustleError, Delta, EntityId, EntityKind, EntityState


class MirrorError(BustleError):
    """A delta that does not fit the mirror's state (strict mode)."""


class EntityMirror(dict):
    """dict EntityId -> EntityState, kept current by :meth:`apply`.

    Keys are EntityId named tuples, so plain ``(index, generation)`` tuples look
    entities up too. A baseline delta replaces everything, at any step: after
    a restore or load the server sends a new baseline whose step may be lower
    than the last one (a restore to an older checkpoint). Other deltas remove
    ``left``, add ``entered`` and replace ``updated``. In strict mode (default)
    anything inconsistent raises MirrorError: a non-baseline delta before the
    first baseline, a step that does not increase, entering an entity already
    present, updating or removing one that is not — the invariants a soak
    test wants checked on every delta.

    Every entity kind is kept (pedestrians and vehicles alike; see
    :meth:`vehicles`). ``signals`` maps a signal's index (into
    Welcome.signals) to its phase after the last applied delta.

    ``retiring`` is the set of entities that began fading (Delta.retiring)
    and have not left yet: they stay in the mirror, and clients fade them out,
    until their ``left``. Strict mode requires a retiring entity to be present
    (it is still in the stream). ``dots`` maps a lane chain (index into
    Welcome.chains) to its anonymous dot count from the last dot step, and
    ``dots_step`` is that step (None before the first).
    """

    def __init__(self, strict: bool = True):
        super().__init__()
        self.strict = strict
        self.step: Optional[int] = None
        self.digest: Optional[int] = None
        self.baselines = 0
        self.signals: dict = {}  # signal index -> SignalPhase
        self.retiring: set = set()  # EntityIds fading out, still present
        self.dots: dict = {}  # chain index -> count (last dot step)
        self.dots_step: Optional[int] = None

    def apply(self, delta: Delta) -> "EntityMirror":
        if delta.baseline:
            self.clear()
            self.retiring.clear()
            self.baselines += 1
        elif self.strict:
            if self.step is None:
                raise MirrorError(f"delta for step {delta.step} arrived before any baseline")
            if delta.step <= self.step:
                raise MirrorError(f"step went from {self.step} to {delta.step}")
        for eid in delta.left:
            eid = EntityId(*eid)
            if self.pop(eid, None) is None and self.strict:
                raise MirrorError(f"step {delta.step}: entity {eid} left but was not present")
            self.retiring.discard(eid)
        for state in delta.entered:
            if self.strict and state.id in self:
                raise MirrorError(f"step {delta.step}: entity {state.id} entered twice")
            self[state.id] = state
        for state in delta.updated:
            if self.strict and state.id not in self:
                raise MirrorError(f"step {delta.step}: update for unknown entity {state.id}")
            self[state.id] = state
        left_now = {EntityId(*eid) for eid in delta.left} if delta.retiring else ()
        for eid in delta.retiring:
            eid = EntityId(*eid)
            if eid in left_now:
                continue  # began and ended its fade in this step (nothing to fade)
            if self.strict and eid not in self:
                raise MirrorError(f"step {delta.step}: entity {eid} began retiring but is not present")
            self.retiring.add(eid)
        if delta.baseline:
            self.signals = {}
        for sig in delta.signals:
            self.signals[sig.index] = sig.phase
        if delta.dots:
            self.dots = {d.chain: d.count for d in delta.dots}
            self.dots_step = delta.step
        self.step = delta.step
        self.digest = delta.digest
        return self

    def by_kind(self, kind) -> list:
        return [s for s in self.values() if s.kind == kind]

    def vehicles(self) -> list:
        """Vehicle entities, ordered by EntityId."""
        return sorted(self.by_kind(EntityKind.Vehicle))

    def pedestrians(self) -> list:
        """Pedestrian entities, ordered by EntityId."""
        return sorted(self.by_kind(EntityKind.Pedestrian))


__all__ = ["EntityMirror", "MirrorError", "EntityState"]
