"""The fleet card carries each node's TTFT p95 ratio beside the p50 and p99 ones (fleet.json and fleet.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loadgen.fleet.fleetwrite import write_fleet_card
from tests.fleet.test_fleetwrite import _card, _task, _write

#: node -> the TTFT p95 ratio (value, ci_low, ci_high) of both cells.
P95 = {"stg-a": (1.25, 1.20, 1.30), "stg-b": (1.5, 1.4, 1.6)}


def _fleet(root: Path) -> Path:
    tasks = [_task("h200-1b-draft", n) for n in P95]
    for t in tasks:
        card: dict[str, Any] = _card(t["pair"], t["node"]["name"])
        v, lo, hi = P95[t["node"]["name"]]
        for cell in card["cells"]:
            cell["ratios"]["ttft_p95"] = {"value": v, "ci_low": lo, "ci_high": hi, "pairs": 3}
        _write(root / t["run_dir"] / "card.json", card)
    _write(root / "tasks.json", {"schema": "loadgen.fleet-tasks/1", "name": "p95", "tasks": tasks})
    return root


def test_the_ttft_p95_ratio_sits_between_p50_and_p99_on_every_node(tmp_path: Path) -> None:
    md = write_fleet_card(_fleet(tmp_path)).read_text()
    heads = [line for line in md.splitlines() if line.startswith("### ") and "ratio, speculative / plain" in line]
    assert [h.split(" ratio")[0] for h in heads] == [
        "### TPOT p50",
        "### TTFT p50",
        "### E2E latency p50",
        "### TTFT p95",
        "### TTFT p99",
    ]
    section = md.split("### TTFT p95 ratio, speculative / plain [95% CI]")[1].split("###")[0]
    assert "| short-homogeneous-gpu | c1 | 1.250 [1.200, 1.300] | 1.500 [1.400, 1.600] |" in section
    fleet = json.loads((tmp_path / "fleet.json").read_text())
    assert "ttft_p95" in fleet["metrics"]
    entry = fleet["pairs"][0]["cells"][0]["nodes"][0]
    assert entry["ratios"]["ttft_p95"]["value"] in (1.25, 1.5)
