"""configs/*.city.json validate against schema/scenario.schema.json."""

import copy
import json

import jsonschema
import pytest

from conftest import SOURCE_DIR

SCHEMA = SOURCE_DIR / "schema" / "scenario.schema.json"
CONFIGS = sorted((SOURCE_DIR / "configs").glob("*.city.json"))


@pytest.fixture(scope="module")
def validator():
    if not SCHEMA.exists():
        pytest.skip(f"{SCHEMA.relative_to(SOURCE_DIR)} does not exist yet")
    schema = json.loads(SCHEMA.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_there_are_scenarios():
    assert CONFIGS, "no configs/*.city.json"


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_scenario_validates(validator, path):
    errors = sorted(validator.iter_errors(json.loads(path.read_text())), key=str)
    assert not errors, "\n".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors)


@pytest.mark.parametrize("mutate", [
    lambda d: d.update(step_us=-5),
    lambda d: d.update(unknown_field=1),
    lambda d: d["lanes"][0].update(kind="river"),
    lambda d: d["lanes"][0].update(points=[[0, 0]]),
    lambda d: d.pop("lanes"),
    lambda d: d["lanes"][0]["points"][1].__setitem__(0, 1.7e308),
], ids=["negative-step_us", "unknown-field", "bad-lane-kind", "one-point", "no-lanes",
        "point-outside-world-extent"])
def test_schema_rejects_bad_scenarios(validator, mutate):
    doc = copy.deepcopy(json.loads((SOURCE_DIR / "configs" / "default.city.json").read_text()))
    mutate(doc)
    assert not validator.is_valid(doc)
