"""report/ratioplot.py, read from the figure's artists: the A/A noise floor's band drawn behind the workloads' CI
bands, the title and the legend naming the interval each card's ``ci_method`` says was drawn, the decided
crossover range shaded between its two levels; and the sweep ratio figure's title naming its entries' interval.

Synthetic card (closed form): workload ``short`` at c = 1, 2, 4, 8 with TPOT p50 ratio 0.8, 0.9, 1.1, 1.5, CI
[ratio - 0.05, ratio + 0.04]; the placebo / plain ratio 1.0 [0.93, 1.08] at every level except c8 [1.02,
1.09] (a CI above 1: the band widened to hold 1, measure/blocks.noise_band, is [1.0, 1.09]); the decided
crossover range [2, 4].
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.patches import Rectangle

from loadgen.records.sweep import SweepCard
from loadgen.report.plots import render_plots
from loadgen.report.ratioplot import INTERVALS
from loadgen.report.sweepplots import render_sweep_plots
from tests.report.test_sweepplots import SWEEP
from tests.report.test_sweepplots import card as sweep_card
from tests.support.cards import card_record
from tests.support.figures import capture_figures

LEVELS = (1, 2, 4, 8)
RATIOS = (0.8, 0.9, 1.1, 1.5)
AA = {1: (0.93, 1.08), 2: (0.93, 1.08), 4: (0.93, 1.08), 8: (1.02, 1.09)}


def _ratio(value: float, low: float, high: float, method: str | None) -> dict[str, Any]:
    return {"value": value, "ci_low": low, "ci_high": high, "pairs": 12} | ({"ci_method": method} if method else {})


def _card(method: str | None = "blocks", placebo: bool = True) -> dict[str, Any]:
    cells = []
    for c, r in zip(LEVELS, RATIOS, strict=True):
        cell: dict[str, Any] = {
            "workload": "short",
            "level": f"c{c}",
            "concurrency": c,
            "rate_rps": None,
            "complete": True,
            "ratios": {"tpot_p50": _ratio(r, r - 0.05, r + 0.04, method)},
            "notes": [],
        }
        if placebo:
            cell["noise_floor"] = {"ratios": {"tpot_p50": _ratio(1.0, *AA[c], method)}}
        cells.append(cell)
    crossover = {
        "levels": list(LEVELS),
        "ratios": list(RATIOS),
        "crossover_concurrency": 3.0,
        "metric": "tpot_p50",
        "crossover_range": [2, 4],
    }
    return {"pair": "synthetic", "concurrency": list(LEVELS), "cells": cells, "crossover": {"short": crossover}}


def _figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: dict[str, Any]) -> Any:
    figures = capture_figures(monkeypatch)
    render_plots(card_record(data), [], tmp_path)
    (ax,) = figures["tpot_ratio.png"].axes
    return ax


def _band(ax: Any, label: str) -> PolyCollection:
    (found,) = [c for c in ax.collections if c.get_label() == label]
    assert isinstance(found, PolyCollection)
    return found


def test_the_aa_band_is_drawn_behind_the_candidates_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ax = _figure(tmp_path, monkeypatch, _card())
    aa, ci = _band(ax, "A/A noise floor"), _band(ax, "short: 95% block t interval")
    assert aa.get_zorder() < ci.get_zorder() < min(line.get_zorder() for line in ax.get_lines())
    corners = aa.get_paths()[0].vertices  # fill_between: lows forward, highs back (and closed)
    lows = {x: y for x, y in corners[1:5]}
    highs = {x: y for x, y in corners[6:10]}
    assert lows == pytest.approx({1: 0.93, 2: 0.93, 4: 0.93, 8: 1.0})  # c8's CI above 1: widened down to 1
    assert highs == pytest.approx({1: 1.08, 2: 1.08, 4: 1.08, 8: 1.09})
    ci_y = ci.get_paths()[0].vertices[:, 1]
    assert (ci_y.min(), ci_y.max()) == (pytest.approx(0.75), pytest.approx(1.54))


@pytest.mark.parametrize("method", ["blocks", "within-run"])
def test_the_title_names_the_interval_the_card_drew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    ax = _figure(tmp_path, monkeypatch, _card(method))
    assert ax.get_title() == (
        f"synthetic: TPOT p50 ratio vs concurrency\n(band: {INTERVALS[method]}; gray: A/A noise floor)"
    )
    short = {"blocks": "95% block t interval", "within-run": "95% bootstrap CI"}[method]
    assert ax.get_legend_handles_labels()[1] == ["A/A noise floor", "short", f"short: {short}"]


def test_a_card_without_placebo_or_method_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ax = _figure(tmp_path, monkeypatch, _card(method=None, placebo=False))
    assert ax.get_title().endswith("(band: 95% CI; no A/A placebo)")
    assert [c.get_label() for c in ax.collections if isinstance(c, PolyCollection)] == ["short: 95% CI"]


def test_the_decided_crossover_range_is_shaded_between_its_levels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ax = _figure(tmp_path, monkeypatch, _card())
    (span,) = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_width() > 0]
    assert (span.get_x(), span.get_x() + span.get_width()) == (2, 4) and span.get_zorder() == 0
    assert "short: stops paying between 2 and 4" in [t.get_text() for t in ax.texts]
    undecided = copy.deepcopy(_card())
    undecided["crossover"]["short"]["crossover_range"] = None
    plain = _figure(tmp_path / "undecided", monkeypatch, undecided)
    assert [p for p in plain.patches if isinstance(p, Rectangle) and p.get_width() > 0] == []
    assert not any("stops paying" in t.get_text() for t in plain.texts)


@pytest.mark.parametrize(("method", "named"), [("blocks", INTERVALS["blocks"]), (None, INTERVALS["within-run"])])
def test_the_sweep_ratio_title_names_the_interval_its_entries_carry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str | None, named: str
) -> None:
    """The committed smollm2 sweep is of the within-run design (its entries say no method, its design
    ``within-run``); with every entry marked ``blocks`` the title follows the entries."""
    data = sweep_card()
    for c in data["cells"]:
        for e in c["entries"]:
            if method and e.get("ratio"):
                e["ratio"]["ci_method"] = method
    figures = capture_figures(monkeypatch)
    render_sweep_plots(SweepCard.from_json(data, source="test"), tmp_path)
    (ax,) = figures["sweep_ratio_grounded.png"].axes
    assert ax.get_title() == f"grounded: speedup, {named} (star: deployed)"


def test_the_sweep_s_aa_band_is_drawn_behind_the_candidates_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The committed 7B sweep (interleaved blocks, an A/A placebo in every cell)."""
    data = json.loads((SWEEP.parents[1] / "h200-7b-sweep" / "sweep.json").read_text())
    figures = capture_figures(monkeypatch)
    render_sweep_plots(SweepCard.from_json(data, source="test"), tmp_path)
    (ax,) = figures["sweep_ratio_long-diverse.png"].axes
    assert ax.get_title() == f"long-diverse: speedup, {INTERVALS['blocks']} (star: deployed)"
    (floor,) = [c for c in ax.collections if c.get_label() == "A/A noise floor"]
    bars = [line.get_zorder() for container in ax.containers for line in container.lines[2]]
    assert bars and floor.get_zorder() < min(bars)
    corners = floor.get_paths()[0].vertices
    assert np.isfinite(corners).all() and corners[:, 1].min() <= 1.0 <= corners[:, 1].max()
