"""Every client frame the codec builds, byte for byte, against golden bytes.

The golden file (data/client_frames.golden.json) was written once by the
hand-written FlatBuffers builders that codec.py had before its builders were
driven by the wire schema (commit c514725), by running this module as a
script. It pins the encoding, not just the decoded values: a change of field
order, of a default that is omitted or sent, or of vector layout fails here
even where the server would still read the frame. Do not regenerate it to
make a refactor pass; a deliberate wire change regenerates it in its own
commit that says why.

Cases cover every ClientMessage (Hello, Subscribe, UpdateInterest, Command,
LeaseReport) and every command of codec.COMMANDS, with defaults, explicit
defaults, absent versus empty lists, enum members, names and raw values, and
the extremes of each field's range.
"""

import json
import sys
from pathlib import Path

import pytest

from bustle_client import codec
from bustle_client.messages import (
    EntityId,
    EntityKind,
    Lease,
    LeaseState,
    Observer,
    ObserverView,
    PriorityClass,
    RepresentationBudgets,
    RepresentationHint,
    SpawnRequest,
    UnassignedReason,
    VehicleStrategy,
    despawn_op,
    spawn_op,
)

GOLDEN = Path(__file__).resolve().parent / "data" / "client_frames.golden.json"

U32 = 2**32 - 1
U64 = 2**64 - 1


def _cmd(command, rid=7, **fields):
    return lambda: codec.build_command(rid, command, **fields)


#: case id -> a call that builds one payload.
CASES = {
    # Hello
    "hello/defaults": lambda: codec.build_hello("v"),
    "hello/all": lambda: codec.build_hello("soak-7", role="operator", token="s3cret", protocol_version=9),
    "hello/role-int-empty-token": lambda: codec.build_hello("", role=1, token="", protocol_version=0),
    "hello/role-member-unicode": lambda: codec.build_hello("caf\u00e9-\u65e5", role=codec.Role.Viewer),
    # Subscribe
    "subscribe/defaults": lambda: codec.build_subscribe(),
    "subscribe/empty-lists": lambda: codec.build_subscribe([], [], request_id=3),
    "subscribe/kinds": lambda: codec.build_subscribe([EntityKind.Vehicle, EntityKind.Pedestrian]),
    "subscribe/kinds-int": lambda: codec.build_subscribe([0], request_id=1),
    "subscribe/all": lambda: codec.build_subscribe(
        [EntityKind.Pedestrian],
        [Observer(1.5, -2.25), (10.0, 20.0, 1.8, 3.0, 40.0), {"x_m": 0, "y_m": 0, "heading_rad": 0.0}],
        RepresentationBudgets(actors=0, instances=5, markers=1 << 20), 0, request_id=U32),
    "subscribe/budgets-dict": lambda: codec.build_subscribe(budgets={"markers": 0}),
    "subscribe/budgets-tuple-default-tolerance": lambda: codec.build_subscribe(
        None, [(3, 4)], (256, 4096, 16384), 10, request_id=2),
    "subscribe/tolerance-max": lambda: codec.build_subscribe(motion_tolerance_mm=65535),
    # UpdateInterest
    "update_interest/defaults": lambda: codec.build_update_interest(),
    "update_interest/all": lambda: codec.build_update_interest(
        [(5.0, 6.0), (1, 2, 3, None, 99.5)], RepresentationBudgets(1, 2, 3), request_id=4),
    "update_interest/empty-observers": lambda: codec.build_update_interest([], None, request_id=5),
    # LeaseReport
    "lease_report/empty": lambda: codec.build_lease_report([]),
    "lease_report/entries": lambda: codec.build_lease_report([
        Lease(EntityId(1, 2), LeaseState.Assigned),
        (EntityId(U32, U32), LeaseState.Unassigned, RepresentationHint.Instanced, UnassignedReason.PoolAtCap),
        ((7, 1), 2),
        ((8, 3), LeaseState.Preserved, 2, 4),
    ], request_id=11),
    # Commands: every one of codec.COMMANDS at least once.
    "command/Pause": _cmd("Pause", rid=0),
    "command/Resume": _cmd("Resume", rid=U32),
    "command/Step-default": _cmd("Step"),
    "command/Step-5": _cmd("Step", count=5),
    "command/Step-0": _cmd("Step", count=0),
    "command/QueryStats": _cmd("QueryStats", rid=4_000_000_000),
    "command/SetPedestrianTarget": _cmd("SetPedestrianTarget", count=10**9),
    "command/SetPedestrianTarget-0": _cmd("SetPedestrianTarget", count=0),
    "command/DespawnEntity": _cmd("DespawnEntity", index=17, generation=4),
    "command/Checkpoint": _cmd("Checkpoint", name="cp-1"),
    "command/Checkpoint-empty": _cmd("Checkpoint", name=""),
    "command/Restore": _cmd("Restore", name="cp.2"),
    "command/Save": _cmd("Save", name="s_3"),
    "command/Load": _cmd("Load", name="s_3"),
    "command/ListSnapshots": _cmd("ListSnapshots"),
    "command/DeleteSnapshot": _cmd("DeleteSnapshot", name="bad name/"),
    "command/QueryJob": _cmd("QueryJob", job_id=U64),
    "command/QueryJob-0": _cmd("QueryJob", job_id=0),
    "command/GarageRequest": _cmd("GarageRequest", garage="g0", request_id="r-1", prototype="sedan",
                                  lane="lane0", priority=-7),
    "command/GarageRequest-default-priority": _cmd("GarageRequest", garage="g", request_id="r",
                                                   prototype="p", lane="l"),
    "command/GarageRequest-priority-10": _cmd("GarageRequest", garage="g", request_id="r",
                                              prototype="p", lane="l", priority=10),
    "command/GarageRequest-max": _cmd("GarageRequest", garage="", request_id="", prototype="",
                                      lane="", priority=2**31 - 1),
    "command/CancelGarageRequest": _cmd("CancelGarageRequest", garage="g0", request_id="r-1"),
    "command/SetVehicleStrategy-member": _cmd("SetVehicleStrategy", index=9, generation=2,
                                              strategy=VehicleStrategy.Parked),
    "command/SetVehicleStrategy-name": _cmd("SetVehicleStrategy", index=1, generation=1, strategy="manual"),
    "command/SetVehicleStrategy-raw": _cmd("SetVehicleStrategy", index=1, generation=1, strategy=9),
    "command/SetVehicleStrategy-zero": _cmd("SetVehicleStrategy", index=0, generation=0, strategy=0),
    "command/SetObservers-points": _cmd("SetObservers", points=[(25, 25), (-1.5, 1e6)]),
    "command/SetObservers-empty": _cmd("SetObservers", points=[]),
    "command/SetObservers-derived-views": _cmd("SetObservers", points=[(1, 2), (3, 4, 1.8), (5, 6, 0, 3.14),
                                                                       (7, 8, 2.5, None)]),
    "command/SetObservers-views": _cmd("SetObservers", points=[(1, 2), (3, 4)],
                                       views=[ObserverView(1.5, 0.5), (2.0, None)]),
    "command/SetObservers-views-bare-z": _cmd("SetObservers", points=[(1, 2)], views=[1.0, 2]),
    "command/SetObservers-follow": _cmd("SetObservers", points=[], follow=(12, 3)),
    "command/SetObservers-all": _cmd("SetObservers", points=[(0, 0, 1, 0.25)], follow=EntityId(5, 6)),
    "command/QueryGarages": _cmd("QueryGarages"),
    "command/QuerySignals": _cmd("QuerySignals"),
    "command/QueryVehicle": _cmd("QueryVehicle", index=U32, generation=3),
    "command/SetHour": _cmd("SetHour", hour=7.25),
    "command/SetHour-int": _cmd("SetHour", hour=0),
    "command/SetTimeScale": _cmd("SetTimeScale", scale=60),
    "command/SetTimeScale-1": _cmd("SetTimeScale", scale=1),
    "command/QueryZones": _cmd("QueryZones"),
    "command/ForceFull-default": _cmd("ForceFull", index=4, generation=1),
    "command/ForceFull-off": _cmd("ForceFull", index=4, generation=1, on=False),
    "command/SpawnPedestrian-default": _cmd("SpawnPedestrian"),
    "command/SpawnPedestrian-all": _cmd("SpawnPedestrian", zone="market", lane="market.loop", priority="story",
                                        timeout_ms=30_000, route=["market.loop", "x.market.office"]),
    "command/SpawnPedestrian-member-empty-route": _cmd("SpawnPedestrian", zone="z", priority=PriorityClass.Background,
                                                       route=[]),
    "command/SpawnPedestrian-raw-priority": _cmd("SpawnPedestrian", lane="l", priority=200, timeout_ms=1),
    "command/CancelSpawn": _cmd("CancelSpawn", handle=U64),
    "command/ReportAttached": _cmd("ReportAttached", index=3, generation=9),
    "command/SetLifecycle-default": _cmd("SetLifecycle"),
    "command/SetLifecycle-all": _cmd("SetLifecycle", growth_quota=0, recycle_quota=7, interval_ms=1000,
                                     migration_budget=U32),
    "command/LifecycleBatch-empty": _cmd("LifecycleBatch", ops=[]),
    "command/LifecycleBatch": _cmd("LifecycleBatch", ops=[
        spawn_op(), despawn_op((4, 1)), spawn_op("market", "market.loop", "story", 500, ["market.loop"]),
        ("spawn", {"zone": "z", "priority": 3}), ("Despawn", EntityId(9, 9)),
        ("spawn", SpawnRequest(lane="l", route=("l", "m"))), (1, (0, 1))]),
    "command/QueryEntity": _cmd("QueryEntity", index=0, generation=1),
    "command/QueryPopulation": _cmd("QueryPopulation"),
    "command/QuerySpawn": _cmd("QuerySpawn", handle=42),
    "command/QueryLeases": _cmd("QueryLeases"),
    "command/SetAdmissionMask-default": _cmd("SetAdmissionMask", index=5, generation=2),
    "command/SetAdmissionMask-off": _cmd("SetAdmissionMask", index=5, generation=2, masked=False),
    "command/SetPreventionLevel": _cmd("SetPreventionLevel", level=3),
    "command/SetPreventionLevel-0": _cmd("SetPreventionLevel", level=0),
    "command/KillPedestrian": _cmd("KillPedestrian", index=6, generation=1),
    "command/CloseLane-id": _cmd("CloseLane", lane="road.3"),
    "command/CloseLane-index": _cmd("CloseLane", lane_index=12),
    "command/CloseLane-both": _cmd("CloseLane", lane="road.3", lane_index=0),
    "command/CloseLane-index-default": _cmd("CloseLane", lane_index=U32),
    "command/OpenLane-id": _cmd("OpenLane", lane="road.3"),
    "command/OpenLane-both": _cmd("OpenLane", lane="x", lane_index=U32 - 1),
}


def _golden() -> dict:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))["frames"]


def test_every_command_and_message_has_a_golden_case():
    commands = {case.split("/")[1].split("-")[0] for case in CASES if case.startswith("command/")}
    assert commands == set(codec.COMMANDS)
    messages = {case.split("/")[0] for case in CASES}
    assert messages == {"hello", "subscribe", "update_interest", "lease_report", "command"}
    assert set(_golden()) == set(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_frame_equals_golden_bytes(case):
    assert CASES[case]().hex() == _golden()[case]


if __name__ == "__main__":
    # Run once, against the hand-written builders, to write the golden file.
    GOLDEN.parent.mkdir(exist_ok=True)
    frames = {case: CASES[case]().hex() for case in sorted(CASES)}
    GOLDEN.write_text(json.dumps({"generated_by": sys.argv[1] if len(sys.argv) > 1 else "",
                                  "frames": frames}, indent=1) + "\n", encoding="utf-8")
    print(f"{len(frames)} frames -> {GOLDEN}")
