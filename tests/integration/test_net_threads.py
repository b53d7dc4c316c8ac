"""--net-threads: the threads that encode several clients' deltas at once
never change a byte any client receives. Two servers on the same city and
seed, one encoding on the network thread alone and one on 4 threads, each
with the same six viewers (the whole city, observers in different places,
tight budgets, tolerance 0, vehicles only, a late joiner and an interest
moved half way), stepped one step at a time under a manual clock: every
viewer gets the same deltas from both, and the same number of bytes."""

import json
import os
import subprocess

from conftest import clean_env, server_binary
from snapshot_helpers import operator

from bustle_client import EntityKind, Observer, RepresentationBudgets

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STEPS = 24


def crowd_city(tmp_path):
    city = json.load(open(os.path.join(REPO, "configs", "corridor.city.json")))
    city["id"] = "it.net-threads"
    city["pedestrians"]["count"] = 3000
    city["pedestrians"]["spawn_per_step_max"] = 3000
    city["entity_capacity"] = 8192
    path = tmp_path / "crowd.city.json"
    path.write_text(json.dumps(city))
    return str(path)


INTERESTS = [
    dict(),
    dict(observers=[Observer(20.0, 25.0, radius_m=12.0)]),
    dict(observers=[Observer(-13.0, 25.0, radius_m=10.0)],
         budgets=RepresentationBudgets(actors=4, instances=16, markers=64), motion_tolerance_mm=0),
    dict(observers=[Observer(0.0, 0.0, radius_m=12.0), Observer(50.0, 50.0, radius_m=12.0)]),
    dict(kinds=[EntityKind.Vehicle]),
]


def record(start_server, city, threads):
    """Every viewer's deltas, in order, and its bytes received."""
    srv = start_server("--clock", "manual", "--config", city, "--net-threads", str(threads))
    viewers = [srv.connect() for _ in range(len(INTERESTS) + 1)]
    deltas = [[] for _ in viewers]
    try:
        with operator(srv) as op:
            assert op.step(3).accepted  # a populated city before anyone subscribes
            for k, v in enumerate(viewers):
                v.hello(f"it-net-threads-{k}")
                if k < len(INTERESTS):
                    assert v.subscribe(**INTERESTS[k]).accepted
                    deltas[k].append(v.next_delta(timeout=5.0))
            for step in range(STEPS):
                if step == STEPS // 2:
                    late = viewers[-1]  # joins half way
                    assert late.subscribe().accepted
                    deltas[-1].append(late.next_delta(timeout=5.0))
                    moved = viewers[1]  # looks elsewhere half way
                    assert moved.update_interest(observers=[Observer(-20.0, 45.0, radius_m=15.0)]).accepted
                    deltas[1].append(moved.next_delta(timeout=5.0))
                target = op.step(1, timeout=10.0).applied_step
                for k, v in enumerate(viewers):
                    if k == len(viewers) - 1 and step < STEPS // 2:
                        continue
                    d = v.next_delta(timeout=5.0)
                    assert d.step == target, (k, d.step, target)
                    deltas[k].append(d)
        return deltas, [v.bytes_received for v in viewers]
    finally:
        for v in viewers:
            v.close()


def test_every_net_thread_count_sends_every_client_the_same_deltas(start_server, tmp_path):
    city = crowd_city(tmp_path)
    one, one_bytes = record(start_server, city, 1)
    four, four_bytes = record(start_server, city, 4)
    assert sum(len(d.entered) for d in one[0]) > 1000, "the whole-city viewer saw the crowd"
    assert any(d.motion for d in one[2]), "the tolerance-0 viewer got motion records"
    assert all(sum(len(d.entered) for d in deltas) > 0 for deltas in one), "every viewer got entities"
    for k, (a, b) in enumerate(zip(one, four)):
        assert len(a) == len(b), (k, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            assert x == y, f"viewer {k}, delta {i} (step {x.step}) differs between 1 and 4 threads"
    assert one_bytes == four_bytes


def test_bad_net_thread_counts_are_refused_naming_the_flag():
    for value in ("0", "65", "two"):
        p = subprocess.run([server_binary(), "--net-threads", value, "--port", "0"],
                           capture_output=True, text=True, timeout=20, env=clean_env())
        assert p.returncode == 2, (value, p.returncode, p.stderr)
        assert "--net-threads" in p.stderr, p.stderr
