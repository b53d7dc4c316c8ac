"""Every schema field of the generated reply tables reaches the Python decoder.

A CommandResult is written as JSON with *every* field of every reply table
set to a value other than its default (the field list comes from the schema,
flatc --jsonschema), turned into a FlatBuffer by flatc from the real schema,
decoded by bustle_client, and each field compared. A field the decoder drops
or misreads fails here, naming the table and field.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bustle_client import codec
from bustle_client.messages import ENUM_CLASSES, SCHEMA, WIRE_DATACLASSES, EntityId, wire_fields

SCHEMA_DIR = Path(__file__).resolve().parents[3] / "proto" / "schema"
# CommandResult fields that carry generated reply tables.
REPLY_FIELDS = {"stats": "Stats", "snapshots": "SnapshotInfo", "garages": "GarageInfo",
                "signals": "SignalInfo", "zones": "ZoneInfo", "population": "PopulationInfo",
                "leases": "LeaseSummary", "job": "JobStatus", "vehicle": "VehicleInfo"}


def _value(kind, ref, seed):
    """A JSON value for one field (or vector item) and what it decodes to."""
    if kind == "string":
        return f"s{seed}", f"s{seed}"
    if kind == "enum":
        names = SCHEMA[ref]["enum"]
        name = names[-1] if len(names) > 1 else names[0]
        return name, ENUM_CLASSES[ref][name]
    if kind == "struct":
        return {"index": seed, "generation": seed + 1}, EntityId(seed, seed + 1)
    if kind == "table":
        return _table(ref, seed)
    if ref == "boolean":
        return True, True
    if ref == "number":
        return seed + 0.5, seed + 0.5
    return seed % 200 + 1, seed % 200 + 1  # fits every integer width of the schema


def _table(table, seed):
    obj, expected = {}, {}
    for i, f in enumerate(wire_fields(table)):
        s = seed * 100 + i
        if f.kind == "vector":
            items = [_value(f.item_kind, f.ref, s + k) for k in range(2)]
            obj[f.name] = [j for j, _ in items]
            expected[f.name] = [e for _, e in items]
        else:
            obj[f.name], expected[f.name] = _value(f.kind, f.ref, s)
    return obj, WIRE_DATACLASSES[table](**expected)


@pytest.fixture(scope="module")
def decoded_reply(tmp_path_factory):
    flatc = os.environ.get("FLATC") or shutil.which("flatc")
    if not flatc:
        pytest.skip("flatc not found")
    message, expected = {}, {}
    for n, (name, table) in enumerate(REPLY_FIELDS.items()):
        obj, value = _table(table, n + 1)
        vector = SCHEMA["CommandResult"]["properties"][name].get("type") == "array"
        message[name] = [obj] if vector else obj
        expected[name] = [value] if vector else value
    d = tmp_path_factory.mktemp("wire")
    (d / "reply.json").write_text(json.dumps({"message_type": "CommandResult", "message": message}))
    subprocess.run([flatc, "--binary", "-I", str(SCHEMA_DIR), "-o", str(d), str(SCHEMA_DIR / "server.fbs"),
                    str(d / "reply.json")], check=True)
    return codec.decode_server_frame((d / "reply.bin").read_bytes()), expected


@pytest.mark.parametrize("name", sorted(REPLY_FIELDS))
def test_every_schema_field_of_the_reply_table_is_decoded(decoded_reply, name):
    reply, expected = decoded_reply
    got, want = getattr(reply, name), expected[name]
    rows = list(zip(got, want)) if isinstance(want, list) else [(got, want)]
    assert len(rows) == (len(want) if isinstance(want, list) else 1)
    for g, w in rows:
        for f in w.WIRE_FIELDS:
            assert getattr(g, f.name) == getattr(w, f.name), f"{w.WIRE_TABLE}.{f.name}"


def test_the_generated_dataclasses_have_exactly_the_schema_fields():
    for table, cls in WIRE_DATACLASSES.items():
        names = [f.name for f in cls.WIRE_FIELDS]
        assert names == list(SCHEMA[table]["properties"]), table
        assert list(cls.__dataclass_fields__) == names, table
    assert "step_time_p99_us" in WIRE_DATACLASSES["Stats"].__dataclass_fields__
