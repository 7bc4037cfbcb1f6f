"""The pair card as a typed record (loadgen/records/card.py): every committed card reads and writes back
byte-identically, a card that does not match its type is one line naming the file, the field and the fix
(exit 2), and report/card.schema.json is the schema the types generate."""

from __future__ import annotations

import copy
import json
import shutil
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.errors import BadInput
from loadgen.records.card import PairCard, card_schema
from loadgen.records.cardwire import FIX, Wire
from loadgen.report.carddata import build_card
from loadgen.util.strictjson import dumps_strict as dumps
from tests.report.test_carddata import write_run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "docs").rglob("card.json"))
sys.path.insert(0, str(ROOT / "scripts"))


def _example(name: str = "h200-1b-draft") -> dict[str, Any]:
    data: dict[str, Any] = json.loads(next(p for p in EXAMPLES if p.parent.name == name).read_text())
    return data


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.parent.name for p in EXAMPLES])
def test_a_committed_card_reads_and_writes_back_byte_identically(path: Path) -> None:
    text = path.read_text()
    card = PairCard.from_json(json.loads(text), source=str(path))
    assert dumps(card.to_json(), indent=2, sort_keys=False) + "\n" == text
    assert unnamed(card) == []  # the types name every key the committed cards hold


def unnamed(value: object, path: str = "") -> list[str]:
    """The paths of the keys no record type names (kept verbatim in ``extra``), anywhere in ``value``."""
    if isinstance(value, Wire):
        own = [f"{path}.{k}" for k in value.extra]
        return own + [
            p
            for f in fields(value)
            if f.name not in ("keys", "extra")
            for p in unnamed(getattr(value, f.name), f"{path}.{f.name}")
        ]
    if isinstance(value, tuple | list):
        return [p for i, v in enumerate(value) for p in unnamed(v, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in unnamed(v, f"{path}.{k}")]
    return []


def test_a_built_card_has_no_key_its_types_do_not_name_and_reads_back_equal(tmp_path: Path) -> None:
    card = build_card(write_run(tmp_path / "r"))
    assert unnamed(card) == []
    again = PairCard.from_json(json.loads(dumps(card.to_json())), source="card.json")
    assert again == card and again.to_json() == card.to_json()
    assert [c.level for c in card.cells] == ["c1", "c2"] and card.cells[0].ratios["tpot_p50"].value is not None


def test_loadgen_report_of_a_card_that_does_not_match_is_one_line_exit_2(tmp_path: Path) -> None:
    run = tmp_path / "h200-1b-draft"
    shutil.copytree(next(p.parent for p in EXAMPLES if p.parent.name == "h200-1b-draft"), run)
    data = json.loads((run / "card.json").read_text())
    data["cells"][3]["ratios"]["tpot_p50"]["value"] = "abc"
    (run / "card.json").write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["report", str(run)])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        f"loadgen: error: {run / 'card.json'}: cells[3].ratios.tpot_p50.value: expected a number, got 'abc'; "
        "re-render with `loadgen report` or restore the file"
    )


def test_the_record_reads_attributes_of_the_committed_values() -> None:
    card = PairCard.from_json(_example(), source="card.json")
    first = card.cells[0]
    raw = _example()["cells"][0]
    assert (first.workload, first.level, first.concurrency) == (raw["workload"], raw["level"], raw["concurrency"])
    assert first.ratios["tpot_p50"].value == raw["ratios"]["tpot_p50"]["value"]
    assert first.ratios["tpot_p50"].ci_low == raw["ratios"]["tpot_p50"]["ci_low"]
    assert first.speculative is not None and first.speculative.tpot_s is not None
    assert first.speculative.tpot_s.p50 == raw["speculative"]["tpot_s"]["p50"]
    assert card.verdict.passed is _example()["verdict"]["passed"]
    assert card.cell(first.workload, first.level) is first and card.cell(first.workload, "nowhere") is None


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda c: c["cells"][3]["ratios"]["tpot_p50"].__setitem__("value", "abc"),
            "card.json: cells[3].ratios.tpot_p50.value: expected a number, got 'abc'",
        ),
        (lambda c: c["cells"][0].__setitem__("level", 4), "card.json: cells[0].level: expected a string, got 4"),
        (lambda c: c["cells"][1]["plain"]["ttft_s"].pop("count"), "card.json: cells[1].plain.ttft_s.count: missing"),
        (
            lambda c: c.__setitem__("schema", "loadgen.card/0"),
            "card.json: schema: expected 'loadgen.card/1', got 'loadgen.card/0'",
        ),
        (lambda c: c["cells"][0].__setitem__("complete", 1), "card.json: cells[0].complete: expected true or false"),
        (lambda c: c["verdict"].__setitem__("cells", {}), "card.json: verdict.cells: expected a list, got {}"),
    ],
)
def test_a_card_that_does_not_match_names_the_file_the_field_and_the_fix(edit: Any, message: str) -> None:
    data = copy.deepcopy(_example())
    edit(data)
    with pytest.raises(BadInput) as caught:
        PairCard.from_json(data, source="card.json")
    assert str(caught.value).startswith(message) and str(caught.value).endswith(FIX)
    assert "\n" not in str(caught.value) and caught.value.exit_code == 2


def test_a_field_set_after_reading_is_written_and_unknown_keys_survive() -> None:
    data = _example()
    del data["statistics_from"]
    data["newer_key"] = {"kept": True}
    card = replace(PairCard.from_json(data, source="card.json"), statistics_from="card.json")
    out = card.to_json()
    assert out["statistics_from"] == "card.json" and out["newer_key"] == {"kept": True}
    assert list(out)[-2:] == ["newer_key", "statistics_from"]


def test_the_committed_schema_is_the_one_the_types_generate() -> None:
    from card_schema import SCHEMA_PATH, schema_text

    assert SCHEMA_PATH.read_text() == schema_text(), "run .venv/bin/python scripts/card_schema.py"
    schema = card_schema()
    cell = schema["properties"]["cells"]["items"]
    assert cell["properties"]["level"] == {"type": "string"}
    assert cell["required"][:5] == ["workload", "level", "concurrency", "rate_rps", "complete"]
    assert cell["properties"]["rate_rps"] == {"type": ["number", "null"]}
    ratio = cell["properties"]["ratios"]["additionalProperties"]
    assert ratio["required"] == ["value"] and ratio["properties"]["pairs"] == {"type": ["integer", "null"]}
    assert schema["properties"]["schema"] == {"const": "loadgen.card/1"}
    assert "statistics_from" not in schema["required"] and "verdict" in schema["required"]


def test_every_committed_card_follows_the_generated_schema_and_a_broken_one_does_not() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(card_schema())
    for path in EXAMPLES:
        validator.validate(json.loads(path.read_text()))
    data = _example()
    data["cells"][0]["plain"]["requests"] = "64"
    with pytest.raises(jsonschema.ValidationError, match="'64' is not of type 'integer'"):
        validator.validate(data)
