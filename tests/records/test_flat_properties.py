"""The flat records by property: protocol.json (records/protocol.py, with its cells), a cells.jsonl line
(records/cell.py) and a requests.jsonl line (records/request.py). Any document their kinds take reads and writes
back to the same bytes (a protocol and a cell line keep their key order and the keys of other code, a request
line is written whole in the dataclass's order), a field of the wrong kind is one BadInput line naming it, and
every kind a record uses agrees with its own JSON Schema on any JSON value."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadgen.errors import BadInput
from loadgen.records import protocol
from loadgen.records.cardwire import kinds, required
from loadgen.records.cell import CellEntry
from loadgen.records.protocol import Protocol, ProtocolCell
from loadgen.records.request import RequestRecord, no_tokens_error
from loadgen.records.wire import RESTORE, Kind, object_schema
from tests.records.jsongen import JSON, UNKNOWN, from_schema, refused

FAST = settings(max_examples=30, deadline=None)
CELL_SCHEMA = object_schema(kinds(CellEntry), required(CellEntry), "cells.jsonl line")
REQUEST_SCHEMA = object_schema(kinds(RequestRecord), required(RequestRecord), "requests.jsonl line")


@FAST
@given(doc=from_schema(Protocol.json_schema()))
def test_a_protocol_the_schema_takes_reads_and_writes_back_the_same_bytes(doc: dict[str, Any]) -> None:
    proto = Protocol.from_json(doc, source="protocol.json")
    assert json.dumps(proto.to_json()) == json.dumps(doc)
    assert [c.key for c in proto.cells] == [
        (c["workload"], c.get("level") or f"c{c.get('concurrency', 0)}") for c in doc["cells"]
    ]
    assert proto == Protocol.from_json(json.loads(json.dumps(proto.to_json())), source="again")


@FAST
@given(doc=from_schema(CELL_SCHEMA), note=st.text(max_size=5))
def test_a_cell_line_its_kinds_take_reads_writes_back_and_takes_a_field_after_its_own(
    doc: dict[str, Any], note: str
) -> None:
    entry = CellEntry.from_json(doc, source="cells.jsonl line 1")
    assert json.dumps(entry.to_json()) == json.dumps(doc)
    assert entry.key == (doc["workload"], doc.get("level") or f"c{doc['concurrency']}")
    later = entry.with_fields(push_error=note)
    assert later.to_json() == {**doc, "push_error": note} and list(later.to_json())[-1] == (
        "push_error" if "push_error" not in doc else list(doc)[-1]
    )


def _ordered(doc: dict[str, Any]) -> dict[str, Any]:
    """The line a record of ``doc`` writes: every field in the dataclass's order, defaults for the absent."""
    defaults = RequestRecord("p", "plain", "w", 1, "measured", 0.0).to_json()
    out = {
        f.name: doc[f.name] if f.name in doc else defaults.get(f.name)
        for f in fields(RequestRecord)
        if f.name not in ("keys", "extra")
    }
    for key in ("resent", "system_fingerprint"):  # written only when set: sent again, fingerprinted
        if out[key] is None:
            del out[key]
    return out


@FAST
@given(doc=from_schema(REQUEST_SCHEMA))
def test_a_request_line_is_written_whole_in_the_dataclass_order(doc: dict[str, Any]) -> None:
    record = RequestRecord.from_json(doc, source="requests.jsonl line 2")
    want = _ordered(doc)
    if want["error"] is None and not want["chunk_tokens"]:  # an older line: the no-tokens error it has today
        want["error"] = no_tokens_error(record)
        assert record.error.startswith("no-tokens: HTTP ") and not record.ok
    assert json.dumps(record.to_json()) == json.dumps(want)  # the unknown key is dropped, the rest kept in order
    assert RequestRecord.from_json(record.to_json(), source="again") == record
    assert record.output_tokens == sum(want["chunk_tokens"]) and record.warmup == (want["phase"] != "measured")


READERS: list[tuple[str, Any, dict[str, Kind], str]] = [
    ("protocol", Protocol.from_json, kinds(Protocol), protocol.FIX),
    ("cell", CellEntry.from_json, kinds(CellEntry), RESTORE),
    ("request", RequestRecord.from_json, kinds(RequestRecord), RESTORE),
]
BASE = {
    "protocol": {"workloads": [], "cells": []},
    "cell": {"role": "plain", "workload": "w", "concurrency": 1},
    "request": {
        "prompt_id": "p",
        "role": "plain",
        "workload": "w",
        "concurrency": 1,
        "phase": "measured",
        "scheduled_s": 0.0,
        "chunk_tokens": [1],
    },
}
EDITS = [
    (name, reader, key, kinds[key].name, bad, fix)
    for name, reader, kinds, fix in READERS
    for key in kinds
    for bad in refused(kinds[key])
]


@pytest.mark.parametrize(
    ("name", "reader", "key", "expected", "bad", "fix"), EDITS, ids=[f"{e[0]}.{e[2]}={e[4]!r}" for e in EDITS]
)
def test_every_field_of_the_wrong_kind_is_one_line_naming_it(
    name: str, reader: Any, key: str, expected: str, bad: object, fix: str
) -> None:
    with pytest.raises(BadInput) as caught:
        reader({**BASE[name], key: bad}, source="f.json")
    assert str(caught.value) == f"f.json: {key}: expected {expected}, got {bad!r}; {fix}"


def test_a_protocol_cell_of_the_wrong_kind_names_its_index_and_an_older_cell_reads() -> None:
    with pytest.raises(BadInput) as caught:
        Protocol.from_json({"workloads": [], "cells": [{"workload": "a"}, {"concurrency": 2}]}, source="p.json")
    assert str(caught.value) == f"p.json: cells[1].workload: missing (expected a string); {protocol.FIX}"
    cell0 = ProtocolCell.from_json({"workload": "a", "concurrency": 4, "arrivals_s": None}, source="p.json")
    assert (cell0.key, cell0.arrivals_s, cell0.to_json()) == (
        ("a", "c4"),
        None,
        {"workload": "a", "concurrency": 4, "arrivals_s": None},
    )
    doc = {"workloads": [], "cells": [{"workload": "a", UNKNOWN: [1], "level": "c1"}]}  # a cell of other code
    assert json.dumps(Protocol.from_json(doc, source="p.json").to_json()) == json.dumps(doc)


def test_a_request_line_of_older_code_takes_its_phase_from_the_warmup_flag() -> None:
    old = {k: v for k, v in BASE["request"].items() if k != "phase"}
    assert RequestRecord.from_json({**old, "warmup": True}, source="r").phase == "warmup"
    assert RequestRecord.from_json(old, source="r").phase == "measured"
    with pytest.raises(BadInput) as caught:
        RequestRecord.from_json({**old, "warmup": "yes"}, source="r")
    assert str(caught.value) == f"r: warmup: expected true or false, got 'yes'; {RESTORE}"


def _kinds() -> list[Kind]:
    from tests.records.test_part_properties import PARTS

    found = [
        *kinds(Protocol).values(),
        *kinds(ProtocolCell).values(),
        *kinds(CellEntry).values(),
        *kinds(RequestRecord).values(),
        *(k for cls in PARTS for k in kinds(cls).values()),
    ]
    # a record's own kind checks the object only (its reader checks the fields): its schema says more
    out = {k.name: k for k in found if "properties" not in json.dumps(dict(k.schema))}
    return [out[n] for n in sorted(out)]


KINDS = _kinds()


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
@settings(max_examples=30, deadline=None)
@given(value=JSON)
def test_every_kind_a_record_uses_agrees_with_its_schema(kind: Kind, value: object) -> None:
    assert kind.test(value) == jsonschema.Draft202012Validator(dict(kind.schema)).is_valid(value)
