"""The sweep ranking in closed form (measure/ranking.py, report/sweeprec.py): speedups from ratios and
their CIs, ties within the CI going to the cheaper candidate, the level above which speculation is off,
the drift warning, the perfect-draft upper bound, the static choice and the K schedule."""

from __future__ import annotations

import pytest

from loadgen.measure.ranking import (
    Entry,
    best,
    drift_warning,
    geomean,
    k_schedule,
    off_above,
    ranked_gap,
    speedup_of,
    static_choice,
    upper_bound,
)
from loadgen.report.sweeprec import recommend


def test_speedup_inverts_a_latency_ratio_and_its_ci() -> None:
    assert speedup_of("tpot_p50", {"value": 0.5, "ci_low": 0.4, "ci_high": 0.8}) == (2.0, 1.25, 2.5)
    assert speedup_of("output_throughput", {"value": 1.5, "ci_low": None, "ci_high": None}) == (1.5, None, None)
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


def test_beating_plain_needs_the_ci_above_one() -> None:
    assert Entry("a", 1, True, 1.2, 1.05, 1.3).beats_plain()
    assert not Entry("a", 1, True, 1.2, 0.95, 1.3).beats_plain()
    assert Entry("a", 1, True, 1.2).beats_plain() and not Entry("a", 1, True, None).beats_plain()


def test_drift_larger_than_the_ranked_difference_is_a_warning() -> None:
    entries = [Entry("a", 1, True, 1.30, 1.2, 1.4), Entry("b", 2, True, 1.27, 1.2, 1.35)]
    assert ranked_gap(entries) == pytest.approx(0.03)
    line = drift_warning("w c4", 1.05, ranked_gap(entries))
    assert line is not None and "+5.0%" in line and "0.030" in line and "w c4" in line
    assert drift_warning("w c4", 1.02, ranked_gap(entries)) is None
    assert ranked_gap([Entry("a", 1, True, 1.5)]) == pytest.approx(0.5)  # one candidate: against plain
    near_plain = [Entry("a", 1, True, 0.97), Entry("b", 2, True, 0.64)]  # best vs plain is the smaller gap
    assert ranked_gap(near_plain) == pytest.approx(0.03)
    line = drift_warning("s c4", 0.83, ranked_gap(near_plain))
    assert line is not None and "-17.0%" in line


def test_upper_bound_is_k_plus_one_over_the_step_time_ratio() -> None:
    assert upper_bound(3, 2.0) == 2.0
    assert upper_bound(1, 1.25) == pytest.approx(1.6)
    assert upper_bound(2, None) is None


def test_off_above_names_the_last_level_where_a_candidate_beats_plain() -> None:
    pays = Entry("a", 1, True, 1.5, 1.2, 1.8)
    assert off_above([(1, pays), (4, pays), (16, None)]) == (4, "speculation off above concurrency 4")
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


def _entry(name: str, k: int, speedup: float, low: float, high: float, status: str = "pass") -> dict[str, object]:
    return {"candidate": name, "k": k, "draft_weights": True, "speedup": speedup, "speedup_ci_low": low,
            "speedup_ci_high": high, "criteria_status": status}


def test_recommendation_with_a_schedule_in_the_engines_syntax() -> None:
    cells = [{"workload": "w", "level": "c1", "concurrency": 1, "rate_rps": None,
              "entries": [_entry("d-k1", 1, 1.2, 1.1, 1.3), _entry("d-k3", 3, 1.8, 1.7, 1.9)]},
             {"workload": "w", "level": "c8", "concurrency": 8, "rate_rps": None,
              "entries": [_entry("d-k1", 1, 1.1, 1.05, 1.15), _entry("d-k3", 3, 0.9, 0.8, 1.0, "fail")]}]
    rows = [{"name": n, "k": k, "draft_weights": True, "verdict_passed": ok,
             "speculative_config": {"method": "draft_model", "model": "d", "num_speculative_tokens": k}}
            for n, k, ok in (("d-k1", 1, True), ("d-k3", 3, False))]
    rec = recommend(cells, rows, {"primary": ["tpot_p50"], "concurrency": [1, 8]}, "0.32.0")
    w = rec["workloads"][0]
    assert [lv["best"] for lv in w["levels"]] == ["d-k3", "d-k1"]
    assert rec["static"] == "d-k1" and rec["meets_criteria"]  # d-k3 fails at c8
    assert w["schedule"]["config"]["num_speculative_tokens_per_batch_size"] == [[1, 1, 3], [2, 8, 1]]
    assert w["schedule"]["config"]["num_speculative_tokens"] == 3
    old = recommend(cells, rows, None, "0.23.1")["workloads"][0]["schedule"]
    assert old["supported"] is False and "needs vLLM 0.24+" in old["line"]
