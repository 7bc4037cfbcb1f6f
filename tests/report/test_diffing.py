"""diffing.diff_cards on small card dicts, and ``loadgen diff`` exit codes through click's CliRunner:
3 when the candidate regressed, 2 for bad input, 0 otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.errors import BadInput
from loadgen.report.diffing import diff_cards


def card(tpot: dict[str, float | None], statuses: dict[int, str] | None = None, passed: bool | None = None,
         primary: list[str] | None = None, pair: str = "t") -> dict[str, Any]:
    """A card of ``pair`` with one cell per ``c<level>`` in ``tpot`` (its tpot_p50 ratio), judged cells
    ``statuses`` (level -> status) and verdict ``passed``."""
    cells = [{"workload": "w", "level": level, "concurrency": int(level[1:]),
              "ratios": {"tpot_p50": {"value": r}, "ttft_p50": {"value": 2.0}}} for level, r in tpot.items()]
    verdict = None if statuses is None else {
        "passed": passed, "criteria": {"primary": primary} if primary else {},
        "cells": [{"workload": "w", "concurrency": c, "status": s} for c, s in statuses.items()]}
    return {"pair": pair, "cells": cells, "verdict": verdict}


def test_shared_cells_are_listed_side_by_side_without_regression() -> None:
    d = diff_cards(card({"c1": 0.8, "c2": 1.1}, {1: "pass", 2: "fail"}, False),
                   card({"c1": 0.75, "c2": None}, {1: "pass", 2: "fail"}, False))
    assert d.lines == ("w c1: tpot_p50 spec/plain 0.800 -> 0.750; verdict pass -> pass",
                       "w c2: tpot_p50 spec/plain 1.100 -> –; verdict fail -> fail",
                       "verdict: baseline FAIL, candidate FAIL")
    assert (d.regressed, d.summary) == (False, "no regression")


def test_a_cell_going_from_pass_to_fail_and_the_verdict_failing_regress() -> None:
    d = diff_cards(card({"c1": 0.8}, {1: "pass"}, True), card({"c1": 1.2}, {1: "fail"}, False))
    assert d.regressed is True
    assert d.summary == ("the candidate's verdict fails its declared criteria, the baseline's passed; "
                         "w c1 went from pass to fail")
    assert d.lines[-1] == "verdict: baseline PASS, candidate FAIL"


def test_a_cell_only_in_the_candidate_and_unjudged_cards() -> None:
    d = diff_cards(card({"c1": 0.8}), card({"c1": 0.9, "c4": 1.0}))
    assert d.lines == ("w c1: tpot_p50 spec/plain 0.800 -> 0.900; verdict – -> –", "w c4: only in the candidate",
                       "verdict: baseline not judged (no criteria declared), candidate not judged (no criteria "
                       "declared)")
    assert d.regressed is False


def test_the_candidates_first_primary_metric_is_compared() -> None:
    d = diff_cards(card({"c1": 0.8}), card({"c1": 0.9}, {1: "pass"}, True, primary=["ttft_p50", "tpot_p50"]))
    assert d.lines[0] == "w c1: ttft_p50 spec/plain 2.000 -> 2.000; verdict – -> pass"


def test_fail_to_pass_is_no_regression() -> None:
    assert diff_cards(card({"c1": 1.2}, {1: "fail"}, False), card({"c1": 0.8}, {1: "pass"}, True)).regressed is False


def test_cards_of_different_pairs_are_bad_input() -> None:
    with pytest.raises(BadInput, match="the cards are of different pairs \\('t' vs 'u'\\)"):
        diff_cards(card({}), card({}, pair="u"))


def _runs(tmp_path: Path, a: dict[str, Any], b: dict[str, Any]) -> tuple[str, str]:
    for name, c in (("a", a), ("b", b)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "card.json").write_text(json.dumps(c))
    return str(tmp_path / "a"), str(tmp_path / "b")


def test_loadgen_diff_exits_3_when_the_candidate_regressed(tmp_path: Path) -> None:
    a, b = _runs(tmp_path, card({"c1": 0.8}, {1: "pass"}, True), card({"c1": 1.2}, {1: "fail"}, False))
    result = CliRunner().invoke(main, ["diff", a, b])
    assert result.exit_code == 3
    assert "w c1: tpot_p50 spec/plain 0.800 -> 1.200; verdict pass -> fail" in result.output
    assert f"loadgen: error: {b} regressed against {a}: the candidate's verdict fails" in result.output


def test_loadgen_diff_exits_0_without_regression(tmp_path: Path) -> None:
    a, b = _runs(tmp_path, card({"c1": 1.2}, {1: "fail"}, False), card({"c1": 0.8}, {1: "pass"}, True))
    result = CliRunner().invoke(main, ["diff", a, b])
    assert result.exit_code == 0
    assert result.output.splitlines() == ["w c1: tpot_p50 spec/plain 1.200 -> 0.800; verdict fail -> pass",
                                          "verdict: baseline FAIL, candidate PASS"]


def test_loadgen_diff_exits_2_on_a_folder_without_card_or_different_pairs(tmp_path: Path) -> None:
    a, b = _runs(tmp_path, card({}), card({}, pair="u"))
    result = CliRunner().invoke(main, ["diff", a, b])
    assert result.exit_code == 2 and "the cards are of different pairs" in result.output
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["diff", a, str(tmp_path / "empty")])
    assert result.exit_code == 2
    assert f"{tmp_path / 'empty'} holds no card.json; pass run folders" in result.output
