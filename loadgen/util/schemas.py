"""The card as a type (``Card``, ``loadgen.card/1``: written by report/carddata.py and savedcard.py, read by
card.py, plots.py, summary.py, diffing.py; its JSON Schema is report/card.schema.json). ``cells.jsonl`` and
``requests.jsonl`` lines are records/cell.py's ``CellEntry`` and records/request.py's ``RequestRecord``.

Here, the lowest layer, so that writer and reader import the same type. Every key is optional to the
type checker (older files lack some); the JSON Schema says which are required.
"""

from __future__ import annotations

from typing import Any, TypedDict


class Card(TypedDict, total=False):
    """The pair card (``card.json``, schema ``loadgen.card/1``)."""

    schema: str
    pair: str
    generated_utc: str
    complete: bool
    failure: str | None
    requests_on_disk: dict[str, int]
    target: dict[str, Any]
    draft: dict[str, Any] | None
    speculative_config: dict[str, Any] | None
    sampling: dict[str, Any]
    engine_version: dict[str, str | None]
    servers: dict[str, dict[str, Any]]
    workloads: list[dict[str, Any]]
    workloads_statement: str
    context_axis: dict[str, list[dict[str, Any]]]
    concurrency: list[int]
    load: dict[str, Any] | None
    stop_rule: dict[str, Any]
    command_line: dict[str, Any]  # only when the command line gave values (profile/overrides.py)
    prompts_sha256: str
    cells: list[dict[str, Any]]  # one per workload x level; keys in report/card.schema.json
    crossover: dict[str, Any]
    design: dict[str, Any] | None
    noise_floor: dict[str, Any]
    slo: dict[str, Any]
    capacity: dict[str, Any]
    resources: dict[str, Any]
    placement: dict[str, dict[str, Any]]
    verdict: dict[str, Any]
    hardware: dict[str, Any] | None
    plots: list[str]
    statistics_from: str
    trace: dict[str, Any] | None  # trace workloads over time (report/tracedata.py); None without one
