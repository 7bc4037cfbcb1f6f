"""card.json's schema (``loadgen.card/1``) is written out as a JSON Schema in loadgen/report/card.schema.json;
every committed example card and a freshly built card validate against it (the ``jsonschema`` package of
the dev extra)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgen.report.carddata import CARD_SCHEMA, build_card
from tests.report.test_carddata import write_run

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "loadgen" / "report" / "card.schema.json"
EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "docs" / "examples").rglob("card.json"))


def _schema() -> dict[str, object]:
    schema: dict[str, object] = json.loads(SCHEMA_PATH.read_text())
    return schema


def test_the_schema_names_the_version_the_code_writes() -> None:
    assert _schema()["properties"]["schema"] == {"const": CARD_SCHEMA}  # type: ignore[index]


@pytest.mark.parametrize("card", EXAMPLES, ids=[p.parent.name for p in EXAMPLES])
def test_a_committed_example_card_follows_the_schema(card: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(_schema())
    jsonschema.validate(json.loads(card.read_text()), _schema(), cls=jsonschema.Draft202012Validator)


def test_a_built_card_follows_the_schema_and_a_broken_one_does_not(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    card = json.loads(json.dumps(build_card(write_run(tmp_path / "r")).to_json()))
    jsonschema.validate(card, _schema(), cls=jsonschema.Draft202012Validator)
    card["cells"][0]["level"] = 4
    with pytest.raises(jsonschema.ValidationError, match="4 is not of type 'string'"):
        jsonschema.validate(card, _schema(), cls=jsonschema.Draft202012Validator)
