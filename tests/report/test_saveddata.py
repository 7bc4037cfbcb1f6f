"""report/saveddata.py on the committed example docs/examples/h200/h200-1b-ngram (card.json, cells.jsonl and
protocol.json, no requests.jsonl): the card re-derived from its saved statistics is the committed card, a
verdict or note that older code wrote is recomputed, and a folder without what it needs is bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from loadgen.errors import BadInput
from loadgen.report.saveddata import refresh_saved_card, saved_only

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "h200" / "h200-1b-ngram"


def test_the_committed_card_is_its_own_refresh() -> None:
    assert saved_only(EXAMPLE)
    assert refresh_saved_card(EXAMPLE).to_json() == json.loads((EXAMPLE / "card.json").read_text())


def test_what_depends_on_cell_level_numbers_is_recomputed(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(EXAMPLE, run)
    card = json.loads((run / "card.json").read_text())
    expected = json.loads(json.dumps(card))
    card["verdict"] = {"passed": True, "summary": "stale", "declared": False}
    del card["statistics_from"]  # the refresh writes it again
    card["cells"][0]["notes"].append("plain: bursty arrivals, an old note")
    card["cells"][0]["notes"].append("speculative: bursty too")
    text = json.dumps(card)
    assert '"goodput_rps": null' in text
    (run / "card.json").write_text(text.replace('"goodput_rps": null', '"goodput_rps": Infinity', 1))  # older code
    assert refresh_saved_card(run).to_json() == expected


def test_a_folder_without_its_files_is_bad_input(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(EXAMPLE, run)
    (run / "protocol.json").unlink()
    with pytest.raises(BadInput, match=f"{run} is not a run folder \\(no protocol.json\\)"):
        refresh_saved_card(run)
    (run / "cells.jsonl").unlink()
    with pytest.raises(BadInput, match="has neither requests.jsonl nor card.json and cells.jsonl"):
        refresh_saved_card(run)
    (run / "requests.jsonl").write_text("")
    assert not saved_only(run) and not saved_only(tmp_path)
