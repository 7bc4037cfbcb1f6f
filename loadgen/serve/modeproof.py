"""Proof of mode from what a server says besides ``/metrics`` (pure): the startup log's echoed speculative
config and the tokens per chunk of the minimal completion (readiness.py).

The startup log line (vllm/v1/engine/core.py, 0.10-0.33) echoes ``SpeculativeConfig(method='...', ...)``
with the method vLLM settled on, which can differ from the one declared: vLLM re-classifies a draft by
its path (``eagle-``, ``eagle3``, ``dflash``, ``dspark``) or its ``model_type`` (MTP types become
``mtp``), even under an explicit ``method = "draft_model"``, and rewrites every ``*_mtp`` method to
``mtp`` from 0.11 (vllm/config/speculative.py, ``SpeculativeConfig.__post_init__``).

Tokens per chunk: vLLM streams every token an engine step produced in one chunk. A plain server
produces one token per decode step, so at temperature 0 each chunk of a completion holds exactly one
token; a speculative server adds the accepted draft tokens to the verified one, so chunks of more than
one token show speculation (their absence proves nothing: the draft may have been rejected).
"""

from __future__ import annotations

import re

from loadgen.errors import FallbackDetected
from loadgen.prom.deltas import has_spec_decode, spec_decode_positions
from loadgen.prom.exposition import Snapshot
from loadgen.records.server import MinimalResponse, ModeProof
from loadgen.records.serverparts import EffectiveFile

_METHOD_RE = re.compile(r"method='([^']*)'")
_K_RE = re.compile(r"num_spec_tokens=(\d+)")


def log_method(spec_log: str | None) -> str | None:
    """The ``method='...'`` of the startup log's ``SpeculativeConfig(...)`` text; None when absent."""
    match = _METHOD_RE.search(spec_log or "")
    return match.group(1) if match else None


def canonical(method: str) -> str:
    """A method as vLLM 0.11+ names it: every ``*_mtp`` (``deepseek_mtp``, ``qwen3_next_mtp``, ...) is ``mtp``."""
    return "mtp" if method.endswith("_mtp") else method


def check_effective_method(role: str, declared: str, spec_log: str | None, k: int | None = None) -> None:
    """Compare the startup log's speculative config (``speculative_config_log`` of the effective config:
    None when there is no log, ``"None"`` on a plain server) with the declared mode.

    Raises FallbackDetected: a plain server whose log shows a speculative config, a speculative one whose
    log shows none, an echoed method other than the declared one (after :func:`canonical`), or an echoed
    ``num_spec_tokens`` other than the declared K."""
    if spec_log is None:
        return
    if role == "plain" and spec_log != "None":
        raise FallbackDetected(
            f"the plain server's startup log shows {spec_log}: it runs speculative decoding; "
            "check [engine].args and the target (a speculators checkpoint enables it by itself)"
        )
    if role != "speculative":
        return
    if spec_log == "None":
        raise FallbackDetected(
            "the speculative server's startup log shows speculative_config=None: it runs "
            "without speculation; check [speculative] and the server log"
        )
    effective = log_method(spec_log)
    if effective is not None and canonical(effective) != canonical(declared):
        raise FallbackDetected(
            f"the speculative server runs method {effective!r} (startup log's speculative_config) "
            f"but the pair declares method = {declared!r}: vLLM re-classifies a draft by its path "
            "or model_type; set [speculative].method to the draft's real method, or use a draft "
            "that matches the declared one"
        )
    echoed = _K_RE.search(spec_log)
    if k is not None and echoed is not None and int(echoed.group(1)) != k:
        raise FallbackDetected(
            f"the speculative server runs num_spec_tokens={echoed.group(1)} (startup log's "
            f"speculative_config) but the pair declares num_speculative_tokens={k}"
        )


def prove_without_metrics(
    role: str,
    spec_log: str | None,
    minimal: MinimalResponse | None,
    launched: bool,
    reason: str,
    stream_interval: int | None = None,
) -> ModeProof:
    """The proof of mode when ``/metrics`` answered no Prometheus text at start-up (``reason``, one line).

    ``spec_log`` is the startup log's ``speculative_config`` (records/server.py ``EffectiveConfig``),
    ``minimal`` the minimal completion (``chunk_tokens``, ``chunk_tokens_exact``; None: none was made),
    ``launched`` True when loadgen started the server (its command line carries the declared speculative
    config), ``stream_interval`` the server's ``--stream-interval`` (None: not known, vLLM's 1). Returns the
    records/server.py ``ModeProof`` run/bench.py saves: ``spec_decode_metrics`` and
    ``spec_positions`` None (not measured), ``metrics_unavailable`` (the reason), ``mode_evidence`` (the
    lines) and ``mode_proof`` (``"weaker"``, or ``"unproven"`` when nothing shows speculation on the
    speculative server).

    Raises FallbackDetected when the evidence contradicts the role (check_effective_method, or more than
    ``stream_interval`` tokens, 1 by default, in a chunk of the plain server's greedy completion)."""
    chunks = list(minimal.chunk_tokens) if minimal else []
    exact = minimal.chunk_tokens_exact if minimal else True
    most = max(chunks, default=0)
    interval = stream_interval or 1
    evidence: list[str] = []
    if role == "plain" and exact and most > interval:
        raise FallbackDetected(
            f"the plain server sent {most} tokens in one chunk of a temperature-0 completion "
            f"(tokens per chunk {chunks}, stream interval {interval}): it runs speculative decoding; check "
            "[engine].args and the target"
        )
    if spec_log is not None:
        evidence.append(
            f"startup log speculative_config={spec_log}" if spec_log == "None" else f"startup log {spec_log}"
        )
    if launched:
        evidence.append(
            "launched by loadgen "
            + ("with --speculative-config" if role == "speculative" else "without --speculative-config")
        )
    if exact and chunks:
        more = f" (more than {interval}: speculation)" if most > interval else ""
        at = f" at stream interval {interval}" if interval > 1 else ""
        evidence.append(f"minimal completion tokens per chunk {chunks}{at}{more}")
    shown = role == "plain" or most > interval or (spec_log not in (None, "None"))
    return ModeProof(None, None, (), reason, tuple(evidence), "weaker" if shown and evidence else "unproven")


def proof_line(effective: EffectiveFile) -> str | None:
    """The card's one line for a server whose ``/metrics`` was unavailable at start-up (None otherwise)."""
    reason = effective.metrics_unavailable
    if not reason:
        return None
    evidence = "; ".join(effective.mode_evidence or []) or "nothing"
    what = (
        "mode NOT proven"
        if effective.mode_proof == "unproven"
        else "mode proven without /metrics (a weaker proof than the spec-decode series)"
    )
    return (
        f"/metrics unavailable ({reason}): acceptance, server histograms and KV-cache capacity not measured; "
        f"{what}, from: {evidence}"
    )


def prove_mode(role: str, snap: Snapshot, k: int) -> ModeProof:
    """Check the server runs the mode it was launched for (proof of mode, docs/vllm-notes.md).

    Raises FallbackDetected: spec-decode series on the plain server, none on the speculative one, or a
    number of ``position`` labels different from the declared K.
    """
    has_spec = has_spec_decode(snap)
    positions = spec_decode_positions(snap)
    if role == "plain" and has_spec:
        raise FallbackDetected(
            "the plain server exposes vllm:spec_decode_* metrics, so it runs speculative "
            "decoding; check [engine].args and the target (a speculators checkpoint "
            "enables speculation by itself)"
        )
    if role == "speculative" and not has_spec:
        raise FallbackDetected(
            "the speculative server exposes no vllm:spec_decode_* metrics: it runs without "
            "speculation (unplanned fallback); check its log for the speculative_config"
        )
    if role == "speculative" and positions != k:
        raise FallbackDetected(
            f"the speculative server runs K={positions} (position labels on /metrics) but "
            f"the pair declares num_speculative_tokens={k}"
        )
    return ModeProof(has_spec, positions, tuple(sorted(snap.types)))
