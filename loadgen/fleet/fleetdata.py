"""The fleet card's data (``fleet.json``, schema ``loadgen.fleet/1``), purely: no I/O, no clock, so the
same fleet folder always gives the same card (docs/fleet/README.md, "The fleet card").

Inputs: the task list (``tasks.json``, records/fleettasks.py ``TaskList``), each compare task's pair card
(``card.json``, report/card.schema.json) and each sweep task's sweep card (``sweep.json``, records/sweep.py
``SweepCard``, checked when read) with its ``plain-before`` pair card (for the node's hardware and engine
version), by task id; None where the file is missing or unreadable, with the reason in ``unreadable``. A task
that finished (``done``) without its card is shown as failed with that reason. The card is returned as
records/fleet.py ``FleetCard``, checked as a fleet.json read back would be.

Shape (every key always present; None where not measured)::

    schema, name, ratio_definition, metrics, flag_rule,
    counts: {tasks, done, failed, pending},
    tasks: [{id, pair, kind, node, address, gpu_type, status, runner_status, reason, exit_code, run_dir,
             log, started, finished, wall_s}],
    nodes: [{name, id, address, hostname, gpu_type, gpu_type_source, resources, labels, hardware,
             engine_versions, tasks: {done, failed, pending}}],
    pairs: [{pair, kind: "compare", nodes: [{node, gpu_type, task, status, reason, exit_code, complete,
             failure, verdict: {declared, passed, summary} | None, engine_version, engine}],
             cells: [{workload, level, concurrency, rate_rps, nodes: [{node, gpu_type, status, complete,
             ratios: {metric: {value, ci_low, ci_high, pairs} | None}, acceptance_rate,
             mean_acceptance_length}]}]}],
    sweeps: [{pair, kind: "sweep", primary_metric, speedup_definition, nodes: [{node, gpu_type, task,
             status, reason, exit_code, measured, engine, recommendation, criteria_declared, meets_criteria, workloads:
             [{workload, static, static_speedup, off_above_concurrency}], lines}], cells: [{workload,
             level, concurrency, rate_rps, nodes: [{node, gpu_type, status, best, tied, speedup,
             speedup_ci_low, speedup_ci_high, entries: [{candidate, speedup, speedup_ci_low, speedup_ci_high,
             acceptance_rate, mean_acceptance_length}]}]}]}],
    flags: [fleet/fleetflags.py]

Ratios are copied from the cards unchanged: speculative / plain (docs/metrics.md, "Ratios and their
confidence intervals"); speedups from the sweep cards: plain / speculative of the primary metric.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from loadgen.fleet.fleetflags import FLAG_RULE, ratio_flags, sweep_flags
from loadgen.fleet.gputype import gpu_type_of
from loadgen.profile.cells import CellKey
from loadgen.records.fleet import SCHEMA as FLEET_SCHEMA
from loadgen.records.fleet import FleetCard
from loadgen.records.fleettasks import STATUSES, Task, TaskList
from loadgen.records.sweep import LevelChoice, SweepCard, SweepCell, SweepEntry

#: The ratios the fleet card carries per cell (TTFT p95 beside p50 and p99).
RATIO_METRICS = ("tpot_p50", "ttft_p50", "e2e_p50", "ttft_p95", "ttft_p99")
RATIO_DEFINITION = ("speculative / plain of each metric (docs/metrics.md); a latency ratio below 1 means the "
                    "speculative server is faster; 95% CI from the paired bootstrap over prompts")
Doc = Mapping[str, Any]


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _num(x: Any) -> float | None:
    """A finite number, else None (a card written by hand or cut short may hold anything)."""
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else None


def _str(x: Any) -> str | None:
    return x if isinstance(x, str) else None


def _bool(x: Any) -> bool | None:
    return x if isinstance(x, bool) else None


def _ratio(r: Any) -> dict[str, Any] | None:
    r = _dict(r)
    if _num(r.get("value")) is None:
        return None
    low, high = _num(r.get("ci_low")), _num(r.get("ci_high"))
    both = low is not None and high is not None
    return {"value": _num(r["value"]), "ci_low": low if both else None, "ci_high": high if both else None,
            "pairs": r.get("pairs") if isinstance(r.get("pairs"), int) else None}


def _cells_of(doc: Doc | None) -> list[dict[str, Any]]:
    return [c for c in _dict(doc).get("cells") or [] if isinstance(c, dict) and isinstance(c.get("workload"), str)
            and (isinstance(c.get("level"), str) or _num(c.get("concurrency")) is not None)]


def _hardware(hw: Any) -> dict[str, Any] | None:
    """A card's ``hardware`` (report/card.schema.json) with the keys the fleet card shows, wrong types dropped."""
    if not isinstance(hw, dict):
        return None
    gpus = [{"index": g.get("index"), "name": g["name"], "memory_bytes": _num(g.get("memory_bytes"))}
            for g in hw.get("gpus") or [] if isinstance(g, dict) and isinstance(g.get("name"), str)]
    return {"cpu_model": _str(hw.get("cpu_model")),
            "cpu_cores": hw.get("cpu_cores") if isinstance(hw.get("cpu_cores"), int) else None,
            "memory_bytes": _num(hw.get("memory_bytes")), "gpus": gpus}


def _engine(version: Any) -> str | None:
    """An engine version as one string: the card's ``{plain, speculative}`` (one value when equal) or a
    sweep card's string."""
    if isinstance(version, str):
        return version
    v = _dict(version)
    plain, spec = _str(v.get("plain")), _str(v.get("speculative"))
    if plain == spec:
        return plain
    return f"plain {plain or 'unknown'} / speculative {spec or 'unknown'}"


def _task_row(t: Task, gpu_type: str | None, doc: Doc | SweepCard | None,
              unreadable: Mapping[str, str]) -> dict[str, Any]:
    status, reason = t.status, t.reason
    if status == "done" and doc is None:
        name = "card.json" if t.kind == "compare" else "sweep.json"
        status = "failed"
        reason = unreadable.get(t.id) or (f"finished (exit {t.exit_code}) but no {name} came back in "
                                          f"{t.run_dir or 'runs/' + t.id}; see {t.log or 'its log'}")
    return {"id": t.id, "pair": t.pair, "kind": t.kind, "node": t.node.name, "address": t.node.address,
            "gpu_type": gpu_type, "status": status, "runner_status": t.status, "reason": reason,
            "exit_code": t.exit_code, "run_dir": t.run_dir, "log": t.log, "started": t.started,
            "finished": t.finished, "wall_s": t.wall_s}


def _nodes(tasks: Sequence[Task], cards: Mapping[str, Doc | None],
           sweeps: Mapping[str, SweepCard | None]) -> dict[str, dict[str, Any]]:
    """Per node name (sorted): the node's facts, its hardware (the first card that has it) and engine versions."""
    out: dict[str, dict[str, Any]] = {}
    for t in sorted(tasks, key=lambda t: t.node.name):
        n = t.node
        node = out.setdefault(n.name, {"name": n.name, "id": n.id, "address": n.address, "hostname": n.hostname,
                                        "gpu_type": None, "gpu_type_source": None, "resources": dict(n.resources),
                                        "labels": dict(n.labels), "hardware": None, "engine_versions": [],
                                        "tasks": dict.fromkeys(STATUSES, 0)})
        card = _dict(cards.get(t.id))
        if node["hardware"] is None:
            node["hardware"] = _hardware(card.get("hardware"))
        sweep = sweeps.get(t.id)
        versions = [*_dict(card.get("engine_version")).values(), sweep.engine_version if sweep else None]
        node["engine_versions"] = sorted({*node["engine_versions"], *(v for v in versions if isinstance(v, str))})
    for t in tasks:
        node = out[t.node.name]
        if node["gpu_type"] is None:
            node["gpu_type"], node["gpu_type_source"] = gpu_type_of(t.node, node["hardware"])
    return out


def _compare_node(row: Mapping[str, Any], card: Doc | None) -> dict[str, Any]:
    c = _dict(card)
    v = c.get("verdict")
    verdict = None if not isinstance(v, dict) else {"declared": _bool(v.get("declared")),
                                                    "passed": _bool(v.get("passed")), "summary": _str(v.get("summary"))}
    return {"node": row["node"], "gpu_type": row["gpu_type"], "task": row["id"], "status": row["status"],
            "reason": row["reason"], "exit_code": row["exit_code"], "complete": _bool(c.get("complete")),
            "failure": _str(c.get("failure")), "verdict": verdict, "engine_version": c.get("engine_version"),
            "engine": _engine(c.get("engine_version"))}


def _head(cell: Mapping[str, Any]) -> dict[str, Any]:
    return {"workload": cell["workload"], "level": CellKey.of(cell).label, "concurrency": cell.get("concurrency"),
            "rate_rps": cell.get("rate_rps"), "nodes": []}


def _compare_entry(row: Mapping[str, Any], cell: Mapping[str, Any]) -> dict[str, Any]:
    acc = _dict(_dict(cell.get("speculative")).get("acceptance"))
    ratios = _dict(cell.get("ratios"))
    return {"node": row["node"], "gpu_type": row["gpu_type"], "status": row["status"],
            "complete": cell.get("complete") is not False,
            "ratios": {m: _ratio(ratios.get(m)) for m in RATIO_METRICS},
            "acceptance_rate": _num(acc.get("acceptance_rate")),
            "mean_acceptance_length": _num(acc.get("mean_acceptance_length"))}


def _compare_pair(pair: str, rows: Sequence[Mapping[str, Any]], cards: Mapping[str, Doc | None]) -> dict[str, Any]:
    cells: dict[CellKey, dict[str, Any]] = {}
    for row in rows:
        for cell in _cells_of(cards.get(row["id"])):
            cells.setdefault(CellKey.of(cell), _head(cell))["nodes"].append(_compare_entry(row, cell))
    return {"pair": pair, "kind": "compare", "nodes": [_compare_node(r, cards.get(r["id"])) for r in rows],
            "cells": list(cells.values())}


def _f(x: float | None) -> float | None:
    """A sweep card's number as the fleet card writes it (a float)."""
    return None if x is None else float(x)


def _sweep_node(row: Mapping[str, Any], sweep: SweepCard | None) -> dict[str, Any]:
    rec = sweep.recommendation if sweep else None
    workloads = [{"workload": w.workload, "static": w.static, "static_speedup": _f(w.static_speedup),
                  "off_above_concurrency": w.off_above_concurrency} for w in (rec.workloads if rec else [])]
    return {"node": row["node"], "gpu_type": row["gpu_type"], "task": row["id"], "status": row["status"],
            "reason": row["reason"], "exit_code": row["exit_code"], "measured": sweep is not None,
            "engine": sweep.engine_version if sweep else None, "recommendation": rec.static if rec else None,
            "criteria_declared": sweep is not None and sweep.criteria_declared,
            "meets_criteria": rec.meets_criteria if rec else None, "workloads": workloads,
            "lines": list(rec.lines) if rec else []}


def _speedup(e: SweepEntry) -> dict[str, Any]:
    both = e.speedup_ci_low is not None and e.speedup_ci_high is not None
    return {"candidate": e.candidate, "speedup": _f(e.speedup),
            "speedup_ci_low": _f(e.speedup_ci_low) if both else None,
            "speedup_ci_high": _f(e.speedup_ci_high) if both else None,
            "acceptance_rate": _f(e.acceptance_rate), "mean_acceptance_length": _f(e.mean_acceptance_length)}


def _sweep_entry(row: Mapping[str, Any], cell: SweepCell, level: LevelChoice | None) -> dict[str, Any]:
    entries = [_speedup(e) for e in cell.entries]
    best = level.best if level else None
    chosen = next((e for e in entries if best is not None and e["candidate"] == best), None) or {}
    return {"node": row["node"], "gpu_type": row["gpu_type"], "status": row["status"], "best": best,
            "tied": list(level.tied) if level else [], "speedup": chosen.get("speedup"),
            "speedup_ci_low": chosen.get("speedup_ci_low"), "speedup_ci_high": chosen.get("speedup_ci_high"),
            "entries": entries}


def _sweep_pair(pair: str, rows: Sequence[Mapping[str, Any]], sweeps: Mapping[str, SweepCard | None]) -> dict[str, Any]:
    cells: dict[CellKey, dict[str, Any]] = {}
    metric, definition = None, None
    for row in rows:
        s = sweeps.get(row["id"])
        if s is None:
            continue
        metric, definition = metric or s.primary_metric, definition or s.speedup_definition or None
        levels = {(w.workload, lv.level): lv for w in s.recommendation.workloads for lv in w.levels}
        for cell in s.cells:
            key = CellKey.named(cell.workload, cell.level, cell.concurrency)
            head: dict[str, Any] = {"workload": cell.workload, "level": key.label, "concurrency": cell.concurrency,
                    "rate_rps": cell.rate_rps, "nodes": []}
            cells.setdefault(key, head)["nodes"].append(_sweep_entry(row, cell, levels.get(key)))
    return {"pair": pair, "kind": "sweep", "primary_metric": metric, "speedup_definition": definition,
            "nodes": [_sweep_node(r, sweeps.get(r["id"])) for r in rows], "cells": list(cells.values())}


def build_fleet_card(fleet: TaskList, cards: Mapping[str, Doc | None], sweeps: Mapping[str, SweepCard | None],
                     unreadable: Mapping[str, str] | None = None) -> FleetCard:
    """The fleet card of a task list (records/fleettasks.py) and its cards by task id (shape: the module
    docstring)."""
    nodes = _nodes(fleet.tasks, cards, sweeps)
    docs = {t.id: cards.get(t.id) if t.kind == "compare" else sweeps.get(t.id) for t in fleet.tasks}
    rows = [_task_row(t, nodes[t.node.name]["gpu_type"], docs[t.id], unreadable or {}) for t in fleet.tasks]
    for row in rows:
        nodes[row["node"]]["tasks"][row["status"]] += 1
    by_pair: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        by_pair.setdefault((row["kind"], row["pair"]), []).append(row)
    pairs = [_compare_pair(p, sorted(rs, key=lambda r: r["node"]), cards)
             for (kind, p), rs in by_pair.items() if kind == "compare"]
    sweep_pairs = [_sweep_pair(p, sorted(rs, key=lambda r: r["node"]), sweeps)
                   for (kind, p), rs in by_pair.items() if kind == "sweep"]
    counts = {"tasks": len(rows), **{s: sum(r["status"] == s for r in rows) for s in STATUSES}}
    return FleetCard.from_json({"schema": FLEET_SCHEMA, "name": fleet.name, "ratio_definition": RATIO_DEFINITION,
            "metrics": list(RATIO_METRICS), "flag_rule": FLAG_RULE, "counts": counts, "tasks": rows,
            "nodes": list(nodes.values()), "pairs": pairs, "sweeps": sweep_pairs,
            "flags": ratio_flags(pairs, RATIO_METRICS) + sweep_flags(sweep_pairs)},
                               source=f"the fleet card being built for {fleet.name}")
