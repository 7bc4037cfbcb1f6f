"""The answer first (report/answermd.py, report/sweepmd.py): on cards of known decisions the answer's lines say
what the verdict's cells and the crossover say, and every committed card.md and sweep.md carries the verdict,
the crossover, the SLO capacity and the deployable line (or why one is absent) in its first 15 lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loadgen.report.answermd import answer_rows
from loadgen.report.cardlevels import crossovers
from loadgen.report.cardmd import render_markdown
from tests.support.cards import card_record

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
CARDS = sorted([*EXAMPLES.rglob("card.md"), *EXAMPLES.rglob("sweep.md")])


def _tpot(value: float, low: float, high: float, effect: str) -> dict[str, Any]:
    return {"tpot_p50": {"value": value, "ci_low": low, "ci_high": high, "effect": effect}}


def _card(statuses: dict[int, str], effects: dict[int, str], **over: Any) -> dict[str, Any]:
    cells = [
        {"workload": "w", "level": f"c{c}", "concurrency": c, "rate_rps": None, "complete": True, "notes": [],
         "ratios": _tpot(0.8 if effects[c] == "faster" else 1.3, 0.7, 1.4, effects[c])}
        for c in statuses
    ]  # fmt: skip
    passed = all(s == "pass" for s in statuses.values())
    verdict = {
        "passed": passed,
        "summary": "PASS: every judged cell passes" if passed else "FAIL: 1 failed check(s)",
        "declared": True,
        "cells": [{"workload": "w", "concurrency": c, "status": s} for c, s in statuses.items()],
    }
    return {
        "cells": cells,
        "concurrency": list(statuses),
        "speculative_config": {"method": "ngram", "num_speculative_tokens": 4},
        "verdict": verdict,
        "workloads_statement": "Conclusions hold for the workloads tested only: w.",
        **over,
    }


def _answer(data: dict[str, Any]) -> str:
    card = card_record(data)
    # the crossover as the card builder writes it, from the cells' decisions (report/cardlevels.py)
    return "\n".join(answer_rows(card.with_fields(crossover=crossovers(card.cells))))


def test_a_candidate_that_pays_at_low_load_only_is_deployed_as_plain_with_where_it_pays() -> None:
    text = _answer(_card({1: "pass", 4: "fail"}, {1: "faster", 4: "slower"}))
    assert "- **verdict**: FAIL: 1 failed check(s)" in text
    assert "w: between c=1 and c=4 (ratio speculative / plain c=1: faster (0.800 [0.700, 1.400])" in text
    assert '`{"method": "ngram", "num_speculative_tokens": 4}` passes at w c=1 only' in text
    assert "- **capacity at SLO**: no SLO declared ([slo] in the pair file)" in text


def test_a_candidate_that_passes_everywhere_is_deployed() -> None:
    text = _answer(_card({1: "pass", 4: "pass"}, {1: "faster", 4: "faster"}))
    assert '- **deploy**: speculative, `{"method": "ngram", "num_speculative_tokens": 4}`: it passes' in text
    assert "faster at every tested level: no crossover up to the highest" in text


def test_a_candidate_slower_everywhere_never_pays_and_plain_is_deployed() -> None:
    text = _answer(_card({1: "fail", 4: "fail"}, {1: "slower", 4: "slower"}))
    assert "slower at every tested level: it never pays" in text and "- **deploy**: plain (do not speculate)" in text


def test_capacity_at_slo_names_both_servers_levels_and_goodput() -> None:
    capacity = {
        "w": {
            "plain": {"levels": [1, 4], "holds": [True, True], "capacity_concurrency": 4, "goodput_rps": 2.5},
            "speculative": {"levels": [1, 4], "holds": [False, False], "capacity_concurrency": None},
        }
    }
    data = _card({1: "fail", 4: "fail"}, {1: "slower", 4: "slower"}, capacity=capacity)
    data["slo"] = {"percentile": 99.0, "ttft_s": 1.0}
    text = _answer(data)
    assert "- **capacity at SLO** (p99: ttft ≤ 1 s): w: plain c=4 (2.50 req/s goodput), speculative none held" in text


def test_the_answer_opens_the_card_before_the_evidence_and_the_provenance() -> None:
    text = render_markdown(card_record(_card({1: "pass"}, {1: "faster"})))
    assert text.index("## The answer") < text.index("## Verdict") < text.index("## What was compared")
    assert text.index("## Results per workload") < text.index("## Servers")


@pytest.mark.parametrize("path", CARDS, ids=[str(p.relative_to(EXAMPLES)) for p in CARDS])
def test_the_first_15_lines_of_every_committed_card_carry_the_answer(path: Path) -> None:
    head = "\n".join(path.read_text().splitlines()[:15])
    verdict = "**verdict**" if path.name == "card.md" else "**recommendation"
    for needle in (verdict, "**where speculation stops paying**", "**capacity at SLO**", "**deploy**"):
        assert needle in head, f"{path}: {needle} not in the first 15 lines"


def test_there_are_committed_cards_and_sweep_cards() -> None:
    assert any(p.name == "card.md" for p in CARDS) and any(p.name == "sweep.md" for p in CARDS)
