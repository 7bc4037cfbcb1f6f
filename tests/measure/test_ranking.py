"""The sweep ranking in closed form (measure/ranking.py, report/sweeprec.py): speedups from ratios and
their CIs, beating plain clear of the noise floor, ties within the CI going to the cheaper candidate, the
level above which speculation is off (a range), the drift warning only where the decision depends on it,
the perfect-draft upper bound, the static choice, and one recommendation that every line agrees with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loadgen.measure.ranking import (
    Entry,
    best,
    drift_warning,
    geomean,
    k_schedule,
    off_above,
    speedup_of,
    static_choice,
    upper_bound,
)
from loadgen.records.cardcell import Ratio
from loadgen.records.criteria import criteria_of
from loadgen.records.sweep import Drift, SweepCandidate, SweepCard, SweepCell
from loadgen.report.sweepmd import render_sweep_markdown
from loadgen.report.sweeprec import recommend


def test_speedup_inverts_a_latency_ratio_and_its_ci() -> None:
    assert speedup_of("tpot_p50", Ratio(0.5, ci_low=0.4, ci_high=0.8)) == (2.0, 1.25, 2.5)
    assert speedup_of("output_throughput", Ratio(1.5, ci_low=None, ci_high=None)) == (1.5, None, None)
    assert speedup_of("tpot_p50", None) == (None, None, None)


def test_a_tie_within_the_ci_goes_to_the_cheaper_candidate() -> None:
    draft_k3 = Entry("draft-k3", 3, True, 1.50, 1.40, 1.60)
    draft_k2 = Entry("draft-k2", 2, True, 1.45, 1.30, 1.55)  # inside k3's CI: tied, smaller K wins
    ngram_k4 = Entry("ngram-k4", 4, False, 1.41, 1.38, 1.44)  # inside too, and no draft weights: cheapest
    winner, tied = best([draft_k3, draft_k2, ngram_k4])
    assert winner is ngram_k4 and tied == ["draft-k2", "draft-k3", "ngram-k4"]
    clear = Entry("draft-k1", 1, True, 1.20, 1.10, 1.30)  # outside the leader's CI: not tied
    winner, tied = best([draft_k3, clear])
    assert winner is draft_k3 and tied == ["draft-k3"]
    assert best([Entry("x", 1, True, None)]) == (None, [])


def test_beating_plain_needs_the_ci_clear_of_the_noise_floor() -> None:
    # an older card (no effect): the CI above 1
    assert Entry("a", 1, True, 1.2, 1.05, 1.3).beats_plain()
    assert not Entry("a", 1, True, 1.2, 0.95, 1.3).beats_plain()
    assert Entry("a", 1, True, 1.2).beats_plain() and not Entry("a", 1, True, None).beats_plain()
    # measured in blocks: the effect against the A/A band decides, even when the CI excludes 1
    assert not Entry("a", 1, True, 1.01, 1.005, 1.015, "not distinguishable").beats_plain()
    assert Entry("a", 1, True, 1.2, 1.1, 1.3, "faster").beats_plain()
    assert not Entry("a", 1, True, 1.2, 1.1, 1.3, "faster", "fail").pays(criteria_declared=True)


def test_drift_warns_only_where_the_decision_depends_on_the_baseline() -> None:
    # both candidates lose to plain by about 0.2 under either baseline: a +13.9% drift changes nothing
    losing = [Entry("a", 1, True, 0.80, 0.78, 0.82), Entry("b", 2, True, 0.79, 0.77, 0.81)]
    assert drift_warning("w c4", Drift("tpot_s", 1.139, 1.10, 1.18), losing) is None
    # a candidate at 1.05 [1.02, 1.08]: plain-after 6% slower makes it 1.11, 6% faster makes it 0.99
    near = [Entry("a", 1, True, 1.05, 1.02, 1.08)]
    line = drift_warning("w c4", Drift("tpot_s", 0.94, 0.92, 0.96), near)
    assert line is not None and "-6.0%" in line and "[95% CI 0.920, 0.960]" in line
    assert "a against plain-before, plain against plain-after" in line
    # a drift whose CI covers 1 raises nothing, whatever its value
    assert drift_warning("w c4", Drift("tpot_s", 0.80, 0.60, 1.05), near) is None


def test_upper_bound_is_k_plus_one_over_the_step_time_ratio() -> None:
    assert upper_bound(3, 2.0) == 2.0
    assert upper_bound(1, 1.25) == pytest.approx(1.6)
    assert upper_bound(2, None) is None


def test_off_above_names_the_crossover_as_a_range_between_measured_levels() -> None:
    pays = Entry("a", 1, True, 1.5, 1.2, 1.8)
    above, line = off_above([(1, pays), (4, pays), (16, None)])
    assert above == 4 and line == (
        "speculation off above concurrency 4 (it pays up to 4 and not at 16, the next level measured)"
    )
    assert off_above([(1, pays), (4, pays)])[0] is None
    assert off_above([(1, None), (4, None)]) == (None, "no candidate beats plain at any level: do not speculate")


def test_static_choice_meets_the_criteria_and_ties_to_the_cheaper() -> None:
    cost = {"draft-k2": (1, 2, "draft-k2"), "ngram-k2": (0, 2, "ngram-k2"), "draft-k3": (1, 3, "draft-k3")}
    scores = {"draft-k2": (True, 1.3), "ngram-k2": (True, 1.3), "draft-k3": (False, 1.6)}
    assert static_choice(scores, cost) == "ngram-k2"
    assert static_choice({"draft-k2": (True, 0.9), "draft-k3": (False, 1.6)}, cost) is None
    assert geomean([2.0, 0.5]) == pytest.approx(1.0) and geomean([1.0, None]) is None


def test_k_schedule_merges_levels_with_the_same_k() -> None:
    assert k_schedule([(1, 3), (4, 3), (8, 2), (16, 0)]) == [[1, 4, 3], [5, 8, 2], [9, 16, 0]]


def _entry(
    name: str, k: int, speedup: float, low: float, high: float, status: str | None = "pass", effect: str | None = None
) -> dict[str, Any]:
    return {
        "candidate": name,
        "k": k,
        "draft_weights": True,
        "speedup": speedup,
        "speedup_ci_low": low,
        "speedup_ci_high": high,
        "criteria_status": status,
        "effect": effect,
    }


def _rows(*spec: tuple[str, int, bool | None]) -> list[dict[str, Any]]:
    return [
        {
            "name": n,
            "k": k,
            "draft_weights": True,
            "verdict_passed": ok,
            "speculative_config": {"method": "draft_model", "model": "d", "num_speculative_tokens": k},
        }
        for n, k, ok in spec
    ]


def _cell(level: int, *entries: dict[str, Any]) -> dict[str, Any]:
    return {"workload": "w", "level": f"c{level}", "concurrency": level, "rate_rps": None, "entries": list(entries)}


def _recommend(
    cells: list[dict[str, Any]], rows: list[dict[str, Any]], criteria: dict[str, Any] | None, version: str
) -> dict[str, Any]:
    """report/sweeprec.py ``recommend`` of cells and candidates as a sweep card holds them, as written."""
    return recommend(
        [SweepCell.from_json(c, source="cells") for c in cells],
        [SweepCandidate.from_json(r, source="rows") for r in rows],
        None if criteria is None else criteria_of(criteria, Path("pair.toml")),
        version,
    ).to_json()


def test_recommendation_with_a_schedule_in_the_engines_syntax() -> None:
    cells = [
        _cell(1, _entry("d-k1", 1, 1.2, 1.1, 1.3), _entry("d-k3", 3, 1.8, 1.7, 1.9)),
        _cell(8, _entry("d-k1", 1, 1.1, 1.05, 1.15), _entry("d-k3", 3, 0.9, 0.8, 1.0, "fail")),
    ]
    rows = _rows(("d-k1", 1, True), ("d-k3", 3, False))
    rec = _recommend(cells, rows, {"primary": ["tpot_p50"], "concurrency": [1, 8]}, "0.32.0")
    w = rec["workloads"][0]
    assert [lv["best"] for lv in w["levels"]] == ["d-k3", "d-k1"]
    assert rec["static"] == "d-k1" and rec["meets_criteria"]  # d-k3 fails at c8
    assert w["schedule"]["config"]["num_speculative_tokens_per_batch_size"] == [[1, 1, 3], [2, 8, 1]]
    assert w["schedule"]["config"]["num_speculative_tokens"] == 3
    old = _recommend(cells, rows, None, "0.23.1")["workloads"][0]["schedule"]
    assert old["supported"] is False and "needs vLLM 0.24+" in old["line"]


def test_a_candidate_that_pays_only_at_low_concurrency_gets_a_schedule_and_one_consistent_story() -> None:
    # ngram K=3 pays at c1 (1.46 [1.26, 2.21]) and loses at c4: no static choice, but a schedule, and every
    # line (headline, per level, off-above, schedule) says the same
    cells = [
        _cell(1, _entry("ngram-k3", 3, 1.46, 1.26, 2.21, None, "faster")),
        _cell(4, _entry("ngram-k3", 3, 0.70, 0.65, 0.75, None, "slower")),
    ]
    rows = _rows(("ngram-k3", 3, None))
    rec = _recommend(cells, rows, None, "0.32.0")
    w = rec["workloads"][0]
    assert rec["static"] is None and w["static"] is None
    assert [lv["best"] for lv in w["levels"]] == ["ngram-k3", None]
    assert w["schedule"]["config"]["num_speculative_tokens_per_batch_size"] == [[1, 1, 3], [2, 4, 0]]
    assert w["off_above_concurrency"] == 1
    assert w["why_no_static"] == "no single candidate pays at every level: ngram-k3 at c1; none pays at c4"
    assert w["deployed"] == {"c1": "ngram-k3"} and w["gives_up"] == []
    headline = rec["lines"][-1]
    assert headline.startswith("recommendation: no single candidate pays at every level; deploy w: ")
    assert "[[1, 1, 3], [2, 4, 0]]" in headline and "(K per level: c1 3, c4 0)" in headline
    assert "do not speculate" not in " ".join(rec["lines"])


def test_k2_and_k3_tie_within_their_cis_so_every_line_names_k2() -> None:
    # closed form: at every level K=3's speedup lies inside K=2's CI and K=2's inside K=3's
    cells = [
        _cell(
            1, _entry("d-k2", 2, 1.50, 1.40, 1.62, None, "faster"), _entry("d-k3", 3, 1.55, 1.44, 1.66, None, "faster")
        ),
        _cell(
            4, _entry("d-k2", 2, 1.20, 1.12, 1.28, None, "faster"), _entry("d-k3", 3, 1.18, 1.10, 1.27, None, "faster")
        ),
    ]
    rows = _rows(("d-k2", 2, None), ("d-k3", 3, None))
    rec = _recommend(cells, rows, None, "0.32.0")
    w = rec["workloads"][0]
    assert [lv["best"] for lv in w["levels"]] == ["d-k2", "d-k2"]
    assert all(lv["tied"] == ["d-k2", "d-k3"] for lv in w["levels"])
    assert rec["static"] == "d-k2" and w["static"] == "d-k2"
    assert w["schedule"]["config"]["num_speculative_tokens_per_batch_size"] == [[1, 4, 2]]
    assert w["deployable"].startswith("d-k2: --speculative-config '") and w["deployed"] == {"c1": "d-k2", "c4": "d-k2"}
    assert rec["lines"][-1].startswith("recommendation: d-k2")
    assert all("d-k3" not in line or "tie with d-k3" in line for line in rec["lines"])
    card = {
        "pair": "p",
        "schema": "loadgen.sweep/2",
        "engine_version": "0.32.0",
        "primary_metric": "tpot_p50",
        "speedup_definition": "-",
        "upper_bound_formula": "-",
        "recommendation": rec,
        "candidates": [],
        "cells": [],
        "drift_warnings": [],
        "times_s": {},
        "design": {"line": "-"},
        "noise_floor": {"line": "-"},
    }
    md = render_sweep_markdown(SweepCard.from_json(card, source="test"))
    assert "c1: d-k2 (tie with d-k3)" in md and "c4: d-k2 (tie with d-k3)" in md


def test_a_candidate_inside_the_noise_floor_is_never_the_winner() -> None:
    cells = [_cell(1, _entry("d-k1", 1, 1.01, 1.005, 1.015, None, "not distinguishable"))]
    rec = _recommend(cells, _rows(("d-k1", 1, None)), None, "0.32.0")
    assert rec["workloads"][0]["levels"][0]["best"] is None and rec["static"] is None
    assert "not distinguishable from the noise floor somewhere: d-k1" in "\n".join(rec["lines"])
    assert rec["lines"][-1].startswith("recommendation: do not speculate")


def _ngram_rows(*spec: tuple[str, int]) -> list[dict[str, Any]]:
    return [
        {
            "name": n,
            "k": k,
            "draft_weights": False,
            "verdict_passed": True,
            "speculative_config": {"method": "ngram", "prompt_lookup_max": 4, "num_speculative_tokens": k},
        }
        for n, k in spec
    ]


def test_a_candidate_passing_everywhere_is_the_static_and_deployable_choice_over_another_method() -> None:
    # the user's sweep: ngram K=4 clear at c1 (1.44 [1.09, 1.90]) and c4 (1.48 [1.38, 1.58]); the draft ties at
    # c1 and fails at c4: the answer is ngram K=4 everywhere, never a draft schedule that turns c4 off
    cells = [
        _cell(
            1,
            _entry("ngram-k4", 4, 1.44, 1.09, 1.90, "pass", "faster"),
            _entry("d-k2", 2, 1.5, 1.2, 1.8, "pass", "faster"),
        ),
        _cell(
            4,
            _entry("ngram-k4", 4, 1.48, 1.38, 1.58, "pass", "faster"),
            _entry("d-k2", 2, 0.9, 0.8, 1.0, "fail", "slower"),
        ),
    ]
    rows = _ngram_rows(("ngram-k4", 4)) + _rows(("d-k2", 2, False))
    rec = _recommend(cells, rows, {"primary": ["tpot_p50"]}, "0.24.0")
    w = rec["workloads"][0]
    assert rec["static"] == "ngram-k4" and rec["meets_criteria"] is True
    assert w["deployed"] == {"c1": "ngram-k4", "c4": "ngram-k4"} and w["gives_up"] == []
    assert w["deployable"].startswith("ngram-k4: --speculative-config") and "draft_model" not in w["deployable"]
    assert rec["lines"][-1].startswith("recommendation: ngram-k4 (pays at every declared level")


def test_mixed_winners_deploy_the_family_winning_most_levels_and_name_what_it_gives_up() -> None:
    cells = [
        _cell(
            1,
            _entry("d-k2", 2, 1.6, 1.4, 1.8, "pass", "faster"),
            _entry("ngram-k4", 4, 1.0, 0.97, 1.03, None, "not distinguishable"),
        ),
        _cell(
            4,
            _entry("d-k2", 2, 0.9, 0.8, 1.0, "fail", "slower"),
            _entry("ngram-k4", 4, 1.3, 1.2, 1.4, "pass", "faster"),
        ),
        _cell(
            16,
            _entry("d-k2", 2, 0.7, 0.6, 0.8, "fail", "slower"),
            _entry("ngram-k4", 4, 1.2, 1.1, 1.3, "pass", "faster"),
        ),
    ]
    rows = _rows(("d-k2", 2, False)) + _ngram_rows(("ngram-k4", 4))
    rec = _recommend(cells, rows, {"primary": ["tpot_p50"]}, "0.24.0")
    w = rec["workloads"][0]
    assert rec["static"] is None and rec["meets_criteria"] is False  # the sweep exits 3, and says why
    assert w["deployed"] == {"c4": "ngram-k4", "c16": "ngram-k4"}
    assert w["gives_up"] == ["c1: d-k2 1.600x"]
    assert w["schedule"]["config"]["method"] == "ngram"
    assert w["schedule"]["config"]["num_speculative_tokens_per_batch_size"] == [[1, 1, 0], [2, 16, 4]]
    assert rec["lines"][-1].startswith("recommendation: no single candidate pays at every declared level")
    assert "gives up c1: d-k2 1.600x" in rec["lines"][-1]
    # without a per-batch-size schedule the engine runs one K everywhere: the ngram candidate, named as not
    # paying at c1
    old = _recommend(cells, rows, {"primary": ["tpot_p50"]}, "0.23.1")["workloads"][0]
    assert old["deployable"].startswith("ngram-k4: --speculative-config") and "does not pay at c1" in old["deployable"]


def test_without_a_k_schedule_the_static_choice_is_deployed_and_never_loses_a_win_to_a_sibling_k() -> None:
    # K=2 pays at every level (the static choice); K=4 is the better at c1 and c4 but does not pay at c16. An
    # engine without a per-batch-size schedule runs one K everywhere: K=2, never K=4 turned off at c16.
    cells = [
        _cell(
            1, _entry("d-k2", 2, 1.3, 1.2, 1.4, "pass", "faster"), _entry("d-k4", 4, 1.6, 1.5, 1.7, "pass", "faster")
        ),
        _cell(
            4, _entry("d-k2", 2, 1.2, 1.1, 1.3, "pass", "faster"), _entry("d-k4", 4, 1.4, 1.3, 1.5, "pass", "faster")
        ),
        _cell(
            16, _entry("d-k2", 2, 1.1, 1.06, 1.14, "pass", "faster"), _entry("d-k4", 4, 0.8, 0.7, 0.9, "fail", "slower")
        ),
    ]
    rows = _rows(("d-k2", 2, True), ("d-k4", 4, False))
    old = _recommend(cells, rows, {"primary": ["tpot_p50"]}, "0.23.1")
    w = old["workloads"][0]
    assert old["static"] == "d-k2" and old["meets_criteria"] is True
    assert w["deployable"].startswith("d-k2: --speculative-config") and "does not pay" not in w["deployable"]
    assert w["deployed"] == {"c1": "d-k2", "c4": "d-k2", "c16": "d-k2"} and w["gives_up"] == []
    # with a schedule (0.24+) the same family runs K=4 where it is best and K=2 at c16: no win turned off
    new = _recommend(cells, rows, {"primary": ["tpot_p50"]}, "0.24.0")["workloads"][0]
    assert new["deployed"] == {"c1": "d-k4", "c4": "d-k4", "c16": "d-k2"} and new["gives_up"] == []
    assert new["schedule"]["config"]["num_speculative_tokens_per_batch_size"] == [[1, 4, 4], [5, 16, 2]]
