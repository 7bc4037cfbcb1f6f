"""Every record read by its type hints (records/cardwire.py ``Wire``: the pair card and its parts, the servers/
files' records), by property: any document the JSON Schema generated from the type takes reads and writes back
to the same bytes (its key order and unknown keys kept), and a field value the schema refuses is refused by the
reader too, as one BadInput line naming the file, the field and the fix."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loadgen.errors import BadInput
from loadgen.records import card, cardcell, cellparts, checkparts, criteria, protoparts, runparts, server, usage
from loadgen.records.cardwire import FIX, Wire, json_schema
from tests.records.jsongen import CANDIDATES, from_schema

MODULES = (card, cardcell, server, usage, cellparts, runparts, checkparts, protoparts, criteria)
WIRES = sorted(
    {
        v
        for m in MODULES
        for v in vars(m).values()
        if isinstance(v, type) and issubclass(v, Wire) and v is not Wire and v.__module__ == m.__name__
    },
    key=lambda c: (c.__module__, c.__name__),
)
IDS = [f"{c.__module__.rsplit('.', 1)[1]}.{c.__name__}" for c in WIRES]
FAST = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_the_records_under_test_are_the_known_ones() -> None:
    # each module's records; protoparts, criteria and runparts: protocol.json's parts and the run folder's files
    assert len(WIRES) == 69
    assert {
        "card.PairCard",
        "server.EffectiveConfig",
        "usage.Teardown",
        "cardcell.StepTime",
        "runparts.ProgressFile",
        "cellparts.SpecDecodeDeltas",
        "cellparts.ClientLoad",
        "cardcell.LosslessCheck",
    } <= set(IDS)


@pytest.mark.parametrize("cls", WIRES, ids=IDS)
@FAST
@given(data=st.data())
def test_a_document_the_schema_takes_reads_and_writes_back_the_same_bytes(cls: type[Wire], data: st.DataObject) -> None:
    schema = json_schema(cls)
    doc = data.draw(from_schema(schema))
    jsonschema.Draft202012Validator(schema).validate(doc)  # the generator keeps to the schema
    record = cls.from_json(doc, source="f.json")
    out = record.to_json()
    if cls is server.EffectiveConfig:  # written with version second (records/server.py), whatever the file's order
        assert out == doc and list(out) == [k for k in dict.fromkeys(("base_url", "version", *doc)) if k in doc]
        return
    assert json.dumps(out) == json.dumps(doc)
    assert cls.from_json(json.loads(json.dumps(out)), source="again") == record


def _refused(schema: dict[str, Any]) -> list[tuple[str, Any]]:
    validators = {k: jsonschema.Draft202012Validator(s) for k, s in schema["properties"].items()}
    return [(k, v) for k, check in validators.items() for v in CANDIDATES if not check.is_valid(v)]


@pytest.mark.parametrize("cls", WIRES, ids=IDS)
@FAST
@given(data=st.data())
def test_a_value_the_schema_refuses_is_one_line_naming_the_field(cls: type[Wire], data: st.DataObject) -> None:
    schema = json_schema(cls)
    edits = _refused(schema)
    key, bad = data.draw(st.sampled_from(edits))
    doc = {**data.draw(from_schema(schema)), key: bad}
    with pytest.raises(BadInput) as caught:
        cls.from_json(doc, source="f.json")
    message = str(caught.value)
    assert message.startswith(f"f.json: {key}") and message.endswith(f"; {FIX}") and "\n" not in message
    assert ": expected " in message or ": missing (expected " in message


def test_a_required_field_left_out_of_a_server_record_is_named() -> None:
    doc = {"spec_decode_metrics": True, "spec_positions": 2}
    with pytest.raises(BadInput) as caught:
        server.ModeProof.from_json(doc, source="x-effective.json")
    assert str(caught.value) == f"x-effective.json: metric_families: missing (expected a list); {FIX}"
