"""diffing.diff_cards on small card dicts (closed-form CIs), and ``loadgen diff`` exit codes through click's
CliRunner: 3 when the candidate regressed, 2 for bad input, 0 otherwise; sweep folders candidate by candidate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.errors import BadInput
from loadgen.records.card import PairCard
from loadgen.report.diffing import Interval, diff_cards, worse_beyond
from tests.support.cards import card_record, full_card

Tpot = float | None | tuple[float, float, float]


def card(
    tpot: dict[str, Tpot],
    statuses: dict[int, str] | None = None,
    passed: bool | None = None,
    primary: list[str] | None = None,
    pair: str = "t",
    plain_tpot_s: float = 0.01,
) -> PairCard:
    """A card of ``pair`` with one cell per ``c<level>`` in ``tpot`` (its tpot_p50 ratio, or (value, ci_low,
    ci_high)), the plain TPOT p50 ``plain_tpot_s`` and the speculative one at that times the ratio, judged cells
    ``statuses`` (level -> status) and verdict ``passed``."""
    cells = []
    for level, r in tpot.items():
        value, low, high = r if isinstance(r, tuple) else (r, None, None)
        spec = None if value is None else plain_tpot_s * value
        cells.append(
            {
                "workload": "w",
                "level": level,
                "concurrency": int(level[1:]),
                "complete": value is not None,
                "plain": {"tpot_s": {"p50": plain_tpot_s}, "failure": None},
                "speculative": {"tpot_s": {"p50": spec}, "failure": None},
                "ratios": {"tpot_p50": {"value": value, "ci_low": low, "ci_high": high}, "ttft_p50": {"value": 2.0}},
            }
        )
    verdict = (
        None
        if statuses is None
        else {
            "passed": passed,
            "criteria": {"primary": primary} if primary else {},
            "cells": [{"workload": "w", "concurrency": c, "status": s} for c, s in statuses.items()],
        }
    )
    return card_record({"pair": pair, "cells": cells, "verdict": verdict})


def test_shared_cells_are_listed_side_by_side_with_absolute_figures() -> None:
    d = diff_cards(
        card({"c1": 0.8, "c2": 1.1}, {1: "pass", 2: "fail"}, False),
        card({"c1": 0.75, "c2": 1.1}, {1: "pass", 2: "fail"}, False),
    )
    assert d.lines == (
        "w c1: tpot_p50 spec/plain 0.800 -> 0.750; plain 10.00 -> 10.00 ms, speculative 8.00 -> 7.50 ms; "
        "verdict pass -> pass",
        "w c2: tpot_p50 spec/plain 1.100 -> 1.100; plain 10.00 -> 10.00 ms, speculative 11.00 -> 11.00 ms; "
        "verdict fail -> fail",
        "verdict: baseline FAIL, candidate FAIL",
    )
    assert (d.regressed, d.summary) == (False, "no regression")


# The numbers: a TPOT ratio 2.130 that became 2.349 (10.3% worse).
NARROW_A, NARROW_B = (2.130, 2.100, 2.160), (2.349, 2.320, 2.380)  # B's CI wholly above A's
WIDE_A, WIDE_B = (2.130, 1.900, 2.400), (2.349, 2.100, 2.600)  # the CIs overlap: within the noise


def test_ten_percent_worse_beyond_the_ci_regresses_within_the_ci_does_not() -> None:
    d = diff_cards(card({"c1": NARROW_A}), card({"c1": NARROW_B}))
    assert d.regressions == (
        "w c1: tpot_p50 spec/plain 2.349 [2.320, 2.380] lies above the baseline's 95% CI "
        "[2.100, 2.160] (higher is worse)",
    )
    assert d.lines[0].startswith(
        "w c1: tpot_p50 spec/plain 2.130 [2.100, 2.160] -> 2.349 [2.320, 2.380]; plain "
        "10.00 -> 10.00 ms, speculative 21.30 -> 23.49 ms"
    )
    assert diff_cards(card({"c1": WIDE_A}), card({"c1": WIDE_B})).regressed is False


def test_a_declared_tolerance_replaces_the_baselines_ci_as_the_bar() -> None:
    a, b = Interval(2.130, 1.900, 2.400), Interval(2.349, 2.300, 2.400)  # overlapping CIs
    assert worse_beyond("tpot_p50", a, b, None) is None
    assert worse_beyond("tpot_p50", a, b, 0.05) == (
        "tpot_p50 spec/plain 2.349 [2.300, 2.400] lies above the baseline's 2.130 x 1.05 = 2.236 (higher is worse)"
    )
    assert worse_beyond("tpot_p50", a, b, 0.10) is None  # 2.130 x 1.1 = 2.343 > 2.300
    narrow_a, near_b = Interval(2.130, 2.120, 2.140), Interval(2.220, 2.200, 2.240)  # 4% worse, clear of A's CI
    assert worse_beyond("tpot_p50", narrow_a, near_b, None) is not None
    assert worse_beyond("tpot_p50", narrow_a, near_b, 0.05) is None


def test_a_throughput_ratio_lower_is_worse_and_a_latency_ratio_lower_is_better() -> None:
    a = Interval(1.0, 0.98, 1.02)
    assert worse_beyond("output_throughput", a, Interval(0.9, 0.88, 0.92), None) == (
        "output_throughput spec/plain 0.900 [0.880, 0.920] lies below the baseline's 95% CI [0.980, 1.020] "
        "(lower is worse)"
    )
    assert worse_beyond("output_throughput", a, Interval(1.1, 1.08, 1.12), None) is None
    assert worse_beyond("tpot_p50", a, Interval(0.9, 0.88, 0.92), None) is None
    assert (
        worse_beyond("output_throughput", Interval(1.0, 1.0, 1.0, False), Interval(0.96, 0.96, 0.96, False), 0.05)
        is None
    )  # 1.0 / 1.05 = 0.952


def test_a_cell_measured_in_the_baseline_and_missing_or_not_measured_in_the_candidate_regresses() -> None:
    d = diff_cards(
        card({"c1": 1.523, "c2": 0.9}, {1: "fail", 2: "pass"}, False), card({"c1": None}, {1: "not-measured"}, False)
    )
    assert d.lines[0] == (
        "w c1: tpot_p50 spec/plain 1.523 -> –; plain 10.00 -> 10.00 ms, speculative 15.23 -> – ms; "
        "verdict fail -> not-measured"
    )
    assert d.lines[1].startswith("w c2: tpot_p50 spec/plain 0.900 -> –; plain 10.00 -> – ms")
    assert d.regressions == (
        "w c1: measured in the baseline, incomplete in the candidate",
        "w c2: measured in the baseline, missing in the candidate",
    )


def test_a_server_failure_in_the_candidate_cell_regresses() -> None:
    data = card({"c1": 0.8}).to_json()
    data["cells"][0]["speculative"]["failure"] = "server died"
    b = PairCard.from_json(data, source="test card")
    assert diff_cards(card({"c1": 0.8}), b).regressions == (
        "w c1: measured in the baseline, failed on the speculative server (server died) in the candidate",
    )


def test_a_cell_going_from_pass_to_fail_and_the_verdict_failing_regress() -> None:
    d = diff_cards(card({"c1": 0.8}, {1: "pass"}, True), card({"c1": 1.2}, {1: "fail"}, False))
    assert d.regressed is True
    assert d.regressions == (
        "the candidate's verdict fails its declared criteria, the baseline's passed",
        "w c1: tpot_p50 spec/plain 1.200 lies above the baseline's 0.800 (no CI) (higher is worse)",
        "w c1 went from pass to fail",
    )
    assert d.lines[-1] == "verdict: baseline PASS, candidate FAIL"


def test_a_cell_only_in_the_candidate_and_unjudged_cards() -> None:
    d = diff_cards(card({"c1": 0.9}), card({"c1": 0.8, "c4": 1.0}))
    assert d.lines[1:] == (
        "w c4: only in the candidate",
        "verdict: baseline not judged (no criteria declared), candidate not judged (no criteria declared)",
    )
    assert d.regressed is False


def test_every_declared_primary_metric_of_both_cards_is_compared() -> None:
    d = diff_cards(card({"c1": 0.8}), card({"c1": 0.8}, {1: "pass"}, True, primary=["ttft_p50", "tpot_p50"]))
    assert [line.split(" spec/plain")[0] for line in d.lines[:2]] == ["w c1: ttft_p50", "w c1: tpot_p50"]
    assert d.lines[0] == "w c1: ttft_p50 spec/plain 2.000 -> 2.000; plain – -> – ms, speculative – -> – ms"


def test_fail_to_pass_is_no_regression() -> None:
    assert diff_cards(card({"c1": 1.2}, {1: "fail"}, False), card({"c1": 0.8}, {1: "pass"}, True)).regressed is False


def test_cards_of_different_pairs_are_bad_input() -> None:
    with pytest.raises(BadInput, match="the cards are of different pairs \\('t' vs 'u'\\)"):
        diff_cards(card({}), card({}, pair="u"))


def _runs(tmp_path: Path, a: PairCard, b: PairCard) -> tuple[str, str]:
    for name, c in (("a", a), ("b", b)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "card.json").write_text(json.dumps(c.to_json()))
    return str(tmp_path / "a"), str(tmp_path / "b")


@pytest.mark.parametrize(
    ("a", "b", "args", "code"),
    [
        (NARROW_A, NARROW_B, [], 3),
        (WIDE_A, WIDE_B, [], 0),
        ((2.130, 1.900, 2.400), (2.349, 2.300, 2.400), [], 0),
        ((2.130, 1.900, 2.400), (2.349, 2.300, 2.400), ["--max-regression", "5%"], 3),
        ((2.130, 1.900, 2.400), (2.349, 2.300, 2.400), ["--max-regression", "0.10"], 0),
    ],
)
def test_loadgen_diff_gates_on_the_ci_or_the_declared_tolerance(
    tmp_path: Path, a: Tpot, b: Tpot, args: list[str], code: int
) -> None:
    run_a, run_b = _runs(tmp_path, card({"c1": a}), card({"c1": b}))
    assert CliRunner().invoke(main, ["diff", run_a, run_b, *args]).exit_code == code


def test_loadgen_diff_exits_3_on_a_missing_cell_and_names_it(tmp_path: Path) -> None:
    a, b = _runs(
        tmp_path, card({"c1": 1.523, "c2": 0.9}, {1: "fail", 2: "fail"}, False), card({"c2": 0.9}, {2: "fail"}, False)
    )
    result = CliRunner().invoke(main, ["diff", a, b])
    assert result.exit_code == 3
    assert "REGRESSION w c1: measured in the baseline, missing in the candidate\n" in result.output
    assert (
        f"loadgen: error: {b} regressed against {a}: 1 regression(s), first: w c1: measured in the baseline, "
        "missing in the candidate"
    ) in result.output


def test_loadgen_diff_exits_0_without_regression(tmp_path: Path) -> None:
    a, b = _runs(tmp_path, card({"c1": 1.2}, {1: "fail"}, False), card({"c1": 0.8}, {1: "pass"}, True))
    result = CliRunner().invoke(main, ["diff", a, b])
    assert result.exit_code == 0
    assert result.output.splitlines() == [
        "w c1: tpot_p50 spec/plain 1.200 -> 0.800; plain 10.00 -> 10.00 ms, speculative 12.00 -> 8.00 ms; "
        "verdict fail -> pass",
        "verdict: baseline FAIL, candidate PASS",
    ]


@pytest.mark.parametrize("bad", ["five", "-5%", "10000%"])
def test_loadgen_diff_refuses_a_tolerance_that_is_no_percentage(tmp_path: Path, bad: str) -> None:
    a, b = _runs(tmp_path, card({}), card({}))
    result = CliRunner().invoke(main, ["diff", a, b, "--max-regression", bad])
    assert result.exit_code == 2
    assert f"{bad!r} is no tolerance; give a percentage such as 5% (or the fraction 0.05)" in result.output


@pytest.mark.parametrize(
    ("bad", "fix"),
    [("5", "write 5% for 5 percent, or 500% if you mean it"), ("1", "write 1% for 1 percent, or 100% if you mean it")],
)
def test_loadgen_diff_refuses_a_bare_number_that_reads_as_100_percent_or_more(
    tmp_path: Path, bad: str, fix: str
) -> None:
    """`--max-regression 5` meant 5% but read as 500%: a gate that never failed; now a usage error naming both."""
    a, b = _runs(tmp_path, card({}), card({}))
    result = CliRunner().invoke(main, ["diff", a, b, "--max-regression", bad])
    assert result.exit_code == 2 and f"{bad!r} reads as the fraction {bad} ({bad}00%); {fix}" in result.output
    assert CliRunner().invoke(main, ["diff", a, b, "--max-regression", f"{bad}00%"]).exit_code == 0


def test_loadgen_diff_exits_2_on_a_folder_without_card_or_different_pairs(tmp_path: Path) -> None:
    a, b = _runs(tmp_path, card({}), card({}, pair="u"))
    result = CliRunner().invoke(main, ["diff", a, b])
    assert result.exit_code == 2 and "the cards are of different pairs" in result.output
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["diff", a, str(tmp_path / "empty")])
    assert result.exit_code == 2
    assert f"{tmp_path / 'empty'} holds no card.json; pass run folders or sweep folders" in result.output


def _sweep(folder: Path, cards: dict[str, PairCard]) -> str:
    """A sweep folder (sweep.toml, sweep.json naming the candidates) with each candidate's card."""
    folder.mkdir()
    (folder / "sweep.toml").write_text("")
    (folder / "sweep.json").write_text(json.dumps({"candidates": [{"name": n, "folder": n} for n in cards]}))
    for name, c in cards.items():
        (folder / name).mkdir()
        (folder / name / "card.json").write_text(json.dumps(c.to_json()))
    return str(folder)


def test_loadgen_diff_compares_sweep_folders_candidate_by_candidate(tmp_path: Path) -> None:
    a = _sweep(tmp_path / "sa", {"k1": card({"c1": NARROW_A}), "k2": card({"c1": 0.9}), "ngram": card({"c1": 1.0})})
    b = _sweep(tmp_path / "sb", {"k1": card({"c1": NARROW_B}), "k2": card({"c1": 0.9}), "k3": card({"c1": 1.0})})
    result = CliRunner().invoke(main, ["diff", a, b])
    assert result.exit_code == 3
    lines = result.output.splitlines()
    assert (
        "[k2] w c1: tpot_p50 spec/plain 0.900 -> 0.900; plain 10.00 -> 10.00 ms, speculative 9.00 -> 9.00 ms; "
        "verdict – -> –" in lines
    )
    assert "[k3] only in the candidate sweep" in lines
    assert [line for line in lines if line.startswith("REGRESSION")] == [
        "REGRESSION [k1] w c1: tpot_p50 spec/plain 2.349 [2.320, 2.380] lies above the baseline's 95% CI "
        "[2.100, 2.160] (higher is worse)",
        "REGRESSION [ngram] measured in the baseline sweep, missing in the candidate sweep",
    ]
    same = CliRunner().invoke(main, ["diff", a, a])
    assert same.exit_code == 0 and "[k1] w c1: tpot_p50" in same.output


def test_loadgen_diff_of_a_sweep_folder_and_a_run_folder_names_what_to_pass(tmp_path: Path) -> None:
    s = _sweep(tmp_path / "s", {"k1": card({"c1": 0.9})})
    run_a, _ = _runs(tmp_path, card({"c1": 0.9}), card({"c1": 0.9}))
    result = CliRunner().invoke(main, ["diff", s, run_a])
    assert result.exit_code == 2
    assert result.output == (
        f"loadgen: error: {s} is a sweep folder and {run_a} a run folder; diff two run folders, "
        f"two sweep folders, or a candidate's folder of the sweep ({s}/<candidate>) with the run "
        "folder\n"
    )


def test_loadgen_diff_of_a_card_whose_cells_have_the_wrong_shape_is_one_line_exit_2(tmp_path: Path) -> None:
    a, b = _runs(tmp_path, card({"c1": 0.9}), card({"c1": 0.9}))
    (tmp_path / "b" / "card.json").write_text('{"cells": [{"level": "c1"}]}')
    result = CliRunner().invoke(main, ["diff", a, b])
    assert result.exit_code == 2
    assert result.output == (
        f"loadgen: error: {tmp_path / 'b' / 'card.json'}: schema: missing (expected "
        "'loadgen.card/1'); re-render with `loadgen report` or restore the file\n"
    )
    broken = full_card({"cells": [{"level": "c1", "ratios": {"tpot_p50": {"value": "0.9"}}}]})
    (tmp_path / "b" / "card.json").write_text(json.dumps(broken))
    result = CliRunner().invoke(main, ["diff", a, b])
    assert result.exit_code == 2
    assert result.output == (
        f"loadgen: error: {tmp_path / 'b' / 'card.json'}: cells[0].ratios.tpot_p50.value: "
        "expected a number, got '0.9'; re-render with `loadgen report` or restore the file\n"
    )


@pytest.mark.parametrize("sweep_json", ['{"candidates": [{"folder": "k1"}]}', "[]"])
def test_loadgen_diff_of_a_sweep_json_without_candidates_is_one_line_exit_2(tmp_path: Path, sweep_json: str) -> None:
    a = _sweep(tmp_path / "sa", {"k1": card({"c1": 0.9})})
    b = _sweep(tmp_path / "sb", {"k1": card({"c1": 0.9})})
    (tmp_path / "sb" / "sweep.json").write_text(sweep_json)
    result = CliRunner().invoke(main, ["diff", a, b])
    assert result.exit_code == 2
    assert result.output == (
        f"loadgen: error: {tmp_path / 'sb' / 'sweep.json'} lists no candidates; run `loadgen "
        f"report {b}` to write it again\n"
    )
