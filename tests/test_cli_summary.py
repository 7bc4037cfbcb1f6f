"""summary.summary_table / print_summary: the rich table's rows for a card, captured from a wide console."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from loadgen.cli.summary import print_summary, summary_table
from tests.support.cards import card_record


def _side(ttft: float, tpot: float, tps: float | None, errors: int, acc: float | None = None) -> dict[str, Any]:
    # p95 = 1.5 x p50 and p99 = 2 x p50: each percentile lands in its own place
    return {
        "ttft_s": {"p50": ttft, "p95": 1.5 * ttft, "p99": 2 * ttft},
        "tpot_s": {"p50": tpot, "p95": 1.5 * tpot, "p99": 2 * tpot},
        "output_throughput_tps": tps,
        "errors": errors,
        "acceptance": None if acc is None else {"acceptance_rate": acc},
    }


CARD: dict[str, Any] = {
    "pair": "t",
    "complete": True,
    "cells": [
        {
            "workload": "w",
            "level": "c1",
            "concurrency": 1,
            "plain": _side(0.25, 0.02, 150.4, 0),
            "speculative": _side(0.5, 0.01, 299.6, 1, 0.625),
            "ratios": {"tpot_p50": {"value": 0.5, "ci_low": 0.454, "ci_high": 0.556, "effect": "faster"}},
            "noise_floor": {"ratios": {"tpot_p50": {"value": 1.01, "ci_low": 0.97, "ci_high": 1.05}}},
        },
        {
            "workload": "w",
            "level": "r2.5",
            "concurrency": 4,
            "plain": _side(0.1, 0.03, None, 2),
            "ratios": {"tpot_p50": {"value": None}},
        },
    ],
    "verdict": {"summary": "PASS: every judged cell passed [criteria]"},
}


def _text(card: dict[str, Any]) -> str:
    console = Console(width=260, record=True, color_system=None)
    print_summary(card_record(card), console)
    return console.export_text()


def _cells(text: str) -> list[list[str]]:
    """The data rows of the rendered table as lists of stripped cells."""
    return [
        [x.strip() for x in line.strip().strip("│").split("│")]
        for line in text.splitlines()
        if line.startswith("│") and "workload" not in line
    ]


#: CARD's first cell after its workload and load: TTFT and TPOT ms p50/p95/p99 of each server, the TPOT p50 ratio
#: with its CI and decision, the A/A TPOT ratio, the acceptance, tokens/s and failed requests of each server.
FIRST_ROW = [
    "250.0/375.0/500.0",
    "500.0/750.0/1000.0",
    "20.0/30.0/40.0",
    "10.0/15.0/20.0",
    "0.50 [0.45, 0.56] faster",
    "1.01 [0.97, 1.05]",
    "0.625",
    "150 / 300",
    "0 / 1",
]


def test_each_cell_is_one_row_in_ms_with_p50_p95_p99_the_ratio_and_its_ci() -> None:
    rows = _cells(_text(CARD))
    assert rows[0] == ["w", "c1", *FIRST_ROW]


def test_the_header_names_the_three_percentiles() -> None:
    text = _text(CARD)
    assert "TTFT ms plain p50/p95/p99" in text and "TPOT ms spec p50/p95/p99" in text


def test_a_cell_missing_a_side_shows_dashes() -> None:
    rows = _cells(_text(CARD))
    assert rows[1] == [
        "w",
        "r2.5",
        "100.0/150.0/200.0",
        "–/–/–",
        "30.0/45.0/60.0",
        "–/–/–",
        "–",
        "–",
        "–",
        "– / –",
        "2 / –",
    ]


def test_the_title_and_the_verdict_line() -> None:
    text = _text(CARD)
    assert "t: speculative vs plain (complete)" in text
    assert text.rstrip().splitlines()[-1] == "verdict: PASS: every judged cell passed [criteria]"
    incomplete = _text(CARD | {"complete": False, "verdict": {"passed": None, "summary": "not judged"}})
    assert "t: speculative vs plain (INCOMPLETE)" in incomplete
    assert incomplete.rstrip().splitlines()[-1] == "verdict: not judged"


def test_a_cell_that_neither_server_measured_shows_its_level_and_dashes() -> None:
    cell = {"workload": "w", "level": "c8", "concurrency": 8, "ratios": {}}
    table = summary_table(card_record({"pair": "t", "complete": True, "cells": [cell]}))
    assert [next(iter(col.cells)) for col in table.columns][:2] == ["w", "c8"]
    assert list(table.columns[10].cells) == ["– / –"]
    assert [next(iter(col.cells)) for col in table.columns][2:10] == ["–/–/–"] * 4 + ["–"] * 3 + ["– / –"]


def test_on_stdout_that_is_no_terminal_the_table_and_verdict_keep_their_full_width(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # what a shell passes on to a CI job or a log
    long = "long-diverse-prompts-from-the-production-sample@4096"
    verdict = "FAIL: 1 failed check(s), first: " + "x" * 150
    card = CARD | {"cells": [CARD["cells"][0] | {"workload": long}], "verdict": {"summary": verdict}}
    print_summary(card_record(card))
    lines = capsys.readouterr().out.splitlines()
    [row] = [line for line in lines if long in line]
    assert [x.strip() for x in row.strip().strip("│").split("│")] == [long, "c1", *FIRST_ROW]
    assert lines[-1] == f"verdict: {verdict}"
    assert len({len(line) for line in lines[1:-1]}) == 1 and len(lines[1]) > 80  # one table width, over 80
