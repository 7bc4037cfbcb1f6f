"""The lines on disk as types: a ``cells.jsonl`` line (``CellLine``, written by run/cellentry.py, read by
report/ and measure/). The card (``loadgen.card/1``) is records/card.py's ``PairCard``; ``requests.jsonl``
lines are stream/client.py's ``RequestRecord`` (``to_json``/``from_json``).

Here, the lowest layer, so that writer and reader import the same type. Every key is optional to the
type checker (older files lack some); the JSON Schema says which are required.
"""

from __future__ import annotations

from typing import Any, TypedDict


class CellLine(TypedDict, total=False):
    """One cell on one server, one repetition (``cells.jsonl``). Times in s, rates per s."""

    role: str
    workload: str
    concurrency: int
    level: str
    rate_rps: float | None
    repetition: int
    started_utc: str
    duration_s: float
    measured_prompt_ids: list[str]
    warmup_prompt_ids: list[str]
    spec_decode: dict[str, Any] | None
    server_histograms: dict[str, Any]
    gauges: dict[str, Any]
    server_finished_requests: float | None
    client_sent_requests: int
    foreign_traffic: bool
    errors: int
    error_categories: dict[str, int]
    usage_mismatches: int
    output_length_mismatches: int
    metrics_error: str | None
    failure: str | None
    notes: list[str]
    client: dict[str, Any]
    restart_evidence: list[str]
    client_window_failed: int
    client_window_output_tokens: int
    server_generation_tokens: float | None
    process_start_time_s: list[float | None]
