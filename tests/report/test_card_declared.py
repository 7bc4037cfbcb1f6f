"""Card notes from the declared speculative config: a level the config switches off says so (and is
compared like any other cell); a lookup method that proposed no draft in a whole cell where speculation was
on is a blocking note, raised under the card's status; little acceptance with drafts is not that case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.report.carddata import build_card
from tests.report.test_carddata import _entry, write_run
from tests.support.cards import markdown

NO_DRAFTS = {
    "num_drafts": 0.0,
    "num_draft_tokens": 0.0,
    "num_accepted_tokens": 0.0,
    "accepted_per_position": [0.0, 0.0, 0.0],
    "reset": False,
}


def _card(tmp_path: Path, speculative: dict[str, Any], spec_decode: dict[str, Any]) -> dict[str, Any]:
    entries = [
        _entry(r, c, spec_decode=spec_decode if r == "speculative" else None, server_finished_requests=4.0)
        for c in (1, 2)
        for r in ("plain", "speculative")
    ]
    root = write_run(tmp_path, entries=entries)
    proto = json.loads((root / "protocol.json").read_text())
    (root / "protocol.json").write_text(json.dumps(proto | {"speculative_config": speculative}))
    return dict(build_card(root).to_json())


def test_a_level_the_config_switches_off_is_noted_and_still_compared(tmp_path: Path) -> None:
    card = _card(
        tmp_path, {"method": "draft_model", "num_speculative_tokens": 3, "disable_by_batch_size": 2}, NO_DRAFTS
    )
    c1, c2 = card["cells"]
    note = (
        "speculative: speculation off by the declared config at this level (disable_by_batch_size = 2 <= 2 "
        "running requests); measured and compared like any other cell, no fallback"
    )
    assert note in c2["notes"] and not any("declared config" in n for n in c1["notes"])
    assert c2["complete"] is True and c2["ratios"]["ttft_p50"]["value"] == pytest.approx(2.0)
    schedule = _card(
        tmp_path / "s",
        {
            "method": "draft_model",
            "num_speculative_tokens": 3,
            "num_speculative_tokens_per_batch_size": [[1, 1, 3], [2, 64, 0]],
        },
        NO_DRAFTS,
    )
    assert (
        "speculative: speculation off by the declared config at this level (num_speculative_tokens_per_batch_size "
        "gives K = 0 for batch sizes 2-64); measured and compared like any other cell, no fallback"
    ) in schedule["cells"][1]["notes"]


def test_a_lookup_method_without_a_single_draft_is_a_blocking_note(tmp_path: Path) -> None:
    card = _card(tmp_path, {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}, NO_DRAFTS)
    note = (
        "BLOCKING: this was not a speculative comparison: ngram proposed 0 drafts in all 1 block(s) of this "
        "cell, so both servers decoded without speculation"
    )
    assert [note in c["notes"] for c in card["cells"]] == [True, True]
    md = markdown(card)  # type: ignore[arg-type]
    head = md.split("## What was compared")[0]
    assert (
        "> **BLOCKING** (w · concurrency 2): this was not a speculative comparison: ngram proposed 0 drafts in "
        "all 1 block(s) of this cell, so both servers decoded without speculation"
    ) in head

    # little acceptance with drafts > 0 is not that case
    drafts = NO_DRAFTS | {
        "num_drafts": 50.0,
        "num_draft_tokens": 150.0,
        "num_accepted_tokens": 1.0,
        "accepted_per_position": [1.0, 0.0, 0.0],
    }
    low = _card(tmp_path / "low", {"method": "ngram", "num_speculative_tokens": 3}, drafts)
    assert low["cells"][0]["speculative"]["acceptance"]["acceptance_rate"] < 0.01
    assert not any("not a speculative comparison" in n for c in low["cells"] for n in c["notes"])
    assert "**BLOCKING**" not in markdown(low)  # type: ignore[arg-type]
