"""The sweep's recommendation says plain only where every candidate was decided (report/sweeprec.py,
measure/ranking.py off_above): a level with a candidate still inconclusive, or one a stopped sweep never
reached, reads undecided, and the headline with nothing faster says "do not speculate yet", naming them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loadgen.measure.ranking import Entry, off_above
from loadgen.records.criteria import criteria_of
from loadgen.records.sweep import SweepCandidate, SweepCell
from loadgen.report.sweepdata import _noise
from loadgen.report.sweeprec import recommend

ROWS = [
    {
        "name": "ng-k4",
        "k": 4,
        "draft_weights": False,
        "verdict_passed": None,
        "speculative_config": {"method": "ngram", "num_speculative_tokens": 4},
    }
]


def _entry(effect: str | None, speedup: float | None, low: float | None, high: float | None) -> dict[str, Any]:
    return {
        "candidate": "ng-k4",
        "k": 4,
        "draft_weights": False,
        "speedup": speedup,
        "speedup_ci_low": low,
        "speedup_ci_high": high,
        "criteria_status": {"faster": "pass", "inconclusive": "inconclusive"}.get(effect or ""),
        "effect": effect,
    }


FASTER = _entry("faster", 1.4, 1.3, 1.5)
UNDECIDED = _entry("inconclusive", 1.2, 0.9, 1.6)
SLOWER = _entry("slower", 0.8, 0.75, 0.85)
UNMEASURED = _entry(None, None, None, None)


def _recommend(*entries: dict[str, Any], criteria: bool = True) -> dict[str, Any]:
    levels = [1, 4, 16, 64][: len(entries)]
    cells = [
        SweepCell.from_json(
            {"workload": "w", "level": f"c{c}", "concurrency": c, "rate_rps": None, "entries": [e]}, source="cells"
        )
        for c, e in zip(levels, entries, strict=True)
    ]
    declared = criteria_of({"primary": ["tpot_p50"], "min_speedup": 1.05}, Path("pair.toml")) if criteria else None
    rows = [SweepCandidate.from_json(r, source="rows") for r in ROWS]
    return recommend(cells, rows, declared, "0.32.0").to_json()


def test_off_above_names_an_undecided_next_level_as_undecided() -> None:
    pays = Entry("a", 1, False, 1.5, 1.2, 1.8, "faster", "pass")
    above, line = off_above([(1, pays), (4, None)], undecided={4})
    assert above == 1 and line == (
        "speculation off above concurrency 1 (it pays up to 1 and is undecided at 4, the next level measured: "
        "measure more blocks there)"
    )
    assert off_above([]) == (None, "no level measured: nothing decided")
    assert off_above([(1, None), (4, None)], undecided={4}) == (
        None,
        "no candidate is decided faster at any level: do not speculate yet (undecided at concurrency 4: measure "
        "more blocks)",
    )


def test_an_inconclusive_level_is_undecided_and_an_unreached_one_is_no_next_level_measured() -> None:
    rec = _recommend(FASTER, UNDECIDED, UNMEASURED)
    w = rec["workloads"][0]
    assert [(lv["level"], lv["best"], lv["undecided"], lv["unmeasured"]) for lv in w["levels"]] == [
        ("c1", "ng-k4", [], []),
        ("c4", None, ["ng-k4"], []),
        ("c16", None, [], ["ng-k4"]),
    ]
    assert w["off_above_concurrency"] == 1
    line = rec["lines"][0]
    assert "best per level c1: ng-k4, c4: undecided (ng-k4 inconclusive), c16: undecided (ng-k4 not measured)" in line
    assert "it pays up to 1 and is undecided at 4, the next level measured" in line


def test_nothing_faster_with_cells_owed_is_do_not_speculate_yet_naming_them() -> None:
    rec = _recommend(SLOWER, UNDECIDED, UNMEASURED)
    assert rec["static"] is None and rec["deployable"] is None
    assert rec["lines"][-1] == (
        "recommendation: do not speculate yet (no candidate is decided faster at any level; undecided at w c4: "
        "measure more blocks there; not measured at w c16: resume the sweep (loadgen sweep --resume))"
    )
    assert rec["workloads"][0]["levels"][0]["best"] is None and "c1: plain" in rec["lines"][0]


def test_every_level_decided_and_none_faster_is_plain_and_do_not_speculate() -> None:
    rec = _recommend(SLOWER, SLOWER)
    assert "best per level c1: plain, c4: plain" in rec["lines"][0]
    assert rec["lines"][-1] == (
        "recommendation: do not speculate (no candidate pays clear of the noise floor at any level)"
    )


def test_a_sweep_that_measured_nothing_names_no_level_and_no_decision() -> None:
    rec = _recommend(UNMEASURED, UNMEASURED)
    assert rec["workloads"][0]["off_above_concurrency"] is None
    assert "no level measured: nothing decided" in rec["lines"][0]
    assert (
        rec["lines"][-1].startswith("recommendation: do not speculate yet (")
        and "not measured at w c1, w c4" in (rec["lines"][-1])
    )


def test_a_declared_placebo_without_a_measured_cell_is_not_called_undeclared() -> None:
    assert _noise([], "blocks").line == "no A/A noise floor: the placebo (blocks) has no measured cell here"
    assert _noise([], "off").line == "no A/A placebo: no noise floor (set [design].placebo)"
