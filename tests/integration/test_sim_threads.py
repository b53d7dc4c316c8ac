"""--sim-threads: the threads that step a city's parallel parts never change
what the city computes. The same 40 000-pedestrian city, stepped in batch
mode with 1, 2 and 4 threads, prints the same digest after 15 and after 40
steps (tests/app/thread_phase_executor_test compares every step); a live
server with 2 threads, stepped over the socket, reaches the batch digest;
bad counts are refused naming the flag (issue 17); without the flag the
server takes one thread per CPU it may use (issue 31)."""

import json
import os
import subprocess

from conftest import clean_env, server_binary
from snapshot_helpers import operator

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STEPS = 40


def crowd_city(tmp_path, pedestrians=40000):
    # 40 000 pedestrians: 3 parts of 16 384 rows (core/phase_executor.hpp).
    city = json.load(open(os.path.join(REPO, "configs", "default.city.json")))
    city["id"] = "it.sim-threads"
    city["pedestrians"]["count"] = pedestrians
    city["pedestrians"]["spawn_per_step_max"] = pedestrians // 10
    city["entity_capacity"] = 65536
    path = tmp_path / "crowd.city.json"
    path.write_text(json.dumps(city))
    return str(path)


def batch_digests(city, *extra, env=None):
    """["step 15 digest <hex>", "step 40 digest <hex>"]"""
    out = []
    for steps in (15, STEPS):
        p = subprocess.run([server_binary(), "--config", city, "--steps", str(steps), "--print-digest",
                            "--log-level", "warn", *extra], capture_output=True, text=True, timeout=120,
                           env=clean_env(env))
        assert p.returncode == 0, p.stderr
        lines = [l for l in p.stdout.splitlines() if l.startswith("step ")]
        assert lines == [lines[-1]] and lines[-1].startswith(f"step {steps} digest "), p.stdout[-2000:]
        out.append(lines[-1])
    return out


def test_every_thread_count_prints_the_same_digest_at_every_step(tmp_path):
    city = crowd_city(tmp_path)
    one = batch_digests(city, "--sim-threads", "1")
    assert batch_digests(city, "--sim-threads", "2") == one
    assert batch_digests(city, "--sim-threads", "4") == one
    assert batch_digests(city, env={"BUSTLE_SIM_THREADS": "3"}) == one


def test_a_live_server_with_two_threads_reaches_the_batch_digest(start_server, tmp_path):
    city = crowd_city(tmp_path)
    last = batch_digests(city)[-1]  # "step 40 digest <hex>"
    srv = start_server("--clock", "manual", "--config", city, "--sim-threads", "2")
    with operator(srv) as s:
        for _ in range(STEPS):
            assert s.step(1).accepted
        st = s.stats()
    assert last == f"step {st.step} digest {st.digest:016x}", (last, st.step, st.digest)


def test_bad_thread_counts_are_refused_naming_the_flag():
    for bad in ("0", "65", "two", "Auto"):
        p = subprocess.run([server_binary(), "--sim-threads", bad, "--steps", "1"], capture_output=True, text=True,
                           timeout=30, env=clean_env())
        assert p.returncode == 2, (bad, p.returncode, p.stderr)
        assert "--sim-threads" in p.stderr and bad in p.stderr, p.stderr


def test_without_the_flag_the_server_uses_the_cpus_it_may_use():
    """auto (the default): one thread per CPU of the affinity mask and the
    cgroup quota, at most 8; the log says how many and why."""
    p = subprocess.run([server_binary(), "--steps", "1", "--log-level", "info"], capture_output=True,
                       text=True, timeout=30, env=clean_env())
    assert p.returncode == 0, p.stderr
    expected = min(len(os.sched_getaffinity(0)), 8)
    try:
        quota, period = open("/sys/fs/cgroup/cpu.max").read().split()
        if quota != "max":
            expected = min(expected, max(1, -(-int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    assert f"sim threads: {expected} (auto: the CPUs this process may use)" in p.stderr, p.stderr[-2000:]
    p = subprocess.run([server_binary(), "--steps", "1", "--log-level", "info", "--sim-threads", "1"],
                       capture_output=True, text=True, timeout=30, env=clean_env())
    assert p.returncode == 0, p.stderr
    assert any(line.endswith("sim threads: 1") for line in p.stderr.splitlines()), p.stderr[-2000:]
