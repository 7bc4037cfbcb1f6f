"""The card's A/A noise-floor notes, its summary over cells and the design summary (report/noisefloor.py)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from loadgen.measure.decision import FASTER, NOT_DISTINGUISHABLE
from loadgen.records.cardcell import CardCell, CellNoiseFloor, Ratio
from loadgen.records.protocol import Protocol
from loadgen.records.protoparts import RunDesign
from loadgen.report import noisefloor
from tests.support.cards import card_cell


def noise_notes(ratios: dict[str, dict[str, Any]], floor: dict[str, Any] | None) -> list[str]:
    """noisefloor.noise_notes of the ratios and the cell noise floor as card.json writes them."""
    return noisefloor.noise_notes(
        {m: Ratio.from_json(x, source="ratio") for m, x in ratios.items()},
        None if floor is None else CellNoiseFloor.from_json(floor, source="floor"),
    )


def design_summary(proto: dict[str, Any]) -> dict[str, object] | None:
    """noisefloor.design_summary of a protocol with ``proto``'s design, as card.json writes it."""
    design = proto.get("design")
    summary = noisefloor.design_summary(
        Protocol(workloads=[], cells=[], design=None if design is None else RunDesign.from_json(design, source="d"))
    )
    return None if summary is None else summary.to_json()


def r(value: float | None, low: float | None = None, high: float | None = None, **extra: Any) -> dict[str, Any]:
    """A ratio dict as measure/cellratios.py writes it."""
    return {"value": value, "ci_low": low, "ci_high": high, **extra}


def floor(holds: dict[str, bool | None], **ratios: dict[str, Any]) -> dict[str, Any]:
    return {"ratios": ratios, "holds": holds}


# --- noise_notes ------------------------------------------------------------------------------------------


def test_no_notes_when_the_design_held_and_every_effect_is_clear() -> None:
    ratios = {"tpot_p50": r(0.8, 0.75, 0.85, effect=FASTER)}
    aa = floor({"tpot_p50": True}, tpot_p50=r(1.0, 0.98, 1.02))
    assert noise_notes(ratios, aa) == []


def test_no_notes_without_ratios_or_floor() -> None:
    assert noise_notes({}, None) == []
    assert noise_notes({}, {}) == []


def test_an_aa_interval_excluding_one_says_the_design_did_not_hold() -> None:
    aa = floor({"tpot_p50": False}, tpot_p50=r(1.1, 1.05, 1.15))
    ratios = {"tpot_p50": r(0.8, 0.75, 0.85, effect=FASTER)}
    assert noise_notes(ratios, aa) == [
        "A/A tpot_p50 1.100 [1.050, 1.150] excludes 1: the placebo moved against plain, so the design did not hold "
        "on this machine; treat this cell's ratios as unreliable"
    ]


def test_an_effect_inside_the_noise_names_the_ratio_and_the_noise_floor() -> None:
    ratios = {"tpot_p50": r(0.97, 0.93, 1.01, effect=NOT_DISTINGUISHABLE)}
    aa = floor({"tpot_p50": True}, tpot_p50=r(1.0, 0.98, 1.02))
    assert noise_notes(ratios, aa) == [
        "tpot_p50 spec/plain 0.970 [0.930, 1.010] is not distinguishable from the A/A noise floor 1.000 [0.980, 1.020]"
    ]


def test_an_effect_inside_the_noise_without_a_placebo_is_judged_from_one() -> None:
    ratios = {"ttft_p50": r(1.02, 0.9, 1.1, effect=NOT_DISTINGUISHABLE)}
    assert noise_notes(ratios, None) == [
        "ttft_p50 spec/plain 1.020 [0.900, 1.100] is not distinguishable from the A/A noise floor (no placebo: from 1)"
    ]


def test_a_one_block_aa_ratio_is_shown_without_an_interval() -> None:
    ratios = {"e2e_p50": r(0.99, 0.9, 1.1, effect=NOT_DISTINGUISHABLE)}
    aa = floor({"e2e_p50": None}, e2e_p50=r(1.01))
    assert noise_notes(ratios, aa) == [
        "e2e_p50 spec/plain 0.990 [0.900, 1.100] is not distinguishable from the A/A noise floor "
        "1.010 (no CI: one block)"
    ]


def test_notes_follow_the_shown_metrics_order_and_skip_other_metrics() -> None:
    nd = NOT_DISTINGUISHABLE
    ratios = {
        "e2e_p50": r(1.0, 0.9, 1.1, effect=nd),
        "tpot_p90": r(1.0, 0.9, 1.1, effect=nd),
        "tpot_p50": r(1.0, 0.9, 1.1, effect=nd),
        "ttft_p50": r(0.5, 0.4, 0.6, effect=FASTER),
    }
    notes = noise_notes(ratios, None)
    assert [n.split(" ", 1)[0] for n in notes] == ["tpot_p50", "e2e_p50"]


def test_an_effect_inside_the_noise_without_a_value_gives_no_note() -> None:
    assert noise_notes({"tpot_p50": r(None, effect=NOT_DISTINGUISHABLE)}, None) == []


def test_a_cell_whose_aa_intervals_all_exclude_one_gets_one_aa_line_per_metric() -> None:
    aa = floor(
        {"tpot_p50": False, "ttft_p50": False, "e2e_p50": False},
        tpot_p50=r(1.1, 1.05, 1.15),
        ttft_p50=r(1.2, 1.1, 1.3),
        e2e_p50=r(1.1, 1.05, 1.15),
    )
    aa_lines = [n for n in noise_notes({}, aa) if n.startswith("A/A ")]
    assert [n.split()[1] for n in aa_lines] == ["tpot_p50", "ttft_p50", "e2e_p50"]


def noise_summary(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """noisefloor.noise_summary of the card cells ``cells`` (parts of cells: tests/support/cards.py)."""
    typed: list[CardCell] = [card_cell(c) for c in cells]
    return noisefloor.noise_summary(typed).to_json()


# --- noise_summary ----------------------------------------------------------------------------------------


def test_noise_summary_without_any_placebo_is_not_measured() -> None:
    assert noise_summary([]) == {"measured": False}
    cells: list[dict[str, Any]] = [
        {"workload": "w", "level": "c1"},
        {"workload": "w", "level": "c4", "noise_floor": None},
    ]
    assert noise_summary(cells) == {"measured": False}


def test_noise_summary_gives_the_range_the_widest_half_width_and_the_cells_excluding_one() -> None:
    cells: list[dict[str, Any]] = [
        {
            "workload": "w",
            "level": "c1",
            "noise_floor": floor({}, tpot_p50=r(0.98, 0.95, 1.01), ttft_p50=r(1.01, 0.9, 1.2)),
        },
        {
            "workload": "w",
            "level": "c4",
            "noise_floor": floor({}, tpot_p50=r(1.06, 1.02, 1.10), ttft_p50=r(0.99, 0.98, 1.0)),
        },
        {"workload": "w", "level": "c8"},
    ]
    out = noise_summary(cells)
    assert out["measured"] is True
    assert out["cells"] == 2
    tpot = out["metrics"]["tpot_p50"]
    assert (tpot["min"], tpot["max"]) == (0.98, 1.06)
    # half-widths: ln(1.01/0.95)/2 ~ 0.0306 and ln(1.10/1.02)/2 ~ 0.0378
    assert tpot["widest_half_width"] == pytest.approx(math.log(1.10 / 1.02) / 2)
    assert tpot["excluding_1"] == ["w c4"]
    ttft = out["metrics"]["ttft_p50"]
    assert (ttft["min"], ttft["max"]) == (0.99, 1.01)
    # ln(1.2/0.9)/2 ~ 0.144 against ln(1.0/0.98)/2 ~ 0.010; [0.98, 1.0] still covers 1
    assert ttft["widest_half_width"] == pytest.approx(math.log(1.2 / 0.9) / 2)
    assert ttft["excluding_1"] == []
    assert "e2e_p50" not in out["metrics"]


def test_noise_summary_of_one_block_floors_has_no_half_width_and_excludes_nothing() -> None:
    cells = [{"workload": "w", "level": "c1", "noise_floor": floor({}, tpot_p50=r(1.03))}]
    assert noise_summary(cells)["metrics"]["tpot_p50"] == {
        "min": 1.03,
        "max": 1.03,
        "widest_half_width": None,
        "excluding_1": [],
    }


def test_noise_summary_skips_a_metric_without_a_value() -> None:
    cells = [{"workload": "w", "level": "c1", "noise_floor": floor({}, tpot_p50=r(None), e2e_p50=r(1.0, 0.9, 1.1))}]
    out = noise_summary(cells)
    assert out["cells"] == 1
    assert set(out["metrics"]) == {"e2e_p50"}


# --- design_summary ---------------------------------------------------------------------------------------


def test_design_summary_of_older_code_is_none() -> None:
    assert design_summary({}) is None
    assert design_summary({"design": None, "cells": []}) is None


def test_design_summary_drops_the_order_and_counts_its_slots() -> None:
    proto = {
        "design": {"blocks": 3, "placebo": "server", "order": [["plain", "w", "c1", 0], ["speculative", "w", "c1", 0]]}
    }
    assert design_summary(proto) == {"blocks": 3, "placebo": "server", "slots": 2}


def test_design_summary_without_an_order_has_no_slots() -> None:
    assert design_summary({"design": {"blocks": 1}}) == {"blocks": 1, "slots": 0}
    assert design_summary({"design": {"blocks": 1, "order": None}}) == {"blocks": 1, "slots": 0}


def test_a_far_off_block_is_named_and_only_a_first_one_points_at_warm_up() -> None:
    first = noise_notes({"tpot_p50": r(0.8, 0.7, 0.9, block_ratios=[1.5, 0.78, 0.80, 0.79])}, None)
    assert first == [
        "tpot_p50: block 0 1.500 far off the cell's other blocks (0.780-0.800); kept in the interval (no exclusion "
        "rule is declared); a slow first block points at a level not yet warmed"
    ]
    third = noise_notes({"tpot_p50": r(0.8, 0.7, 0.9, block_ratios=[0.78, 0.80, 1.5])}, None)
    assert third == [
        "tpot_p50: block 2 1.500 far off the cell's other blocks (0.780-0.800); kept in the interval (no exclusion "
        "rule is declared)"
    ]


def test_a_cell_decided_again_gets_its_noise_notes_written_again_in_their_place() -> None:
    """A card re-rendered from its saved statistics under a newer decision: the notes of the old effects (in
    this version's words or an earlier one's) give way to the new ones; the other notes keep their places."""
    wide = {"tpot_p50": r(1.107, 0.761, 1.610)}
    stale = [
        "queueing: c=64 above max_num_seqs",
        "tpot_p50 spec/plain 0.817 [0.764, 0.874] is not distinguishable from the A/A noise floor 1.107 [0.761, 1.610]",
        "tpot_p50: block 2 0.434 far off the cell's other blocks (0.382-0.391); kept in the interval (no exclusion "
        "rule is declared); a slow first block points at a level not yet warmed",
        "lossless check: 12/12 identical",
    ]
    cell = card_cell(
        {
            "workload": "w",
            "level": "c64",
            "concurrency": 64,
            "ratios": {"tpot_p50": r(0.817, 0.764, 0.874, effect="not distinguishable")},
            "noise_floor": floor({"tpot_p50": True}, **wide),
            "notes": stale,
        }
    )
    again = {"tpot_p50": Ratio(0.817, ci_low=0.764, ci_high=0.874, effect="inconclusive")}
    out = noisefloor.renoted(cell, again)
    assert out.ratios == again
    assert out.notes == ("queueing: c=64 above max_num_seqs", "lossless check: 12/12 identical")
    back = noisefloor.renoted(out, {"tpot_p50": again["tpot_p50"].with_fields(effect="not distinguishable")})
    assert back.notes == (
        "queueing: c=64 above max_num_seqs",
        "lossless check: 12/12 identical",
        "tpot_p50 spec/plain 0.817 [0.764, 0.874] is not distinguishable from the A/A noise floor 1.107 [0.761, 1.610]",
    )
