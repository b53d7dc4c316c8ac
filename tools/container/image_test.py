#!/usr/bin/python3
"""Container smoke test of the Bustle image (`make image-test`, never part of
`make test`). Needs a container engine (tools/install-deps.sh --container) and
the host build's Python client (`make build`, for build/release/python).

  0. the image carries the OCI labels and STOPSIGNAL SIGTERM;
  1. a start without BUSTLE_TOKEN fails with a clear message, and a start
     whose bind fails (with --record) fails in the server; both leave the
     volume empty;
  2. the image starts with a fresh volume, manual clock (BUSTLE_CLOCK), game
     and metrics ports published on loopback; the test waits for readiness
     (/readyz, or the game port where the server has no metrics endpoint),
     runs the HEALTHCHECK command, checks the server runs as uid 10001, connects the Python client as operator,
     steps 20, checkpoints to the volume, steps 10 more;
  3. SIGTERM (the engine's stop, STOPSIGNAL): the server must exit 0 quickly;
  4. a new container on the same volume restores the checkpoint: same step,
     same digest, and the same digest again 10 steps later;
  5. with --checkpoint-on-exit support in the server (BUSTLE_CHECKPOINT_ON_EXIT),
     the checkpoint written at SIGTERM restores to the digest at that moment.

Prints one line per phase and a summary with timings; exits non-zero on the
first failure. The engine command comes from tools/container/engine.sh via the
environment (BUSTLE_ENGINE_RUN, BUSTLE_RUN_OPTS; see image-test.sh).
"""

import json
import os
import secrets
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request

from bustle_client import JobState, Session

IMAGE = os.environ.get("IMAGE", "bustle:latest")
ENGINE = shlex.split(os.environ.get("BUSTLE_ENGINE_RUN", "podman"))
RUN_OPTS = shlex.split(os.environ.get("BUSTLE_RUN_OPTS", ""))
TAG = f"bustle-image-test-{os.getpid()}"
VOLUME = f"{TAG}-data"
CHECKPOINT = "image-test"
ON_EXIT = "on-exit"
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20

T0 = time.monotonic()


def log(msg):
    print(f"image-test [{time.monotonic() - T0:6.1f} s] {msg}", flush=True)


class Failed(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failed(msg)


def engine(*args, check_rc=True, capture=True, timeout=120):
    cmd = [*ENGINE, *args]
    p = subprocess.run(cmd, capture_output=capture, text=True, timeout=timeout)
    if check_rc and p.returncode != 0:
        raise Failed(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    return p


def run_container(name, env, detach=True, extra=()):
    args = ["run", *RUN_OPTS, "--name", name, "-v", f"{VOLUME}:/var/lib/bustle"]
    if detach:
        args += ["-d", "-p", "127.0.0.1::7777", "-p", "127.0.0.1::9100"]
    for k, v in env.items():
        args += ["-e", f"{k}={v}"]
    return engine(*args, *extra, IMAGE, check_rc=False)


def host_port(name, port):
    out = engine("port", name, f"{port}/tcp").stdout.strip().splitlines()
    check(out, f"{name}: port {port} not published")
    return int(out[0].rsplit(":", 1)[1])


def server_has(flag):
    """Whether the image's bustle-server knows a flag (its --help lists it)."""
    p = engine("run", *RUN_OPTS, "--rm", "--entrypoint", "bustle-server", IMAGE, "--help",
               check_rc=False)
    return flag in p.stdout + p.stderr


def http_status(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return None


def logs(name):
    p = engine("logs", name, check_rc=False)
    return p.stdout + p.stderr


def state(name):
    out = engine("inspect", "--format", "{{json .State}}", name).stdout
    return json.loads(out)


def wait_ready(name, metrics):
    """Until /readyz answers 200 (metrics endpoint) or the game port takes a
    protocol handshake (server without one)."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    game = host_port(name, 7777)
    mport = host_port(name, 9100) if metrics else None
    while time.monotonic() < deadline:
        st = state(name)
        check(st.get("Running"), f"{name} stopped while starting (exit {st.get('ExitCode')}):\n{logs(name)}")
        if metrics:
            if http_status(f"http://127.0.0.1:{mport}/readyz") == 200:
                return game, mport
        elif "listening on" in logs(name):
            try:
                with Session.connect("127.0.0.1", game, timeout=2.0) as s:
                    s.hello("image-test-probe")
                    return game, None
            except Exception:
                pass
        time.sleep(0.2)
    raise Failed(f"{name} not ready after {READY_TIMEOUT_S} s:\n{logs(name)}")


def healthcheck(name):
    """The image's HEALTHCHECK command, run by the engine inside the container."""
    if ENGINE[0] == "podman":
        p = engine("healthcheck", "run", name, check_rc=False)
    else:
        p = engine("exec", name, "bustle-probe", "healthz", check_rc=False)
    check(p.returncode == 0, f"healthcheck of {name} failed ({p.returncode}): {p.stdout}{p.stderr}")


def start(name, env, metrics):
    """Runs the image detached on the test volume; (game port, seconds to ready)."""
    t = time.monotonic()
    p = run_container(name, env)
    check(p.returncode == 0, f"run {name}: {p.stderr}")
    game, _ = wait_ready(name, metrics)
    return game, time.monotonic() - t


def job(s, result):
    check(result.accepted and result.job is not None, f"job not accepted: {result}")
    seen = [result.job] if result.job.terminal else [result.job, *s.wait_job(result, timeout=30.0)]
    return seen[-1]


def stop(name):
    """SIGTERM (the image's STOPSIGNAL) via the engine; returns seconds to exit."""
    t = time.monotonic()
    engine("stop", "-t", str(STOP_TIMEOUT_S), name, timeout=STOP_TIMEOUT_S + 30)
    took = time.monotonic() - t
    st = state(name)
    check(st.get("ExitCode") == 0,
          f"{name} exited {st.get('ExitCode')} after SIGTERM (want 0):\n{logs(name)}")
    check(took < STOP_TIMEOUT_S - 1, f"{name} took {took:.1f} s to stop: killed, not a clean SIGTERM exit")
    return took


def volume_files():
    p = engine("run", *RUN_OPTS, "--rm", "-v", f"{VOLUME}:/data", "--entrypoint", "ls", IMAGE,
               "-A", "/data")
    return sorted(p.stdout.split())


def main():
    token = secrets.token_hex(16)
    results = {}
    size = int(engine("image", "inspect", "--format", "{{.Size}}", IMAGE).stdout.strip())
    log(f"image {IMAGE}: {size / 1e6:.0f} MB ({ENGINE[0]})")
    labels = json.loads(engine("image", "inspect", "--format", "{{json .Config.Labels}}", IMAGE).stdout)
    for key in ("title", "version", "revision", "created"):
        check(labels.get(f"org.opencontainers.image.{key}"), f"image has no org.opencontainers.image.{key}")
    stop_signal = engine("image", "inspect", "--format", "{{.Config.StopSignal}}", IMAGE).stdout.strip()
    check(stop_signal == "SIGTERM", f"STOPSIGNAL {stop_signal!r}")
    metrics = server_has("--metrics-bind")
    on_exit = server_has("--checkpoint-on-exit")
    log(f"server has metrics endpoint: {metrics}; --checkpoint-on-exit: {on_exit}")
    engine("volume", "create", VOLUME)

    # 1. no token: refused before anything is written
    p = run_container(f"{TAG}-notoken", {}, detach=False)
    engine("rm", "-f", f"{TAG}-notoken", check_rc=False)
    check(p.returncode != 0, "a start without BUSTLE_TOKEN must fail")
    check("BUSTLE_TOKEN" in p.stderr, f"the refusal must name BUSTLE_TOKEN: {p.stderr!r}")
    check(volume_files() == [], f"a failed start left files on the volume: {volume_files()}")
    log(f"start without token refused (exit {p.returncode}), volume still empty")
    # a start the server itself refuses (an address not on the container):
    # neither the recording nor the snapshot store may be left behind
    p = run_container(f"{TAG}-badbind", {"BUSTLE_TOKEN": token, "BUSTLE_BIND": "10.255.255.1",
                                         "BUSTLE_RECORD": "/var/lib/bustle/rec.db"}, detach=False)
    engine("rm", "-f", f"{TAG}-badbind", check_rc=False)
    check(p.returncode != 0 and "10.255.255.1" in p.stderr, f"bind to a foreign address: {p.stderr!r}")
    check(volume_files() == [], f"a failed server start left files on the volume: {volume_files()}")
    log(f"server start failing to bind refused (exit {p.returncode}), volume still empty")

    env = {"BUSTLE_TOKEN": token, "BUSTLE_CLOCK": "manual"}
    if on_exit:
        env["BUSTLE_CHECKPOINT_ON_EXIT"] = ON_EXIT

    # 2. first run: checkpoint to the volume
    first = f"{TAG}-1"
    game, results["ready_first_s"] = start(first, env, metrics)
    log(f"{first} ready in {results['ready_first_s']:.1f} s (game port {game})")
    healthcheck(first)
    uid = engine("exec", first, "id", "-u").stdout.strip()
    check(uid == "10001", f"the server runs as uid {uid}, not the image's 10001")
    log("HEALTHCHECK passed; running as uid 10001")
    with Session.connect("127.0.0.1", game, timeout=10.0) as s:
        s.hello("image-test", role="operator", token=token)
        check(s.step(20).accepted, "step 20")
        cp = job(s, s.checkpoint(CHECKPOINT))
        check(cp.state == JobState.Committed, f"checkpoint: {cp}")
        at20 = s.stats()
        check(at20.step == 20, f"checkpoint step {at20.step}")
        check(s.step(10).accepted, "step 10")
        at30 = s.stats()
    log(f"checkpoint '{CHECKPOINT}' committed at step 20, digest {at20.digest:016x}; "
        f"step 30 digest {at30.digest:016x}")

    # 3. SIGTERM
    results["stop_first_s"] = stop(first)
    log(f"{first} exited 0 {results['stop_first_s']:.1f} s after SIGTERM")
    files = volume_files()
    check("bustle-snapshots.db" in files, f"no snapshot store on the volume: {files}")
    log(f"volume holds {files}")

    # 4. second run on the same volume: restore, compare
    second = f"{TAG}-2"
    game, results["ready_second_s"] = start(second, env, metrics)
    log(f"{second} ready in {results['ready_second_s']:.1f} s")
    with Session.connect("127.0.0.1", game, timeout=10.0) as s:
        s.hello("image-test", role="operator", token=token)
        fresh = s.stats()
        check(fresh.step == 0, f"a new container starts at step 0, not {fresh.step}")
        r = job(s, s.restore(CHECKPOINT))
        check(r.state == JobState.Applied and r.step == 20, f"restore: {r}")
        got20 = s.stats()
        check((got20.step, got20.digest) == (20, at20.digest),
              f"after restore: step {got20.step} digest {got20.digest:016x}, "
              f"want step 20 digest {at20.digest:016x}")
        check(s.step(10).accepted, "step 10")
        got30 = s.stats()
        check(got30.digest == at30.digest,
              f"step 30 after restore: digest {got30.digest:016x}, first run {at30.digest:016x}")
        log(f"restored '{CHECKPOINT}': step 20 digest {got20.digest:016x} equal; "
            f"step 30 digest {got30.digest:016x} equal")
        if on_exit:
            r = job(s, s.restore(ON_EXIT))
            check(r.state == JobState.Applied, f"restore {ON_EXIT}: {r}")
            e = s.stats()
            check((e.step, e.digest) == (30, at30.digest),
                  f"'{ON_EXIT}' restored to step {e.step} digest {e.digest:016x}, "
                  f"want step 30 digest {at30.digest:016x}")
            log(f"checkpoint written at SIGTERM restores to step 30 digest {e.digest:016x}")
    results["stop_second_s"] = stop(second)
    log(f"{second} exited 0 {results['stop_second_s']:.1f} s after SIGTERM")
    log(f"PASSED in {time.monotonic() - T0:.1f} s; image {size / 1e6:.0f} MB; "
        + ", ".join(f"{k} {v:.1f}" for k, v in results.items()))


if __name__ == "__main__":
    rc = 0
    try:
        main()
    except Failed as e:
        log(f"FAILED: {e}")
        rc = 1
    except Exception as e:  # a client error, a timeout: still clean up
        log(f"FAILED: {type(e).__name__}: {e}")
        rc = 1
    finally:
        if os.environ.get("BUSTLE_IMAGE_TEST_KEEP") != "1":
            for n in (f"{TAG}-notoken", f"{TAG}-badbind", f"{TAG}-1", f"{TAG}-2"):
                engine("rm", "-f", *(["-t", "0"] if ENGINE[0] == "podman" else []), n,
                       check_rc=False)
            engine("volume", "rm", "-f", VOLUME, check_rc=False)
    sys.exit(rc)
