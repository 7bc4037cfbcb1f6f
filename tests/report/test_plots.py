"""loadgen.plots: crossover (closed form), and PNG rendering of a synthetic card built from closed-form values.

Synthetic card: plain TPOT p50 is 20 ms/token at every level; speculative TPOT p50 is 20 ms x ratio(c):
workload ``short`` ratio = 0.7 + 0.1 c at c = 1, 2, 4, 8 -> 0.8, 0.9, 1.1, 1.5, crossing 1 at
c = 2 + (1 - 0.9) / (1.1 - 0.9) x (4 - 2) = 3; workload ``long`` ratio = 1.2 - 0.05 c -> 1.15, 1.1, 1.0,
0.8, exactly 1 at c = 4. Open-loop cells of ``short`` at 0.5, 1, 2 req/s: ratio 0.9, 0.95, 1.15 -> 1 at
1 + (1 - 0.95) / (1.15 - 0.95) x (2 - 1) = 1.25 req/s.
"""

from __future__ import annotations

import copy
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loadgen.records.request import RequestRecord
from loadgen.report.plots import crossover, crossover_points, render_plots
from tests.support.cards import card_record
from tests.support.figures import capture_figures, labels, line, xy

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
LEVELS = (1, 2, 4, 8)
RATIOS: dict[str, Callable[[float], float]] = {"short": lambda c: 0.7 + 0.1 * c, "long": lambda c: 1.2 - 0.05 * c}
RATE_RATIOS = {0.5: 0.9, 1.0: 0.95, 2.0: 1.15}


def dist(p50: float) -> dict[str, float | int]:
    return {"count": 12, "mean": p50, "p50": p50, "p90": 1.2 * p50, "p99": 1.5 * p50}


def side(tpot_s: float, c: float, acceptance: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "requests": 12,
        "errors": 0,
        "output_tokens": 12 * 64,
        "window_s": 10.0,
        "output_throughput_tps": 64 * c / (0.05 + 63 * tpot_s),
        "request_throughput_rps": c / (0.05 + 63 * tpot_s),
        "ttft_s": dist(0.05 * (1 + c / 4)),
        "tpot_s": dist(tpot_s),
        "itl_s": dist(tpot_s),
        "icl_s": dist(tpot_s * 2),
        "e2e_s": dist(0.05 + 63 * tpot_s),
        "send_lag_s": dist(2e-5),
        "mean_tokens_per_chunk": 2.0,
        "acceptance": acceptance,
    }


def cell(workload: str, c: int, ratio: float, rate: float | None = None) -> dict[str, Any]:
    acc = {
        "acceptance_rate": 0.6,
        "mean_acceptance_length": 2.8,
        "per_position": [0.8, 0.6, 0.4],
        "num_drafts": 100.0,
        "num_draft_tokens": 300.0,
        "num_accepted_tokens": 180.0,
    }
    return {
        "workload": workload,
        "level": f"c{c}" if rate is None else f"r{rate:g}",
        "concurrency": c,
        "rate_rps": rate,
        "complete": True,
        "plain": side(0.02, c),
        "speculative": side(0.02 * ratio, c, acc),
        "ratios": {"tpot_p50": {"value": ratio, "ci_low": ratio - 0.05, "ci_high": ratio + 0.04, "pairs": 12}},
        "notes": [],
    }


def synthetic_card() -> dict[str, Any]:
    cells = [cell(w, c, f(c)) for w, f in RATIOS.items() for c in LEVELS]
    cells += [cell("short", 64, r, rate) for rate, r in RATE_RATIOS.items()]
    return {
        "schema": "loadgen.card/1",
        "pair": "synthetic",
        "complete": True,
        "concurrency": list(LEVELS),
        "cells": cells,
    }


def records() -> list[RequestRecord]:
    out = []
    for w in RATIOS:
        for c in LEVELS:
            for role, ttft in (("plain", 0.05), ("speculative", 0.08)):
                for i in range(6):
                    send = float(i)
                    first = send + ttft * (1 + c / 4) * (1 + i / 10)
                    out.append(
                        RequestRecord(
                            f"{w}-{i}",
                            role,
                            w,
                            c,
                            "measured",
                            send,
                            level=f"c{c}",
                            send_s=send,
                            chunk_arrivals_s=[first, first + 0.04],
                            chunk_tokens=[1, 3],
                        )
                    )
    out.append(
        RequestRecord(
            "w", "plain", "short", 1, "warmup", 0.0, level="c1", send_s=0.0, chunk_arrivals_s=[99.0], chunk_tokens=[1]
        )
    )
    out.append(RequestRecord("e", "plain", "short", 1, "measured", 0.0, level="c1", error="HTTP 500"))
    return out


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.parametrize(
    ("levels", "ratios", "expected"),
    [
        ((1, 2, 4, 8), (0.8, 0.9, 1.1, 1.5), 3.0),
        ((1, 2, 4, 8), (1.15, 1.1, 1.0, 0.8), 4.0),
        ((1, 2, 4), (1.2, 1.1, 1.3), None),
        ((1, 2, 4), (0.5, 0.6, 0.9), None),
        ((1, 2, 4, 8), (0.8, None, 1.2, 1.4), 2.5),  # unknown ratios are skipped: 1 + 0.2 / 0.4 x 3
        ((2, 4), (1.0, 1.3), 2.0),
        ((), (), None),
    ],
)
def test_crossover_closed_form(
    levels: tuple[int, ...], ratios: tuple[float | None, ...], expected: float | None
) -> None:
    assert crossover(levels, ratios) == (None if expected is None else pytest.approx(expected))


def test_crossover_points_of_the_synthetic_card() -> None:
    card = card_record(synthetic_card())
    points = crossover_points(card)
    assert points == {"short": pytest.approx(3.0), "long": pytest.approx(4.0)}
    assert crossover_points(card, "rate") == {"short": pytest.approx(1.25)}


def test_render_plots_writes_readable_pngs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    figures = capture_figures(monkeypatch)
    paths = render_plots(card_record(synthetic_card()), records(), tmp_path / "plots")
    assert list(figures) == [p.name for p in paths]
    names = [p.name for p in paths]
    assert names == [
        "latency_short.png",
        "latency_long.png",
        "throughput.png",
        "tpot_ratio.png",
        "latency_short_rate.png",
        "throughput_rate.png",
        "tpot_ratio_rate.png",
        "acceptance.png",
        "ttft_distribution.png",
    ]
    for path in paths:
        assert path.parent == tmp_path / "plots" and path.is_file()
        width, height = png_size(path)
        assert 700 <= width <= 2400 and 400 <= height <= 1200, (path.name, width, height)
        assert 20_000 < path.stat().st_size < 1_500_000, path.name


def test_the_figures_draw_the_cards_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The drawn series against the closed forms of the module docstring (TPOT 20 ms x ratio, TTFT of records())."""
    figures = capture_figures(monkeypatch)
    render_plots(card_record(synthetic_card()), records(), tmp_path)
    ttft_ax, tpot_ax, e2e_ax = figures["latency_short.png"].axes
    assert labels(tpot_ax) == ["plain p50", "plain p99", "speculative p50", "speculative p99"]
    assert line(tpot_ax, "plain p50") == ([1, 2, 4, 8], pytest.approx([20.0] * 4))
    assert line(tpot_ax, "plain p99") == ([1, 2, 4, 8], pytest.approx([30.0] * 4))  # p99 = 1.5 x p50
    assert line(tpot_ax, "speculative p50") == ([1, 2, 4, 8], pytest.approx([16.0, 18.0, 22.0, 30.0]))
    assert line(ttft_ax, "plain p50")[1] == pytest.approx([62.5, 75.0, 100.0, 150.0])  # 50 ms x (1 + c / 4)
    assert line(e2e_ax, "plain p50")[1] == pytest.approx([0.05 + 63 * 0.02] * 4)
    assert line(figures["latency_short_rate.png"].axes[1], "speculative p50") == (
        [0.5, 1.0, 2.0],
        pytest.approx([18.0, 19.0, 23.0]),
    )

    out_ax, req_ax = figures["throughput.png"].axes
    assert line(out_ax, "long · plain") == ([1, 2, 4, 8], pytest.approx([64 * c / 1.31 for c in LEVELS]))
    assert line(req_ax, "short · plain")[1] == pytest.approx([c / 1.31 for c in LEVELS])

    (ratio_ax,) = figures["tpot_ratio.png"].axes
    assert line(ratio_ax, "short") == ([1, 2, 4, 8], pytest.approx([0.8, 0.9, 1.1, 1.5]))
    assert line(ratio_ax, "long") == ([1, 2, 4, 8], pytest.approx([1.15, 1.1, 1.0, 0.8]))
    crossings = [xy(x) for x in ratio_ax.get_lines() if x.get_marker() == "X"]
    assert crossings == [([pytest.approx(3.0)], [1.0]), ([pytest.approx(4.0)], [1.0])]
    band = ratio_ax.collections[0].get_paths()[0].vertices  # fill_between: lows forward, highs back
    assert band[:, 1].min() == pytest.approx(0.75) and band[:, 1].max() == pytest.approx(1.54)
    assert [xy(x) for x in figures["tpot_ratio_rate.png"].axes[0].get_lines() if x.get_marker() == "X"] == [
        ([pytest.approx(1.25)], [1.0])
    ]

    acc_short, acc_long = figures["acceptance.png"].axes
    heights = [
        [round(bar.get_height(), 9) for container in ax.containers for bar in container] for ax in (acc_short, acc_long)
    ]
    assert heights == [[0.8, 0.6, 0.4] * 7, [0.8, 0.6, 0.4] * 4]  # short: 4 closed-loop and 3 open-loop cells
    assert acc_short.get_legend_handles_labels()[1][0] == "c1: rate 0.60, length 2.80"

    short_ax, long_ax = figures["ttft_distribution.png"].axes
    xs, ys = line(short_ax, "plain c1 (n=6)")  # warmup and failed requests left out
    assert xs == pytest.approx([62.5, 62.5, 68.75, 75.0, 81.25, 87.5, 93.75])
    assert ys == pytest.approx([i / 6 for i in range(7)])
    assert line(long_ax, "speculative c8 (n=6)")[0][1] == pytest.approx(240.0)  # 80 ms x (1 + 8 / 4)


def test_incomplete_cards_draw_what_they_can(tmp_path: Path) -> None:
    assert render_plots(card_record({}), [], tmp_path / "empty") == []

    card = synthetic_card()
    for c in card["cells"]:
        c.pop("speculative")
        c["ratios"] = {}
    only_plain = [p.name for p in render_plots(card_record(card), [], tmp_path / "plain")]
    assert only_plain == [
        "latency_short.png",
        "latency_long.png",
        "throughput.png",
        "latency_short_rate.png",
        "throughput_rate.png",
    ]

    broken = copy.deepcopy(synthetic_card())
    broken["cells"][0]["plain"]["tpot_s"] = {"p50": None}
    broken["cells"][1]["speculative"] = None
    broken["cells"][2]["ratios"]["tpot_p50"] = {"value": None}
    broken["cells"][3]["speculative"]["acceptance"] = {"per_position": []}
    broken["cells"].append({"workload": "ghost"})
    names = [p.name for p in render_plots(card_record(broken), records()[:3], tmp_path / "broken")]
    assert {
        "latency_short.png",
        "latency_long.png",
        "tpot_ratio.png",
        "acceptance.png",
        "ttft_distribution.png",
    } <= set(names)
