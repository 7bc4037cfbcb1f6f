"""The card's "How sure" section, each cell's block rows and the crossover rows (report/designmd.py)."""

from __future__ import annotations

from typing import Any

from loadgen.records.card import Crossover, NoiseFloor
from loadgen.records.cardcell import CardCell
from loadgen.records.protoparts import RunDesign
from loadgen.report import designmd
from loadgen.report.designmd import WITHIN_RUN
from tests.support.cards import full_card

HOW_SURE = "## How sure: measurement design and noise floor"
CROSSOVER_HEAD = [
    "## Where speculation stops paying",
    "",
    "TPOT p50 ratio (speculative / plain) [95% CI] against closed-loop concurrency; the crossover lies "
    "between the last level where speculation is faster and the first where it is slower.",
    "",
]


def arm(name: str, server: str, attached: bool = False) -> dict[str, Any]:
    """One of the design's arms (records/runparts.py ArmRecord), on port 8000 without a speculative config."""
    return {"arm": name, "server": server, "port": 8000, "attached": attached, "speculative_config": None}


def design(**over: Any) -> dict[str, Any]:
    """A card's ``design``: plain, its placebo blocks on the plain server and an attached speculative server."""
    return {
        "blocks": 3,
        "slots": 18,
        "co_resident": True,
        "co_resident_reason": "every server is attached",
        "server_starts": 0,
        "arms": [
            arm("plain", "plain"),
            arm("placebo", "plain"),
            arm("speculative", "speculative", attached=True),
        ],
    } | over


def design_rows(card: dict[str, Any]) -> list[str]:
    floor = card.get("noise_floor")
    typed = None if floor is None else NoiseFloor.from_json(floor, source="noise_floor")
    design = card.get("design")
    return designmd.design_rows(None if design is None else RunDesign.from_json(design, source="design"), typed)


def cell_rows(cell: dict[str, Any]) -> list[str]:
    """designmd.cell_rows of the card cell ``cell`` (its ratios' values None unless given)."""
    ratios = {m: {"value": None, **r} for m, r in (cell.get("ratios") or {}).items()}
    [full] = full_card({"cells": [cell | {"ratios": ratios}]})["cells"]
    return designmd.cell_rows(CardCell.from_json(full, source="test cell"))


def crossover_rows(card: dict[str, Any]) -> list[str]:
    """designmd.crossover_rows of the card's ``crossover`` (crossover_concurrency None unless given)."""
    return designmd.crossover_rows(
        {
            w: Crossover.from_json({"crossover_concurrency": None, "metric": "tpot_p50", **c}, source="test")
            for w, c in (card.get("crossover") or {}).items()
        }
    )


# --- design_rows ------------------------------------------------------------------------------------------


def test_a_run_of_older_code_says_its_cis_are_within_run_only() -> None:
    assert design_rows({}) == [HOW_SURE, "", f"- {WITHIN_RUN}.", ""]
    assert design_rows({"design": None}) == [HOW_SURE, "", f"- {WITHIN_RUN}.", ""]
    assert WITHIN_RUN.startswith("CIs are within-run only")


def test_design_rows_describe_blocks_arms_residency_and_starts() -> None:
    rows = design_rows({"design": design(), "noise_floor": {"measured": False}})
    assert rows[:2] == [HOW_SURE, ""]
    assert rows[2] == (
        "- design: 3 blocks per arm and cell in a balanced order (run/design.py), 18 slots; arms: "
        "plain, placebo (on the plain server), speculative attached"
    )
    assert rows[3] == (
        "- servers co-resident (only the measured server gets load): every server is attached; 0 server starts"
    )
    assert rows[4].startswith("- each ratio: geometric mean of the block ratios")
    assert rows[5] == ('- no A/A placebo ([design].placebo = "off"): no noise floor; an effect is judged against 1')
    assert rows[6:] == [""]


def test_servers_launched_one_at_a_time_are_described_as_such() -> None:
    d = design(
        co_resident=False,
        co_resident_reason="the shares sum to 1.8",
        server_starts=5,
        arms=[arm("plain", "plain"), arm("k1", "k1")],
    )
    rows = design_rows({"design": d})
    assert rows[2].endswith("18 slots; arms: plain, k1")
    assert rows[3] == "- servers one at a time: the shares sum to 1.8; 5 server starts"


def test_a_noise_floor_that_held_everywhere_says_every_aa_ci_covers_one() -> None:
    floor = {
        "measured": True,
        "cells": 2,
        "metrics": {"tpot_p50": {"min": 0.98, "max": 1.0126, "widest_half_width": 0.0378, "excluding_1": []}},
    }
    rows = design_rows({"design": design(), "noise_floor": floor})
    assert not any(r.startswith("- no A/A placebo") for r in rows)
    assert (
        "- A/A noise floor tpot_p50 (placebo / plain): 0.980-1.013 over 2 cells, widest CI ±0.038 "
        "(log half-width); every A/A CI covers 1"
    ) in rows
    assert rows[-1] == ""


def test_a_noise_floor_excluding_one_warns_and_names_the_cells() -> None:
    floor = {
        "measured": True,
        "cells": 3,
        "metrics": {
            "tpot_p50": {"min": 0.97, "max": 1.06, "widest_half_width": None, "excluding_1": ["w c4", "w c8"]},
            "ttft_p50": {"min": 0.99, "max": 1.01, "widest_half_width": 0.02, "excluding_1": []},
        },
    }
    rows = design_rows({"design": design(), "noise_floor": floor})
    aa = [r for r in rows if r.startswith("- A/A noise floor")]
    assert aa == [
        "- A/A noise floor tpot_p50 (placebo / plain): 0.970-1.060 over 3 cells, widest CI ±– (log half-width); "
        "WARNING: the A/A CI excludes 1 at w c4, w c8: the design did not hold there",
        "- A/A noise floor ttft_p50 (placebo / plain): 0.990-1.010 over 3 cells, widest CI ±0.020 (log half-width); "
        "every A/A CI covers 1",
    ]


# --- cell_rows --------------------------------------------------------------------------------------------


def test_cell_rows_give_the_blocks_and_spreads_of_a_blocked_tpot_ratio() -> None:
    cell = {
        "ratios": {
            "tpot_p50": {
                "value": 0.8,
                "ci_low": 0.7,
                "ci_high": 0.9,
                "ci_method": "blocks",
                "blocks": 4,
                "between_block_sd": 0.0412,
                "within_block_sd": 0.0101,
                "effect": "faster",
            }
        }
    }
    assert cell_rows(cell) == [
        "- 4 blocks; TPOT p50 log ratio spread between blocks 0.041, within a block 0.010 "
        "(SD); effect against the noise floor: faster"
    ]


def test_cell_rows_write_unknown_spreads_as_a_dash() -> None:
    cell = {
        "ratios": {
            "tpot_p50": {
                "ci_method": "blocks",
                "blocks": 1,
                "between_block_sd": None,
                "within_block_sd": None,
                "effect": "unknown",
            }
        }
    }
    assert cell_rows(cell) == [
        "- 1 blocks; TPOT p50 log ratio spread between blocks –, within a block – (SD); "
        "effect against the noise floor: unknown"
    ]


def test_cell_rows_say_nothing_about_blocks_for_a_within_run_ratio() -> None:
    cell = {"ratios": {"tpot_p50": {"value": 0.8, "ci_low": 0.7, "ci_high": 0.9, "ci_method": "bootstrap"}}}
    assert cell_rows(cell) == []
    assert cell_rows({}) == []


def test_cell_rows_list_the_placebo_p50_ratios_ttft_first() -> None:
    cell = {
        "noise_floor": {
            "ratios": {
                "tpot_p50": {"value": 1.0, "ci_low": 0.98, "ci_high": 1.02},
                "e2e_p50": {"value": 1.0123},
                "ttft_p50": {"value": 1.01, "ci_low": 0.95, "ci_high": 1.07},
                "tpot_p90": {"value": 2.0},
            }
        }
    }
    assert cell_rows(cell) == [
        "- A/A placebo / plain p50 [95% CI]: ttft_p50 1.010 [0.950, 1.070], "
        "tpot_p50 1.000 [0.980, 1.020], e2e_p50 1.012"
    ]


def test_cell_rows_give_the_spreads_before_the_placebo_row() -> None:
    cell = {
        "ratios": {
            "tpot_p50": {
                "ci_method": "blocks",
                "blocks": 3,
                "between_block_sd": 0.02,
                "within_block_sd": 0.01,
                "effect": "not distinguishable",
            }
        },
        "noise_floor": {"ratios": {"tpot_p50": {"value": 0.99, "ci_low": 0.97, "ci_high": 1.01}}},
    }
    rows = cell_rows(cell)
    assert len(rows) == 2
    assert rows[0].startswith("- 3 blocks;") and rows[0].endswith("not distinguishable")
    assert rows[1] == "- A/A placebo / plain p50 [95% CI]: tpot_p50 0.990 [0.970, 1.010]"


# --- crossover_rows ---------------------------------------------------------------------------------------


def test_no_crossover_data_gives_only_the_heading() -> None:
    assert crossover_rows({}) == [*CROSSOVER_HEAD, ""]


def test_a_crossover_bracketed_by_cis_is_a_range_with_the_interpolated_point() -> None:
    card = {
        "crossover": {
            "chat": {
                "levels": [1, 4, 16],
                "ratios": [0.7, 0.9, 1.2],
                "ratio_cis": [[0.65, 0.75], [0.85, 0.95], [1.1, 1.3]],
                "crossover_range": [4, 16],
                "crossover_concurrency": 9.54,
            }
        }
    }
    assert crossover_rows(card) == [
        *CROSSOVER_HEAD,
        "- chat: c=1: 0.700 [0.650, 0.750], c=4: 0.900 [0.850, 0.950], "
        "c=16: 1.200 [1.100, 1.300]; crossover: between concurrency 4 and 16 "
        "(interpolated ≈ 9.5)",
        "",
    ]


def test_a_crossover_range_without_an_interpolated_point_has_no_guide() -> None:
    card = {
        "crossover": {
            "w": {"levels": [2, 8], "ratios": [0.9, 1.1], "crossover_range": [2, 8], "crossover_concurrency": None}
        }
    }
    assert crossover_rows(card)[4] == "- w: c=2: 0.900, c=8: 1.100; crossover: between concurrency 2 and 8"


def test_an_interpolated_crossover_the_cis_do_not_bracket_is_flagged() -> None:
    card = {
        "crossover": {
            "w": {
                "levels": [2, 8],
                "ratios": [0.95, 1.05],
                "ratio_cis": [[0.9, 1.0], [None, None]],
                "crossover_concurrency": 5.0,
            }
        }
    }
    assert crossover_rows(card)[4] == (
        "- w: c=2: 0.950 [0.900, 1.000], c=8: 1.050; crossover: concurrency ≈ 5.0 "
        "(interpolated; the CIs do not bracket it)"
    )


def test_no_crossover_within_the_levels_says_so_and_writes_missing_ratios_as_a_dash() -> None:
    card = {"crossover": {"w": {"levels": [1, 2], "ratios": [0.6, None], "ratio_cis": [None, None]}}}
    assert crossover_rows(card)[4] == "- w: c=1: 0.600, c=2: –; crossover: none within the tested levels"


def test_each_workload_gets_its_own_crossover_row_in_card_order() -> None:
    card = {"crossover": {"b": {"levels": [1], "ratios": [0.5]}, "a": {"levels": [1], "ratios": [1.5]}}}
    rows = crossover_rows(card)
    assert rows[4:] == [
        "- b: c=1: 0.500; crossover: none within the tested levels",
        "- a: c=1: 1.500; crossover: none within the tested levels",
        "",
    ]
