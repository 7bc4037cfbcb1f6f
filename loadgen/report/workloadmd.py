"""The card's workload statement and context-length table (pure).

- :func:`workload_statement`: per workload its kind, its source (the prompt file and its sha256, a trace with its
  format, declared or detected, or the generator and its seed), the input and output lengths actually sent (min /
  median / max tokens over the measured requests of the plain server: ``usage.prompt_tokens`` as the server counted
  it, and the requested output tokens), the file lines skipped (and a trace's requests of 0 output tokens sent with
  the declared floor, ``zero_output = N``), and that conclusions hold for these workloads only.
- :func:`context_axis`: for workloads expanded over several input lengths (``<workload>@<tokens>``), the
  acceptance rate and TPOT p50 ratio (speculative / plain) per input length and load level.
- :func:`context_rows`: that table as Markdown.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from loadgen.records.card import ContextRow
from loadgen.records.cardcell import Acceptance, CardCell, Ratio
from loadgen.records.protocol import Protocol
from loadgen.records.protoparts import WorkloadRecord
from loadgen.records.request import RequestRecord

__all__ = ["context_axis", "context_rows", "length_summary", "workload_statement"]


def length_summary(values: Sequence[int]) -> str:
    """``min/median/max`` of ``values`` (tokens), or ``none sent``."""
    if not values:
        return "none sent"
    return f"{min(values)}/{statistics.median(values):g}/{max(values)}"


def _named(lines: Sequence[str]) -> str:
    """``lines`` (``line N: reason``) named: the first 5, then an ellipsis."""
    return "; ".join(lines[:5]) + ("; …" if len(lines) > 5 else "")


def _trace_format(declared: str | None, read: str | None) -> str:
    """A trace's format: as declared, or as detected (``auto``; a protocol of older code did not record it)."""
    if (declared or "auto") != "auto":
        return f"format {declared} (declared)"
    return f"format {read} (detected)" if read else "format detected (not recorded)"


def _source(w: WorkloadRecord) -> str:
    if w.kind not in ("file", "trace"):
        return f"generator {w.kind}, seed {w.seed}"
    skipped, floored = list(w.skipped), list(w.floored)
    counts = f"{len(skipped)} skipped{': ' + _named(skipped) if skipped else ''}"
    if w.kind == "file":
        return f"file {w.path} (sha256 {w.source_sha256}, {w.source_lines} lines, {counts}; sampled with seed {w.seed})"
    floor = f", {len(floored)} sent with the declared floor of {w.zero_output} output tokens: {_named(floored)}"
    fmt = _trace_format(w.trace_format, w.trace_format_read)
    return (
        f"trace {w.path} ({fmt}; sha256 {w.source_sha256}, {w.source_lines} lines, "
        f"{counts}{floor if floored else ''}; replayed at its times x {w.time_scale or 1:g}, blocks of "
        f"{w.block_tokens} tokens)"
    )


#: What a grammar-constrained workload changes (profile/structured.py; docs/metrics.md "Structured outputs").
GRAMMAR = (
    " A grammar-constrained workload's outputs end where the grammar ends: its requests carry no ignore_eos and no "
    "min_tokens (output tokens are a cap), so outputs may be shorter than asked and differ in length between the "
    "servers; compare its per-token figures (TPOT, ITL), not summed times. The grammar also refuses draft tokens it "
    "does not allow, so fewer draft tokens than K per step are expected there."
)


def workload_statement(protocol: Protocol, records: Iterable[RequestRecord]) -> str:
    """One paragraph naming each workload's kind, source and the lengths sent (input and output tokens,
    min/median/max; a grammar-constrained workload's grammar and the output tokens received, :data:`GRAMMAR`),
    ending with the scope of the conclusions, for protocol.json's workloads."""
    sent_in: dict[str, list[int]] = {}
    sent_out: dict[str, list[int]] = {}
    got_out: dict[str, list[int]] = {}
    for r in records:
        if r.role == "plain" and not r.warmup:
            if r.usage_prompt_tokens is not None:
                sent_in.setdefault(r.workload, []).append(r.usage_prompt_tokens)
            sent_out.setdefault(r.workload, []).append(r.requested_output_tokens)
            got_out.setdefault(r.workload, []).append(r.output_tokens)
    parts = []
    for w in protocol.workloads:
        name = w.name
        inputs = length_summary(sent_in[name]) if name in sent_in else f"{w.input_tokens or 'natural'} (declared)"
        outputs = length_summary(sent_out[name]) if name in sent_out else f"{w.output_tokens} (declared)"
        got = f", received {length_summary(got_out[name])}" if name in got_out else ""
        grammar = f"; grammar-constrained: {w.constrained}{got}" if w.constrained else ""
        parts.append(
            f"{name} ({w.kind}, {w.endpoint or 'completions'}; {_source(w)}; input tokens "
            f"min/median/max {inputs}, output tokens {outputs}{grammar})"
        )
    return (
        "Conclusions hold for the workloads tested only: " + "; ".join(parts) + ". They do not carry over to "
        "other traffic: acceptance depends on what is asked (copying or short answers versus multi-step "
        "reasoning)." + (GRAMMAR if any(w.constrained for w in protocol.workloads) else "")
    )


def _input_length(name: str) -> int | None:
    base, _, n = name.rpartition("@")
    return int(n) if base and n.isdigit() else None


def context_axis(cells: Iterable[CardCell]) -> dict[str, tuple[ContextRow, ...]]:
    """Per base workload with variants ``<workload>@<tokens>``: its rows sorted by level then input length
    (None where not measured)."""
    out: dict[str, list[ContextRow]] = {}
    for c in cells:
        n = _input_length(c.workload)
        if n is None:
            continue
        acc = (c.speculative.acceptance if c.speculative else None) or Acceptance()
        ratio = c.ratio("tpot_p50") or Ratio(None)
        out.setdefault(c.workload.rpartition("@")[0], []).append(
            ContextRow(
                input_tokens=n,
                level=c.level,
                concurrency=c.concurrency,
                acceptance_rate=acc.acceptance_rate,
                tpot_ratio=ratio.value,
                tpot_ratio_ci=(ratio.ci_low, ratio.ci_high),
            )
        )
    return {
        base: tuple(sorted(rows, key=lambda r: (r.concurrency or 0, r.level, r.input_tokens)))
        for base, rows in out.items()
    }


def _fmt(x: Any, digits: int = 3) -> str:
    return f"{x:.{digits}f}" if isinstance(x, int | float) else "–"


def context_rows(axis: Mapping[str, Sequence[ContextRow]] | None) -> list[str]:
    """Markdown: one table per base workload, input length x level -> acceptance rate, TPOT p50 ratio."""
    if not axis:
        return []
    lines = [
        "## Context length",
        "",
        "Acceptance rate and TPOT p50 ratio (speculative / plain; < 1: faster) per "
        "input length (tokens) and load level.",
        "",
    ]
    for base, rows in axis.items():
        lines += [
            f"### {base}",
            "",
            "| input tokens | level | acceptance rate | TPOT p50 ratio (95% CI) |",
            "|---:|---:|---:|---:|",
        ]
        for r in rows:
            lo, hi = r.tpot_ratio_ci
            ci = f" ({_fmt(lo)}–{_fmt(hi)})" if isinstance(lo, int | float) and isinstance(hi, int | float) else ""
            lines.append(f"| {r.input_tokens} | {r.level} | {_fmt(r.acceptance_rate)} | {_fmt(r.tpot_ratio)}{ci} |")
        lines.append("")
    return lines
