"""`loadgen sweep` on real vLLM (CPU): the target as its own draft at K = 1, 2 plus ngram against one
plain baseline, every arm (plain, the A/A placebo, each candidate) in interleaved blocks on servers that stay
up together. Ground truth: the self-draft accepts every draft token at
every K (acceptance rate 1.0, acceptance length and tokens per decode chunk K + 1), so its perfect-draft
upper bound (K + 1) / step_time_ratio is its predicted speedup."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.e2e.conftest import ROOT, _require_engine


@pytest.fixture(scope="session")
def sweep_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    _require_engine()
    runs = tmp_path_factory.mktemp("sweep-runs")
    proc = subprocess.run(
        [sys.executable, "-m", "loadgen", "sweep", "tests/data/pairs/sweep-selfdraft.toml", "--runs-dir", str(runs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    dirs = sorted((runs / "sweep-selfdraft").glob("sweep-*"))
    card = json.loads((dirs[-1] / "sweep.json").read_text()) if dirs and (dirs[-1] / "sweep.json").is_file() else None
    return {"proc": proc, "dir": dirs[-1] if dirs else None, "card": card}


def test_sweep_finishes_and_writes_a_valid_card(sweep_run: dict[str, Any]) -> None:
    proc = sweep_run["proc"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "estimated wall time" in proc.stdout and "recommendation: " in proc.stdout
    card = sweep_run["card"]
    jsonschema.validate(card, json.loads((ROOT / "loadgen/records/sweep.schema.json").read_text()))
    assert [c["name"] for c in card["candidates"]] == ["self-k1", "self-k2", "ngram-k2"]
    assert all(c["complete"] for c in card["candidates"])
    assert set(card["times_s"]) == {"plain", "placebo", "self-k1", "self-k2", "ngram-k2"}
    assert card["design"]["blocks"] == 2 and card["design"]["co_resident"] is True
    assert card["design"]["placebo"] == "blocks" and card["noise_floor"]["measured"] is True
    assert card["cells"][0]["drift"] is None  # no before/after baseline: the blocks carry the drift
    assert all(e["blocks"] == 2 for e in card["cells"][0]["entries"])
    assert "A/A noise floor (placebo / plain)" in (sweep_run["dir"] / "sweep.md").read_text()
    # vLLM 0.32 has num_speculative_tokens_per_batch_size (0.24+): the schedule line is in its syntax
    assert card["recommendation"]["workloads"][0]["schedule"]["supported"] is True


def test_self_draft_accepts_everything_at_every_k(sweep_run: dict[str, Any]) -> None:
    by = {e["candidate"]: e for e in sweep_run["card"]["cells"][0]["entries"]}
    for name, k in (("self-k1", 1), ("self-k2", 2)):
        e = by[name]
        assert e["acceptance_rate"] == 1.0 and e["per_position"] == [1.0] * k
        assert e["mean_acceptance_length"] == k + 1
        # on the client, unless the engine merged verify steps that the client had not read yet into one chunk
        # (vLLM's RequestOutputCollector; tests/e2e/test_compare_selfdraft.py)
        assert k + 1 <= e["tokens_per_decode_chunk"] <= 1.1 * (k + 1)
        assert e["upper_bound"] == pytest.approx(e["predicted_speedup"])  # a perfect draft is its own bound
    assert by["self-k2"]["mean_acceptance_length"] > by["self-k1"]["mean_acceptance_length"]
    assert by["ngram-k2"]["mean_acceptance_length"] <= 3


def test_each_candidate_folder_repeats_with_compare_protocol(sweep_run: dict[str, Any]) -> None:
    from loadgen.run.plan import replay_protocol

    folder: Path = sweep_run["dir"] / "self-k2"
    pair, cells, order = replay_protocol(folder / "protocol.json")
    assert pair.num_speculative_tokens == 2 and len(cells) == 2  # one cell, two blocks
    assert order is not None and {arm for arm, *_ in order} == {"plain", "placebo", "speculative"}
