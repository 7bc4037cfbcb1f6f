"""report/sweepplots.py: the series each sweep figure draws, against the recorded sweep card of
docs/examples/h200/h200-smollm2-sweep/sweep.json (three candidates, three workloads, c1..c64)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from loadgen.records.sweep import SweepCard
from loadgen.report.sweepplots import render_sweep_plots as _render
from tests.support.figures import capture_figures, labels, line

SWEEP = Path(__file__).resolve().parents[2] / "docs" / "examples" / "h200" / "h200-smollm2-sweep" / "sweep.json"
LEVELS = [1, 4, 16, 64]


def render_sweep_plots(data: dict[str, Any], out: Path) -> list[Path]:
    return _render(SweepCard.from_json(data, source="test"), out)


def card() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SWEEP.read_text())
    return data


def entry(data: dict[str, Any], workload: str, concurrency: int, candidate: str) -> dict[str, Any]:
    (cell,) = [c for c in data["cells"] if c["workload"] == workload and c["concurrency"] == concurrency]
    (found,) = [e for e in cell["entries"] if e["candidate"] == candidate]
    return dict(found)


def test_one_ratio_figure_per_workload_and_the_acceptance_figure(tmp_path: Path) -> None:
    paths = render_sweep_plots(card(), tmp_path / "plots")
    assert [p.relative_to(tmp_path).as_posix() for p in paths] == [
        "plots/sweep_ratio_short-homogeneous.png",
        "plots/sweep_ratio_long-diverse.png",
        "plots/sweep_ratio_grounded.png",
        "plots/sweep_acceptance_length.png",
    ]


def test_each_candidate_is_drawn_at_its_speedup_with_its_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = card()
    figures = capture_figures(monkeypatch)
    render_sweep_plots(data, tmp_path)
    (ax,) = figures["sweep_ratio_grounded.png"].axes
    assert [c.get_label() for c in ax.containers] == ["demo-draft-k1", "demo-draft-k2", "ngram-k4"]
    ngram = ax.containers[2]
    expected = [entry(data, "grounded", c, "ngram-k4") for c in LEVELS]
    assert ngram.lines[0].get_xdata().tolist() == LEVELS
    assert ngram.lines[0].get_ydata().tolist() == [e["speedup"] for e in expected]  # 1.102 at c1 ... 0.378 at c64
    bars = [seg.tolist() for seg in ngram.lines[2][0].get_segments()]  # one vertical bar per level: CI low..high
    assert bars == [
        [[c, pytest.approx(e["speedup_ci_low"])], [c, pytest.approx(e["speedup_ci_high"])]]
        for c, e in zip(LEVELS, expected, strict=True)
    ]
    assert ax.get_ylabel() == "speedup over plain (tpot_p50)"
    assert [x.get_ydata().tolist() for x in ax.get_lines() if x.get_marker() == "*"] == []  # nothing recommended


def test_the_recommended_candidate_gets_a_star(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = copy.deepcopy(card())
    (grounded,) = [w for w in data["recommendation"]["workloads"] if w["workload"] == "grounded"]
    grounded["levels"][0] |= {"best": "ngram-k4", "speedup": 1.10}
    grounded["deployed"] = {grounded["levels"][0]["level"]: "ngram-k4"}  # what the deployable config runs there
    figures = capture_figures(monkeypatch)
    render_sweep_plots(data, tmp_path)
    stars = [
        (x.get_xdata().tolist(), x.get_ydata().tolist())
        for x in figures["sweep_ratio_grounded.png"].axes[0].get_lines()
        if x.get_marker() == "*"
    ]
    entry = next(
        e
        for c in data["cells"]
        if c["workload"] == "grounded" and c["level"] == grounded["levels"][0]["level"]
        for e in c["entries"]
        if e["candidate"] == "ngram-k4"
    )
    assert stars == [([1], [entry["speedup"]])]  # the star sits on the deployed candidate's measured speedup


def test_acceptance_length_is_the_mean_over_cells_per_family_and_k(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = card()
    figures = capture_figures(monkeypatch)
    render_sweep_plots(data, tmp_path)
    (ax,) = figures["sweep_acceptance_length.png"].axes
    assert labels(ax) == ["perfect draft (K + 1)", "demo-draft", "ngram"]
    assert line(ax, "perfect draft (K + 1)") == ([1, 2, 4], [2, 3, 5])

    def mean(candidate: str) -> float:
        return float(
            np.mean(
                [
                    entry(data, w, c, candidate)["mean_acceptance_length"]
                    for w in ("short-homogeneous", "long-diverse", "grounded")
                    for c in LEVELS
                ]
            )
        )

    assert line(ax, "demo-draft") == ([1, 2], pytest.approx([mean("demo-draft-k1"), mean("demo-draft-k2")]))
    assert line(ax, "ngram") == ([4], [pytest.approx(mean("ngram-k4"))])
    assert 3.0 < mean("ngram-k4") < 3.5 and 1.2 < mean("demo-draft-k1") < 1.3


def test_a_sweep_without_speedups_or_acceptance_draws_nothing(tmp_path: Path) -> None:
    data = copy.deepcopy(card())
    for cell in data["cells"]:
        for e in cell["entries"]:
            e["speedup"] = e["mean_acceptance_length"] = None
    assert render_sweep_plots(data, tmp_path) == []
    data["cells"] = [c | {"rate_rps": 2.0} for c in card()["cells"]]  # open-loop cells: no ratio figure
    assert [p.name for p in render_sweep_plots(data, tmp_path)] == ["sweep_acceptance_length.png"]
