"""What the soak driver checks, and the shared records the checks need.

Every violation has an invariant name (one of INVARIANTS), the client that
saw it and a message; the report groups them by invariant.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

#: Invariant name -> what it means (printed in the summary and the JUnit report).
INVARIANTS: Dict[str, str] = {
    "unique-ids": "no entity enters twice, no two live entities share an index",
    "contiguous-steps": "each client's steps go forward, never back or twice (except a baseline, or the step an UpdateInterest repeats); a gap of at most max_step_gap steps is one delta for steps run back to back",
    "digest-agreement": "every client saw the same digest at every step two of them saw",
    "mirror-consistency": "motion, changes, retiring and left name entities the client has (strict mirror)",
    "stats-consistency": "Stats counts equal what a whole-city client holds at the same step",
    "command-answered": "every command got its CommandResult within the deadline",
    "command-graded": "every result is Accepted, or Rejected with a reason (never InvariantFailure)",
    "hint-budgets": "a client never holds more Actor/Instanced/Marker hints than its budgets",
    "restore-baseline": "after a restore or load every subscriber gets a baseline at the snapshot's step and digest",
    "job-completed": "every snapshot job reaches its terminal state without Failed",
    "stream-alive": "a subscribed client receives a delta within the stall limit while the server runs",
    "connection": "clients stay connected and the server never closes one with an Error",
    "server-alive": "the server the driver started keeps running and exits 0 on SIGTERM",
    "server-resources": "server RSS, fds and CPU per step stay within the scenario's limits",
}


@dataclass
class Violation:
    invariant: str
    client: str
    message: str
    at_s: float  # seconds since the soak started
    step: Optional[int] = None

    def to_json(self) -> dict:
        return {"invariant": self.invariant, "client": self.client, "message": self.message,
                "at_s": round(self.at_s, 3), "step": self.step}


class Checker:
    """Thread-safe record of violations and of the facts checks share: the
    digest every client saw per (epoch, step), and how many entities a
    whole-city client held per (epoch, step)."""

    #: Keep at most this many violations per invariant in full (all are counted).
    KEEP_PER_INVARIANT = 50
    #: Steps whose digest is remembered (a few hours at 10 Hz; bounded memory with the fast clock).
    DIGESTS_KEPT = 200_000

    def __init__(self, started: float, on_violation: Optional[Callable[[Violation], None]] = None):
        self.started = started
        #: called (outside the lock) with each violation that is kept
        self.on_violation = on_violation
        self._lock = threading.Lock()
        self.violations: List[Violation] = []
        self.counts: Dict[str, int] = {name: 0 for name in INVARIANTS}
        self.checks: Dict[str, int] = {name: 0 for name in INVARIANTS}
        #: (epoch, step) -> (digest, first client that saw it); oldest dropped past DIGESTS_KEPT
        self._digests: Dict[Tuple[int, int], Tuple[int, str]] = {}
        self._city_counts: Dict[Tuple[int, int], Tuple[int, int, str]] = {}
        self._pending_stats: List[Tuple[int, int, int, int]] = []  # (epoch, step, pedestrians, vehicles)

    def now(self) -> float:
        return time.monotonic() - self.started

    def passed(self, invariant: str, n: int = 1) -> None:
        with self._lock:
            self.checks[invariant] += n

    def fail(self, invariant: str, client: str, message: str, step: Optional[int] = None) -> None:
        assert invariant in INVARIANTS, invariant
        kept = None
        with self._lock:
            self.checks[invariant] += 1
            self.counts[invariant] += 1
            if self.counts[invariant] <= self.KEEP_PER_INVARIANT:
                kept = Violation(invariant, client, message, self.now(), step)
                self.violations.append(kept)
        if kept is not None and self.on_violation is not None:
            self.on_violation(kept)

    @property
    def failed(self) -> bool:
        return any(self.counts.values())

    # ------------------------------------------------------------- digests

    def digest(self, epoch: int, step: int, digest: int, client: str) -> None:
        """Record that ``client`` saw ``digest`` at ``step`` of ``epoch``;
        a different digest seen there by another client is a violation."""
        key = (epoch, step)
        with self._lock:
            seen = self._digests.get(key)
            if seen is None:
                self._digests[key] = (digest, client)
                if len(self._digests) > self.DIGESTS_KEPT:
                    del self._digests[next(iter(self._digests))]  # dicts keep insertion order
                self.checks["digest-agreement"] += 1
                return
        if seen[0] == digest:
            self.passed("digest-agreement")
        else:
            self.fail("digest-agreement", client,
                      f"step {step}: digest {digest:016x}, but {seen[1]} saw {seen[0]:016x}", step)

    def digest_at(self, epoch: int, step: int) -> Optional[int]:
        with self._lock:
            seen = self._digests.get((epoch, step))
        return None if seen is None else seen[0]

    # --------------------------------------------------------------- stats

    def city_count(self, epoch: int, step: int, pedestrians: int, vehicles: int, client: str) -> None:
        """What a whole-city client holds after ``step`` (compared with Stats)."""
        with self._lock:
            self._city_counts.setdefault((epoch, step), (pedestrians, vehicles, client))
            pending, self._pending_stats = self._pending_stats, []
        for sample in pending:
            self.stats_sample(*sample)

    def stats_sample(self, epoch: int, step: int, pedestrians: int, vehicles: int) -> None:
        """A Stats answer at ``step``; compared when a whole-city client has
        that step (kept until then, at most a few hundred)."""
        with self._lock:
            seen = self._city_counts.get((epoch, step))
            if seen is None:
                if len(self._pending_stats) < 512:
                    self._pending_stats.append((epoch, step, pedestrians, vehicles))
                return
        got_p, got_v, client = seen
        if (got_p, got_v) == (pedestrians, vehicles):
            self.passed("stats-consistency")
        else:
            self.fail("stats-consistency", client,
                      f"step {step}: Stats says {pedestrians} pedestrians and {vehicles} vehicles, "
                      f"the stream holds {got_p} and {got_v}", step)

    def forget_before(self, epoch: int, step: int) -> None:
        """Drop whole-city counts older than ``step`` of ``epoch`` (memory bound)."""
        with self._lock:
            for key in [k for k in self._city_counts if k < (epoch, step)]:
                del self._city_counts[key]
