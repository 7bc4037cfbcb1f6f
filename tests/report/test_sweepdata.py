"""report/sweepdata.py: the sweep card built from the recorded sweep folder docs/examples/h200/h200-smollm2-sweep
(three candidates, a plain-before / plain-after sweep kept as statistics only) equals its committed sweep.json,
each entry's speedup is 1 / its candidate card's TPOT p50 ratio, and the parts that come from the folder alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from loadgen.profile.cells import CellKey
from loadgen.profile.tomlread import read_toml
from loadgen.records.candidates import expand_candidates
from loadgen.records.sweep import Drift, SweepCard
from loadgen.report.sweepdata import SWEEP_SCHEMA, build_sweep_card, plain_drift

SWEEP = Path(__file__).resolve().parents[2] / "docs" / "examples" / "h200" / "h200-smollm2-sweep"


def _key(cell: dict[str, Any]) -> CellKey:
    return CellKey.named(cell["workload"], cell.get("level"), cell.get("concurrency"))


def saved() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SWEEP / "sweep.json").read_text())
    return data


def build(folder: Path, saved_card: dict[str, Any] | None) -> dict[str, Any]:
    candidates = expand_candidates(read_toml(folder / "sweep.toml"), folder / "sweep.toml")
    times = json.loads((folder / "times.json").read_text())
    kept = SweepCard.from_json(saved_card, source="test") if saved_card is not None else None
    return build_sweep_card(folder, candidates, times, saved()["engine_version"], kept).to_json()


def test_the_recorded_sweep_card_is_rebuilt_from_its_folder() -> None:
    expected = saved()
    expected.pop("plots")  # written beside the card by run/sweep.py
    assert build(SWEEP, saved()) == expected


def test_speedups_are_one_over_the_candidate_cards_ratios() -> None:
    card = build(SWEEP, saved())
    assert card["schema"] == SWEEP_SCHEMA and card["primary_metric"] == "tpot_p50"
    for name in ("demo-draft-k1", "demo-draft-k2", "ngram-k4"):
        own = json.loads((SWEEP / name / "card.json").read_text())
        for cell in own["cells"]:
            (row,) = [c for c in card["cells"] if _key(c) == _key(cell)]
            (entry,) = [e for e in row["entries"] if e["candidate"] == name]
            r = cell["ratios"]["tpot_p50"]
            assert entry["ratio"] == r
            assert (entry["speedup"], entry["speedup_ci_low"], entry["speedup_ci_high"]) == pytest.approx(
                (1 / r["value"], 1 / r["ci_high"], 1 / r["ci_low"])
            )
    assert [c["time_s"] for c in card["candidates"]] == [281.8041224489999, 378.13676590700004, 212.78162356899998]


def test_a_copy_elsewhere_keeps_the_saved_pair_and_folder_and_without_them_names_its_own(tmp_path: Path) -> None:
    copy = tmp_path / "mypair" / "sweep"
    shutil.copytree(SWEEP, copy)
    kept = build(copy, saved())
    assert (kept["pair"], kept["sweep_dir"]) == (saved()["pair"], saved()["sweep_dir"])
    fresh = build(copy, None)
    assert (fresh["pair"], fresh["sweep_dir"]) == ("mypair", str(copy))


def test_plain_drift_of_a_sweep_kept_as_statistics() -> None:
    key = CellKey("short-homogeneous", "c1")
    (row,) = [c for c in saved()["cells"] if _key(c) == key]
    assert row["drift"]["value"] == pytest.approx(1.1278, abs=1e-4)
    kept = {key: Drift.from_json(row["drift"], source="test")}
    assert plain_drift(SWEEP, key, "tpot_p50", kept) is kept[key]  # no requests.jsonl: kept
    # nothing kept and no requests on disk: no pairs; the timing follows the metric (TPOT for a throughput)
    fresh = plain_drift(SWEEP, key, "ttft_p50")
    assert fresh is not None and fresh.to_json() == {
        "timing": "ttft_s",
        "value": None,
        "ci_low": None,
        "ci_high": None,
        "pairs": 0,
    }
    throughput = plain_drift(SWEEP, key, "output_throughput")
    assert throughput is not None and throughput.timing == "tpot_s"
    assert plain_drift(SWEEP / "demo-draft-k1", key, "tpot_p50") is None  # no plain-before: measured in blocks
