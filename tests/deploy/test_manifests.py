"""deploy/: every Kubernetes and Agones manifest parses and hangs together.

No schema validator for Kubernetes is packaged in Debian 12 (kubeconform and
kubeval are not; yamllint only checks YAML style), and there is no cluster
here, so these are structural checks of the fields Bustle depends on: kinds
and API versions, the image's environment contract (every BUSTLE_* variable is
one the server or the entrypoint reads; no flag overrides BUSTLE_BIND; a
non-loopback bind carries a token), named ports behind probes and Services,
/healthz for liveness and /readyz for readiness on the metrics port, volumes
for every mount, the image's uid as runAsUser and fsGroup, resource requests,
and the Agones GameServer fields. What needs a cluster is in deploy/README.md.
"""

import os
import pathlib
import re
import subprocess

import pytest
import yaml

REPO = pathlib.Path(os.environ.get("BUSTLE_REPO_DIR", pathlib.Path(__file__).resolve().parents[2]))
DEPLOY = REPO / "deploy"
MANIFESTS = sorted(p for p in DEPLOY.rglob("*.yaml"))

API_VERSIONS = {
    "StatefulSet": "apps/v1",
    "Deployment": "apps/v1",
    "Service": "v1",
    "PersistentVolumeClaim": "v1",
    "Kustomization": "kustomize.config.k8s.io/v1beta1",
    "Fleet": "agones.dev/v1",
    "GameServer": "agones.dev/v1",
    "GameServerAllocation": "allocation.agones.dev/v1",
}

# Read by tools/container/entrypoint.sh, not by bustle-server.
CONTAINER_ONLY_ENV = {"BUSTLE_TOKEN_FILE", "BUSTLE_RECORD_DIR"}
# Issue 14's server side (metrics endpoint, final checkpoint at SIGTERM), on
# its own branch: accepted here until bustle-server --help lists them.
# The only flag a manifest passes: everything else is an environment variable.
ALLOWED_ARGS = {"--agones"}


def documents():
    for path in MANIFESTS:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                yield path, doc


DOCS = list(documents())


def docs_of(kind):
    return [(p, d) for p, d in DOCS if d.get("kind") == kind]


def dockerfile():
    return (REPO / "Dockerfile").read_text()


def image_uid():
    m = re.search(r"^USER\s+(\d+)(?::(\d+))?\s*$", dockerfile(), re.M)
    assert m, "the Dockerfile must set USER to a numeric uid[:gid]"
    return int(m.group(1)), int(m.group(2) or m.group(1))


def image_env():
    """The ENV defaults of the Dockerfile's last stage."""
    last = dockerfile().split("\nFROM ")[-1]
    env = {}
    for block in re.findall(r"^ENV\s+((?:.*\\\n)*.*)$", last, re.M):
        for k, v in re.findall(r"(\w+)=(\S+)", block.replace("\\\n", " ")):
            env[k] = v
    return env


def server_env_names():
    """BUSTLE_* variables bustle-server documents in --help ([BUSTLE_X])."""
    binary = os.environ.get("BUSTLE_SERVER_BIN")
    if binary:
        out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10)
        text = out.stdout + out.stderr
    else:  # running the file alone: the configuration table of docs/operations.md
        text = (REPO / "docs" / "operations.md").read_text()
    names = set(re.findall(r"\b(BUSTLE_[A-Z0-9_]+)\b", text))
    assert "BUSTLE_BIND" in names and "BUSTLE_PORT" in names, "server --help lists no BUSTLE_* variables"
    return names


def pod_specs():
    """(path, owner kind/name, pod spec, pod template metadata, GameServer spec or None)."""
    for path, d in DOCS:
        kind, name = d["kind"], d.get("metadata", {}).get("name")
        if kind == "StatefulSet":
            t = d["spec"]["template"]
            yield path, f"{kind}/{name}", t["spec"], t["metadata"], None
        elif kind == "GameServer":
            t = d["spec"]["template"]
            yield path, f"{kind}/{name}", t["spec"], t["metadata"], d["spec"]
        elif kind == "Fleet":
            gs = d["spec"]["template"]["spec"]
            t = gs["template"]
            yield path, f"{kind}/{name}", t["spec"], t["metadata"], gs


POD_SPECS = list(pod_specs())
POD_IDS = [owner for _, owner, *_ in POD_SPECS]


def bustle_container(spec):
    found = [c for c in spec["containers"] if c["name"] == "bustle"]
    assert len(found) == 1, "exactly one container named bustle"
    return found[0]


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def env_value(container, name, default=None):
    e = env_of(container).get(name)
    return default if e is None else e.get("value")


def named_ports(container):
    return {p["name"]: p["containerPort"] for p in container.get("ports", [])}


def test_manifests_exist():
    kinds = {d["kind"] for _, d in DOCS}
    assert {"StatefulSet", "Service", "Fleet", "GameServerAllocation", "Deployment"} <= kinds, kinds


@pytest.mark.parametrize("path,doc", DOCS, ids=[f"{p.relative_to(DEPLOY)}:{d.get('kind')}" for p, d in DOCS])
def test_kind_api_version_and_name(path, doc):
    kind = doc.get("kind")
    assert kind in API_VERSIONS, f"{path}: unexpected kind {kind!r}"
    assert doc.get("apiVersion") == API_VERSIONS[kind], f"{path}: {kind} needs apiVersion {API_VERSIONS[kind]}"
    if kind != "Kustomization":
        meta = doc.get("metadata") or {}
        assert meta.get("name") or meta.get("generateName"), f"{path}: {kind} without metadata.name"


def test_kustomization_resources_exist():
    for path, k in docs_of("Kustomization"):
        for r in k["resources"]:
            assert (path.parent / r).is_file(), f"{path}: resource {r} missing"


@pytest.mark.parametrize("path,owner,spec,meta,gs", POD_SPECS, ids=POD_IDS)
def test_environment_contract(path, owner, spec, meta, gs):
    c = bustle_container(spec)
    known = server_env_names() | CONTAINER_ONLY_ENV
    for name in env_of(c):
        if name.startswith("BUSTLE_"):
            assert name in known, f"{owner}: {name} is read by neither bustle-server nor the entrypoint"
    assert "command" not in c, f"{owner}: keep the image's entrypoint (it checks the token)"
    for a in c.get("args", []):
        assert a in ALLOWED_ARGS, f"{owner}: arg {a!r}; settings go in env (a flag would override BUSTLE_*)"
    bind = env_value(c, "BUSTLE_BIND", image_env().get("BUSTLE_BIND", "127.0.0.1"))
    if not bind.startswith("127."):
        env = env_of(c)
        assert "BUSTLE_TOKEN" in env or "BUSTLE_TOKEN_FILE" in env, \
            f"{owner}: binds {bind} without BUSTLE_TOKEN or BUSTLE_TOKEN_FILE (the server refuses)"
    if "BUSTLE_TOKEN" in env_of(c):
        assert "valueFrom" in env_of(c)["BUSTLE_TOKEN"], f"{owner}: BUSTLE_TOKEN must come from a Secret"


@pytest.mark.parametrize("path,owner,spec,meta,gs", POD_SPECS, ids=POD_IDS)
def test_ports_and_probes(path, owner, spec, meta, gs):
    c = bustle_container(spec)
    ports = named_ports(c)
    defaults = image_env()
    metrics_port = int(env_value(c, "BUSTLE_METRICS_BIND", defaults["BUSTLE_METRICS_BIND"]).rsplit(":", 1)[1])
    game_port = int(env_value(c, "BUSTLE_PORT", defaults["BUSTLE_PORT"]))
    assert ports.get("metrics") == metrics_port, f"{owner}: container port 'metrics' must be {metrics_port}"
    if gs is None:
        assert ports.get("game") == game_port, f"{owner}: container port 'game' must be {game_port}"
    else:  # Agones declares the game port in the GameServer spec
        game = [p for p in gs["ports"] if p["name"] == "game"]
        assert len(game) == 1 and game[0]["containerPort"] == game_port, f"{owner}: Agones port 'game'"
        assert game[0].get("portPolicy", "Dynamic") in {"Dynamic", "Static", "Passthrough", "None"}
        assert game[0].get("protocol", "UDP") == "TCP", f"{owner}: Bustle speaks TCP (Agones defaults to UDP)"
    annotations = meta.get("annotations", {})
    if annotations.get("prometheus.io/scrape") == "true":
        assert int(annotations["prometheus.io/port"]) == metrics_port
        assert annotations.get("prometheus.io/path", "/metrics") == "/metrics"
    wanted = {"livenessProbe": "/healthz", "startupProbe": "/healthz", "readinessProbe": "/readyz"}
    assert "livenessProbe" in c, f"{owner}: no liveness probe"
    if gs is None:
        assert "readinessProbe" in c, f"{owner}: no readiness probe"
    for probe, path_ in wanted.items():
        if probe in c:
            get = c[probe]["httpGet"]
            assert get["path"] == path_, f"{owner}: {probe} must use {path_}"
            assert get["port"] in ("metrics", metrics_port), f"{owner}: {probe} on the metrics port"


@pytest.mark.parametrize("path,owner,spec,meta,gs", POD_SPECS, ids=POD_IDS)
def test_volumes_security_and_resources(path, owner, spec, meta, gs):
    c = bustle_container(spec)
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    if owner.startswith("StatefulSet/"):
        sts = next(d for _, d in docs_of("StatefulSet") if f"StatefulSet/{d['metadata']['name']}" == owner)
        for t in sts["spec"].get("volumeClaimTemplates", []):
            volumes[t["metadata"]["name"]] = {"claim": t}
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    for mount_path, name in mounts.items():
        assert name in volumes, f"{owner}: mount {mount_path} uses undefined volume {name}"
    assert "/var/lib/bustle" in mounts, f"{owner}: the image's VOLUME /var/lib/bustle is not mounted"
    db = env_value(c, "BUSTLE_SNAPSHOT_DB", image_env()["BUSTLE_SNAPSHOT_DB"])
    assert db.startswith("/var/lib/bustle/"), f"{owner}: snapshots outside the data volume: {db}"
    token_file = env_value(c, "BUSTLE_TOKEN_FILE")
    if token_file:
        d = str(pathlib.PurePosixPath(token_file).parent)
        assert d in mounts and "secret" in volumes[mounts[d]], f"{owner}: {token_file} not from a Secret volume"
    if env_value(c, "BUSTLE_CONFIG"):
        d = str(pathlib.PurePosixPath(env_value(c, "BUSTLE_CONFIG")).parent)
        assert d in mounts, f"{owner}: BUSTLE_CONFIG {env_value(c, 'BUSTLE_CONFIG')} is not on a mounted volume"
    uid, gid = image_uid()
    sc = spec.get("securityContext", {})
    assert sc.get("runAsNonRoot") is True
    assert sc.get("runAsUser") == uid and sc.get("fsGroup") == gid, \
        f"{owner}: runAsUser/fsGroup must be the image's {uid}:{gid} so the volume is writable"
    csc = c.get("securityContext", {})
    if csc.get("readOnlyRootFilesystem"):
        assert "/tmp" in mounts, f"{owner}: read-only root needs a writable /tmp (SQLite temp files)"
    res = c.get("resources", {})
    assert {"cpu", "memory"} <= set(res.get("requests", {})), f"{owner}: cpu and memory requests"
    assert "memory" in res.get("limits", {}), f"{owner}: a memory limit"
    assert "cpu" not in res.get("limits", {}), f"{owner}: a CPU limit throttles steps past their deadline"
    assert spec.get("terminationGracePeriodSeconds", 30) >= 10, f"{owner}: time for the final checkpoint"


@pytest.mark.parametrize("path,owner,spec,meta,gs", [s for s in POD_SPECS if s[4] is not None],
                         ids=[s[1] for s in POD_SPECS if s[4] is not None])
def test_agones_game_servers(path, owner, spec, meta, gs):
    assert gs.get("container") == "bustle", f"{owner}: spec.container names the game server container"
    c = bustle_container(spec)
    assert "--agones" in c.get("args", []), f"{owner}: without --agones the server never calls SDK Ready"
    health = gs.get("health", {})
    assert health.get("disabled") is not True, f"{owner}: Agones health checking must stay on"
    assert health.get("periodSeconds", 5) * health.get("failureThreshold", 3) >= 10


def gateway_env_names():
    """BUSTLE_* variables bustle-gateway documents in --help (Env:BUSTLE_X)."""
    binary = os.environ.get("BUSTLE_GATEWAY_BIN")
    if binary:
        out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10)
        names = set(re.findall(r"Env:(BUSTLE_[A-Z0-9_]+)", out.stdout))
    else:  # running the file alone: the flags docs/districts.md names
        names = {"BUSTLE_CONFIG", "BUSTLE_DISTRICTS", "BUSTLE_PORT", "BUSTLE_BIND", "BUSTLE_TOKEN",
                 "BUSTLE_DISTRICT_TOKEN", "BUSTLE_MAX_CLIENTS", "BUSTLE_RATE", "BUSTLE_LOG_LEVEL"}
    assert {"BUSTLE_CONFIG", "BUSTLE_DISTRICTS"} <= names, names
    return names


GATEWAYS = [(p, d) for p, d in docs_of("Deployment")
            if any(c["name"] == "gateway" for c in d["spec"]["template"]["spec"]["containers"])]


def test_a_gateway_deployment_serves_the_district_city():
    """The gateway: stateless (a Deployment of 2 or more), bustle-gateway run
    through the image's entrypoint, only variables it reads, a token from a
    Secret for its non-loopback bind, the city file on a mounted volume, the
    districts' addresses given, /healthz and /readyz on its metrics port."""
    assert GATEWAYS, "no gateway Deployment"
    known = gateway_env_names()
    uid, _ = image_uid()
    for path, d in GATEWAYS:
        spec = d["spec"]["template"]["spec"]
        c = next(c for c in spec["containers"] if c["name"] == "gateway")
        assert d["spec"]["replicas"] >= 2, f"{path}: a stateless gateway runs several replicas"
        assert c.get("args", [None])[0] == "bustle-gateway" and "command" not in c, path
        env = env_of(c)
        for name in env:
            assert name in known, f"{path}: {name} is not read by bustle-gateway"
        assert "valueFrom" in env["BUSTLE_TOKEN"], f"{path}: BUSTLE_TOKEN must come from a Secret"
        assert "BUSTLE_DISTRICTS" in env, f"{path}: where the districts are"
        mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
        assert str(pathlib.PurePosixPath(env_value(c, "BUSTLE_CONFIG")).parent) in mounts, path
        assert named_ports(c).get("game") == int(env_value(c, "BUSTLE_PORT")), path
        metrics = int(env_value(c, "BUSTLE_METRICS_BIND").rsplit(":", 1)[1])
        assert named_ports(c).get("metrics") == metrics, path
        for probe, where in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"),
                             ("readinessProbe", "/readyz")):
            assert c[probe]["httpGet"] == {"path": where, "port": "metrics"}, f"{path}: {probe}"
        assert spec["securityContext"]["runAsUser"] == uid, path
        assert "cpu" not in c["resources"].get("limits", {}), f"{path}: no CPU limit"


def test_services_select_the_pods_and_name_their_ports():
    templates = [(meta.get("labels", {}), bustle_container(spec))
                 for _, owner, spec, meta, gs in POD_SPECS if gs is None]
    templates += [(d["spec"]["template"]["metadata"].get("labels", {}), c) for _, d in GATEWAYS
                  for c in d["spec"]["template"]["spec"]["containers"]]
    for path, svc in docs_of("Service"):
        sel = svc["spec"]["selector"]
        matching = [c for labels, c in templates if all(labels.get(k) == v for k, v in sel.items())]
        assert matching, f"{path}: Service {svc['metadata']['name']} selects no pod template"
        for p in svc["spec"]["ports"]:
            for c in matching:
                assert p["targetPort"] in named_ports(c), \
                    f"{path}: targetPort {p['targetPort']} is not a named port of the container"
    for path, sts in docs_of("StatefulSet"):
        gov = [s for _, s in docs_of("Service") if s["metadata"]["name"] == sts["spec"]["serviceName"]]
        assert gov and gov[0]["spec"].get("clusterIP") == "None", \
            f"{path}: serviceName must name a headless Service"
        assert sts["spec"]["replicas"] == 1, f"{path}: one instance per city (a second replica is a second city)"


def test_district_fleets_listen_for_neighbours_and_are_never_evicted():
    """A Fleet whose servers take their district from the allocation: an
    Agones port for the district links on the container port they listen
    on, and eviction.safe Never (a district is a long session)."""
    fleets = [(p, owner, spec, gs) for p, owner, spec, meta, gs in POD_SPECS
              if gs is not None and env_value(bustle_container(spec), "BUSTLE_AGONES_DISTRICT") == "1"]
    assert fleets, "no district Fleet (BUSTLE_AGONES_DISTRICT=1)"
    for path, owner, spec, gs in fleets:
        listen = env_value(bustle_container(spec), "BUSTLE_DISTRICT_LISTEN", "")
        links = [p for p in gs["ports"] if p["name"] == "links"]
        assert links and listen.endswith(f":{links[0]['containerPort']}"), \
            f"{owner}: the links port and BUSTLE_DISTRICT_LISTEN ({listen}) disagree"
        assert gs.get("eviction", {}).get("safe") == "Never", f"{owner}: eviction.safe must be Never"
    for path, a in docs_of("GameServerAllocation"):
        labels = a["spec"].get("metadata", {}).get("labels", {})
        if "bustle.dev/district" in labels:
            peers = a["spec"]["metadata"].get("annotations", {}).get("bustle.dev/district-peers", "")
            assert re.fullmatch(r"(\w+=[\w.:]+:\d+)(,\w+=[\w.:]+:\d+)*", peers), f"{path}: peers {peers!r}"


def test_allocations_select_a_fleet():
    fleets = {d["metadata"]["name"] for _, d in docs_of("Fleet")}
    for path, a in docs_of("GameServerAllocation"):
        for s in a["spec"]["selectors"]:
            assert s["matchLabels"].get("agones.dev/fleet") in fleets, f"{path}: no such Fleet"


def test_dockerfile_contract():
    text = dockerfile()
    last = text.split("\nFROM ")[-1]
    env = image_env()
    assert re.search(r"^STOPSIGNAL\s+SIGTERM\s*$", last, re.M)
    exposed = set(re.findall(r"(\d+)/tcp", " ".join(re.findall(r"^EXPOSE\s+(.*)$", last, re.M))))
    assert {env["BUSTLE_PORT"], env["BUSTLE_METRICS_BIND"].rsplit(":", 1)[1]} <= exposed, exposed
    assert re.search(r"^VOLUME\s+/var/lib/bustle\s*$", last, re.M)
    assert env["BUSTLE_SNAPSHOT_DB"].startswith("/var/lib/bustle/")
    hc = re.search(r"^HEALTHCHECK(?:.*\\\n)*.*$", last, re.M).group(0)
    assert "healthz" in hc and "bustle status" not in hc, "HEALTHCHECK probes /healthz, not a protocol session"
    entry = re.search(r"^ENTRYPOINT\s+(.*)$", last, re.M).group(1)
    assert "--bind" not in entry and "--port" not in entry and not re.search(r"^CMD\s", last, re.M), \
        "no flag in ENTRYPOINT/CMD may override BUSTLE_BIND/BUSTLE_PORT"
    for label in ("title", "description", "version", "base.name"):
        assert f"org.opencontainers.image.{label}=" in last, f"OCI label {label}"
    build = (REPO / "tools/container/build-image.sh").read_text()
    for label in ("revision", "created"):  # per build, on the command line
        assert f'--label "org.opencontainers.image.{label}=' in build, f"OCI label {label}"
    assert "install-deps.sh" in text.split("\nFROM ")[1], "the build stage uses tools/install-deps.sh"
