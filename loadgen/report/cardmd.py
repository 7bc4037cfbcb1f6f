"""Render the pair card (the ``loadgen.card/1`` record, records/card.py, from carddata.py) as Markdown (pure).

Units: latencies are shown in milliseconds (``ms``, TPOT/ITL in ms per token), E2E latency in seconds,
throughputs in tokens/s and requests/s. Ratios are speculative / plain with their 95% confidence interval as
``[low, high]``: from the blocks (report/designmd.py says how), or within-run for a run of older code.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from loadgen.measure.outcomes import finish_line
from loadgen.profile.cells import ROLES
from loadgen.profile.overrides import described
from loadgen.records.card import CardVerdict, PairCard, ResourceDifference, Resources
from loadgen.records.cardcell import CardCell, Cost, Ratio
from loadgen.records.usage import ServerUsage
from loadgen.report.answermd import answer_rows
from loadgen.report.designmd import blocking_rows, cell_rows, crossover_rows, design_rows, level_label
from loadgen.report.serversmd import servers_rows
from loadgen.report.tracemd import trace_rows
from loadgen.report.workloadmd import context_rows
from loadgen.util.numbers import gib
from loadgen.util.numbers import ms as _ms
from loadgen.util.numbers import num as _num


def _or_dash(value: Any) -> str:
    """``value`` as text, "–" when it was not measured (None)."""
    return "–" if value is None else str(value)


_LATENCIES = (
    ("TTFT", "ttft_s", 1e3, "ms", "ttft_p50"),
    ("TPOT", "tpot_s", 1e3, "ms/token", "tpot_p50"),
    ("ITL", "itl_s", 1e3, "ms/token", "itl_p50"),
    ("inter-chunk latency", "icl_s", 1e3, "ms", None),
    ("E2E latency", "e2e_s", 1.0, "s", "e2e_p50"),
)


def _ratio(r: Ratio | None) -> str:
    if r is None or r.unavailable:
        return "–" if r is None else "n/a (bursts)"
    return r.text(3) + (f" {r.effect}" if r.effect else "")  # measure/decision.py's outcome


def _server_rows(cell: CardCell) -> list[str]:
    lines = []
    for role in ROLES:
        side = cell.role(role)
        for key, check in ((side.server_vs_client if side else None) or {}).items():
            label = "TTFT" if key == "ttft_s" else "E2E latency"
            verdict = {True: "agree", False: "DISAGREE", None: "–"}[check.agrees]
            verdict += " within the histogram's bucket resolution"
            above = "> " if check.server_above_bound else ""  # beyond the last finite bucket
            if above and check.agrees is None:
                verdict = "not comparable: beyond the histogram's last finite bucket"
            lines.append(
                f"- {role} {label}: client p50 {_ms(check.client_p50)} ms, server `{check.metric}` "
                f"p50 {above}{_ms(check.server_p50)} ms ({verdict})"
            )
    return lines


#: The usage shown for a server without a resources file: every figure unknown.
_UNMEASURED = ServerUsage(0, None, None, None, None, None, None, None)


def _resource_rows(res: Resources, gpus: bool = True) -> list[str]:
    """Memory and KV-cache capacity of both servers and the draft's cost; no GPU row without GPUs (``gpus``)."""
    if not res.to_json():  # a card of older code without resources
        return []
    lines = [
        "## Resources (measured per server after the load; the draft's cost is the difference)",
        "",
        "| | plain | speculative | difference |",
        "|---|---:|---:|---:|",
    ]
    p, s = res.plain or _UNMEASURED, res.speculative or _UNMEASURED
    d = res.difference or ResourceDifference()
    gpu = [None if x.gpu_memory is None else x.gpu_memory.bytes for x in (p, s)]
    row = f"| GPU memory (NVML, process tree) | {gib(gpu[0])} | {gib(gpu[1])} | {gib(d.extra_gpu_memory_bytes)} |"
    lines += [
        *([row] if gpus or any(g is not None for g in gpu) else []),
        f"| CPU RSS (process tree) | {gib(p.cpu_rss_bytes)} | {gib(s.cpu_rss_bytes)} | {gib(d.extra_cpu_rss_bytes)} |",
        f"| KV-cache capacity (tokens, cache_config_info) | {_or_dash(p.kv_cache_tokens)} | "
        f"{_or_dash(s.kv_cache_tokens)} | {_or_dash(d.kv_cache_tokens_lost)} lost "
        f"({_num(None if d.kv_capacity_loss is None else 100 * d.kv_capacity_loss, 1)} %) |",
        f"| KV-cache blocks × block size | {_or_dash(p.num_gpu_blocks)} × {_or_dash(p.block_size)} | "
        f"{_or_dash(s.num_gpu_blocks)} × {_or_dash(s.block_size)} | |",
        *(["", *[f"- {note}" for note in res.notes]] if res.notes else []),
        "",
    ]
    return lines


def _verdict_rows(verdict: CardVerdict) -> list[str]:
    """The verdict against the criteria the pair file declared before the run."""
    if verdict.declared is False:  # no [criteria] table: nothing was judged (judging.py)
        return ["## Verdict", "", f"**{verdict.summary}** (add a [criteria] table to the pair file to judge)", ""]
    crit = {} if verdict.criteria is None else verdict.criteria.to_json()
    keys = list(crit) if verdict.declared_keys is None else verdict.declared_keys
    shown = [
        ", ".join(f"{k} = {json.dumps(v)}" for k, v in crit.items() if v not in (None, {}, []) and (k in keys) == d)
        for d in (True, False)
    ]
    lines = [
        "## Verdict against the criteria declared before the run",
        "",
        f"**{verdict.summary}**",
        "",
        f"Declared: {shown[0] or 'an empty [criteria] table'}" + (f"; defaults: {shown[1]}" if shown[1] else ""),
        "",
    ]
    lines += [f"- {line}" for line in verdict.lines or []]
    lines += [f"- resource {r.name}: {r.status}: {r.reason}" for r in verdict.resources]
    return [*lines, ""]


def _diagnosis_rows(cell: CardCell) -> list[str]:
    """Lossless check, cost decomposition and goodput of one cell (diagnosis.py)."""
    lines = []
    loss = cell.lossless
    if loss is not None and loss.match_rate is not None:
        lines.append(
            f"- lossless check (greedy): {loss.identical}/{loss.pairs} requests identical "
            f"({100 * loss.match_rate:.0f}%)"
            + (f" (lossy: {loss.lossy_reason}; reported, not judged)" if loss.lossy else "")
        )
    cost = cell.cost or Cost()
    if cost.unavailable:
        lines.append(f"- cost decomposition: not given: {cost.unavailable}")
    if cost.predicted_speedup is not None:
        verdict = "agree within 15%" if cost.agrees else f"differ: {cost.why}"
        source = {
            "server": "server `vllm:inter_token_latency_seconds` mean",
            "client": f"client decode time per chunk, {cost.client_basis}",
        }.get(str(cost.step_source), "median inter-chunk latency")
        lines.append(
            f"- cost decomposition: step time ({source}) plain {_ms(cost.plain_step_s)} ms, speculative "
            f"{_ms(cost.spec_step_s)} ms (ratio {cost.step_time_ratio:.2f}: drafting + verification); "
            f"mean acceptance length {cost.acceptance_length:.2f} predicts a speedup of "
            f"{cost.predicted_speedup:.2f}x; measured TPOT speedup {cost.measured_tpot_speedup:.2f}x ({verdict})"
        )
    good = [
        f"{role} {side.goodput_rps:.2f} req/s"
        for role in ROLES
        if (side := cell.role(role)) is not None and side.goodput_rps is not None
    ]
    if good:
        lines.append(f"- goodput (requests meeting every SLO): {', '.join(good)}")
    return lines


def _capacity_rows(card: PairCard) -> list[str]:
    """The highest tested concurrency at which every declared SLO holds, per server and workload."""
    cap, slo = card.capacity, card.slo
    if not cap:
        return []
    limits = ", ".join(f"{k.removesuffix('_s')} ≤ {v:g} s" for k, v in slo.to_json().items() if k != "percentile" and v)
    lines = [
        "## Capacity at SLO",
        "",
        f"SLOs judged at p{99 if slo.percentile is None else slo.percentile:g}: {limits}.",
        "",
        "| workload | server | highest concurrency holding every SLO | goodput there (req/s) |",
        "|---|---|---:|---:|",
    ]
    none = f"none: no tested level ({', '.join(map(str, card.concurrency))}) held"  # every level tested
    for workload, roles in cap.items():
        for role, c in roles.items():
            best = c.capacity_concurrency
            lines.append(f"| {workload} | {role} | {best if best is not None else none} | {_num(c.goodput_rps)} |")
    return [*lines, ""]


def _hardware(card: PairCard) -> str:
    if (hw := card.hardware) is None:
        return f"None, None cores, {gib(None)} memory; no GPU"  # a protocol of older code without hardware
    gpus = ", ".join(f"{g.name} ({gib(g.memory_bytes)})" for g in hw.gpus) or "no GPU"
    return f"{hw.cpu_model}, {hw.cpu_cores} cores, {gib(hw.memory_bytes)} memory; {gpus}"


def _model_line(card: PairCard, label: str) -> str:
    if (model := card.draft if label == "draft" else card.target) is None:
        return f"- **{label}**: none"
    pin = model.content_sha256 or model.revision or "unpinned"
    vocab = f"; draft vocabulary {model.draft_vocab_size} tokens" if model.draft_vocab_size else ""
    build = f"; {model.build}" if model.build else ""
    return f"- **{label}**: `{model.model}` (content sha256 `{pin}`{vocab}){build}"


def _cell_table(cell: CardCell) -> list[str]:
    plain, spec, ratios = cell.plain, cell.speculative, cell.ratios
    lines = [
        "| metric | plain p50 | plain p90 | plain p95 | plain p99 | spec p50 | spec p90 | spec p95 | spec p99 "
        "| spec/plain p50 [95% CI] |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, key, scale, unit, ratio_key in _LATENCIES:
        row = [f"{label} ({unit})"]
        for side in (plain, spec):
            dist = getattr(side, key) if side else None
            row += [
                _num(None if (v := getattr(dist, p, None)) is None else v * scale) for p in ("p50", "p90", "p95", "p99")
            ]
        row.append(_ratio(ratios.get(ratio_key)) if ratio_key else "–")
        lines.append("| " + " | ".join(row) + " |")
    for label, key, ratio_key in (
        ("output throughput (tokens/s)", "output_throughput_tps", "output_throughput"),
        ("peak output throughput (tokens/s, 1 s buckets)", "peak_output_throughput_tps", ""),
        ("request throughput (req/s)", "request_throughput_rps", "request_throughput"),
    ):
        p = _num(getattr(plain, key)) if plain else "–"
        s = _num(getattr(spec, key)) if spec else "–"
        if key == "peak_output_throughput_tps":  # a window under two whole buckets has no peak: say why
            p, s = (
                "window too short for a peak" if side and side.peak_output_note else shown
                for side, shown in ((plain, p), (spec, s))
            )
        lines.append(f"| {label} | {p} | | | | {s} | | | | {_ratio(ratios.get(ratio_key))} |")
    return lines


def _acceptance_rows(cells: Sequence[CardCell]) -> list[str]:
    lines = [
        "| workload | load | acceptance rate | mean acceptance length | per-position acceptance | "
        "accepted / draft tokens | drafts | client tokens per chunk | client tokens per decode chunk |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for cell in cells:
        spec = cell.speculative
        acc = None if spec is None else spec.acceptance
        if spec is not None and not acc and spec.acceptance_unmeasurable:
            lines.append(
                f"| {cell.workload} | {level_label(cell)} | not measurable: "
                f"{spec.acceptance_unmeasurable} | | | | | | |"
            )
        if spec is None or not acc:
            continue
        per_pos = ", ".join(f"{x:.3f}" for x in acc.per_position) or "–"
        lines.append(
            f"| {cell.workload} | {level_label(cell)} | {_num(acc.acceptance_rate, 3)} | "
            f"{_num(acc.mean_acceptance_length, 3)} | {per_pos} | "
            f"{acc.num_accepted_tokens:.0f} / {acc.num_draft_tokens:.0f} | {acc.num_drafts:.0f} | "
            f"{_num(spec.mean_tokens_per_chunk, 3)} | {_num(spec.mean_tokens_per_decode_chunk, 3)} |"
        )
    return lines


def _head_rows(card: PairCard) -> list[str]:
    """The title and status, the answer (report/answermd.py), and a quoted line per blocking cell note."""
    state = "complete" if card.complete else f"INCOMPLETE: {card.failure or 'run did not finish'}"
    return [
        f"# Pair card: {card.pair}",
        "",
        f"Status: **{state}** · generated {card.generated_utc} · schema `{card.schema}`",
        "",
        *answer_rows(card),
        *blocking_rows(card),
    ]


def _compared_rows(card: PairCard) -> list[str]:
    """Provenance: the models and their hashes, the config, versions, sampling, levels, prompts, hardware."""
    config = card.speculative_config.to_json() if card.speculative_config else None
    return [
        "## What was compared",
        "",
        _model_line(card, "target"),
        _model_line(card, "draft"),
        f"- **speculative config**: `{json.dumps(config, sort_keys=True)}`",
        f"- **engine version**: plain {card.engine_version.plain}, speculative {card.engine_version.speculative}",
        f"- **sampling**: `{json.dumps(card.sampling.to_json(), sort_keys=True)}` (identical on both servers; "
        "ignore_eos with min_tokens = max_tokens)",
        f"- **concurrency levels** (closed loop): {', '.join(str(c) for c in card.concurrency)}; "
        f"stop rule `{json.dumps(card.stop_rule.to_json(), sort_keys=True)}`",
        *_command_line_rows(card),
        f"- **prompts sha256**: `{card.prompts_sha256}`",
        f"- **hardware**: {_hardware(card)}",
        "",
    ]


def _command_line_rows(card: PairCard) -> list[str]:
    """The values the command line gave instead of the pair file (``--concurrency``, ``--requests``,
    ``--workload``; profile/overrides.py), when it gave any."""
    given = card.command_line.overrides() if card.command_line else None
    return [f"- **from the command line** (not the pair file): {described(given)}"] if given else []


def _results_rows(card: PairCard) -> list[str]:
    out = ["## Results per workload and concurrency", ""]
    for cell in card.cells:
        out += [f"### {cell.workload} · {level_label(cell)}", ""]
        if not cell.plain and not cell.speculative:
            out += ["Not measured.", ""]
            continue
        failures = [
            f"- **{role} cell FAILED**: {side.failure}"
            for role in ROLES
            if (side := cell.role(role)) is not None and side.failure
        ]
        out += [*failures, *([""] if failures else []), *_cell_table(cell), ""]
        out += [f"- {note}" for note in cell.notes]
        out += [
            *cell_rows(cell),
            *_diagnosis_rows(cell),
            *[f"- {f}" for f in [finish_line(cell)] if f],
            *_server_rows(cell),
            "",
        ]
    return out


def render_markdown(card: PairCard) -> str:
    """The card as Markdown text: the answer first, then the evidence (the verdict's cells, capacity,
    crossover, design, resources, acceptance, results, plots), then the provenance (what was compared, the
    servers, the files' hashes)."""
    out = _head_rows(card) + _verdict_rows(card.verdict) + _capacity_rows(card) + crossover_rows(card.crossover)
    out += design_rows(card.design, card.noise_floor)
    out += _resource_rows(card.resources, bool(card.hardware and card.hardware.gpus))
    out += ["## Acceptance (from /metrics counter deltas per cell)", "", *_acceptance_rows(card.cells), ""]
    out += context_rows(card.context_axis)
    out += _results_rows(card)
    out += trace_rows(card.trace)
    if card.plots:
        out += ["## Plots", "", *[f"![{p}]({p})" for p in card.plots], ""]
    out += _compared_rows(card) + servers_rows(card)
    out += ["## Files", "", "| model | file | sha256 |", "|---|---|---|"]
    for label, model in (("target", card.target), ("draft", card.draft)):
        for name, digest in ((model.files if model else None) or {}).items():
            out.append(f"| {label} | {name} | `{digest}` |")
    return "\n".join(out) + "\n"
