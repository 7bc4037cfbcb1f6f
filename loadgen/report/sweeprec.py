"""The sweep card's recommendation (pure): per workload the best candidate at each level, the level
above which no candidate beats plain, one static configuration and, where the engine has it, a
per-batch-size K schedule in its own config syntax (rules and formulas: measure/ranking.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from loadgen.measure.ranking import Entry, best, geomean, k_schedule, off_above, static_choice
from loadgen.profile.fields import FIELD_RANGES, available, parse_version

SCHEDULE_FIELD = "num_speculative_tokens_per_batch_size"


def _entry(e: Mapping[str, Any]) -> Entry:
    return Entry(e["candidate"], e["k"], e["draft_weights"], e["speedup"], e["speedup_ci_low"], e["speedup_ci_high"])


def _in_range(cell: Mapping[str, Any], criteria: Mapping[str, Any] | None) -> bool:
    if not criteria:
        return True
    lo_hi = criteria.get("concurrency")
    workloads = criteria.get("workloads")
    conc = int(cell.get("concurrency") or 0)
    return ((not lo_hi or lo_hi[0] <= conc <= lo_hi[1]) and (not workloads or cell["workload"] in workloads))


def _scores(cells: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
            criteria: Mapping[str, Any] | None, overall: bool = False) -> dict[str, tuple[bool, float | None]]:
    """Per candidate: (meets the declared criteria, geometric-mean speedup over ``cells`` in the declared
    range). Meeting them is: every judged cell here passing, or with ``overall`` the pair card's whole
    verdict (resources included) passing; without criteria, having been measured."""
    out = {}
    for row in rows:
        mine = [e for c in cells if _in_range(c, criteria) for e in c["entries"] if e["candidate"] == row["name"]]
        statuses = [e["criteria_status"] for e in mine]
        judged = row.get("verdict_passed") is True if overall else all(s == "pass" for s in statuses)
        meets = bool(mine) and (criteria is None or judged)
        out[row["name"]] = (meets, geomean([e["speedup"] for e in mine]) if mine else None)
    return out


def _schedule(levels: Sequence[Mapping[str, Any]], choice: Mapping[str, Any] | None,
              rows: Sequence[Mapping[str, Any]], engine_version: str | None) -> dict[str, Any]:
    version = parse_version(engine_version) if engine_version else None
    if version is None or SCHEDULE_FIELD not in available(FIELD_RANGES, version):
        return {"supported": False, "config": None,
                "line": f"the installed engine (vLLM {engine_version or 'unknown'}) has no per-batch-size K schedule "
                        f"({SCHEDULE_FIELD} needs vLLM 0.24+)"}
    if choice is None:
        return {"supported": True, "config": None, "line": "no K schedule: no candidate to schedule"}
    family = {r["name"] for r in rows if {k: v for k, v in r["speculative_config"].items()
                                          if k != "num_speculative_tokens"}
              == {k: v for k, v in choice["speculative_config"].items() if k != "num_speculative_tokens"}}
    per_level = []
    for lv in levels:
        ks = [e for e in lv["entries"] if e.candidate in family and e.beats_plain()]
        winner, _ = best(ks)
        per_level.append((int(lv["concurrency"]), winner.k if winner else 0))
    sched = k_schedule(per_level)
    config = {**choice["speculative_config"], "num_speculative_tokens": max([k for *_, k in sched] + [1]),
              SCHEDULE_FIELD: sched}
    return {"supported": True, "config": config,
            "line": f"K schedule (batch sizes measured as closed-loop concurrency): --speculative-config "
                    f"'{json.dumps(config)}'"}


def _workload(name: str, cells: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
              criteria: Mapping[str, Any] | None, engine_version: str | None) -> dict[str, Any]:
    levels = []
    for c in cells:
        entries = [_entry(e) for e in c["entries"]]
        winner, tied = best(entries)
        pays = winner is not None and winner.beats_plain()
        levels.append({"level": c["level"], "concurrency": c["concurrency"], "entries": entries,
                       "best": winner.candidate if pays and winner else None, "tied": tied if pays else [],
                       "speedup": winner.speedup if winner else None})
    closed = [(int(lv["concurrency"]), next((e for e in lv["entries"] if e.candidate == lv["best"]), None))
              for lv, c in zip(levels, cells, strict=True) if c.get("rate_rps") is None]
    above, sentence = off_above(closed)
    scores = _scores(cells, rows, criteria)
    static = static_choice(scores, {r["name"]: (int(r["draft_weights"]), r["k"], r["name"]) for r in rows})
    choice = next((r for r in rows if r["name"] == static), None)
    schedule = _schedule([lv for lv, c in zip(levels, cells, strict=True) if c.get("rate_rps") is None],
                         choice, rows, engine_version)
    return {"workload": name, "off_above_concurrency": above, "off_sentence": sentence, "static": static,
            "static_speedup": scores[static][1] if static else None, "schedule": schedule,
            "levels": [{k: v for k, v in lv.items() if k != "entries"} for lv in levels]}


def recommend(cells: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
              criteria: Mapping[str, Any] | None, engine_version: str | None) -> dict[str, Any]:
    """The recommendation of a sweep card: ``workloads`` (one per workload), the overall ``static``
    candidate (None: do not speculate), ``meets_criteria`` and the printed ``lines``."""
    names = list(dict.fromkeys(c["workload"] for c in cells))
    workloads = [_workload(w, [c for c in cells if c["workload"] == w], rows, criteria, engine_version) for w in names]
    scores = _scores(cells, rows, criteria, overall=True)
    static = static_choice(scores, {r["name"]: (int(r["draft_weights"]), r["k"], r["name"]) for r in rows})
    meets = any(ok for ok, _ in scores.values()) if criteria is not None else True
    lines = []
    for w in workloads:
        best_at = ", ".join(f"{lv['level']}: {lv['best'] or 'plain'}" for lv in w["levels"])
        lines.append(f"{w['workload']}: best per level {best_at}; {w['off_sentence']}; static: "
                     f"{w['static'] or 'do not speculate'}; {w['schedule']['line']}")
    lines.append(f"recommendation: {static or 'do not speculate'}"
                 + (f" (geometric-mean speedup {scores[static][1]:.3f} over the declared range)"
                    if static and scores[static][1] else ""))
    return {"workloads": workloads, "static": static, "meets_criteria": meets, "lines": lines}
