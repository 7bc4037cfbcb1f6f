"""The records against every committed run folder under docs/ (real H200 runs): each ``servers/`` file that code of
today writes reads as its record and writes back the same bytes, with the figures serve/resources.py derives;
each run's cells.jsonl lines are cells its protocol.json planned, and each card.json cell one the run measured."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from loadgen.records.card import PairCard
from loadgen.records.cell import CellEntry
from loadgen.records.protocol import Protocol
from loadgen.records.server import EffectiveConfig, MinimalRequest, MinimalResponse, ModeProof
from loadgen.records.usage import ServerUsage, Teardown
from loadgen.serve.readiness import minimal_body

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _files(pattern: str, has: str = "") -> list[Path]:
    """The committed files matching ``pattern`` (those holding the key ``has``, when given: a file of older code
    has another shape, written and read as a free-form mapping)."""
    return sorted(p for p in DOCS.rglob(pattern) if not has or has in json.loads(p.read_text()))


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(DOCS)) for p in paths]


RESOURCES = _files("servers/*-resources.json")
EFFECTIVE = _files("servers/*-effective.json", "engine_path")
MINIMAL = [p for p in _files("servers/*-minimal.json") if "stream" in json.loads(p.read_text())["request"]]
TEARDOWN = _files("servers/*-teardown.json", "gpu_settle")
RUNS = sorted(p.parent for p in DOCS.rglob("protocol.json") if (p.parent / "cells.jsonl").is_file())


def test_the_examples_are_there() -> None:
    assert (len(RESOURCES), len(EFFECTIVE), len(MINIMAL), len(TEARDOWN), len(RUNS)) == (25, 11, 19, 6, 13)


def _load(path: Path) -> Any:
    return json.loads(path.read_text())


@pytest.mark.parametrize("path", RESOURCES, ids=_ids(RESOURCES))
def test_a_resources_file_reads_as_two_usages_whose_kv_cache_is_blocks_times_block_size(path: Path) -> None:
    doc = _load(path)
    assert list(doc) == ["ready", "after_load"]
    for when, part in doc.items():
        usage = ServerUsage.from_json(part, source=f"{path.name}: {when}")
        assert json.dumps(usage.to_json(), indent=2) == json.dumps(part, indent=2)
        # serve/resources.py: KV-cache tokens = num_gpu_blocks x block_size (both strings, as vLLM's cache_config_info)
        assert usage.kv_cache_tokens == int(usage.num_gpu_blocks) * int(usage.block_size)
        assert usage.kv_cache_tokens_log in (None, usage.kv_cache_tokens)  # the startup log's, where it says it
        assert usage.gpu_memory is not None
        assert usage.gpu_memory.bytes == sum(d.used_by_pids_bytes for d in usage.gpu_memory.devices) > 0
        assert all(d.used_by_pids_bytes < d.total_bytes for d in usage.gpu_memory.devices)


@pytest.mark.parametrize("path", EFFECTIVE, ids=_ids(EFFECTIVE))
def test_an_effective_file_is_the_config_the_proof_and_what_run_bench_adds(path: Path) -> None:
    doc = _load(path)
    config = EffectiveConfig.from_json(doc, source=path.name)
    proof = ModeProof.from_json(doc, source=path.name)
    merged = {
        **config.to_json(),
        **proof.to_json(),
        "ready_s": doc["ready_s"],
        "cache_config_info": doc["cache_config_info"],
    }  # as run/bench.py writes it
    assert json.dumps(merged, indent=2) + "\n" == path.read_text()
    if path.name.startswith("plain"):  # attached without a startup log: no config from it, no spec-decode series
        assert (config.speculative_config_log, proof.spec_decode_metrics, proof.spec_positions) == (None, False, 0)
        assert config.kv_cache_tokens_log is None
        return
    k = re.search(r"num_spec_tokens=(\d+)", config.speculative_config_log or "")
    assert k is not None and proof.spec_decode_metrics is True and proof.spec_positions == int(k.group(1))
    assert "vllm:spec_decode_num_drafts" in proof.metric_families or "spec_decode_num_drafts" in " ".join(
        proof.metric_families
    )
    info = doc["cache_config_info"]
    assert config.kv_cache_tokens_log == int(info["num_gpu_blocks"]) * int(info["block_size"])


@pytest.mark.parametrize("path", MINIMAL, ids=_ids(MINIMAL))
def test_a_minimal_file_is_the_body_readiness_sends_and_the_stream_it_folded(path: Path) -> None:
    doc = _load(path)
    request = MinimalRequest.from_json(doc["request"], source=path.name)
    response = MinimalResponse.from_json(doc["response"], source=path.name)
    assert request == minimal_body(request.model) and request.to_json() == doc["request"]
    assert json.dumps(response.to_json()) == json.dumps(doc["response"])
    assert response.tokens == doc["response"]["usage"]["completion_tokens"] == request.max_tokens
    assert sum(response.chunk_tokens) == response.tokens and response.chunk_tokens_exact


@pytest.mark.parametrize("path", TEARDOWN, ids=_ids(TEARDOWN))
def test_a_teardown_file_reads_and_writes_back(path: Path) -> None:
    teardown = Teardown.from_json(_load(path), source=path.name)
    assert json.dumps(teardown.to_json(), indent=2) + "\n" == path.read_text()
    settle = teardown.gpu_settle
    assert settle.measured and settle.above_bytes == sum(settle.after_bytes) - sum(settle.before_bytes)


@pytest.mark.parametrize("run", RUNS, ids=_ids(RUNS))
def test_every_cell_a_run_measured_is_one_its_protocol_planned_and_its_card_shows(run: Path) -> None:
    proto = Protocol.from_json(_load(run / "protocol.json"), source="protocol.json")
    planned = {c.key for c in proto.cells}
    lines = (run / "cells.jsonl").read_text().splitlines()
    entries = [CellEntry.from_json(json.loads(line), source=f"cells.jsonl line {i}") for i, line in enumerate(lines, 1)]
    measured = {e.key for e in entries}
    assert measured <= planned and {e.workload for e in entries} <= {w.name for w in proto.workloads}
    if not (run / "card.json").is_file():  # a sweep's own folder: its candidates' folders hold the cards
        assert (run / "sweep.json").is_file()
        return
    card = PairCard.from_json(_load(run / "card.json"), source="card.json")
    assert {(c.workload, c.level) for c in card.cells} <= measured
