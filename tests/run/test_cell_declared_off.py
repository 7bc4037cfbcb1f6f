"""Speculation off by the declared config at a level (``disable_by_batch_size``, a
``num_speculative_tokens_per_batch_size`` range with K = 0): flat draft counters there are the config at work,
not a fallback; where the config speculates, flat counters still stop the run (FallbackDetected). The
scripted SSE server serves the same ``/metrics`` page before and after the cell, so the draft counters do not
move."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import FallbackDetected
from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level, Pair, k_at, speculation_on_at
from loadgen.profile.pairfile import load_pair
from loadgen.profile.workload import Prompt
from loadgen.records.speculative import SpeculativeConfig
from loadgen.run.cell import run_cell_on
from tests.support.fakerun import attached, quiet_run
from tests.support.scripted_server import DONE, completion_chunk, scripted_server, usage_chunk

DATA = Path(__file__).parents[1] / "data"
OK = [
    (0.0, completion_chunk(" a", [1])),
    (0.0, completion_chunk(" b", [2], finish="length")),
    (0.0, usage_chunk(2, 2)),
    (0.0, DONE),
]
DRAFT = {"method": "draft_model", "model": "org/draft", "num_speculative_tokens": 2}
BY_BATCH = DRAFT | {"disable_by_batch_size": 2}
SCHEDULE = DRAFT | {"num_speculative_tokens_per_batch_size": [[1, 1, 2], [2, 8, 0]]}


def _run(
    tmp_path: Path, speculative: dict[str, Any], concurrency: int
) -> tuple[FallbackDetected | None, dict[str, Any]]:
    base = load_pair("demo-cpu")
    pair: Pair = dataclasses.replace(base, speculative=SpeculativeConfig.from_json(speculative, source="pair"))
    measured = tuple(Prompt(f"p{i}", "w", "completions", "ok", None, 2) for i in range(4))
    cell = CellSpec("w", "completions", Level(concurrency), 0, (), measured, (), None)
    page = (DATA / "vllm032_spec_t0.prom").read_bytes()  # the same page twice: no draft in the cell
    failed: FallbackDetected | None = None
    with scripted_server({"ok": (200, OK)}, gets={"/metrics": (200, page)}) as url, quiet_run(tmp_path, pair) as run:
        try:
            run_cell_on(run, "speculative", attached(url, "speculative", tmp_path), cell)
        except FallbackDetected as exc:
            failed = exc
    entry = json.loads((tmp_path / "cells.jsonl").read_text().splitlines()[-1])
    return failed, entry


def test_the_declared_k_per_running_batch_reads_both_keys() -> None:
    by_batch, schedule = (SpeculativeConfig.from_json(d, source="pair") for d in (BY_BATCH, SCHEDULE))
    assert [k_at(by_batch, b) for b in (1, 2, 9)] == [2, 0, 0]
    assert [k_at(schedule, b) for b in (1, 2, 8, 9)] == [2, 0, 0, 2]  # 9: no range holds it, the declared K
    assert [speculation_on_at(schedule, c) for c in (1, 4)] == [True, False]
    assert speculation_on_at(schedule, 4, open_loop=True)  # an open-loop level may run 1 request at a time


@pytest.mark.parametrize("speculative", [BY_BATCH, SCHEDULE], ids=["disable_by_batch_size", "schedule"])
def test_flat_counters_at_a_level_the_config_switches_off_are_no_fallback(
    tmp_path: Path, speculative: dict[str, Any]
) -> None:
    failed, entry = _run(tmp_path, speculative, 2)
    assert failed is None
    assert entry["spec_decode"]["num_drafts"] == 0 and entry["errors"] == 0 and entry["level"] == "c2"


@pytest.mark.parametrize("speculative", [BY_BATCH, SCHEDULE], ids=["disable_by_batch_size", "schedule"])
def test_flat_counters_where_the_config_speculates_remain_a_fallback(
    tmp_path: Path, speculative: dict[str, Any]
) -> None:
    failed, entry = _run(tmp_path, speculative, 1)
    assert failed is not None and entry["spec_decode"]["num_drafts"] == 0
    assert str(failed) == (
        "the speculative server's draft counters did not move during cell w c1: no speculation "
        "happened, although the declared config speculates at this level (K = 2)"
    )
