"""The fleet card in Markdown (``fleet.md``) and its terminal summary, from the card's data (``fleet.json``:
records/fleet.py ``FleetCard``, built by fleet/fleetdata.py), purely. Nodes are columns, so the same cell on
every node reads across one row."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from loadgen.fleet.fleetflags import METRIC_NAMES
from loadgen.records.fleet import (
    CompareCell,
    CompareEntry,
    CompareNode,
    ComparePair,
    FleetCard,
    SweepNode,
    SweepNodeEntry,
    SweepPair,
    SweepPairCell,
)
from loadgen.records.fleetparts import FleetRatio, NodeHardware, NodeVerdict
from loadgen.util.numbers import MISSING, gib, num

#: The per-cell figures of a compare pair, one table each: (title, how one node's entry is written).
_ACCEPTANCE = (("acceptance rate", "acceptance_rate"), ("mean acceptance length", "mean_acceptance_length"))
#: Most flags the terminal summary prints; fleet.md has them all.
SUMMARY_FLAGS = 10


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _verdict_word(v: NodeVerdict | None) -> str:
    return MISSING if v is None else "PASS" if v.passed is True else "FAIL" if v.passed is False else "not judged"


def _yes_no(value: bool | None) -> str:
    return "yes" if value is True else "no" if value is False else MISSING


def verdict_text(v: NodeVerdict | None) -> str:
    """The card's verdict summary (it starts with PASS or FAIL, or says it was not judged)."""
    return (v.summary if v else None) or _verdict_word(v)


def _node_head(nodes: Sequence[CompareNode | SweepNode]) -> list[str]:
    names = [f"{n.node} ({n.gpu_type or 'GPU type unknown'})" for n in nodes]
    return ["| workload | level | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]


def row_values(
    cell: CompareCell | SweepPairCell, nodes: Sequence[CompareNode | SweepNode], fmt: Callable[[Any], str]
) -> tuple[str, ...]:
    """(workload, level, each node's entry as ``fmt`` writes it: "(partial)" when cut short, a dash without)."""
    mine: dict[str, CompareEntry | SweepNodeEntry] = {e.node: e for e in cell.nodes}
    texts = []
    for n in nodes:
        e = mine.get(n.node)
        partial = e is not None and (e.status != "done" or not getattr(e, "complete", True))
        texts.append(MISSING if e is None else fmt(e) + (" (partial)" if partial else ""))
    return (cell.workload, cell.level, *texts)


def _row(cell: CompareCell | SweepPairCell, nodes: Sequence[CompareNode | SweepNode], fmt: Callable[[Any], str]) -> str:
    return "| " + " | ".join(_cell(t) for t in row_values(cell, nodes, fmt)) + " |"


def _tasks_table(card: FleetCard) -> list[str]:
    bad = [t for t in card.tasks if t.status != "done"]
    if not bad:
        return ["Every task finished.", ""]
    out = [
        "| task | pair | node | address | GPU type | status | exit | reason | log |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in bad:
        code = MISSING if t.exit_code is None else t.exit_code
        out.append(
            f"| {t.id} | {t.pair} | {t.node} | {t.address or MISSING} | "
            f"{t.gpu_type or 'unknown'} | {t.status} | {code} | {_cell(t.reason or MISSING)} | "
            f"{t.log or MISSING} |"
        )
    return [*out, ""]


def _task(n: CompareNode | SweepNode) -> str:
    """A node's task as its row shows it: the status, and the reason of one not done."""
    return n.status + (f": {n.reason}" if n.reason and n.status != "done" else "")


def _compare_section(pair: ComparePair, metrics: Sequence[str]) -> list[str]:
    nodes = pair.nodes
    out = [
        f"## Pair `{pair.pair}` (compare)",
        "",
        "| node | GPU type | task | verdict | engine |",
        "|---|---|---|---|---|",
    ]
    for n in nodes:
        task = _task(n)
        verdict = verdict_text(n.verdict) if n.status == "done" else MISSING
        out.append(
            f"| {n.node} | {n.gpu_type or 'unknown'} | {_cell(task)} | {_cell(verdict)} | "
            f"{'vLLM ' + n.engine if n.engine else MISSING} |"
        )
    out.append("")
    if not pair.cells:
        return [*out, "No cell was measured on any node.", ""]
    for metric in metrics:
        ci = (
            " [95% CI]"
            if any(
                r is not None and r.ci_low is not None
                for c in pair.cells
                for e in c.nodes
                for r in [e.ratios.get(metric)]
            )
            else " (no CI)"
        )
        out += [
            f"### {METRIC_NAMES.get(metric, metric)} ratio, speculative / plain{ci}",
            "",
            *_node_head(nodes),
            *(_row(c, nodes, ratio_of(metric)) for c in pair.cells),
            "",
        ]
    for title, key in _ACCEPTANCE:
        out += [
            f"### {title[0].upper() + title[1:]} (speculative server)",
            "",
            *_node_head(nodes),
            *(_row(c, nodes, number_of(key)) for c in pair.cells),
            "",
        ]
    return out


def ratio_of(metric: str) -> Callable[[CompareEntry], str]:
    """How one node's entry is written in the table of ``metric``'s ratio."""
    return lambda e: _ratio_text(e.ratios.get(metric))


def _ratio_text(r: FleetRatio | None) -> str:
    """A ratio's value with ``[ci_low, ci_high]`` when it has an interval, 3 decimals."""
    if r is None:
        return MISSING
    return f"{r.value:.3f}" + ("" if r.ci_low is None or r.ci_high is None else f" [{r.ci_low:.3f}, {r.ci_high:.3f}]")


def number_of(key: str) -> Callable[[CompareEntry], str]:
    """How one node's entry is written in the table of its field ``key`` (3 decimals)."""
    return lambda e: num(getattr(e, key), 3)


def best_text(e: SweepNodeEntry) -> str:
    if e.best is None:
        return "plain (no candidate beats it)"
    ci = "" if e.speedup_ci_low is None else f" [{e.speedup_ci_low:.3f}, {e.speedup_ci_high:.3f}]"
    return f"{e.best} {num(e.speedup, 3)}{ci}"


def _sweep_section(pair: SweepPair) -> list[str]:
    nodes = pair.nodes
    out = [
        f"## Sweep `{pair.pair}`",
        "",
        f"Speedup = {pair.speedup_definition or 'plain / speculative of the primary metric'}; primary metric "
        f"{pair.primary_metric or MISSING}.",
        "",
        "| node | GPU type | task | recommendation | meets criteria | engine |",
        "|---|---|---|---|---|---|",
    ]
    for n in nodes:
        task = _task(n)
        rec = (n.recommendation or "do not speculate") if n.measured else MISSING
        meets = _yes_no(n.meets_criteria) if n.criteria_declared else "none declared"
        out.append(
            f"| {n.node} | {n.gpu_type or 'unknown'} | {_cell(task)} | {rec} | {meets} | "
            f"{'vLLM ' + n.engine if n.engine else MISSING} |"
        )
    out.append("")
    if pair.cells:
        out += [
            "### Best candidate per cell, speedup [95% CI]",
            "",
            *_node_head(nodes),
            *(_row(c, nodes, best_text) for c in pair.cells),
            "",
        ]
    return out


#: Resources every Ray node has (memory in bytes, its own node:<ip> marker): left out of the nodes table.
_GENERIC = ("memory", "object_store_memory")


def _resources(res: Mapping[str, float]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in sorted(res.items()) if k not in _GENERIC and not k.startswith("node:"))


def _nodes_table(card: FleetCard) -> list[str]:
    out = [
        "| node | Ray node id | address | hostname | GPU type | GPUs | CPU | memory | engine | Ray resources "
        "| labels |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n in card.nodes:
        hw = n.hardware or NodeHardware()
        gpus = ", ".join(f"{g.name} ({gib(g.memory_bytes)})" for g in hw.gpus) or MISSING
        cpu = f"{hw.cpu_model}, {hw.cpu_cores} cores" if hw.cpu_model else MISSING
        gpu_type = f"{n.gpu_type}, from {n.gpu_type_source}" if n.gpu_type else "unknown"
        engine = ", ".join(f"vLLM {v}" for v in n.engine_versions) or MISSING
        labels = ", ".join(f"{k}={v}" for k, v in sorted(n.labels.items())) or MISSING
        out.append(
            f"| {n.name} | {n.id[:12]} | {n.address or MISSING} | {n.hostname or MISSING} | "
            f"{gpu_type} | {_cell(gpus)} | {_cell(cpu)} | {gib(hw.memory_bytes)} | {engine} | "
            f"{_cell(_resources(n.resources) or MISSING)} | {_cell(labels)} |"
        )
    return [*out, ""]


def render_fleet_markdown(card: FleetCard) -> str:
    """``fleet.md``: counts, failed and pending tasks, one section per pair and sweep (nodes side by
    side), the disagreement flags and the nodes with their hardware and engine versions."""
    c = card.counts
    out = [
        f"# Fleet card: {card.name}",
        "",
        f"Schema {card.schema}. {c['tasks']} tasks (pair x node): {c['done']} done, {c['failed']} failed, "
        f'{c["pending"]} pending. Ratios are {card.ratio_definition}. "(partial)": the task did not '
        "finish or the cell was cut short.",
        "",
        "## Failed and pending tasks",
        "",
        *_tasks_table(card),
    ]
    for pair in card.pairs:
        out += _compare_section(pair, card.metrics)
    for sweep in card.sweeps:
        out += _sweep_section(sweep)
    out += ["## Disagreement flags", "", card.flag_rule, ""]
    out += [f"- {f.line}" for f in card.flags] or ["No disagreement between nodes of the same GPU type."]
    out += ["", "## Nodes", "", *_nodes_table(card)]
    return "\n".join(out).rstrip("\n") + "\n"


def fleet_summary_lines(card: FleetCard) -> list[str]:
    """A few lines for the terminal: the counts, each failed or pending task with its node and reason,
    each pair's verdict (each sweep's recommendation) per node, and the disagreement flags."""
    c = card.counts
    out = [f"fleet {card.name}: {c['tasks']} tasks, {c['done']} done, {c['failed']} failed, {c['pending']} pending"]
    out += [
        f"  {t.status}: {t.id} on {t.node} ({t.address or 'address unknown'}): {t.reason or MISSING}"
        for t in card.tasks
        if t.status != "done"
    ]
    for pair in card.pairs:
        per_node = [
            f"{n.node} ({n.gpu_type or 'GPU type unknown'}) "
            + (_verdict_word(n.verdict) if n.status == "done" else n.status)
            for n in pair.nodes
        ]
        out.append(f"  {pair.pair}: " + ", ".join(per_node))
    for sweep in card.sweeps:
        per_sweep = [
            f"{n.node} ({n.gpu_type or 'GPU type unknown'}) "
            + ((n.recommendation or "do not speculate") if n.measured else n.status)
            for n in sweep.nodes
        ]
        out.append(f"  {sweep.pair} (sweep): " + ", ".join(per_sweep))
    flags = card.flags
    if not flags:
        out.append("  no disagreement between nodes of the same GPU type")
        return out
    out.append(f"  {len(flags)} disagreement flag{'s' if len(flags) > 1 else ''}:")
    out += [f"    {f.line}" for f in flags[:SUMMARY_FLAGS]]
    if len(flags) > SUMMARY_FLAGS:
        out.append(f"    ... {len(flags) - SUMMARY_FLAGS} more in fleet.md")
    return out
