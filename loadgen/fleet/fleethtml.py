"""The fleet card as a page (the fleet folder's ``card.html``, report/htmlpage.py) from its record
(records/fleet.py ``FleetCard``), the record fleet.md is rendered from (fleet/fleetmd.py, whose cell texts it
shares): the answer first (the tasks done, each pair's verdict and each sweep's recommendation per node, the
disagreement flags), then the failed tasks, one section per pair and sweep with the nodes side by side, the
flags and, folded, the nodes' hardware. Pure; a fleet card has no plots of its own (each task's run folder
holds its pair card's)."""

from __future__ import annotations

from loadgen.fleet.fleetflags import METRIC_NAMES
from loadgen.fleet.fleetmd import best_text, number_of, ratio_of, row_values, verdict_text
from loadgen.records.fleet import ComparePair, FleetCard, SweepPair
from loadgen.report.answermd import AnswerItem
from loadgen.report.htmlpage import Page, Section, Table, render_page
from loadgen.util.numbers import MISSING, gib


def _answer(card: FleetCard) -> tuple[AnswerItem, ...]:
    c = card.counts
    items = [
        AnswerItem(
            "tasks", f"{c['tasks']} (pair x node): {c['done']} done, {c['failed']} failed, {c['pending']} pending"
        )
    ]
    for pair in card.pairs:
        per_node = [
            f"{n.node} ({n.gpu_type or 'GPU type unknown'}): "
            + (verdict_text(n.verdict) if n.status == "done" else n.status)
            for n in pair.nodes
        ]
        items.append(AnswerItem(f"pair {pair.pair}", "; ".join(per_node) or MISSING))
    for sweep in card.sweeps:
        per_sweep = [
            f"{n.node} ({n.gpu_type or 'GPU type unknown'}): "
            + ((n.recommendation or "do not speculate") if n.measured else n.status)
            for n in sweep.nodes
        ]
        items.append(AnswerItem(f"sweep {sweep.pair}", "; ".join(per_sweep) or MISSING))
    flags = f"{len(card.flags)}: see below" if card.flags else "none between nodes of the same GPU type"
    items.append(AnswerItem("disagreement flags", flags))
    return tuple(items)


def _tasks(card: FleetCard) -> Section:
    bad = tuple(
        (
            t.id,
            t.pair,
            t.node,
            t.address or MISSING,
            t.gpu_type or "unknown",
            t.status,
            MISSING if t.exit_code is None else str(t.exit_code),
            t.log or MISSING,
            t.reason or MISSING,
        )
        for t in card.tasks
        if t.status != "done"
    )
    if not bad:
        return Section("Failed and pending tasks", ("Every task finished.",))
    headers = ("task", "pair", "node", "address", "GPU type", "status", "exit", "log", "reason")
    return Section("Failed and pending tasks", tables=(Table(headers, bad),))


def _compare(pair: ComparePair, metrics: list[str]) -> Section:
    nodes = pair.nodes
    head = ("workload", "level", *(f"{n.node} ({n.gpu_type or 'unknown'})" for n in nodes))
    runs = tuple(
        (
            n.node,
            n.gpu_type or "unknown",
            n.status + (f": {n.reason}" if n.reason and n.status != "done" else ""),
            verdict_text(n.verdict) if n.status == "done" else MISSING,
            f"vLLM {n.engine}" if n.engine else MISSING,
        )
        for n in nodes
    )
    tables = [Table(("node", "GPU type", "task", "verdict", "engine"), runs)]
    for metric in metrics if pair.cells else []:
        rows = tuple(row_values(c, nodes, ratio_of(metric)) for c in pair.cells)
        tables.append(Table(head, rows, f"{METRIC_NAMES.get(metric, metric)} ratio, speculative / plain [95% CI]"))
    for title, key in (("acceptance rate", "acceptance_rate"), ("mean acceptance length", "mean_acceptance_length")):
        if pair.cells:
            tables.append(Table(head, tuple(row_values(c, nodes, number_of(key)) for c in pair.cells), title))
    lines = () if pair.cells else ("No cell was measured on any node.",)
    return Section(f"Pair {pair.pair} (compare)", lines, tuple(tables))


def _sweep(pair: SweepPair) -> Section:
    nodes = pair.nodes
    runs = tuple(
        (n.node, n.gpu_type or "unknown", n.status, (n.recommendation or "do not speculate") if n.measured else MISSING)
        for n in nodes
    )
    tables = [Table(("node", "GPU type", "task", "recommendation"), runs)]
    if pair.cells:
        head = ("workload", "level", *(f"{n.node} ({n.gpu_type or 'unknown'})" for n in nodes))
        rows = tuple(row_values(c, nodes, best_text) for c in pair.cells)
        tables.append(Table(head, rows, "best candidate per cell, speedup [95% CI]"))
    speedup = f"Speedup = {pair.speedup_definition or 'plain / speculative of the primary metric'}."
    return Section(f"Sweep {pair.pair}", (speedup,), tuple(tables))


def _nodes(card: FleetCard) -> Section:
    rows = []
    for n in card.nodes:
        hw = n.hardware
        gpus = ", ".join(f"{g.name} ({gib(g.memory_bytes)})" for g in hw.gpus) if hw else ""
        cpu = f"{hw.cpu_model}, {hw.cpu_cores} cores" if hw and hw.cpu_model else MISSING
        engines = ", ".join(n.engine_versions) or MISSING
        rows.append(
            (
                n.name,
                n.address or MISSING,
                n.hostname or MISSING,
                n.gpu_type or "unknown",
                gpus or MISSING,
                cpu,
                engines,
            )
        )
    headers = ("node", "address", "hostname", "GPU type", "GPUs", "CPU", "engine")
    return Section("Nodes", tables=(Table(headers, tuple(rows)),), open=False)


def render_fleet_html(card: FleetCard) -> str:
    """The fleet's ``card.html`` of ``card`` (module docstring)."""
    flags = Section("Disagreement flags", (card.flag_rule, *(f.line for f in card.flags)))
    sections = (
        _tasks(card),
        *(_compare(p, list(card.metrics)) for p in card.pairs),
        *(_sweep(s) for s in card.sweeps),
        flags,
        _nodes(card),
    )
    statement = f"Ratios are {card.ratio_definition}." if card.ratio_definition else ""
    return render_page(Page(card.name, "fleet card", _answer(card), statement, sections))
