"""Helpers for the vehicle tests: the seed-003 corridor on a manual clock,
driven by one operator and watched by one subscribed viewer."""

import copy
import json
import re

from conftest import SOURCE_DIR

from bustle_client import CommandStatus, EntityId, Role

CORRIDOR = SOURCE_DIR / "configs" / "corridor.city.json"
VEHICLE_ID = re.compile(r"^vehicle\.g0\.(\d{6})$")


def corridor_config():
    """The corridor scenario as a dict (for variants written to tmp_path)."""
    cfg = json.loads(CORRIDOR.read_text())
    cfg.pop("$schema", None)
    return cfg


def write_config(path, cfg):
    path.write_text(json.dumps(cfg, indent=1))
    return path


def small_garage_config(tmp_path, **garage):
    """The corridor with no content plan and the garage fields overridden."""
    cfg = copy.deepcopy(corridor_config())
    cfg["id"] = "bustle.corridor.small-garage"
    cfg["garages"][0].update(garage)
    cfg["vehicle_plan"]["requests"] = []
    return write_config(tmp_path / "small-garage.city.json", cfg)


def start_corridor(start_server, *args, config=None):
    return start_server("--clock", "manual", "--config", str(config or CORRIDOR), *args)


class Corridor:
    """An operator (``op``) and a subscribed viewer (``sub``, kept in a strict
    ``mirror`` that places entities from their lane anchors) on one
    manual-clock server. ``step()`` runs steps and brings the mirror to the
    server's step; every delta read is passed to ``on_delta`` hooks.
    ``subscribe`` goes to Session.subscribe; by default the viewer gets the
    whole city with motion tolerance 0, so the mirror's poses are the
    server's to the millimetre."""

    def __init__(self, srv, name="veh", **subscribe):
        self.srv = srv
        self.op = srv.connect()
        assert self.op.hello(f"{name}-op", role="operator").role == Role.Operator
        self.sub = srv.connect()
        self.welcome = self.sub.hello(f"{name}-sub", role="viewer")
        subscribe.setdefault("motion_tolerance_mm", 0)
        assert self.sub.subscribe(**subscribe).accepted
        self.mirror = self.sub.mirror()
        self.on_delta = []
        self.step_index = self.op.stats().step
        self.sync()

    def close(self):
        self.op.close()
        self.sub.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def sync(self):
        sync_mirror(self.sub, self.mirror, self.step_index, self.on_delta)

    def step(self, n=1):
        r = self.op.step(n)
        assert r.accepted, r
        self.step_index = r.applied_step
        self.sync()
        return r

    def step_to(self, target, chunk=50):
        while self.step_index < target:
            self.step(min(chunk, target - self.step_index))

    def apply(self, name, **fields):
        """A world command: send it, run the step that applies it, return its result."""
        rid = self.op.send_command(name, **fields)
        self.step(1)
        r = self.op.wait_result(rid, timeout=3.0)
        assert r.applied_step == self.step_index, r
        return r

    def garage(self):
        (g,) = self.op.garages()
        return g

    def free_place_and_wait(self, dispatched, steps=300):
        """Despawns the mirror's first vehicle (a place in the garage frees)
        and steps until the garage has dispatched ``dispatched`` requests (at
        most ``steps`` steps); returns the garage."""
        victim = self.vehicle_entities()[0].id
        assert self.apply("DespawnEntity", index=victim.index, generation=victim.generation).accepted
        for _ in range(steps):
            if self.garage().dispatched == dispatched:
                break
            self.step(1)
        return self.garage()

    def vehicle_entities(self):
        return self.mirror.vehicles()

    def infos(self):
        """{EntityId: VehicleInfo} for every vehicle in the mirror."""
        return {e.id: self.op.vehicle(e.id) for e in self.mirror.vehicles()}


def sync_mirror(session, mirror, step, hooks=()):
    """Apply ``session``'s deltas to ``mirror`` until it is at ``step``
    (passing each delta to ``hooks``)."""
    while mirror.step != step:
        delta = session.next_delta(timeout=3.0)
        mirror.apply(delta)
        for hook in hooks:
            hook(delta)
    return mirror


def vehicle_ordinal(info):
    m = VEHICLE_ID.match(info.vehicle_id)
    assert m, info.vehicle_id
    return int(m.group(1))


def assert_rejected(result, reason, message_start=None):
    assert result.status == CommandStatus.Rejected and result.reason == reason, result
    if message_start is not None:
        assert result.message.startswith(message_start), result
    return result


def on_loop(x, y, tol=0.02):
    """The corridor's road is the 50 m square (0,0)-(50,50)."""
    inside = -tol <= x <= 50 + tol and -tol <= y <= 50 + tol
    edge = min(abs(x), abs(x - 50)) <= tol or min(abs(y), abs(y - 50)) <= tol
    return inside and edge


def eid(e):
    return EntityId(*e)
