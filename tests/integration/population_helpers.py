"""Helpers for the population tests (spawn pipeline, despawn fades, lifecycle,
dots): a manual-clock server driven by one operator and watched by one
subscribed viewer whose deltas are kept per step."""

from conftest import SOURCE_DIR
from vehicle_helpers import Corridor

from bustle_client import SpawnState

LARGEBLOCK = SOURCE_DIR / "configs" / "largeblock.city.json"
DEFAULT_CITY = SOURCE_DIR / "configs" / "default.city.json"
#: Scenario defaults (scenario.hpp) the tests rely on when a config leaves them out.
SPAWN_PER_STEP_CAP = 8
FADE_MS = 1000
#: The stages of a spawn handle that succeeds, after Queued (the last two on
#: the representation axis, from leases or ReportAttached).
PIPELINE = [SpawnState.IdentityCreated, SpawnState.Registered, SpawnState.RepresentationRequested,
            SpawnState.Attached, SpawnState.ReadyForGameplay]


def start_city(start_server, *args, config=LARGEBLOCK):
    """A manual-clock server on ``config`` (default: the large-block city)."""
    return start_server("--clock", "manual", "--config", str(config), *args)


class City(Corridor):
    """The vehicle tests' driver (vehicle_helpers.Corridor: an operator ``op``
    and a subscribed viewer ``sub`` kept in a strict ``mirror``, on one
    manual-clock server) with every delta kept in ``deltas`` (step -> Delta;
    a delta coalesces the steps the viewer did not see, see
    :meth:`step_each`). The operator is not subscribed: it receives the
    SpawnUpdates of its spawns."""

    def __init__(self, srv, name="pop", **subscribe):
        super().__init__(srv, name, **subscribe)
        self.deltas = {}
        self.on_delta.append(lambda d: self.deltas.__setitem__(d.step, d))

    def step_each(self, n):
        """Run ``n`` steps one by one, so ``deltas`` has every step's delta."""
        for _ in range(n):
            self.step(1)

    def apply(self, command, /, **fields):
        """Send a world command, run one step, return its result."""
        return self.apply_all([(command, fields)])[0]

    def apply_all(self, commands):
        """Send several world commands (``(name, fields)``), run one step,
        return their results in order (all applied in that step)."""
        rids = [self.op.send_command(name, **fields) for name, fields in commands]
        self.step(1)
        return [self.op.wait_result(rid, timeout=3.0) for rid in rids]


def states_of(updates):
    """States of pushed spawn updates, without the leading Queued (the
    accepted state, which the server may push too)."""
    states = [u.state for u in updates]
    return states[1:] if states[:1] == [SpawnState.Queued] else states


def step_following(stepper, reader, mirror, n=1):
    """Manual clock: ``n`` single steps by ``stepper``, each followed by
    ``reader``'s deltas (applied to ``mirror``) up to that step; returns the
    (step, digest) of each step's last delta."""
    seen = []
    for _ in range(n):
        at = stepper.step(1, timeout=5.0).applied_step
        while True:
            d = reader.next_delta(timeout=5.0)
            mirror.apply(d)
            if d.step >= at:
                break
        seen.append((d.step, d.digest))
    return seen
