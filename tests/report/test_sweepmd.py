"""report/sweepmd.py: the committed docs/examples/h200/h200-smollm2-sweep/sweep.md re-renders byte-identically
from its sweep.json, and each candidate's verdict, memory and time, the precision line and the drift section are
written as the card says."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from loadgen.records.sweep import SweepCard
from loadgen.report.sweepmd import render_sweep_markdown as _render

SWEEP = Path(__file__).resolve().parents[2] / "docs" / "examples" / "h200" / "h200-smollm2-sweep"


def render_sweep_markdown_of(data: dict[str, Any]) -> str:
    return _render(SweepCard.from_json(data, source="test"))


def card() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SWEEP / "sweep.json").read_text())
    return data


def section(md: str, title: str) -> list[str]:
    lines = md.splitlines()
    start = lines.index(f"## {title}") + 2
    return lines[start : lines.index("", start)]


def test_the_committed_sweep_md_re_renders_byte_identically() -> None:
    assert render_sweep_markdown_of(card()) == (SWEEP / "sweep.md").read_text()


def test_each_candidates_row() -> None:
    data = copy.deepcopy(card())
    base = data["candidates"][0]
    data["candidates"] = [
        base
        | {
            "name": "a",
            "verdict_passed": True,
            "verdict_status": "pass",
            "kv_capacity_loss": 0.125,
            "extra_cpu_rss_bytes": 3 * 2**20,
            "extra_gpu_memory_bytes": 1536 * 2**20,
            "same_memory_budget": True,
            "time_s": 90.0,
        },
        base
        | {
            "name": "b",
            "verdict_passed": None,
            "verdict_status": "inconclusive",
            "kv_capacity_loss": None,
            "extra_cpu_rss_bytes": None,
            "extra_gpu_memory_bytes": -(2**20),
            "same_memory_budget": False,
            "time_s": None,
            "draft_weights": False,
        },
        base | {"name": "c", "verdict_passed": None, "measured": False, "k": 4},
    ]
    rows = section(render_sweep_markdown_of(data), "Candidates")[2:]
    assert rows == [
        "| a | 1 | yes | pass | 12.5% | 3 MiB | 1,536 MiB (same budget: not the draft's cost) | 1.5 min |",
        "| b | 1 | no | inconclusive | - | - | -1 MiB | - |",
        "| c | 4 | yes | not measured | 31.4% | 159 MiB | -944 MiB | 4.7 min |",
    ]


def test_precision_drift_warnings_and_time() -> None:
    data = copy.deepcopy(card())
    data["design"] = {"line": "3 blocks", "ci_half_width": 0.05, "stopped_short": ["grounded c64"]}
    data["drift_warnings"] = ["plain drifted 12% at grounded c4"]
    data["times_s"] = {"plain": 60.0, "k1": 30.0}
    md = render_sweep_markdown_of(data)
    assert section(md, "How sure")[0] == "- design: 3 blocks"
    assert (
        section(md, "How sure")[2]
        == "- cells sized until decided (measure/decision.py) at ±0.05 (log half-width): still inconclusive at "
        "grounded c64"
    )
    drift = section(md, "Plain baseline drift (plain-after / plain-before)")
    assert drift[0] == ("- short-homogeneous c1: tpot_s 1.128 [95% CI 1.111, 1.145], 64 prompts")
    assert "- WARNING plain drifted 12% at grounded c4" in md.splitlines()
    assert section(md, "Time spent") == ["plain 1.0 min, k1 0.5 min"]
    for cell in data["cells"]:
        cell["drift"] = None
    data["drift_warnings"], data["times_s"], data["design"]["stopped_short"] = [], {}, []
    md = render_sweep_markdown_of(data)
    assert "## Plain baseline drift" not in md and "WARNING" not in md and section(md, "Time spent") == ["-"]
    assert (
        section(md, "How sure")[2]
        == "- cells sized until decided (measure/decision.py) at ±0.05 (log half-width): every cell decided"
    )


def test_a_card_read_again_under_a_stricter_decision_does_not_say_every_cell_was_decided() -> None:
    data = copy.deepcopy(card())
    data["design"] = {"line": "3 blocks", "ci_half_width": 0.05, "stopped_short": ["grounded c64 k4 (±0.067)"]}
    data["design"]["sizing_end"] = "every cell is decided"
    assert section(render_sweep_markdown_of(data), "How sure")[2].endswith(
        "still inconclusive at grounded c64 k4 (±0.067); sizing stopped: every cell is decided when measured; read "
        "again under the current decision, the cells above are inconclusive"
    )
    data["design"]["stopped_short"] = []
    assert section(render_sweep_markdown_of(data), "How sure")[2].endswith(
        "every cell decided; sizing stopped: every cell is decided"
    )
