"""Per-workload figures across a card's closed-loop levels (report/cardlevels.py), on made-up cells with
known values: the crossover of the TPOT p50 ratio by linear interpolation and its bracketing CIs, and each
server's SLO capacity with its goodput."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from loadgen.measure.decision import decide
from loadgen.profile.pair import SLO
from loadgen.records.cardcell import CardCell, Ratio
from loadgen.report.cardlevels import capacities, crossovers
from tests.support.cards import card_cell


def _cell(workload: str, c: int, ratio: tuple[float, float, float] | None, **sides: Any) -> CardCell:
    """A cell whose TPOT p50 ratio carries its decision against no placebo (the band is 1: measure/decision.py)."""
    value, low, high = ratio or (None, None, None)
    effect = None if ratio is None else decide("tpot_p50", Ratio(value, low, high), None).outcome
    return card_cell(
        {
            "workload": workload,
            "concurrency": c,
            "rate_rps": None,
            "ratios": {"tpot_p50": {"value": value, "ci_low": low, "ci_high": high, "effect": effect}},
            **sides,
        }
    )


def test_the_crossover_is_interpolated_and_bracketed_by_the_cis() -> None:
    # 0.8 at c=1 (CI below 1), 0.9 at c=2 (CI spans 1), 1.3 at c=4 (CI above 1): crossing 1 between 2 and 4
    cells = [_cell("w", 4, (1.3, 1.2, 1.4)), _cell("w", 1, (0.8, 0.7, 0.9)), _cell("w", 2, (0.9, 0.8, 1.05))]
    [(name, cross)] = crossovers(cells).items()
    assert name == "w" and cross.levels == (1, 2, 4) and cross.ratios == (0.8, 0.9, 1.3)
    assert cross.crossover_concurrency == pytest.approx(2 + (1.0 - 0.9) * 2 / 0.4)  # 2.5
    # faster at c=1 (CI below 1), not distinguishable at c=2, slower at c=4 (CI above 1)
    assert cross.crossover_range == (1, 4)


def test_the_crossover_range_reads_each_cells_decision_against_the_floor() -> None:
    # the same CIs, but c=4's effect decided not distinguishable (inside a wider A/A floor): no range
    cells = [_cell("w", 1, (0.8, 0.7, 0.9)), _cell("w", 4, (1.3, 1.2, 1.4))]
    inside = cells[1].ratios["tpot_p50"].with_fields(effect="not distinguishable")
    cells[1] = replace(cells[1], ratios={"tpot_p50": inside})
    assert crossovers(cells)["w"].crossover_range is None


def test_no_crossover_when_the_ratio_stays_below_1_and_open_loop_cells_are_left_out() -> None:
    cells = [_cell("w", 1, (0.7, 0.6, 0.8)), _cell("w", 4, (0.9, 0.85, 0.95))]
    cells.append(card_cell({"workload": "w", "concurrency": 8, "level": "r2.0", "rate_rps": 2.0}))
    cross = crossovers(cells)["w"]
    assert cross.levels == (1, 4) and cross.crossover_concurrency is None and cross.crossover_range is None


def test_each_servers_capacity_is_its_highest_level_holding_every_slo_with_its_goodput() -> None:
    def side(holds: bool, goodput: float) -> dict[str, Any]:
        return {"slo_holds": holds, "goodput_rps": goodput}

    cells = [
        _cell("w", 1, None, plain=side(True, 1.0), speculative=side(True, 1.5)),
        _cell("w", 2, None, plain=side(True, 1.8), speculative=side(False, 2.0)),
        _cell("w", 4, None, plain=side(False, 2.5), speculative=side(False, 2.2)),
    ]
    out = capacities(cells, SLO(percentile=99, tpot_s=0.1))
    plain, spec = out["w"]["plain"], out["w"]["speculative"]
    assert plain.levels == (1, 2, 4) and plain.holds == (True, True, False)
    assert (plain.capacity_concurrency, plain.goodput_rps) == (2, 1.8)
    assert (spec.capacity_concurrency, spec.goodput_rps) == (1, 1.5)
    assert capacities(cells, SLO()) == {}  # no objective declared: no capacity
