"""serve/modeproof.py case by case: method names as vLLM canonicalises them, each evidence line of a proof without
/metrics and the card's line written from it, and the proof from recorded vLLM 0.32 ``/metrics``
(tests/data/vllm032_*_t0.prom: the speculative server exposes positions 0, 1, 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.errors import FallbackDetected
from loadgen.prom.exposition import parse_metrics
from loadgen.records.server import MinimalResponse
from loadgen.serve.modeproof import (
    canonical,
    check_effective_method,
    log_method,
    proof_line,
    prove_mode,
    prove_without_metrics,
)
from tests.support.cards import effective_file

DATA = Path(__file__).resolve().parents[1] / "data"
NGRAM = "SpeculativeConfig(method='ngram', model=None, num_spec_tokens=4)"


def _min(chunks: list[int], exact: bool = True) -> MinimalResponse:
    """A minimal completion of ``chunks`` tokens per chunk (``exact``: counted from token ids)."""
    return MinimalResponse((), None, tuple(chunks), exact)


@pytest.mark.parametrize(
    ("method", "name"),
    [
        ("deepseek_mtp", "mtp"),
        ("qwen3_next_mtp", "mtp"),
        ("mtp", "mtp"),
        ("eagle3", "eagle3"),
        ("ngram", "ngram"),
        ("mtp_x", "mtp_x"),
    ],
)
def test_canonical_method_names(method: str, name: str) -> None:
    assert canonical(method) == name


def test_log_method_reads_the_first_method_field() -> None:
    assert log_method(NGRAM) == "ngram" and log_method("SpeculativeConfig(method='', k=1)") == ""
    assert log_method("SpeculativeConfig(model='x')") is None


def test_k_is_checked_only_when_echoed_and_declared() -> None:
    check_effective_method("speculative", "ngram", NGRAM, 4)
    check_effective_method("speculative", "ngram", NGRAM, None)
    check_effective_method("speculative", "ngram", "SpeculativeConfig(method='ngram')", 9)  # K not echoed
    with pytest.raises(FallbackDetected) as info:
        check_effective_method("speculative", "ngram", NGRAM, 2)
    assert str(info.value) == (
        "the speculative server runs num_spec_tokens=4 (startup log's speculative_config) but "
        "the pair declares num_speculative_tokens=2"
    )
    check_effective_method("speculative", "qwen3_next_mtp", "SpeculativeConfig(method='deepseek_mtp')")


def test_every_evidence_line_of_a_proof_without_metrics() -> None:
    spec = prove_without_metrics("speculative", NGRAM, _min([1, 3, 2], True), True, "HTTP 404")
    assert spec.to_json() == {
        "spec_decode_metrics": None,
        "spec_positions": None,
        "metric_families": [],
        "metrics_unavailable": "HTTP 404",
        "mode_proof": "weaker",
        "mode_evidence": [
            f"startup log {NGRAM}",
            "launched by loadgen with --speculative-config",
            "minimal completion tokens per chunk [1, 3, 2] (more than 1: speculation)",
        ],
    }
    assert proof_line(effective_file(**spec.to_json())) == (
        "/metrics unavailable (HTTP 404): acceptance, server histograms and KV-cache capacity not measured; mode "
        f"proven without /metrics (a weaker proof than the spec-decode series), from: startup log {NGRAM}; launched "
        "by loadgen with --speculative-config; minimal completion tokens per chunk [1, 3, 2] (more than 1: "
        "speculation)"
    )
    plain = prove_without_metrics("plain", "None", _min([1, 1]), True, "r")
    assert plain.mode_proof == "weaker" and plain.mode_evidence == (
        "startup log speculative_config=None",
        "launched by loadgen without --speculative-config",
        "minimal completion tokens per chunk [1, 1]",
    )


def test_nothing_shown_is_unproven_and_said_so() -> None:
    attached = prove_without_metrics("speculative", None, _min([], True), False, "connection refused")
    assert attached.mode_proof == "unproven" and attached.to_json()["mode_evidence"] == []
    assert proof_line(effective_file(**attached.to_json())) == (
        "/metrics unavailable (connection refused): acceptance, server histograms and KV-cache capacity not measured; "
        "mode NOT proven, from: nothing"
    )
    # one-token chunks and a log saying None prove nothing for the speculative server
    none_log = prove_without_metrics("speculative", None, _min([1, 1]), True, "x")
    assert none_log.mode_proof == "unproven" and len(none_log.mode_evidence or ()) == 2
    assert proof_line(effective_file(metrics_unavailable="")) is None


def test_the_proof_from_recorded_metrics() -> None:
    spec = parse_metrics((DATA / "vllm032_spec_t0.prom").read_text())
    plain = parse_metrics((DATA / "vllm032_plain_t0.prom").read_text())
    proof = prove_mode("speculative", spec, 3)
    assert proof.spec_decode_metrics is True and proof.spec_positions == 3
    assert "vllm:spec_decode_num_accepted_tokens_per_pos" in proof.metric_families  # family names: no _total
    assert list(proof.metric_families) == sorted(proof.metric_families)
    assert list(proof.to_json()) == ["spec_decode_metrics", "spec_positions", "metric_families"]
    assert prove_mode("plain", plain, 3).spec_positions == 0
    with pytest.raises(FallbackDetected) as info:
        prove_mode("speculative", spec, 5)
    assert str(info.value) == (
        "the speculative server runs K=3 (position labels on /metrics) but the pair declares num_speculative_tokens=5"
    )
