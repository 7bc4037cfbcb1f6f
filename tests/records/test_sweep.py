"""The sweep card (records/sweep.py): every committed sweep.json reads and writes back byte-identically, its
JSON Schema is generated from the type (committed as records/sweep.schema.json) and every committed sweep card
validates against it, and a sweep.json that does not read is one line naming the file, the field and the fix
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
from loadgen.records.cardcell import Ratio
from loadgen.records.sweep import FIX, Drift, SweepCard, SweepCell, SweepEntry
from loadgen.report.sweepmd import render_sweep_markdown
from loadgen.store.files import read_sweep

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FILES = sorted(DOCS.rglob("sweep.json"))
SCHEMA = ROOT / "loadgen" / "records" / "sweep.schema.json"
EXAMPLE = DOCS / "examples" / "h200" / "h200-smollm2-sweep"
IDS = [str(p.relative_to(DOCS)) for p in FILES]


def test_the_examples_are_there() -> None:
    assert len(FILES) == 3


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_every_committed_sweep_card_writes_back_byte_identically(path: Path) -> None:
    card = read_sweep(path)
    assert json.dumps(card.to_json(), indent=2) + "\n" == path.read_text()


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_every_committed_sweep_card_renders_its_committed_markdown(path: Path) -> None:
    assert render_sweep_markdown(read_sweep(path)) == (path.parent / "sweep.md").read_text()


def test_the_reader_gives_typed_fields() -> None:
    raw = json.loads((EXAMPLE / "sweep.json").read_text())
    card = read_sweep(EXAMPLE / "sweep.json")
    cell, entry = card.cells[0], card.cells[0].entries[0]
    assert isinstance(cell, SweepCell) and isinstance(entry, SweepEntry) and isinstance(cell.drift, Drift)
    assert entry.ratio is not None and isinstance(entry.ratio, Ratio)
    assert (cell.workload, cell.level, entry.candidate, entry.speedup, entry.ratio.to_json()) == (
        raw["cells"][0]["workload"],
        raw["cells"][0]["level"],
        raw["cells"][0]["entries"][0]["candidate"],
        raw["cells"][0]["entries"][0]["speedup"],
        raw["cells"][0]["entries"][0]["ratio"],
    )
    assert cell.drift.pairs == raw["cells"][0]["drift"]["pairs"] > 0
    assert [c.name for c in card.candidates] == [c["name"] for c in raw["candidates"]]
    assert card.recommendation.lines == raw["recommendation"]["lines"]
    level = card.recommendation.workloads[0].levels[0]
    assert (level.level, level.best) == (
        raw["recommendation"]["workloads"][0]["levels"][0]["level"],
        raw["recommendation"]["workloads"][0]["levels"][0]["best"],
    )
    assert card.design is not None and card.design.blocks is None and card.design.ci_method == "within-run"


def test_the_committed_schema_is_the_one_the_type_generates() -> None:
    assert SCHEMA.read_text() == json.dumps(SweepCard.json_schema(), indent=2) + "\n"


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_every_committed_sweep_card_validates_against_the_schema(path: Path) -> None:
    jsonschema.Draft202012Validator(SweepCard.json_schema()).validate(json.loads(path.read_text()))


def test_the_schema_holds_the_nested_records() -> None:
    entry = SweepCard.json_schema()["properties"]["cells"]["items"]["properties"]["entries"]["items"]
    assert entry["required"] == ["candidate"]
    assert entry["properties"]["speedup"] == {"anyOf": [{"type": "number"}, {"type": "null"}]}


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (
            lambda d: d["cells"][3]["entries"][0].update(speedup="abc"),
            "cells[3].entries[0].speedup",
            "expected a number or null, got 'abc'",
        ),
        (lambda d: d["candidates"][1].update(k="2"), "candidates[1].k", "expected an integer, got '2'"),
        (
            lambda d: d["recommendation"]["workloads"][0]["levels"][2].update(tied="k1"),
            "recommendation.workloads[0].levels[2].tied",
            "expected a list of strings, got 'k1'",
        ),
        (lambda d: d["cells"][0]["drift"].pop("timing"), "cells[0].drift.timing", "missing (expected a string)"),
        (lambda d: d.pop("recommendation"), "recommendation", "missing (expected an object (recommendation))"),
        (lambda d: d.update(times_s={"k1": "60"}), "times_s", "expected an object of numbers, got {'k1': '60'}"),
    ],
)
def test_a_bad_field_is_one_line_and_the_schema_refuses_it_too(
    tmp_path: Path, change: object, field: str, message: str
) -> None:
    data = json.loads((EXAMPLE / "sweep.json").read_text())
    change(data)  # type: ignore[operator]
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(data))
    with pytest.raises(BadInput) as caught:
        read_sweep(path)
    assert str(caught.value) == f"{path}: {field}: {message}; {FIX}"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, SweepCard.json_schema())


def test_loadgen_report_on_a_sweep_whose_card_does_not_read_is_exit_2_naming_the_field(tmp_path: Path) -> None:
    copy = tmp_path / EXAMPLE.name
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("requests.jsonl", "plots"))
    data = json.loads((copy / "sweep.json").read_text())
    data["cells"][0]["drift"]["pairs"] = "many"
    (copy / "sweep.json").write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["report", str(copy)])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines()[-1] == (
        f"loadgen: error: {copy / 'sweep.json'}: cells[0].drift.pairs: expected an integer, got 'many'; {FIX}"
    )
