"""The protocol (records/protocol.py): every committed protocol.json reads and writes back byte-identically,
its JSON Schema is generated from the type (committed as records/protocol.schema.json) and every committed
protocol validates against it, and a protocol that does not read is one line naming the file and the field
(exit 2), from ``loadgen report`` too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.errors import BadInput
from loadgen.records.protocol import FIX, Protocol, ProtocolCell
from loadgen.store.files import read_protocol

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FILES = sorted(DOCS.rglob("protocol.json"))
SCHEMA = ROOT / "loadgen" / "records" / "protocol.schema.json"
EXAMPLE = DOCS / "examples" / "h200" / "h200-1b-draft"
IDS = [str(p.relative_to(DOCS)) for p in FILES]


def test_the_examples_are_there() -> None:
    assert len(FILES) == 13


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_every_committed_protocol_writes_back_byte_identically(path: Path) -> None:
    proto = read_protocol(path)
    assert json.dumps(proto.to_json(), indent=2) + "\n" == path.read_text()
    assert all(isinstance(c, ProtocolCell) for c in proto.cells) and proto.cells


def test_the_reader_gives_typed_fields() -> None:
    raw = json.loads((EXAMPLE / "protocol.json").read_text())
    proto = read_protocol(EXAMPLE / "protocol.json")
    assert (proto.schema, proto.pair, proto.engine_version, proto.prompts_sha256) == (
        "loadgen.protocol/1",
        raw["pair"],
        raw["engine_version"],
        raw["prompts_sha256"],
    )
    assert proto.criteria is None and proto.design is None  # older code recorded neither
    cell = proto.cells[0]
    assert (cell.workload, cell.concurrency, cell.level, cell.measured) == (
        raw["cells"][0]["workload"],
        raw["cells"][0]["concurrency"],
        raw["cells"][0]["level"],
        raw["cells"][0]["measured"],
    )


def test_the_committed_schema_is_the_one_the_type_generates() -> None:
    assert json.loads(SCHEMA.read_text()) == Protocol.json_schema()
    assert SCHEMA.read_text() == json.dumps(Protocol.json_schema(), indent=2) + "\n"


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_every_committed_protocol_validates_against_the_schema(path: Path) -> None:
    jsonschema.Draft202012Validator(Protocol.json_schema()).validate(json.loads(path.read_text()))


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda d: d["cells"][3].update(rate_rps="abc"), "cells[3].rate_rps", "expected a number or null, got 'abc'"),
        (lambda d: d["cells"][0].update(measured=[1]), "cells[0].measured", "expected a list of strings, got [1]"),
        (lambda d: d.update(concurrency="1,4"), "concurrency", "expected a list of integers, got '1,4'"),
        (lambda d: d.update(engine_version=24), "engine_version", "expected a string or null, got 24"),
        (lambda d: d.pop("workloads"), "workloads", "missing (expected a list of objects (workload))"),
    ],
)
def test_a_bad_field_is_one_line_and_the_schema_refuses_it_too(
    tmp_path: Path, change: object, field: str, message: str
) -> None:
    data = json.loads((EXAMPLE / "protocol.json").read_text())
    change(data)  # type: ignore[operator]
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps(data))
    with pytest.raises(BadInput) as caught:
        read_protocol(path)
    assert str(caught.value) == f"{path}: {field}: {message}; {FIX}"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, Protocol.json_schema())


def test_a_protocol_built_anew_and_a_field_added_later() -> None:
    proto = Protocol.from_json(
        {"schema": "loadgen.protocol/1", "workloads": [], "cells": [{"workload": "w"}]}, source="p.json"
    )
    later = proto.with_fields(design={"order": []}, schema="loadgen.protocol/1")
    assert list(later.to_json()) == ["schema", "workloads", "cells", "design"]
    assert later.cells == [ProtocolCell("w")] and later.cells[0].key == ("w", "c0")
    assert list(Protocol([], []).to_json())[:3] == ["schema", "loadgen_version", "pair"]


def test_loadgen_report_on_a_bad_protocol_field_is_one_line_exit_2(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(EXAMPLE, run)
    data = json.loads((run / "protocol.json").read_text())
    data["cells"][3]["rate_rps"] = "abc"
    (run / "protocol.json").write_text(json.dumps(data, indent=2) + "\n")
    result = CliRunner().invoke(main, ["report", str(run)])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        f"loadgen: error: {run / 'protocol.json'}: cells[3].rate_rps: expected a number or null, got 'abc'; {FIX}"
    )
