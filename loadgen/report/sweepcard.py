"""The sweep card in Markdown (``sweep.md``) from its data (``sweep.json``, report/sweepdata.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadgen.profile.overrides import Overrides, described
from loadgen.report.tracecard import trace_rows


def _x(v: float | None, fmt: str = ".3f") -> str:
    return "-" if v is None else format(v, fmt)


def _ci(e: Mapping[str, Any]) -> str:
    """``[low, high]`` (an asymmetric interval printed as it is, never as ± a half-width)."""
    if e.get("speedup_ci_low") is None:
        return "-"
    return f"[{e['speedup_ci_low']:.3f}, {e['speedup_ci_high']:.3f}]"


def _cell_rows(cell: Mapping[str, Any]) -> list[str]:
    rows = []
    for e in cell["entries"]:
        pos = ", ".join(f"{p:.2f}" for p in e.get("per_position") or []) or "-"
        rows.append(f"| {cell['workload']} | {cell['level']} | {e['candidate']} | {_x(e['speedup'])} | {_ci(e)} | "
                    f"{e.get('effect') or '-'} | {_x(e.get('half_width'))} | {_floor(cell)} | "
                    f"{_x(e['acceptance_rate'])} | {_x(e['mean_acceptance_length'])} | {pos} | "
                    f"{_x(e['tokens_per_decode_chunk'], '.2f')} | {_x(e['predicted_speedup'])} | "
                    f"{_x(e['upper_bound'])} | {_ttft(e)} | {e.get('criteria_status') or '-'} |")
    return rows


def _ttft(e: Mapping[str, Any]) -> str:
    """The TTFT p50 / p95 / p99 ratios, speculative / plain (an older sweep.json has none: '-')."""
    ratios = e.get("ttft_ratios") or {}
    return " / ".join(_x(ratios.get(p)) for p in ("p50", "p95", "p99"))


def _floor(cell: Mapping[str, Any]) -> str:
    f = cell.get("noise_floor") or {}
    if f.get("value") is None:
        return "-"
    return f"{f['value']:.3f}" + (f" [{f['ci_low']:.3f}, {f['ci_high']:.3f}]" if f.get("ci_low") is not None else "")


def _bytes(v: float | None, same_budget: bool | None = None) -> str:
    if v is None:
        return "-"
    return f"{v / 2**20:,.0f} MiB" + (" (same budget: not the draft's cost)" if same_budget else "")


def _command_line(card: Mapping[str, Any]) -> list[str]:
    """The values the command line gave instead of the sweep file (profile/overrides.py), when it gave any."""
    given = Overrides.from_json(card.get("command_line") or None)
    return [f"From the command line (not the sweep file): {described(given)}.", ""] if given else []


def render_sweep_markdown(card: Mapping[str, Any]) -> str:
    """``sweep.md``: recommendation, how sure (design, noise floor, precision), candidates, per-cell table,
    an older sweep's drift."""
    rec = card["recommendation"]
    out = [f"# Sweep card: {card['pair']}", "",
           f"Schema {card['schema']}; engine vLLM {card.get('engine_version') or 'unknown'}; primary metric "
           f"{card['primary_metric']}. Speedup = {card['speedup_definition']}. Upper bound = "
           f"{card['upper_bound_formula']} (a perfect draft).", "", *_command_line(card), "## Recommendation", ""]
    out += [f"- {line}" for line in rec["lines"]]
    design, noise = card.get("design") or {}, card.get("noise_floor") or {}
    out += ["", "## How sure", "", f"- design: {design.get('line', '-')}", f"- {noise.get('line', '-')}"]
    if design.get("ci_half_width") is not None:
        short = design.get("stopped_short") or []
        out.append(f"- precision goal ±{design['ci_half_width']:g} (log half-width): "
                   + (f"stopped short at {'; '.join(short)}" if short else "reached (or decided) in every cell"))
    out += ["", "## Candidates", "",
            "| candidate | K | draft weights | verdict | KV capacity lost | extra CPU RSS | extra GPU memory | time |",
            "|---|---|---|---|---|---|---|---|"]
    for c in card["candidates"]:
        verdict = {True: "pass", False: "FAIL", None: "not judged"}[c.get("verdict_passed")]
        verdict = "inconclusive" if c.get("verdict_status") == "inconclusive" else verdict
        loss = "-" if c.get("kv_capacity_loss") is None else f"{100 * c['kv_capacity_loss']:.1f}%"
        when = "-" if c.get("time_s") is None else f"{c['time_s'] / 60:.1f} min"
        out.append(f"| {c['name']} | {c['k']} | {'yes' if c['draft_weights'] else 'no'} | "
                   f"{verdict if c['measured'] else 'not measured'} | {loss} | "
                   f"{_bytes(c.get('extra_cpu_rss_bytes'))} | "
                   f"{_bytes(c.get('extra_gpu_memory_bytes'), c.get('same_memory_budget'))} | {when} |")
    out += ["", "## Cells", "",
            "| workload | level | candidate | speedup | 95% CI | effect | half-width | A/A noise floor "
            "| acceptance rate | acceptance length | per position | tokens / decode chunk | predicted | upper bound "
            "| TTFT spec/plain p50 / p95 / p99 | criteria |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for cell in card["cells"]:
        out += _cell_rows(cell)
    drifts = [c for c in card["cells"] if c.get("drift")]
    if drifts:
        out += ["", "## Plain baseline drift (plain-after / plain-before)", ""]
    for cell in drifts:
        d = cell["drift"]
        ci = "" if d.get("ci_low") is None else f" [95% CI {d['ci_low']:.3f}, {d['ci_high']:.3f}]"
        out.append(f"- {cell['workload']} {cell['level']}: {d['timing']} {_x(d['value'])}{ci}, {d['pairs']} prompts")
    out += ["", *[f"- WARNING {w}" for w in card["drift_warnings"]]] if card["drift_warnings"] else []
    times = ", ".join(f"{k} {v / 60:.1f} min" for k, v in card["times_s"].items())
    out += ["", "## Time spent", "", times or "-", "", *trace_rows(card)]
    out += [f"![{p}]({p})" for p in card.get("plots", [])]
    return "\n".join(out) + "\n"
