"""Diagnosis (pure): lossless check, cost decomposition, goodput and capacity at SLO, closed-form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import ProfileError
from loadgen.measure import verdict
from loadgen.measure.diagnosis import (
    capacity,
    cost_decomposition,
    goodput,
    holds,
    lossless,
    lossless_note,
    lossy_rejection,
    slo_check,
)
from loadgen.measure.verdict import Verdict
from loadgen.profile.pair import SLO
from loadgen.profile.pairfile import load_pair
from loadgen.records.cardcell import LosslessCheck
from loadgen.records.criteria import Criteria, parse_criteria
from loadgen.records.request import RequestRecord
from tests.support.cards import card_cell


def judge(criteria: Criteria, cells: list[dict[str, Any]], resources: Any) -> Verdict:
    """verdict.judge of the card cells ``cells`` (parts of cells, the rest filled: tests/support/cards.py)."""
    return verdict.judge(criteria, [card_cell(c) for c in cells], resources)


def _check(pairs: int, identical: int) -> dict[str, Any]:
    """A card cell's lossless check of ``pairs`` prompts, ``identical`` of them identical."""
    first = [3] * (pairs - identical)
    return {"pairs": pairs, "identical": identical, "match_rate": identical / pairs, "first_difference": first}


def test_lossless_identical_and_first_difference() -> None:
    plain = {"a": [1, 2, 3, 4], "b": [5, 6, 7, 8], "c": [9, 9, 9, 9], "only-plain": [1]}
    spec = {"a": [1, 2, 3, 4], "b": [5, 6, 0, 8], "c": [9, 9, 9, 1]}
    r = lossless(plain, spec)
    assert r.pairs == 3 and r.identical == 1
    assert r.match_rate == pytest.approx(1 / 3)
    assert r.first_difference == (2, 3)
    assert r.late is False  # position 2 of 4 is not past half
    late = lossless({"a": [1, 2, 3, 4]}, {"a": [1, 2, 3, 0]})
    assert late.late is True
    note = lossless_note(late)
    assert note is not None and "0% of requests identical" in note and "start late" in note
    assert lossless_note(lossless({"a": [1]}, {"a": [1]})) is None
    assert lossless({}, {"a": [1]}).match_rate is None


def test_cost_decomposition_predicts_the_tpot_speedup() -> None:
    # plain step 20 ms; speculative step 50 ms (2.5x) emitting 3 tokens per step: predicted 3/2.5 = 1.2x
    c = cost_decomposition(0.020, 0.050, 3.0, 0.020, 0.050 / 3, 3.0)
    assert c.step_time_ratio == pytest.approx(2.5)
    assert c.predicted_speedup == pytest.approx(1.2)
    assert c.measured_tpot_speedup == pytest.approx(1.2)
    assert c.agrees is True and "why" not in c.to_json()
    # measured 0.8x against a predicted 1.2x: explained, and the chunk/step mismatch is named
    off = cost_decomposition(0.020, 0.050, 3.0, 0.020, 0.025, 2.0)
    assert off.agrees is False and "tokens per chunk" in str(off.why)
    short = cost_decomposition(None, 0.05, 3.0, 0.02, 0.01, 3.0).to_json()
    assert short == {"plain_step_s": None, "spec_step_s": 0.05, "acceptance_length": 3.0}


def test_goodput_and_holds() -> None:
    slo = SLO(percentile=50, ttft_s=0.5, tpot_s=0.05)
    # request 2 misses TPOT, request 3 misses TTFT; a 1-token request (TPOT None) meets TPOT
    assert goodput([0.1, 0.2, 0.9, 0.3], [0.01, 0.2, 0.01, None], [1, 1, 1, 1], 2.0, slo) == pytest.approx(1.0)
    assert holds({"ttft_s": [0.1, 0.2, 0.9], "tpot_s": [0.01, 0.2, 0.01]}, slo) is True  # medians 0.2, 0.01
    assert holds({"ttft_s": [0.1, 0.2, 0.9], "tpot_s": [0.01, 0.2, 0.01]}, SLO(99, ttft_s=0.5)) is False
    assert holds({}, SLO()) is None and goodput([0.1], [0.1], [0.1], 1.0, SLO()) is None
    assert capacity([1, 2, 4, 8], [True, True, False, None]) == 2
    assert capacity([1, 2], [False, False]) is None


def test_slo_table_and_lossless_criterion(tmp_path: Path) -> None:
    text = Path("profiles/pairs/demo-cpu.toml").read_text().split("\n[slo]")[0]
    path = tmp_path / "p.toml"
    path.write_text(text + "\n[slo]\npercentile = 90\nttft_s = 2\ntpot_s = 0.2\n")
    assert load_pair(str(path)).slo == SLO(90.0, 2.0, 0.2, None)
    path.write_text(text + "\n[slo]\nttft_ms = 2\n")
    with pytest.raises(ProfileError, match="unknown key 'ttft_ms' in \\[slo\\]"):
        load_pair(str(path))
    path.write_text(text + "\n[slo]\ntpot_s = -1\n")
    with pytest.raises(ProfileError, match="tpot_s must be a number of seconds > 0"):
        load_pair(str(path))
    crit = parse_criteria({"min_lossless_match": 0.95, "require_measured": False}, path)
    ratios = {"tpot_p50": {"value": 0.8, "ci_low": 0.7, "ci_high": 0.9, "pairs": 8}}
    good = {"workload": "w", "concurrency": 1, "complete": True, "ratios": ratios, "lossless": _check(2, 2)}
    bad = good | {"concurrency": 2, "lossless": _check(2, 1)}
    assert judge(crit, [good], None).passed is True
    verdict = judge(crit, [good, bad], None)
    assert verdict.passed is False and "lossless match 50.0% misses >= 95.0%" in verdict.summary
    with pytest.raises(ProfileError, match="min_lossless_match"):
        parse_criteria({"min_lossless_match": 2}, path)


def test_lossless_note_names_length_and_finish_differences_not_nondeterminism() -> None:
    # the speculative output runs one token past the plain one's stop: a late "difference" at token 4 of 5
    longer = lossless({"a": [1, 2, 3, 4]}, {"a": [1, 2, 3, 4, 5]}, {"a": "stop"}, {"a": "length"})
    assert longer.stop_differences == 1 and longer.first_difference == (4,) and longer.late is False
    note = lossless_note(longer) or ""
    assert "nondeterminism" not in note
    assert "1 of 1 differing requests differ in length or finish reason" in note
    # same tokens, different finish reason: not identical
    finish = lossless({"a": [1, 2]}, {"a": [1, 2]}, {"a": "stop"}, {"a": "length"})
    assert finish.identical == 0 and "nondeterminism" not in (lossless_note(finish) or "")
    # without finish reasons, a length difference alone is still named so
    assert "nondeterminism" not in (lossless_note(lossless({"a": [1, 2, 3, 4]}, {"a": [1, 2, 3, 4, 5]})) or "")
    mixed = lossless({"a": [1, 2, 3, 4], "b": [1, 2, 3, 4]}, {"a": [1, 2, 3, 9], "b": [1, 2, 3, 4, 5]})
    assert mixed.stop_differences == 1 and mixed.late is True
    assert "the others start late" in (lossless_note(mixed) or "")


def test_a_lossy_rejection_reports_the_match_rate_without_judging_it() -> None:
    reason = lossy_rejection({"method": "eagle3", "rejection_sample_method": "fly"}, {})
    assert reason == "rejection_sample_method = fly"
    assert lossy_rejection({"rejection_sample_method": "standard"}, {"VLLM_EARS_TOLERANCE": "0"}) is None
    assert (
        lossy_rejection({"rejection_sample_method": "block"}, {"VLLM_EARS_TOLERANCE": "0.05"})
        == "VLLM_EARS_TOLERANCE=0.05"
    )
    plain = {"a": [1, 2, 3, 4], "b": [5, 6, 7, 8], "c": [9, 9, 9, 9], "d": [4, 4, 4, 4]}
    spec = {"a": [1, 2, 3, 4], "b": [5, 0, 7, 8], "c": [9, 9, 9, 9], "d": [4, 4, 4, 4]}
    r = lossless(plain, spec, lossy=reason)
    assert r.lossy is True and r.lossy_reason == "rejection_sample_method = fly"
    assert r.match_rate == pytest.approx(0.75) and r.first_difference == (1,)
    assert list(r.to_json()) == [*LosslessCheck.KEYS, "lossy", "lossy_reason"]
    assert lossless_note(r) == (
        "lossy rejection (rejection_sample_method = fly): outputs differ from the target's "
        "by design; match rate 75% reported, not judged"
    )
    identical = lossless({"a": [1]}, {"a": [1]}, lossy=reason)  # stated even when every output matches
    assert lossless_note(identical) == (
        "lossy rejection (rejection_sample_method = fly): outputs differ from the "
        "target's by design; match rate 100% reported, not judged"
    )
    assert list(lossless(plain, spec).to_json()) == list(LosslessCheck.KEYS)  # a lossless run's keys, as before


def test_the_slo_check_of_a_role_from_its_requests_timings() -> None:
    def record(arrivals: list[float], error: str | None = None) -> RequestRecord:
        return RequestRecord(
            "p",
            "plain",
            "w",
            1,
            "measured",
            0.0,
            send_s=0.0,
            chunk_arrivals_s=arrivals,
            chunk_tokens=[1] * len(arrivals),
            error=error,
        )

    # TTFT 0.1 s, TPOT 0.1 s; TTFT 0.9 s, TPOT 0.02 s; a failed request counts for nothing
    records = [record([0.1, 0.2, 0.3]), record([0.9, 0.92]), record([], error="timeout")]
    check = slo_check(records, 2.0, SLO(percentile=50, ttft_s=0.6, tpot_s=0.15))
    assert check["goodput_rps"] == pytest.approx(0.5)  # only the first meets both, over a 2 s window
    assert check["slo_holds"] is True  # medians: TTFT 0.5 s <= 0.6, TPOT 0.06 s <= 0.15
    assert slo_check(records, 2.0, SLO(percentile=99, ttft_s=0.6))["slo_holds"] is False
