"""Every schema field of the reply tables reaches the Python decoder.

A CommandResult is written as JSON with *every* one of its fields set, and
every field of every table it carries set to a value other than its default
(the field lists come from the schema, flatc --jsonschema), turned into a
FlatBuffer by flatc from the real schema, decoded by bustle_client, and each
field compared; the same for the Welcome's garages, signals and chains. A
field the decoder drops or misreads fails here, naming the table and field.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bustle_client import codec
from bustle_client.messages import ENUM_CLASSES, SCHEMA, WIRE_DATACLASSES, EntityId, wire_fields

SCHEMA_DIR = Path(__file__).resolve().parents[3] / "proto" / "fbs"
# Every field of CommandResult, from the schema (none listed by hand).
REPLY_FIELDS = list(SCHEMA["CommandResult"]["properties"])
# The Welcome geometry decoded through generated dataclasses.
WELCOME_FIELDS = ["garages", "signals", "chains"]


def _value(kind, ref, seed):
    """A JSON value for one field (or vector item) and what it decodes to."""
    if kind == "string":
        return f"s{seed}", f"s{seed}"
    if kind == "enum":
        names = SCHEMA[ref]["enum"]
        name = names[-1] if len(names) > 1 else names[0]
        members = ENUM_CLASSES[ref].__members__
        return name, members[name] if name in members else members[name + "_"]  # None -> None_
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


def _flatc_frame(tmp_path_factory, message_type, message):
    flatc = os.environ.get("FLATC") or shutil.which("flatc")
    if not flatc:
        pytest.skip("flatc not found")
    d = tmp_path_factory.mktemp("wire")
    (d / "frame.json").write_text(json.dumps({"message_type": message_type, "message": message}))
    subprocess.run([flatc, "--binary", "-I", str(SCHEMA_DIR), "-o", str(d), str(SCHEMA_DIR / "server.fbs"),
                    str(d / "frame.json")], check=True)
    return codec.decode_server_frame((d / "frame.bin").read_bytes())


@pytest.fixture(scope="module")
def decoded_reply(tmp_path_factory):
    message, expected = _table("CommandResult", 1)
    return _flatc_frame(tmp_path_factory, "CommandResult", message), expected


@pytest.fixture(scope="module")
def decoded_welcome(tmp_path_factory):
    message, expected = {}, {}
    for n, name in enumerate(WELCOME_FIELDS):
        ref = wire_fields("Welcome")[list(SCHEMA["Welcome"]["properties"]).index(name)].ref
        items = [_table(ref, 10 * n + k) for k in range(2)]
        message[name] = [obj for obj, _ in items]
        expected[name] = [value for _, value in items]
    return _flatc_frame(tmp_path_factory, "Welcome", message), expected


def _same(got, want, where):
    """Field by field (recursively for nested generated dataclasses)."""
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{where}[{k}]")
    elif hasattr(want, "WIRE_FIELDS"):
        assert type(got) is type(want), where
        for f in want.WIRE_FIELDS:
            _same(getattr(got, f.name), getattr(want, f.name), f"{where}.{f.name}")
    else:
        assert got == want, where


@pytest.mark.parametrize("name", REPLY_FIELDS)
def test_every_schema_field_of_the_reply_is_decoded(decoded_reply, name):
    reply, expected = decoded_reply
    _same(getattr(reply, name), getattr(expected, name), f"CommandResult.{name}")


def test_the_whole_reply_round_trips(decoded_reply):
    reply, expected = decoded_reply
    assert reply == expected
    assert reply.entity_info is not None and reply.spawn is not None and reply.entity is not None


@pytest.mark.parametrize("name", WELCOME_FIELDS)
def test_every_schema_field_of_the_welcome_geometry_is_decoded(decoded_welcome, name):
    welcome, expected = decoded_welcome
    _same(getattr(welcome, name), expected[name], f"Welcome.{name}")


def test_none_defaults_of_the_schema_decode_to_none(tmp_path_factory):
    # The scalars whose schema default is not zero are the "none" ones; an
    # absent one (the server writes none as the default, so it is absent)
    # decodes to None, a present one to its value.
    assert WIRE_DATACLASSES["SpawnStatus"].WIRE_NONE == {"lane": 4294967295}
    assert WIRE_DATACLASSES["EntityInfo"].WIRE_NONE == {"work_slot": -1, "lane": -1}
    reply = _flatc_frame(tmp_path_factory, "CommandResult",
                         {"spawn": {"handle": 3}, "entity_info": {"alive": True, "lane": 0}})
    assert reply.spawn.lane is None and reply.spawn.handle == 3
    assert reply.entity_info.lane == 0 and reply.entity_info.work_slot is None
    assert reply.stats is None and reply.snapshots is None and reply.entity is None and reply.handles is None


def test_the_generated_dataclasses_have_exactly_the_schema_fields():
    for table, cls in WIRE_DATACLASSES.items():
        names = [f.name for f in cls.WIRE_FIELDS]
        assert names == list(SCHEMA[table]["properties"]), table
        assert list(cls.__dataclass_fields__) == names, table
    assert "step_time_p99_us" in WIRE_DATACLASSES["Stats"].__dataclass_fields__


# --------------------------------------------------------------------------
# Client -> server: every command of the schema is built with every field
# --------------------------------------------------------------------------

#: Arguments for the fields that are vectors of structs or tables (their
#: argument forms are the codec's adapters); every other field gets a value
#: from its schema type.
_VECTOR_ARGUMENTS = {"points": [(1.0, 2.0)], "views": [(3.0, 0.5)], "ops": [("despawn", (4, 1))]}


def _command_arguments(table):
    """A keyword argument per schema field of `table`, each unlike the
    field's default, and what the server will read for it."""
    from bustle.wire import ClientFrame  # noqa: F401  (the generated package)
    import importlib
    defaults = getattr(importlib.import_module(f"bustle.wire.{table}"), f"{table}T")()
    args, expected = {}, {}
    for k, (field, spec) in enumerate(codec.w.CLIENT_SCHEMA[table]["properties"].items()):
        ref = spec.get("$ref", "").rsplit("_", 1)[-1]
        default = getattr(defaults, codec._camel(field))
        if field in _VECTOR_ARGUMENTS:
            args[field] = _VECTOR_ARGUMENTS[field]
        elif ref == "EntityId":
            args[field], expected[field] = (7 + k, 3), (7 + k, 3)
        elif ref in ENUM_CLASSES:
            member = [m for m in ENUM_CLASSES[ref] if int(m) != default][-1]
            args[field], expected[field] = member.name, int(member)
        elif spec.get("type") == "array":
            args[field], expected[field] = [f"a{k}", f"b{k}"], [f"a{k}".encode(), f"b{k}".encode()]
        elif spec["type"] == "string":
            args[field], expected[field] = f"s{k}", f"s{k}".encode()
        elif spec["type"] == "boolean":
            args[field] = expected[field] = not default
        elif spec["type"] == "number":
            args[field] = expected[field] = default + 2.5 + k
        else:  # an integer; a "none" default at the top of the range goes down
            value = default + 7 + k
            args[field] = expected[field] = value if value <= spec["maximum"] else default - 7 - k
    return args, expected


@pytest.mark.parametrize("command", sorted(codec.COMMANDS))
def test_every_schema_field_of_every_command_is_sent(command):
    from bustle.wire import ClientFrame
    body_type, _ = codec.COMMANDS[command]
    args, expected = _command_arguments(command)
    payload = codec.build_command(99, command, **args)
    frame = ClientFrame.ClientFrameT.InitFromObj(ClientFrame.ClientFrame.GetRootAs(payload, 0))
    assert frame.message.requestId == 99 and frame.message.bodyType == body_type
    body = frame.message.body
    for field, want in expected.items():
        got = getattr(body, codec._camel(field))
        if hasattr(got, "generation"):  # an EntityIdT
            got = (got.index, got.generation)
        assert got == want, f"{command}.{field}"


def test_every_command_of_the_schema_has_a_builder():
    union = codec.w.CommandBody.CommandBody
    names = {n for n, v in vars(union).items() if isinstance(v, int) and not n.startswith("_")}
    assert set(codec.COMMANDS) == names - {"NONE"}
    assert len(codec.COMMANDS) >= 38
