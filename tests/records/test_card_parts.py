"""The pair card's parts (records/card.py, records/cardcell.py) against the committed cards under docs/: each
cell's step times (``StepTime``), cost decomposition (``Cost``) and A/A noise floor (``CellNoiseFloor``), and the
card's noise floor (``NoiseFloor``, ``NoiseMetric``) read on their own, write back the same bytes and hold the
relations measure/diagnosis.py, measure/steptime.py and report/noisefloor.py compute them by; ``CardCell.aa_ratio``
and the sweep's ``SweepCell.floor_ratio`` give the placebo's ratio; a wrong type is one BadInput line naming it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import BadInput
from loadgen.records.card import ContextRow, NoiseFloor, NoiseMetric, PairCard
from loadgen.records.cardcell import CardCell, CellNoiseFloor, Cost, StepTime
from loadgen.records.sweep import SweepCard, SweepCell

DOCS = Path(__file__).resolve().parents[2] / "docs"
CARDS = sorted(DOCS.rglob("card.json"))
SWEEP_7B = DOCS / "examples" / "h200" / "h200-7b-sweep"
GROUNDED = DOCS / "examples" / "h100" / "h200-7b-grounded-decide" / "ngram-k4" / "card.json"
WITH_FLOOR = sorted([SWEEP_7B / "distilled-k2" / "card.json", SWEEP_7B / "smollm2-k4" / "card.json", GROUNDED])


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(DOCS)) for p in paths]


def _load(path: Path) -> Any:
    return json.loads(path.read_text())


def _same(record: Any, data: Any) -> None:
    """The record writes the bytes it was read from (the card's own indent)."""
    assert json.dumps(record.to_json(), indent=2) == json.dumps(data, indent=2)


def test_the_committed_cards_carry_the_parts() -> None:
    counts = {str(p.relative_to(DOCS).parent): sum("cost" in c for c in _load(p)["cells"]) for p in CARDS}
    assert len(CARDS) == 11 and sum(counts.values()) == 84
    assert counts["examples/h200/h200-smollm2-sweep/plain-after"] == 0
    assert [p for p in CARDS if "noise_floor" in _load(p)] == WITH_FLOOR


@pytest.mark.parametrize("path", CARDS, ids=_ids(CARDS))
def test_each_step_time_reads_alone_writes_back_and_uses_its_source(path: Path) -> None:
    seen = 0
    for i, cell in enumerate(_load(path)["cells"]):
        for role in ("plain", "speculative"):
            data = (cell.get(role) or {}).get("step_time")
            if data is None:
                continue
            st = StepTime.from_json(data, source=f"cells[{i}].{role}.step_time")
            _same(st, data)
            # measure/steptime.py: the step used is the server's unless it is missing, then the client's
            assert st.source in ("server", "client")
            assert st.step_s == (st.server_step_s if st.source == "server" else st.client_step_s)
            assert st.burst_share is None or 0.0 <= st.burst_share <= 1.0
            # a p50 under 0.1 ms is a burst artefact (measure/steptime.py BURST_GAP_S)
            p50s = {"ITL": cell[role]["itl_s"]["p50"], "inter-chunk latency": cell[role]["icl_s"]["p50"]}
            assert st.burst_artefacts == tuple(n for n, v in p50s.items() if v is not None and v < 1e-4)
            assert st.icl_p50_s == p50s["inter-chunk latency"]
            seen += 1
    assert seen >= 8


@pytest.mark.parametrize("path", CARDS, ids=_ids(CARDS))
def test_each_cost_is_the_closed_form_of_its_step_times(path: Path) -> None:
    card = _load(path)
    for i, cell in enumerate(card["cells"]):
        if "cost" not in cell:
            continue
        cost = Cost.from_json(cell["cost"], source=f"cells[{i}].cost")
        _same(cost, cell["cost"])
        plain, spec = cell["plain"]["step_time"], cell["speculative"]["step_time"]
        # measure/steptime.py: both roles' server step when both have one, else both clients'
        source = "server" if plain["source"] == spec["source"] == "server" else "client"
        assert cost.step_source == source
        if cost.unavailable is not None:  # a step time under 0.1 ms: no decomposition
            assert min(plain[f"{source}_step_s"], spec[f"{source}_step_s"]) < 1e-4 and cost.plain_step_s is None
            continue
        assert (cost.plain_step_s, cost.spec_step_s) == (plain[f"{source}_step_s"], spec[f"{source}_step_s"])
        assert cost.acceptance_length == cell["speculative"]["acceptance"]["mean_acceptance_length"]
        if cost.step_time_ratio is None:
            continue
        # measure/diagnosis.py cost_decomposition: ratio = spec / plain step, predicted = length / ratio,
        # measured = plain TPOT p50 / speculative TPOT p50, agreeing within 15%
        assert cost.step_time_ratio == pytest.approx(cost.spec_step_s / cost.plain_step_s, rel=1e-12)
        assert cost.predicted_speedup == pytest.approx(cost.acceptance_length / cost.step_time_ratio, rel=1e-12)
        tpot = cell["plain"]["tpot_s"]["p50"] / cell["speculative"]["tpot_s"]["p50"]
        assert cost.measured_tpot_speedup == pytest.approx(tpot, rel=1e-12)
        assert cost.agrees == (abs(cost.predicted_speedup / cost.measured_tpot_speedup - 1) <= 0.15)
        assert (cost.why is None) == cost.agrees


@pytest.mark.parametrize("path", WITH_FLOOR, ids=_ids(WITH_FLOOR))
def test_the_card_noise_floor_is_the_range_of_the_cells_placebo_ratios(path: Path) -> None:
    data = _load(path)
    floor = NoiseFloor.from_json(data["noise_floor"], source="card.json noise_floor")
    _same(floor, data["noise_floor"])
    cells = [CardCell.from_json(c, source=f"cells[{i}]") for i, c in enumerate(data["cells"])]
    assert floor.measured and floor.cells == sum(c.noise_floor is not None for c in cells) == len(cells)
    assert floor.metrics is not None and set(floor.metrics) == {"tpot_p50", "ttft_p50", "e2e_p50"}
    for metric, m in floor.metrics.items():
        aa = [(c, r) for c in cells if (r := c.aa_ratio(metric)) is not None and r.value is not None]
        assert (m.min, m.max) == (min(r.value for _, r in aa), max(r.value for _, r in aa))
        widths = [(math.log(r.ci_high) - math.log(r.ci_low)) / 2 for _, r in aa]
        assert m.widest_half_width == pytest.approx(max(widths), rel=1e-12)
        outside = [f"{c.workload} {c.level}" for c, r in aa if not r.ci_low <= 1 <= r.ci_high]
        assert list(m.excluding_1) == outside
        for c, r in aa:
            assert c.noise_floor is not None and c.noise_floor.holds is not None
            assert c.noise_floor.holds[metric] == (r.ci_low <= 1 <= r.ci_high)


def test_aa_ratio_is_the_placebo_ratio_and_none_without_one() -> None:
    data = _load(SWEEP_7B / "distilled-k2" / "card.json")["cells"][0]
    cell = CardCell.from_json(data, source="cells[0]")
    tpot = cell.aa_ratio("tpot_p50")
    assert tpot is not None and tpot.value == data["noise_floor"]["ratios"]["tpot_p50"]["value"]
    assert tpot.block_ratios is not None and len(tpot.block_ratios) == tpot.blocks == 3
    assert cell.aa_ratio("no_such_metric") is None
    assert cell.aa_ratio("tpot_p50") != cell.ratio("tpot_p50")  # the placebo's, not the speculative arm's
    plain = CardCell.from_json(
        _load(DOCS / "examples" / "h200" / "h200-1b-draft" / "card.json")["cells"][0], source="cells[0]"
    )
    assert plain.noise_floor is None and plain.aa_ratio("tpot_p50") is None
    empty = CardCell("w", "c1", 1, None, True, {}, (), noise_floor=CellNoiseFloor())
    assert empty.aa_ratio("tpot_p50") is None


def test_the_sweep_floor_ratio_is_the_candidates_placebo_tpot_ratio() -> None:
    raw = _load(SWEEP_7B / "sweep.json")
    sweep = SweepCard.from_json(raw, source="sweep.json")
    card = PairCard.from_json(_load(SWEEP_7B / "distilled-k2" / "card.json"), source="card.json")
    assert len(sweep.cells) == 10
    for cell, raw_cell in zip(sweep.cells, raw["cells"], strict=True):
        floor = cell.floor_ratio()
        on_card = card.cell(cell.workload, cell.level)
        assert floor is not None and on_card is not None and floor == on_card.aa_ratio("tpot_p50")
        assert json.dumps(floor.to_json()) == json.dumps(raw_cell["noise_floor"])  # keys in the sweep file's order
    assert SweepCell("w", entries=[]).floor_ratio() is None


def test_a_sweep_floor_that_does_not_read_is_one_line_naming_the_field() -> None:
    cell = {"workload": "w", "noise_floor": {"value": 1.0, "ci_low": "x"}, "entries": []}
    with pytest.raises(BadInput, match=r"^sweep.json cells\[0\]: noise_floor.ci_low: expected a number, got 'x'"):
        SweepCell.from_json(cell, source="sweep.json cells[0]")


def test_a_context_row_built_in_code_writes_every_required_field_and_reads_back() -> None:
    row = ContextRow(input_tokens=4096, level="c4", acceptance_rate=0.5, tpot_ratio=None, tpot_ratio_ci=(0.8, None))
    data = json.loads(json.dumps(row.to_json()))
    assert list(data) == ["input_tokens", "level", "acceptance_rate", "tpot_ratio", "tpot_ratio_ci"]
    assert data["tpot_ratio"] is None and data["tpot_ratio_ci"] == [0.8, None]  # concurrency left out: default
    again = ContextRow.from_json(data, source="card.json context_axis.w[0]")
    assert again == row and again.concurrency is None
    assert list(row.in_full().to_json()) == [
        "input_tokens",
        "level",
        "concurrency",
        "acceptance_rate",
        "tpot_ratio",
        "tpot_ratio_ci",
    ]
    assert row.with_fields(concurrency=4).to_json()["concurrency"] == 4


@pytest.mark.parametrize(
    ("record", "data", "message"),
    [
        (StepTime, {"server_step_s": "0.01"}, r"step_time: server_step_s: expected a number, got '0.01'"),
        (StepTime, {"burst_artefacts": "tpot_p50"}, r"step_time: burst_artefacts: expected a list, got 'tpot_p50'"),
        (Cost, {"agrees": 1}, r"cost: agrees: expected true or false, got 1"),
        (NoiseFloor, {"measured": True, "cells": 1.5}, r"noise_floor: cells: expected an integer, got 1.5"),
        (
            NoiseFloor,
            {"measured": True, "metrics": {"tpot_p50": []}},
            r"noise_floor: metrics.tpot_p50: expected an object",
        ),
        (
            NoiseMetric,
            {"min": 1, "max": 1, "widest_half_width": None, "excluding_1": [3]},
            r"noise_floor: excluding_1\[0\]: expected a string, got 3",
        ),
        (
            CellNoiseFloor,
            {"holds": {"tpot_p50": "yes"}},
            r"noise_floor: holds.tpot_p50: expected true or false, got .yes.",
        ),
        (
            ContextRow,
            {"input_tokens": 8, "level": "c1", "acceptance_rate": None, "tpot_ratio": None},
            r"context_axis: tpot_ratio_ci: missing",
        ),
    ],
)
def test_a_part_that_does_not_match_is_one_line_naming_the_field(record: Any, data: Any, message: str) -> None:
    if record is StepTime:
        data = {
            "server_step_s": 0.01,
            "client_step_s": None,
            "client_basis": "b",
            "step_s": 0.01,
            "source": "server",
            "burst_share": None,
            "icl_p50_s": None,
            "burst_artefacts": [],
        } | data
    source = {StepTime: "step_time", Cost: "cost", ContextRow: "context_axis"}.get(record, "noise_floor")
    with pytest.raises(BadInput, match=message) as caught:
        record.from_json(data, source=source)
    assert "\n" not in str(caught.value) and "loadgen report" in str(caught.value)
