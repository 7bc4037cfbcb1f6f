"""records/server.py and records/usage.py against the files a real H200 run wrote
(docs/examples/h200/h200-7b-sweep/servers/: the draft server ``distilled-k2`` of the 7B sweep): each file reads as
its record and writes back identically, a record built anew writes the keys in the file's order, a field of the
wrong type is one BadInput line naming the file and the field, and the lines serve/ writes from them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import BadInput
from loadgen.records.server import (
    CompletionText,
    EffectiveConfig,
    EnginePath,
    MinimalRequest,
    MinimalResponse,
    ModeProof,
    StartupRecord,
)
from loadgen.records.usage import AttachedTeardown, GpuDevice, GpuHolder, GpuMemory, GpuSettle, ServerUsage, Teardown
from loadgen.serve.modeproof import prove_without_metrics
from loadgen.serve.readiness import minimal_body
from loadgen.serve.resources import settle_line

SERVERS = Path(__file__).resolve().parents[2] / "docs/examples/h200/h200-7b-sweep/servers"


def _file(name: str) -> Any:
    return json.loads((SERVERS / name).read_text())


def test_the_recorded_teardown_reads_and_writes_back_and_says_what_is_left() -> None:
    doc = _file("distilled-k2-teardown.json")
    record = Teardown.from_json(doc, source="distilled-k2-teardown.json")
    assert json.dumps(record.to_json()) == json.dumps(doc)
    built = Teardown(
        (),
        None,
        GpuSettle(
            True,
            False,
            30.1,
            (47296937984,),
            (47827517440,),
            530579456,
            (GpuHolder(1629, 0, 47171239936, "VLLM::EngineCore"),),
        ),
    )
    assert built == record and json.dumps(built.to_json()) == json.dumps(doc)
    # 530,579,456 bytes = 506 MiB still above after 30.1 s; 47,171,239,936 bytes = 44,985.875 MiB
    assert settle_line(record.gpu_settle) == (
        "accelerator memory still 506 MiB above its level before the launch after 30.1 s; processes loadgen did "
        "not start hold the accelerator: pid 1629 VLLM::EngineCore (44,986 MiB on GPU 0)"
    )
    assert GpuSettle(False, note="no NVML").to_json() == {"measured": False, "note": "no NVML"}


def test_the_recorded_resources_read_and_a_built_usage_writes_the_same_keys() -> None:
    doc = _file("distilled-k2-resources.json")
    ready = ServerUsage.from_json(doc["ready"], source="distilled-k2-resources.json")
    assert ready.gpu_memory == GpuMemory(46032486400, (GpuDevice(0, "NVIDIA H200", 150754820096, 46032486400),))
    assert (ready.kv_cache_tokens, ready.num_gpu_blocks, ready.block_size) == (199568, "12473", "16")
    assert ready.kv_cache_tokens == 12473 * 16  # num_gpu_blocks x block_size (serve/resources.py)
    built = ServerUsage(3, 3699208192, ready.gpu_memory, 199568, 199568, "12473", "16", "0.3")
    assert json.dumps(built.to_json()) == json.dumps(doc["ready"])
    with pytest.raises(BadInput) as caught:
        ServerUsage.from_json({**doc["after_load"], "processes": "3"}, source="x-resources.json")
    assert str(caught.value).startswith("x-resources.json: processes: expected an integer, got '3'; ")


def test_the_recorded_effective_record_is_the_config_and_the_proof() -> None:
    doc = _file("distilled-k2-effective.json")
    config = EffectiveConfig.from_json(doc, source="distilled-k2-effective.json")
    proof = ModeProof.from_json(doc, source="distilled-k2-effective.json")
    assert (config.version, config.kv_cache_tokens_log, config.cudagraph_ceiling) == ("0.24.0", 199568, 640)
    assert config.engine_path.async_scheduling is False and config.engine_path.model_runner == "V1"
    assert (proof.spec_decode_metrics, proof.spec_positions, proof.metrics_unavailable) == (True, 2, None)
    built = EffectiveConfig(
        config.base_url,
        config.speculative_config_log,
        199568,
        EnginePath(False, "V1", config.engine_path.fallback_reasons),
        640,
        version="0.24.0",
    )
    merged = {
        **built.to_json(),
        **ModeProof(True, 2, proof.metric_families).to_json(),
        "ready_s": doc["ready_s"],
        "cache_config_info": doc["cache_config_info"],
    }  # as run/bench.py writes it
    assert json.dumps(merged) == json.dumps(doc)
    unknown = EffectiveConfig("http://h:1", None, None, EnginePath(None, None, ()), None)
    assert list(unknown.to_json()) == [
        "base_url",
        "speculative_config_log",
        "kv_cache_tokens_log",
        "engine_path",
        "cudagraph_ceiling",
    ]  # no /version answer: no version key


def test_the_whole_effective_file_reads_and_writes_back() -> None:
    doc = _file("distilled-k2-effective.json")
    startup = StartupRecord.from_json(doc, source="distilled-k2-effective.json")
    assert startup.config.cudagraph_ceiling == 640 and startup.proof.spec_positions == 2
    assert startup.ready_s == doc["ready_s"] and startup.cache_config_info == doc["cache_config_info"]
    assert json.dumps(startup.to_json()) == json.dumps(doc)  # the order run/bench.py writes
    with pytest.raises(BadInput, match=r"^x-effective.json: ready_s: expected a number or null, got 'soon'"):
        StartupRecord.from_json({**doc, "ready_s": "soon"}, source="x-effective.json")
    assert AttachedTeardown(True, False, "left running").to_json() == {
        "attached": True,
        "stopped": False,
        "reason": "left running",
    }


def test_the_recorded_minimal_completion() -> None:
    doc = _file("distilled-k2-minimal.json")
    request = MinimalRequest.from_json(doc["request"], source="distilled-k2-minimal.json")
    response = MinimalResponse.from_json(doc["response"], source="distilled-k2-minimal.json")
    assert request == minimal_body("smollm2-7b-widened") and request.to_json() == doc["request"]
    assert response.choices == (CompletionText("-by-date-but-not-yet-final-version-of"),)
    assert response.tokens == 16 == sum(response.chunk_tokens) and response.attempts == 1
    assert json.dumps(response.to_json()) == json.dumps(doc["response"])
    proof = prove_without_metrics("plain", "None", response, True, "HTTP 404")  # one token per chunk: plain
    assert proof.to_json() == {
        "spec_decode_metrics": None,
        "spec_positions": None,
        "metric_families": [],
        "metrics_unavailable": "HTTP 404",
        "mode_evidence": [
            "startup log speculative_config=None",
            "launched by loadgen without --speculative-config",
            "minimal completion tokens per chunk " + str([1] * 16),
        ],
        "mode_proof": "weaker",
    }
    with pytest.raises(BadInput) as caught:
        MinimalResponse.from_json({**doc["response"], "chunk_tokens": [1, "2"]}, source="m.json")
    assert str(caught.value).startswith("m.json: chunk_tokens[1]: expected an integer, got '2'; ")


def test_an_engine_path_of_older_code_or_the_wrong_shape_reads_unknown() -> None:
    assert EnginePath.of(None) == EnginePath.of({}) == EnginePath(None, None, ())
    assert EnginePath.of({"async_scheduling": "no", "model_runner": 2, "fallback_reasons": None}) == EnginePath(
        None, None, ()
    )
    assert EnginePath.of({"async_scheduling": True, "model_runner": "V2", "fallback_reasons": ["x"]}) == EnginePath(
        True, "V2", ("x",)
    )
