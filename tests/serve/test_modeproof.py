"""Proof of mode from the startup log and the minimal completion's tokens per chunk (modeproof.py)."""

from __future__ import annotations

import pytest

from loadgen.errors import FallbackDetected
from loadgen.records.server import MinimalResponse
from loadgen.serve.modeproof import check_effective_method, log_method, proof_line, prove_without_metrics
from tests.support.cards import effective_file

# the startup line of vLLM 0.32 (vllm/v1/engine/core.py), as servers.py extracts it
EAGLE3 = "SpeculativeConfig(method='eagle3', model='/models/neutral', num_spec_tokens=3)"
DRAFT = "SpeculativeConfig(method='draft_model', model='/models/draft', num_spec_tokens=3)"


def _min(chunks: list[int], exact: bool = True) -> MinimalResponse:
    """A minimal completion of ``chunks`` tokens per chunk (``exact``: counted from token ids)."""
    return MinimalResponse((), None, tuple(chunks), exact)


def test_log_method() -> None:
    assert log_method(EAGLE3) == "eagle3" and log_method("None") is None and log_method(None) is None


def test_an_effective_method_other_than_the_declared_one_is_a_fallback() -> None:
    with pytest.raises(FallbackDetected, match="runs method 'eagle3' .* declares method = 'draft_model'"):
        check_effective_method("speculative", "draft_model", EAGLE3)
    check_effective_method("speculative", "draft_model", DRAFT, 3)
    with pytest.raises(FallbackDetected, match="runs num_spec_tokens=3 .* declares num_speculative_tokens=5"):
        check_effective_method("speculative", "draft_model", DRAFT, 5)
    check_effective_method("speculative", "deepseek_mtp", "SpeculativeConfig(method='mtp', num_spec_tokens=1)")
    check_effective_method("speculative", "draft_model", None)  # attached: no log
    check_effective_method("plain", "draft_model", "None")
    with pytest.raises(FallbackDetected, match="speculative_config=None: it runs without speculation"):
        check_effective_method("speculative", "draft_model", "None")
    with pytest.raises(FallbackDetected, match="plain server's startup log shows SpeculativeConfig"):
        check_effective_method("plain", "draft_model", DRAFT)


def test_prove_without_metrics() -> None:
    launched = prove_without_metrics("speculative", DRAFT, _min([1, 1, 1], True), True, "HTTP 500")
    assert launched.mode_proof == "weaker" and launched.metrics_unavailable == "HTTP 500"
    assert launched.mode_evidence is not None
    assert launched.mode_evidence[:2] == (f"startup log {DRAFT}", "launched by loadgen with --speculative-config")
    blind = prove_without_metrics("speculative", None, _min([1, 1]), False, "HTTP 500")
    assert blind.mode_proof == "unproven"
    assert (
        "mode NOT proven" in (proof_line(effective_file(**blind.to_json())) or "")
        and proof_line(effective_file()) is None
    )
    with pytest.raises(FallbackDetected, match="plain server sent 2 tokens in one chunk"):
        prove_without_metrics("plain", None, _min([1, 2], True), False, "x")
    # without token ids a chunk's count is a guess: no verdict from it
    assert prove_without_metrics("plain", None, _min([1, 1], False), False, "x").mode_evidence == ()
