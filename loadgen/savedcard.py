"""Re-derive a card from its saved statistics when the run folder has no requests.jsonl.

A committed example (docs/examples/h200/) keeps card.json, cells.jsonl and protocol.json but not the
per-request timelines (about 10 MB a run). Rebuilding the card from requests.jsonl is then impossible:
every per-request figure (percentiles, paired bootstrap CIs, goodput, the lossless check) stays as
card.json has it. What depends only on cell-level numbers is recomputed: the step times and the cost
decomposition, the burst check and the ratios it withholds (steptime.py), and the verdict (criteria.py).
The card then says ``statistics_from: "card.json"``; its plots are kept as they were.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loadgen.criteria import judge, parse_criteria
from loadgen.errors import BadInput
from loadgen.rundir import read_json, read_jsonl
from loadgen.steptime import ROLES, apply


def saved_only(run_dir: Path) -> bool:
    """True when ``run_dir`` has a card.json but no requests.jsonl to rebuild it from."""
    return not (run_dir / "requests.jsonl").exists() and (run_dir / "card.json").is_file()


def refresh_saved_card(run_dir: Path) -> dict[str, Any]:
    """card.json of ``run_dir`` with the cell-level diagnosis recomputed (module docstring); the same
    card again when run twice. Raises BadInput when card.json or cells.jsonl is missing."""
    if not (run_dir / "cells.jsonl").is_file() or not (run_dir / "card.json").is_file():
        raise BadInput(f"{run_dir} has neither requests.jsonl nor card.json and cells.jsonl: nothing to build a card "
                       "from; pass a run folder written by `loadgen compare`")
    card: dict[str, Any] = read_json(run_dir / "card.json")
    entries: dict[tuple[str, str, str], dict[str, Any]] = {}
    for e in read_jsonl(run_dir / "cells.jsonl"):  # the first repetition's line, as report.py reads them
        entries.setdefault((e["workload"], e.get("level") or f"c{e['concurrency']}", e["role"]), e)
    for cell in card["cells"]:
        cell["notes"] = [n for n in cell.get("notes") or [] if not any(n.startswith(f"{r}: bursty") for r in ROLES)]
        apply(cell, None, {role: entries.get((cell["workload"], cell["level"], role)) or {} for role in ROLES})
    proto = read_json(run_dir / "protocol.json")
    criteria = parse_criteria({k: v for k, v in (proto.get("criteria") or {}).items() if v is not None},
                              run_dir / "protocol.json")
    diff = (card.get("resources") or {}).get("difference") or {}
    extra = diff.get("extra_gpu_memory_bytes")
    verdict = judge(criteria, card["cells"], {"extra_memory_bytes": extra if extra is not None else
                                              diff.get("extra_cpu_rss_bytes"),
                                              "kv_capacity_loss": diff.get("kv_capacity_loss")})
    card["verdict"] = verdict.to_json() | {"lines": [c.line() for c in verdict.cells]}
    card["generated_utc"] = datetime.now(UTC).isoformat(timespec="seconds")
    card["statistics_from"] = "card.json"
    return card
