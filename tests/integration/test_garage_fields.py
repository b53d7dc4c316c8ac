"""Garage state as fields over the socket (issue 12): a GarageRequest's
EnqueueOrdinal in CommandResult.enqueue_ordinal, each garage's queued requests
with their ordinals (GarageInfo.queue) and its dispatched request-id set
(GarageInfo.dispatched_ids), through the Python client and the bustle CLI
(text and --json); a garage's vehicle_id_format seen by clients, and a bad
one refused at start-up naming the file and the field.

Every server runs ``--clock manual`` on the seed-003 corridor or a variant."""

from bustle_client import QueuedRequestInfo, RejectReason

from test_cli_json import bustle, one
from vehicle_helpers import (
    Corridor,
    assert_rejected,
    corridor_config,
    small_garage_config,
    start_corridor,
    write_config,
)

PLANNED = [f"r{k:02d}" for k in range(18)]


def test_enqueue_ordinal_queue_entries_and_dispatched_ids_are_fields(start_server):
    srv = start_corridor(start_server)
    with Corridor(srv, "fields") as c:
        c.step_to(600, chunk=100)  # the 18 planned requests are out: capacity holds the rest
        g = c.garage()
        assert (g.queue, g.queued, g.managed) == ([], [], 18), g
        assert g.dispatched_ids == PLANNED, "sorted, and one per dispatched request"
        assert len(g.dispatched_ids) == g.dispatched
        assert g.next_enqueue_ordinal == 18

        def request(request_id, priority):
            return c.apply("GarageRequest", garage="g0", request_id=request_id,
                           prototype="sedan", lane="lane0", priority=priority)

        ordinals = {rid: request(rid, p).enqueue_ordinal for rid, p in
                    (("x1", 5), ("x2", 50), ("x3", 5))}
        assert ordinals == {"x1": 18, "x2": 19, "x3": 20}
        # Refused requests carry no ordinal and take none.
        assert assert_rejected(request("x2", 7), RejectReason.Duplicate).enqueue_ordinal is None
        assert assert_rejected(request("r04", 7), RejectReason.Duplicate).enqueue_ordinal is None
        g = c.garage()
        assert g.queue == [
            QueuedRequestInfo(request_id="x2", prototype="sedan", priority=50, enqueue_ordinal=19),
            QueuedRequestInfo(request_id="x1", prototype="sedan", priority=5, enqueue_ordinal=18),
            QueuedRequestInfo(request_id="x3", prototype="sedan", priority=5, enqueue_ordinal=20),
        ], "priority desc, then EnqueueOrdinal"
        assert g.queued == [q.request_id for q in g.queue]
        assert g.next_enqueue_ordinal == 21
        assert g.dispatched_ids == PLANNED, "queued is not dispatched"

        # A query answer carries no ordinal; a cancel keeps the others' ordinals.
        assert c.apply("CancelGarageRequest", garage="g0", request_id="x1").enqueue_ordinal is None
        assert [(q.request_id, q.enqueue_ordinal) for q in c.garage().queue] == [("x2", 19), ("x3", 20)]

        # One place freed: the queue head is dispatched and joins the set.
        g = c.free_place_and_wait(19)
        assert g.dispatched == 19, g
        assert g.dispatched_ids == sorted(PLANNED + ["x2"])
        assert [(q.request_id, q.enqueue_ordinal) for q in g.queue] == [("x3", 20)]


def test_cli_prints_ordinals_queue_and_dispatched_set(start_server, tmp_path):
    cfg = small_garage_config(tmp_path, capacity=1)
    srv = start_corridor(start_server, config=cfg)
    first = one(srv, "garage-request", "g0", "a", "sedan", "lane0", "--step")
    assert first["enqueue_ordinal"] == 0, first
    text = bustle(srv, "garage-request", "g0", "b", "sedan", "lane0", "--priority", "3", "--step")
    assert "enqueue_ordinal 1\n" in text.stdout, text.stdout
    one(srv, "garage-request", "g0", "c", "sedan", "lane0", "--priority", "9", "--step")

    (g,) = one(srv, "garages")["garages"]
    assert g["dispatched_ids"] == ["a"], g
    assert g["queue"] == [
        {"request_id": "c", "prototype": "sedan", "priority": 9, "enqueue_ordinal": 2},
        {"request_id": "b", "prototype": "sedan", "priority": 3, "enqueue_ordinal": 1},
    ], g
    assert g["next_enqueue_ordinal"] == 3

    lines = bustle(srv, "garages").stdout.splitlines()
    assert "queued g0: c ordinal 2 priority 9 prototype sedan" in lines, lines
    assert "queued g0: b ordinal 1 priority 3 prototype sedan" in lines, lines
    assert lines.index("queued g0: c ordinal 2 priority 9 prototype sedan") < lines.index(
        "queued g0: b ordinal 1 priority 3 prototype sedan"), "dispatch order"
    assert "dispatched g0: a" in lines, lines

    # A refused request prints no ordinal (exit 3: rejected).
    dup = bustle(srv, "garage-request", "g0", "a", "sedan", "lane0", "--step", "--json", expect=3)
    assert "enqueue_ordinal" not in dup.stdout + dup.stderr


def test_vehicle_id_format_reaches_clients(start_server, tmp_path):
    cfg = small_garage_config(tmp_path, vehicle_id_format="vehicle.garage.{scenario}.request.{ordinal}")
    srv = start_corridor(start_server, config=cfg)
    with Corridor(srv, "idfmt") as c:
        labels = {}
        c.on_delta.append(lambda d: labels.update(d.labels))
        for rid in ("a", "b"):
            assert c.apply("GarageRequest", garage="g0", request_id=rid, prototype="sedan",
                           lane="lane0", priority=10).accepted
            c.step(12)  # past the cooldown and out of the entrance
        by_request = {i.request_id: i.vehicle_id for i in c.infos().values()}
        prefix = "vehicle.garage.bustle.corridor.small-garage.request."
        assert by_request == {"a": prefix + "000000", "b": prefix + "000001"}, by_request
        assert set(by_request.values()) <= set(labels.values()), labels


def test_bad_vehicle_id_format_is_refused_naming_file_and_field(start_server, tmp_path):
    cfg = corridor_config()
    cfg["garages"][0]["vehicle_id_format"] = "car.{garage}"
    path = write_config(tmp_path / "bad-format.city.json", cfg)
    srv = start_server("--clock", "manual", "--config", str(path), may_refuse=True)
    assert srv.refused
    code, _ = srv.stop(check=False)
    assert code != 0
    err = srv.stderr()
    assert str(path) in err or path.name in err, err
    assert "garages[0].vehicle_id_format" in err and "{ordinal}" in err, err
