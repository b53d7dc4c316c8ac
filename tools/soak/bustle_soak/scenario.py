"""Soak scenario files: TOML (``.toml``) or JSON (``.json``), validated into
plain dataclasses. Every error names the field (``clients[1].budgets.actors:
must be an integer in [0, 4096], got 5000``) and the file.

The format is documented in docs/testing.md (Soak driver) and in
``tools/soak/scenarios/*.toml``, which use every section.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional


class ScenarioError(ValueError):
    """A scenario file that cannot be run; the message names the field."""


#: Commands an operator client can issue, with the parameters each accepts.
COMMAND_KINDS: Dict[str, Dict[str, type]] = {
    "spawn": {"zones": list, "priorities": list},
    "despawn": {},
    "garage_request": {"garage": str, "prototype": str, "lane": str, "priority": int},
    "set_hour": {"start": float, "step_h": float},
    "set_time_scale": {"values": list},
    "set_target": {"min": int, "max": int},
    "lifecycle_batch": {"spawns": int, "despawns": int, "zones": list},
    "checkpoint_restore": {},
    "save_load": {},
    "query": {},
}
CLOCKS = ("realtime", "fast")
ROLES = ("viewer", "operator")
KINDS = ("pedestrian", "vehicle")
BUDGET_LIMITS = {"actors": 4096, "instances": 65536, "markers": 1048576}


@dataclass
class ServerSpec:
    start: bool = True
    config: Optional[Path] = None  # None: the embedded default city
    clock: str = "realtime"
    rate_hz: Optional[int] = None
    seed: int = 1
    args: List[str] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 0
    token: Optional[str] = None
    pid: Optional[int] = None  # sample /proc/PID of a server the driver did not start


@dataclass
class ObserverSpec:
    x_m: float
    y_m: float
    z_m: float = 0.0
    heading_rad: Optional[float] = None
    radius_m: float = 150.0


@dataclass
class ClientSpec:
    name: str
    role: str = "viewer"
    count: int = 1
    subscribe: bool = True
    kinds: Optional[List[str]] = None
    observers: List[ObserverSpec] = field(default_factory=list)
    budgets: Optional[Dict[str, int]] = None
    #: alternative observers for update_interest / resubscribe (cycled)
    alt_observers: List[ObserverSpec] = field(default_factory=list)
    resubscribe_every_s: float = 0.0
    update_interest_every_s: float = 0.0
    reconnect_every_s: float = 0.0
    read_delay_ms: float = 0.0  # slow reader: sleep before each delta
    stall_every_s: float = 0.0  # slow reader: stop reading for stall_s now and then
    stall_s: float = 0.0
    allow_step_gaps: bool = False  # coalesced deltas accepted (counted)

    @property
    def whole_city(self) -> bool:
        """Receives every entity: no observers, every kind, budgets never limiting."""
        return self.subscribe and not self.observers and self.kinds is None and self.budgets is None


@dataclass
class CommandSpec:
    kind: str
    rate_hz: float
    client: Optional[str] = None  # operator client (group) name; None: the first operator
    first_s: Optional[float] = None  # when the first one goes out; None: drawn from the rate
    params: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Limits:
    command_deadline_s: float = 5.0
    stream_stall_s: float = 5.0
    quiesce_timeout_s: float = 15.0
    max_step_gap: int = 100  # steps one delta may skip (the network thread sends the latest step)
    rss_mib_max: Optional[float] = None
    rss_growth_mib_max: Optional[float] = None
    fds_max: Optional[int] = None
    step_cpu_ms_max: Optional[float] = None  # server CPU time per step, per sample interval


@dataclass
class Scenario:
    name: str
    path: Path
    duration_s: float
    seed: int
    server: ServerSpec
    clients: List[ClientSpec]
    commands: List[CommandSpec]
    limits: Limits
    sample_every_s: float = 1.0
    stats_every_s: float = 1.0
    description: str = ""


def _where(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _Reader:
    """Reads one table, checking types; remembers unknown keys."""

    def __init__(self, table: Any, path: str):
        if not isinstance(table, dict):
            raise ScenarioError(f"{path or 'scenario'}: must be a table/object, got {_kind(table)}")
        self.table = table
        self.path = path
        self.used: set = set()

    def get(self, key: str, typ, default=None, *, required=False, lo=None, hi=None, choices=None):
        self.used.add(key)
        where = _where(self.path, key)
        if key not in self.table:
            if required:
                raise ScenarioError(f"{where}: required")
            return default
        value = self.table[key]
        if typ is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if typ is bool:
            ok = isinstance(value, bool)
        elif typ in (int, float):
            ok = isinstance(value, typ) and not isinstance(value, bool)
        else:
            ok = isinstance(value, typ)
        if not ok:
            raise ScenarioError(f"{where}: must be {_typename(typ)}, got {_kind(value)}")
        if lo is not None and value < lo or hi is not None and value > hi:
            lo_s = "" if lo is None else lo
            hi_s = "" if hi is None else hi
            raise ScenarioError(f"{where}: must be in [{lo_s}, {hi_s}], got {value}")
        if choices is not None and value not in choices:
            raise ScenarioError(f"{where}: must be one of {', '.join(choices)}, got {value!r}")
        return value

    def done(self):
        unknown = sorted(set(self.table) - self.used)
        if unknown:
            raise ScenarioError(f"{_where(self.path, unknown[0])}: unknown field "
                                f"(known: {', '.join(sorted(self.used))})")


def _typename(typ) -> str:
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(typ, typ.__name__)


def _kind(value) -> str:
    if isinstance(value, bool):
        return f"boolean {value}"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {value!r}"
    return type(value).__name__


def _observers(value, path: str) -> List[ObserverSpec]:
    if not isinstance(value, list):
        raise ScenarioError(f"{path}: must be a list of observers, got {_kind(value)}")
    if len(value) > 16:
        raise ScenarioError(f"{path}: at most 16 observers per client, got {len(value)}")
    out = []
    for i, o in enumerate(value):
        r = _Reader(o, f"{path}[{i}]")
        spec = ObserverSpec(
            x_m=r.get("x_m", float, required=True),
            y_m=r.get("y_m", float, required=True),
            z_m=r.get("z_m", float, 0.0),
            heading_rad=r.get("heading_rad", float),
            radius_m=r.get("radius_m", float, 150.0))
        if not 0 < spec.radius_m <= 100000:
            raise ScenarioError(f"{path}[{i}].radius_m: must be in (0, 100000] metres, "
                                f"got {spec.radius_m}")
        r.done()
        out.append(spec)
    return out


def _server(value, base: Path) -> ServerSpec:
    r = _Reader(value, "server")
    s = ServerSpec()
    s.start = r.get("start", bool, True)
    config = r.get("config", str)
    if config is not None and config != "embedded":
        p = Path(config)
        candidates = [p] if p.is_absolute() else [base / p, Path.cwd() / p]
        for c in candidates:
            if c.is_file():
                s.config = c.resolve()
                break
        else:
            raise ScenarioError(f"server.config: no file {config!r} (looked in "
                                f"{', '.join(str(c) for c in candidates)})")
    s.clock = r.get("clock", str, "realtime", choices=CLOCKS)
    s.rate_hz = r.get("rate_hz", int, None, lo=1, hi=1000)
    s.seed = r.get("seed", int, 1, lo=0)
    s.args = r.get("args", list, [])
    for i, a in enumerate(s.args):
        if not isinstance(a, str):
            raise ScenarioError(f"server.args[{i}]: must be a string, got {_kind(a)}")
    s.host = r.get("host", str, "127.0.0.1")
    s.port = r.get("port", int, 0 if s.start else 7777, lo=0, hi=65535)
    s.token = r.get("token", str)
    s.pid = r.get("pid", int, None, lo=1)
    if not s.start and s.port == 0:
        raise ScenarioError("server.port: must name the running server's port when start = false")
    if s.start and s.pid is not None:
        raise ScenarioError("server.pid: only for a server the driver does not start (start = false)")
    r.done()
    return s


def _client(value, i: int) -> ClientSpec:
    path = f"clients[{i}]"
    r = _Reader(value, path)
    c = ClientSpec(name=r.get("name", str, required=True))
    if not c.name or not all(ch.isalnum() or ch in "-_." for ch in c.name):
        raise ScenarioError(f"{path}.name: 1+ characters of [A-Za-z0-9._-], got {c.name!r}")
    c.role = r.get("role", str, "viewer", choices=ROLES)
    c.count = r.get("count", int, 1, lo=1, hi=64)
    c.subscribe = r.get("subscribe", bool, True)
    kinds = r.get("kinds", list)
    if kinds is not None:
        for j, k in enumerate(kinds):
            if k not in KINDS:
                raise ScenarioError(f"{path}.kinds[{j}]: must be one of {', '.join(KINDS)}, got {k!r}")
        c.kinds = list(kinds)
    c.observers = _observers(r.get("observers", list, []), f"{path}.observers")
    c.alt_observers = _observers(r.get("alt_observers", list, []), f"{path}.alt_observers")
    budgets = r.get("budgets", dict)
    if budgets is not None:
        br = _Reader(budgets, f"{path}.budgets")
        c.budgets = {k: br.get(k, int, None, lo=0, hi=hi) for k, hi in BUDGET_LIMITS.items()}
        c.budgets = {k: v for k, v in c.budgets.items() if v is not None}
        br.done()
    c.resubscribe_every_s = r.get("resubscribe_every_s", float, 0.0, lo=0)
    c.update_interest_every_s = r.get("update_interest_every_s", float, 0.0, lo=0)
    c.reconnect_every_s = r.get("reconnect_every_s", float, 0.0, lo=0)
    c.read_delay_ms = r.get("read_delay_ms", float, 0.0, lo=0, hi=10000)
    c.stall_every_s = r.get("stall_every_s", float, 0.0, lo=0)
    c.stall_s = r.get("stall_s", float, 0.0, lo=0, hi=60)
    c.allow_step_gaps = r.get("allow_step_gaps", bool, False)
    if not c.subscribe:
        for key in ("resubscribe_every_s", "update_interest_every_s", "read_delay_ms", "stall_every_s"):
            if getattr(c, key):
                raise ScenarioError(f"{path}.{key}: needs subscribe = true")
    if c.update_interest_every_s and not c.alt_observers and not c.observers:
        raise ScenarioError(f"{path}.update_interest_every_s: needs observers or alt_observers "
                            "to switch between")
    r.done()
    return c


def _command(value, i: int, operators: List[str]) -> CommandSpec:
    path = f"commands[{i}]"
    r = _Reader(value, path)
    kind = r.get("kind", str, required=True, choices=tuple(COMMAND_KINDS))
    rate = r.get("rate_hz", float, required=True, lo=0.001, hi=100.0)
    client = r.get("client", str)
    first_s = r.get("first_s", float, None, lo=0)
    if client is not None and client not in operators:
        raise ScenarioError(f"{path}.client: {client!r} is not an operator client "
                            f"(operators: {', '.join(operators) or 'none'})")
    params = {}
    for key, typ in COMMAND_KINDS[kind].items():
        v = r.get(key, typ)
        if v is not None:
            params[key] = v
    if kind == "garage_request":
        for key in ("garage", "prototype", "lane"):
            if key not in params:
                raise ScenarioError(f"{path}.{key}: required for garage_request")
    if kind == "set_target" and params.get("min", 0) > params.get("max", 1 << 30):
        raise ScenarioError(f"{path}.min: must not exceed max")
    for key in ("spawns", "despawns"):
        if key in params and not 0 <= params[key] <= 128:
            raise ScenarioError(f"{path}.{key}: must be in [0, 128], got {params[key]}")
    if kind == "lifecycle_batch" and params.get("spawns", 2) + params.get("despawns", 1) == 0:
        raise ScenarioError(f"{path}: a batch needs at least one op (spawns + despawns > 0)")
    r.done()
    return CommandSpec(kind=kind, rate_hz=rate, client=client, first_s=first_s, params=params)


def _limits(value) -> Limits:
    r = _Reader(value, "limits")
    lim = Limits()
    lim.command_deadline_s = r.get("command_deadline_s", float, 5.0, lo=0.1, hi=600)
    lim.stream_stall_s = r.get("stream_stall_s", float, 5.0, lo=0.5, hi=600)
    lim.quiesce_timeout_s = r.get("quiesce_timeout_s", float, 15.0, lo=1, hi=600)
    lim.max_step_gap = r.get("max_step_gap", int, 100, lo=0, hi=1 << 30)
    lim.rss_mib_max = r.get("rss_mib_max", float, None, lo=1)
    lim.rss_growth_mib_max = r.get("rss_growth_mib_max", float, None, lo=0)
    lim.fds_max = r.get("fds_max", int, None, lo=1)
    lim.step_cpu_ms_max = r.get("step_cpu_ms_max", float, None, lo=0)
    r.done()
    return lim


def parse(data: Any, path: Path) -> Scenario:
    r = _Reader(data, "")
    name = r.get("name", str, path.stem)
    description = r.get("description", str, "")
    duration = r.get("duration_s", float, required=True, lo=1, hi=7 * 24 * 3600)
    seed = r.get("seed", int, 1, lo=0)
    server = _server(r.get("server", dict, {}), path.parent)
    raw_clients = r.get("clients", list, required=True)
    if not raw_clients:
        raise ScenarioError("clients: at least one client")
    clients = [_client(c, i) for i, c in enumerate(raw_clients)]
    seen = set()
    for i, c in enumerate(clients):
        if c.name in seen:
            raise ScenarioError(f"clients[{i}].name: {c.name!r} used twice")
        seen.add(c.name)
    if sum(c.count for c in clients) > 60:
        raise ScenarioError("clients: at most 60 connections in all (the server's per-address cap is 64)")
    operators = [c.name for c in clients if c.role == "operator"]
    commands = [_command(c, i, operators) for i, c in enumerate(r.get("commands", list, []))]
    if commands and not operators:
        raise ScenarioError("commands: need at least one client with role = \"operator\"")
    limits = _limits(r.get("limits", dict, {}))
    sample = r.get("sample_every_s", float, 1.0, lo=0.1, hi=3600)
    stats = r.get("stats_every_s", float, 1.0, lo=0.1, hi=3600)
    r.done()
    return Scenario(name=name, path=path, duration_s=duration, seed=seed, server=server,
                    clients=clients, commands=commands, limits=limits, sample_every_s=sample,
                    stats_every_s=stats, description=description)


def load(path) -> Scenario:
    """Read and validate a scenario file (``.toml`` or ``.json``)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(raw.decode("utf-8"))
        elif path.suffix == ".json":
            data = json.loads(raw)
        else:
            raise ScenarioError(f"{path}: unknown scenario format {path.suffix!r} (use .toml or .json)")
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path}: not valid {path.suffix[1:].upper()}: {exc}") from None
    try:
        return parse(data, path)
    except ScenarioError as exc:
        raise ScenarioError(f"{path}: {exc}") from None
