"""[criteria] parsing (strict) and the verdict against the card's cells and resources."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import ProfileError
from loadgen.measure import judging, verdict
from loadgen.measure.verdict import JudgedResources, Verdict
from loadgen.profile.pairfile import check_scope, load_pair
from loadgen.records.candidates import is_sweep
from loadgen.records.criteria import Criteria, CriteriaRecord, parse_criteria
from loadgen.records.protocol import Protocol
from tests.support.cards import card_cell


def judge(criteria: Criteria, cells: list[dict[str, Any]], resources: Any) -> Verdict:
    """verdict.judge of the card cells ``cells`` (parts of cells, the rest filled: tests/support/cards.py)."""
    return verdict.judge(criteria, [card_cell(c) for c in cells], resources)


def card_verdict(raw: Any, cells: list[dict[str, Any]], resources: Any, path: Path) -> dict[str, Any]:
    """judging.card_verdict of the card cells ``cells`` (as :func:`judge`)."""
    criteria = None if raw is None else CriteriaRecord.from_json(raw, source="protocol.json")
    proto = Protocol(workloads=[], cells=[], criteria=criteria)
    return judging.card_verdict(proto, [card_cell(c) for c in cells], resources, path).to_json()


PATH = Path("profiles/pairs/x.toml")


def ratio(value: float | None, low: float | None = None, high: float | None = None, pairs: int = 8) -> dict[str, Any]:
    return {"value": value, "ci_low": low, "ci_high": high, "pairs": pairs}


def cell(workload: str, concurrency: int, complete: bool = True, **ratios: Any) -> dict[str, Any]:
    return {"workload": workload, "concurrency": concurrency, "complete": complete, "ratios": ratios}


def test_defaults() -> None:
    c = parse_criteria({}, PATH)
    assert c == Criteria()
    assert c.primary == ("tpot_p50",) and c.min_speedup == 1.0 and c.use_confidence_interval
    assert c.require_measured and c.concurrency is None and c.workloads is None


def test_full_table() -> None:
    c = parse_criteria(
        {
            "primary": ["tpot_p50", "output_throughput"],
            "min_speedup": 1.2,
            "max_regression": {"ttft_p99": 1.5},
            "concurrency": [2, 8],
            "workloads": ["short"],
            "use_confidence_interval": False,
            "require_measured": False,
            "max_extra_memory_bytes": 2_000_000_000,
            "max_kv_capacity_loss": 0.2,
        },
        PATH,
    )
    assert c.primary == ("tpot_p50", "output_throughput") and c.min_speedup == 1.2
    assert c.max_regression == {"ttft_p99": 1.5} and c.concurrency == (2, 8) and c.workloads == ("short",)
    assert c.max_extra_memory_bytes == 2_000_000_000 and c.max_kv_capacity_loss == 0.2
    assert json.loads(json.dumps(c.to_json()))["concurrency"] == [2, 8]
    assert parse_criteria({"min_speedup": 2}, PATH).min_speedup == 2.0


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"speedup": 1.2}, "unknown key 'speedup' in [criteria]; known keys: primary, min_speedup"),
        ({"primary": ["tpot_p90"]}, "[criteria].primary must be a non-empty list of metric names"),
        ({"primary": []}, "[criteria].primary must be"),
        ({"primary": "tpot_p50"}, "[criteria].primary must be"),
        ({"primary": ["tpot_p50", "tpot_p50"]}, "without repeats"),
        ({"min_speedup": "fast"}, "[criteria].min_speedup must be a number > 0"),
        ({"min_speedup": 0}, "[criteria].min_speedup must be a number > 0"),
        ({"min_speedup": True}, "[criteria].min_speedup must be a number > 0"),
        ({"max_regression": {"ttft_p99": 0.9}}, "[criteria].max_regression must be a table metric -> number >= 1"),
        ({"max_regression": {"ttft_p95": 1.5}}, "[criteria].max_regression must be"),
        ({"max_regression": 1.5}, "[criteria].max_regression must be"),
        ({"concurrency": [8, 1]}, "[criteria].concurrency must be [low, high]"),
        ({"concurrency": [4]}, "[criteria].concurrency must be [low, high]"),
        ({"concurrency": [0, 4]}, "[criteria].concurrency must be [low, high]"),
        ({"workloads": []}, "[criteria].workloads must be a non-empty list"),
        ({"workloads": [1]}, "[criteria].workloads must be a non-empty list"),
        ({"use_confidence_interval": "yes"}, "[criteria].use_confidence_interval must be true or false"),
        ({"require_measured": 1}, "[criteria].require_measured must be true or false"),
        ({"max_extra_memory_bytes": -1}, "[criteria].max_extra_memory_bytes must be an integer number of bytes >= 0"),
        ({"max_extra_memory_bytes": 1.5e9}, "[criteria].max_extra_memory_bytes must be an integer"),
        ({"max_kv_capacity_loss": 1.5}, "[criteria].max_kv_capacity_loss must be a fraction between 0 and 1"),
    ],
)
def test_parse_errors(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ProfileError) as err:
        parse_criteria(table, PATH)
    text = str(err.value)
    assert message in text and str(PATH) in text and "\n" not in text


def test_scope_against_the_pair() -> None:
    check_scope(Criteria(workloads=("short",), concurrency=(2, 8)), ["short", "long"], [1, 4], PATH)
    with pytest.raises(ProfileError, match="names 'shrt', which .run..workloads does not run"):
        check_scope(Criteria(workloads=("shrt",)), ["short", "long"], [1, 4], PATH)
    with pytest.raises(ProfileError, match=r"concurrency \[5, 8\] holds none of the levels \[1, 4\]"):
        check_scope(Criteria(concurrency=(5, 8)), ["short"], [1, 4], PATH)


def test_pass_with_confidence_interval() -> None:
    v = judge(
        Criteria(min_speedup=1.1),
        [cell("short", 1, tpot_p50=ratio(0.80, 0.75, 0.88)), cell("short", 4, tpot_p50=ratio(0.85, 0.80, 0.90))],
        None,
    )
    assert v.passed
    assert [c.status for c in v.cells] == ["pass", "pass"]
    check = v.cells[0].checks[0]  # as speedups: plain / speculative
    assert check.judged == pytest.approx(1 / 0.88) and check.threshold == 1.1
    assert check.reason == (
        "tpot_p50 speedup 1.250 [95% CI 1.136, 1.333] is clear of 1 (no placebo) and meets min_speedup 1.1: faster"
    )
    assert v.summary.startswith("PASS: 2 of 2 cells in range meet the criteria") and "\n" not in v.summary


def test_a_ci_spanning_the_threshold_is_inconclusive_and_one_beyond_it_fails() -> None:
    # 1.089 [0.507, 1.253] spans 1 and is far wider than ±5%: neither a pass nor a fail
    spans = [cell("short", 1, tpot_p50=ratio(1.089, 0.507, 1.253))]
    v = judge(Criteria(), spans, None)
    assert not v.passed and v.status == "inconclusive" and v.cells[0].status == "inconclusive"
    assert v.cells[0].reasons[0] == (
        "tpot_p50 speedup 0.918 [95% CI 0.798, 1.972] overlaps 1 (no placebo) and is wider than ±0.05: "
        "measure more blocks"
    )
    assert v.summary.startswith("INCONCLUSIVE: 1 cell(s) not yet decided (measure more blocks), first: short c=1")
    assert v.record().to_json()["status"] == "inconclusive"
    # min_speedup judged at the point value: 1.25 >= 1.2 though the CI's low end (1.053) is not
    point = cell("short", 1, tpot_p50=ratio(0.80, 0.75, 0.95))
    assert judge(Criteria(min_speedup=1.2, use_confidence_interval=False), [point], None).passed
    assert judge(Criteria(min_speedup=1.2), [point], None).status == "inconclusive"
    beyond = judge(Criteria(), [cell("short", 1, tpot_p50=ratio(1.10, 1.05, 1.15))], None)
    assert beyond.status == "fail" and beyond.cells[0].status == "fail"
    assert "speedup 0.909 [95% CI 0.870, 0.952] is below 1 (no placebo): slower" in beyond.cells[0].reasons[0]
    assert beyond.summary.startswith("FAIL: 1 failed check(s), first: short c=1: fail: tpot_p50")
    # one failing cell outweighs an inconclusive one
    both = judge(Criteria(), [*spans, cell("short", 4, tpot_p50=ratio(1.10, 1.05, 1.15))], None)
    assert both.status == "fail"


def test_throughput_primary_uses_lower_bound() -> None:
    crit = Criteria(primary=("output_throughput",), min_speedup=1.2)
    ok = judge(crit, [cell("s", 2, output_throughput=ratio(1.5, 1.25, 1.7))], None)
    assert ok.passed and ok.cells[0].checks[0].judged == 1.25
    unsure = judge(crit, [cell("s", 2, output_throughput=ratio(1.5, 1.1, 1.7))], None)
    assert unsure.status == "inconclusive" and "spans min_speedup 1.2" in unsure.cells[0].reasons[0]
    short = judge(crit, [cell("s", 2, output_throughput=ratio(1.1, 1.05, 1.15))], None)
    assert (
        short.status == "fail"
        and "is clear of 1 (no placebo) but below min_speedup 1.2: short" in short.cells[0].reasons[0]
    )
    bad = judge(crit, [cell("s", 2, output_throughput=ratio(1.1, 1.0, 1.15))], None)
    # CI [1.0, 1.15] touches 1 (no placebo) and lies below 1.2: decidedly short of the bar
    assert (
        bad.status == "fail"
        and "overlaps 1 (no placebo) and is below min_speedup 1.2: short" in (bad.cells[0].reasons[0])
    )
    no_ci = judge(crit, [cell("s", 2, output_throughput=ratio(1.3))], None)
    assert not no_ci.passed and no_ci.cells[0].status == "inconclusive"  # one block: no CI, one sample


def test_regression_limit() -> None:
    crit = Criteria(max_regression={"ttft_p99": 1.5, "request_throughput": 1.25})
    fast, kept = ratio(0.7, 0.6, 0.8), ratio(0.81)
    v = judge(crit, [cell("s", 1, tpot_p50=fast, request_throughput=kept, ttft_p99=ratio(1.8))], None)
    assert not v.passed
    assert v.cells[0].reasons == ("ttft_p99 spec/plain 1.800 misses <= 1.500 (max_regression 1.5)",)
    ok = judge(crit, [cell("s", 1, tpot_p50=fast, request_throughput=kept, ttft_p99=ratio(1.4))], None)
    assert ok.passed
    slow = judge(
        crit, [cell("s", 1, tpot_p50=ratio(0.7, 0.6, 0.8), ttft_p99=ratio(1.4), request_throughput=ratio(0.79))], None
    )
    assert not slow.passed and "request_throughput spec/plain 0.790 misses >= 0.800" in slow.cells[0].reasons[0]


def test_resources() -> None:
    crit = Criteria(max_extra_memory_bytes=2 * 2**30, max_kv_capacity_loss=0.2)
    cells = [cell("s", 1, tpot_p50=ratio(0.7, 0.6, 0.8))]
    over = judge(crit, cells, JudgedResources(3 * 2**30, 0.146))
    assert not over.passed
    assert [r.status for r in over.resources] == ["fail", "pass"]
    assert over.resources[0].reason == (
        "extra_memory_bytes 3,221,225,472 bytes (3.00 GiB) exceeds limit 2,147,483,648 bytes (2.00 GiB)"
    )
    assert over.resources[1].reason == "kv_capacity_loss 14.6% within limit 20.0%"
    within = judge(crit, cells, JudgedResources(2**30, 0.146))
    assert within.passed and "resources within limits" in within.summary
    unknown = judge(crit, cells, JudgedResources(None, 0.1))
    assert not unknown.passed and "not measured (require_measured = true)" in unknown.summary
    assert unknown.resources[0].status == "not-measured"
    lenient = judge(Criteria(max_extra_memory_bytes=1, require_measured=False), cells, None)
    assert lenient.passed and "1 not measured" in lenient.summary


def test_cells_outside_the_range_are_not_judged() -> None:
    crit = Criteria(concurrency=(2, 4), workloads=("short",))
    cells = [
        cell("short", 1, tpot_p50=ratio(1.5, 1.4, 1.6)),  # slower, but outside the range
        cell("short", 2, tpot_p50=ratio(0.8, 0.7, 0.9)),
        cell("long", 2, tpot_p50=ratio(1.5, 1.4, 1.6)),  # other workload
        cell("short", 8, tpot_p50=ratio(0.8, 0.7, 0.9)),
    ]
    v = judge(crit, cells, None)
    assert v.passed
    assert [c.status for c in v.cells] == ["not-judged", "pass", "not-judged", "not-judged"]
    assert v.cells[0].line() == "short c=1: not-judged: outside the declared workloads/concurrency"
    assert "1 of 1 cells in range" in v.summary and "3 cells not judged" in v.summary


def test_nothing_measured_in_range_fails() -> None:
    crit = Criteria(concurrency=(4, 4), require_measured=False)
    cells = [cell("short", 1, tpot_p50=ratio(0.8, 0.7, 0.9)), cell("short", 4, complete=False)]
    v = judge(crit, cells, None)
    assert not v.passed
    assert v.summary.startswith("FAIL: nothing measured in the declared range")
    assert v.cells[1].status == "not-measured" and "incomplete" in v.cells[1].reasons[0]
    missing_metric = judge(Criteria(require_measured=False), [cell("s", 1, tpot_p50=ratio(None))], None)
    assert not missing_metric.passed and "nothing measured" in missing_metric.summary


def test_incomplete_cell_with_require_measured() -> None:
    cells = [cell("short", 1, tpot_p50=ratio(0.8, 0.7, 0.9)), cell("short", 2, complete=False)]
    assert not judge(Criteria(), cells, None).passed
    assert judge(Criteria(require_measured=False), cells, None).passed


def test_verdict_json_round_trip() -> None:
    v = judge(
        Criteria(max_kv_capacity_loss=0.5),
        [cell("s", 1, tpot_p50=ratio(0.8, 0.7, 0.9))],
        JudgedResources(kv_capacity_loss=0.1),
    )
    data = json.loads(json.dumps(v.record().to_json()))
    assert data["passed"] is True and data["summary"] == v.summary
    assert data["cells"][0]["checks"][0]["name"] == "tpot_p50" and data["cells"][0]["status"] == "pass"
    assert data["resources"][0]["judged"] == 0.1 and data["criteria"]["max_kv_capacity_loss"] == 0.5


def test_to_json_round_trips_through_parse() -> None:
    c = Criteria(
        primary=("e2e_p50",),
        min_speedup=1.1,
        max_regression={"ttft_p99": 2.0},
        concurrency=(1, 4),
        max_kv_capacity_loss=0.3,
    )
    again = parse_criteria({k: v for k, v in c.to_json().items() if v is not None}, PATH)
    assert again == c


def test_no_criteria_declared_is_not_judged() -> None:
    v = card_verdict(None, [cell("short", 1, tpot_p50=ratio(2.0, 1.9, 2.1))], None, PATH)
    assert v["declared"] is False and v["passed"] is None and v["summary"] == "no criteria declared: not judged"
    assert v["cells"] == [] and v["criteria"] is None


def test_declared_keys_survive_the_protocol() -> None:
    c = parse_criteria({"min_speedup": 1.1}, PATH)
    assert c.declared == ("min_speedup",) and "declared" not in c.to_json()
    v = card_verdict(
        c.to_json() | {"declared": list(c.declared)}, [cell("s", 1, tpot_p50=ratio(0.8, 0.7, 0.85))], None, PATH
    )
    assert v["passed"] is True and v["declared_keys"] == ["min_speedup"]
    # a protocol written before the keys were recorded: every key counts as declared
    assert card_verdict(c.to_json(), [], None, PATH)["declared_keys"][:2] == ["primary", "min_speedup"]


def test_pair_files_without_criteria_load_with_none(tmp_path: Path) -> None:
    text = Path("profiles/pairs/demo-cpu.toml").read_text()
    path = tmp_path / "p.toml"
    path.write_text(text[: text.index("[criteria]")] + text[text.index("[slo]") :])
    assert load_pair(str(path)).criteria is None
    assert all(
        load_pair(p.stem).criteria is not None
        for p in Path("profiles/pairs").glob("*.toml")
        if not is_sweep(tomllib.loads(p.read_text()))
    )


def test_a_cell_with_a_blocking_note_is_not_measured_whatever_its_ratio() -> None:
    blocked = cell("short", 1, tpot_p50=ratio(0.5, 0.4, 0.6)) | {
        "notes": ["BLOCKING: this was not a speculative comparison: ngram proposed no draft in any block"]
    }
    v = judge(Criteria(), [blocked, cell("short", 2, tpot_p50=ratio(0.8, 0.7, 0.9))], None)
    first = v.cells[0]
    assert first.status == "not-measured" and first.reasons[0].startswith("BLOCKING: this was not a speculative")
    assert not v.passed and "not measured (require_measured = true)" in v.summary
    assert judge(Criteria(require_measured=False), [blocked], None).summary.startswith("FAIL: nothing measured")


def test_a_lossy_run_reports_its_match_rate_without_judging_it() -> None:
    lossy = cell("short", 1, tpot_p50=ratio(0.8, 0.7, 0.9)) | {
        "lossless": {
            "pairs": 5,
            "identical": 2,
            "match_rate": 0.4,
            "first_difference": [1, 1, 1],
            "lossy": True,
            "lossy_reason": "rejection_sample_method = fly",
        }
    }
    v = judge(Criteria(min_lossless_match=0.99), [lossy], None)
    check = next(c for c in v.cells[0].checks if c.name == "lossless_match")
    assert check.status == "not-judged" and check.judged == 0.4
    assert check.reason == "lossless match not judged: rejection_sample_method = fly is lossy by design"
    assert v.passed  # the primary metric passes; the match rate does not fail a lossy run
