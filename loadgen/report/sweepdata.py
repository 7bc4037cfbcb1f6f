"""The sweep card's data (``sweep.json``, schema ``loadgen.sweep/1``, report/sweep.schema.json) from a
sweep folder: each candidate's pair card, the plain baseline's drift between ``plain-before`` and
``plain-after``, and the recommendation (measure/ranking.py holds the rules and formulas)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from loadgen.measure.metrics import per_prompt
from loadgen.measure.ranking import Entry, drift_warning, ranked_gap, speedup_of, upper_bound
from loadgen.measure.ratios import paired_median_ratio
from loadgen.profile.candidates import Candidate
from loadgen.profile.cells import CellKey
from loadgen.report.rundir import load_records
from loadgen.report.sweeprec import recommend

SWEEP_SCHEMA = "loadgen.sweep/1"
#: The per-request timing behind each paired primary metric (the drift is measured on it).
_TIMING = {"ttft_p50": "ttft_s", "tpot_p50": "tpot_s", "e2e_p50": "e2e_s"}
_PLAIN_PHASES = ("plain-before", "plain-after")


def _per_prompt(run_dir: Path, key: CellKey, field: str) -> dict[str, float]:
    if not (run_dir / "requests.jsonl").is_file():
        return {}
    return per_prompt((r for r in load_records(run_dir)
                       if r.role == "plain" and r.phase == "measured" and CellKey.of(r.__dict__) == key), field)


def plain_drift(sweep_dir: Path, key: CellKey, metric: str,
                saved: Mapping[CellKey, dict[str, Any]] | None = None) -> dict[str, Any]:
    """plain-after / plain-before of ``metric``'s per-request timing at cell ``key`` (paired by prompt,
    bootstrap 95% CI, measure/ratios.py); TPOT for a metric without a per-request timing. Without both
    plain phases' requests.jsonl (a committed example keeps statistics only) the drift ``saved`` in the
    earlier sweep.json for ``key``, when there is one."""
    field = _TIMING.get(metric, "tpot_s")
    kept = (saved or {}).get(key)
    if kept is not None and not all((sweep_dir / p / "requests.jsonl").is_file() for p in _PLAIN_PHASES):
        return dict(kept)
    r = paired_median_ratio(_per_prompt(sweep_dir / "plain-before", key, field),
                            _per_prompt(sweep_dir / "plain-after", key, field))
    return {"timing": field, "value": r.value, "ci_low": r.ci_low, "ci_high": r.ci_high, "pairs": r.pairs}


def _entry(c: Candidate, cell: dict[str, Any], metric: str,
           verdict_cells: dict[tuple[str, int], str]) -> dict[str, Any]:
    spec = cell.get("speculative") or {}
    acc = spec.get("acceptance") or {}
    cost = cell.get("cost") or {}
    value, low, high = speedup_of(metric, (cell.get("ratios") or {}).get(metric))
    return {"candidate": c.name, "k": c.k, "method": c.speculative.get("method"), "draft_weights": c.draft_weights,
            "ratio": (cell.get("ratios") or {}).get(metric), "speedup": value, "speedup_ci_low": low,
            "speedup_ci_high": high, "acceptance_rate": acc.get("acceptance_rate"),
            "mean_acceptance_length": acc.get("mean_acceptance_length"), "per_position": acc.get("per_position"),
            "tokens_per_decode_chunk": spec.get("mean_tokens_per_decode_chunk"),
            "predicted_speedup": cost.get("predicted_speedup"), "step_time_ratio": cost.get("step_time_ratio"),
            "upper_bound": upper_bound(c.k, cost.get("step_time_ratio")),
            "criteria_status": verdict_cells.get((cell["workload"], int(cell.get("concurrency") or 0)))}


def entry_of(e: dict[str, Any]) -> Entry:
    """The ranking's view of a sweep-card cell entry."""
    return Entry(e["candidate"], e["k"], e["draft_weights"], e["speedup"], e["speedup_ci_low"], e["speedup_ci_high"])


def _candidate(c: Candidate, card: dict[str, Any] | None, seconds: float | None) -> dict[str, Any]:
    diff = ((card or {}).get("resources") or {}).get("difference") or {}
    verdict = (card or {}).get("verdict") or {}
    return {"name": c.name, "speculative_config": dict(c.speculative), "k": c.k, "draft_weights": c.draft_weights,
            "folder": c.name, "measured": card is not None, "complete": bool((card or {}).get("complete")),
            "verdict_passed": verdict.get("passed"), "verdict_summary": verdict.get("summary"),
            "kv_capacity_loss": diff.get("kv_capacity_loss"), "kv_cache_tokens_lost": diff.get("kv_cache_tokens_lost"),
            "extra_cpu_rss_bytes": diff.get("extra_cpu_rss_bytes"),
            "extra_gpu_memory_bytes": diff.get("extra_gpu_memory_bytes"), "time_s": seconds}


def _cards(sweep_dir: Path, candidates: Sequence[Candidate]) -> dict[str, dict[str, Any]]:
    out = {}
    for c in candidates:
        path = sweep_dir / c.name / "card.json"
        if path.is_file():
            out[c.name] = json.loads(path.read_text())
    return out


def _primary(cards: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any] | None]:
    for card in cards.values():
        criteria = (card.get("verdict") or {}).get("criteria")
        if criteria:
            return str((criteria.get("primary") or ["tpot_p50"])[0]), criteria
    return "tpot_p50", None


def _saved_drifts(saved: Mapping[str, Any] | None) -> dict[CellKey, dict[str, Any]]:
    return {CellKey.of(c): c["drift"] for c in (saved or {}).get("cells", []) if c.get("drift")}


def _cells(sweep_dir: Path, candidates: Sequence[Candidate], cards: dict[str, dict[str, Any]],
           metric: str, saved: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    drifts = _saved_drifts(saved)
    keys: dict[CellKey, dict[str, Any]] = {}
    for card in cards.values():
        for cell in card.get("cells", []):
            keys.setdefault(CellKey.of(cell), {"workload": cell["workload"], "level": CellKey.of(cell).level,
                                               "concurrency": cell.get("concurrency"),
                                               "rate_rps": cell.get("rate_rps")})
    out = []
    for key, head in keys.items():
        entries = []
        for c in candidates:
            card = cards.get(c.name) or {}
            cell = next((x for x in card.get("cells", []) if CellKey.of(x) == key), None)
            if cell is not None:
                verdict_cells = {(v["workload"], int(v["concurrency"])): v["status"]
                                 for v in (card.get("verdict") or {}).get("cells", [])}
                entries.append(_entry(c, cell, metric, verdict_cells))
        drift = plain_drift(sweep_dir, key, metric, drifts)
        warning = drift_warning(f"{key.workload} {key.level}", drift["value"],
                                ranked_gap([entry_of(e) for e in entries]))
        out.append(head | {"entries": entries, "drift": drift, "drift_warning": warning})
    return out


def build_sweep_card(sweep_dir: Path, candidates: Sequence[Candidate], times: dict[str, float],
                     engine_version: str | None, saved: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The sweep card of ``sweep_dir`` (shape: report/sweep.schema.json). ``saved``: the earlier sweep.json
    when re-rendering; its pair name and folder (where it was measured) and its drifts where the plain
    phases' requests.jsonl are gone are kept."""
    cards = _cards(sweep_dir, candidates)
    metric, criteria = _primary(cards)
    cells = _cells(sweep_dir, candidates, cards, metric, saved)
    rows = [_candidate(c, cards.get(c.name), times.get(c.name)) for c in candidates]
    return {
        "schema": SWEEP_SCHEMA, "pair": (saved or {}).get("pair") or sweep_dir.parent.name,
        "sweep_dir": (saved or {}).get("sweep_dir") or str(sweep_dir),
        "engine_version": engine_version, "primary_metric": metric,
        "speedup_definition": ("plain / speculative of the primary metric (1 / the pair card's ratio) for a latency, "
                               "the ratio itself for a throughput; > 1 is faster"),
        "upper_bound_formula": "(K + 1) / step_time_ratio, step_time_ratio = speculative / plain step time",
        "criteria_declared": criteria is not None, "criteria": criteria,
        "times_s": dict(times), "candidates": rows, "cells": cells,
        "drift_warnings": [c["drift_warning"] for c in cells if c["drift_warning"]],
        "recommendation": recommend(cells, rows, criteria, engine_version),
    }
