"""Re-rendering is deterministic: every committed example under docs/examples/ rebuilt by `loadgen report`
comes out byte-identical (card.json and card.md), and a card built from requests.jsonl is dated by the run's
last cell end, not by the clock."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from loadgen.report.carddata import build_card
from loadgen.run.flow import finish_card
from tests.report.test_carddata import _entry, write_run

EXAMPLES = sorted(p.parent for p in (Path(__file__).resolve().parents[2] / "docs" / "examples").rglob("card.json"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_a_committed_example_re_renders_byte_identical(example: Path, tmp_path: Path) -> None:
    copy = tmp_path / example.name
    shutil.copytree(example, copy)
    finish_card(copy, log=lambda _: None)
    assert (copy / "card.json").read_bytes() == (example / "card.json").read_bytes()
    assert (copy / "card.md").read_bytes() == (example / "card.md").read_bytes()


def test_there_are_committed_examples() -> None:
    assert len(EXAMPLES) >= 3


def test_a_built_card_is_dated_by_its_last_cell_end(tmp_path: Path) -> None:
    entries = [_entry("plain", 1, started_utc="2026-01-02T03:04:05.500000+00:00", duration_s=10.0),
               _entry("speculative", 1, started_utc="2026-01-02T03:04:00+00:00", duration_s=2.0)]
    run = write_run(tmp_path / "r", levels=(1,), entries=entries)
    assert build_card(run)["generated_utc"] == "2026-01-02T03:04:15+00:00"
    again = json.loads(json.dumps(build_card(run)))
    assert again["generated_utc"] == "2026-01-02T03:04:15+00:00"
