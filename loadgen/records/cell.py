"""One cell on one server, one block: :class:`CellEntry`, one line of ``cells.jsonl``.

Built by run/cellentry.py (``cell_entry``) from what the cell produced, completed by run/cell.py with the
observers' fields (``push_error``, ``promql``: run/observe.py) and the block's ``state``
(measure/blockstate.py), appended to ``cells.jsonl`` when the cell ends; read back by report/ (the card,
the sweep card), run/ (``--resume``, sizing, the sweep split) and measure/ (counter checks, block state,
step times). Times in s, rates per s, counts in requests or tokens (docs/metrics.md, "Counter deltas,
resets and restart evidence").

Its parts are the records/cellparts.py and records/blockstate.py records: ``spec_decode`` (the spec-decode
counter deltas with K, ``SpecDecodeDeltas``; None without spec-decode counters), ``server_histograms`` (a
``ServerHistogram`` each), ``gauges`` (a ``GaugeSummary`` each), ``client`` (``ClientLoad``), ``promql``
(``PromqlCheck``) and ``state`` (``BlockState``).

A line of older code lacks some fields: each takes the default below (None where absence means "not
recorded"), and ``keys`` keeps the line's own keys in their order, so it writes back byte-identically.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from loadgen.records.blockstate import BlockState
from loadgen.records.cardwire import Whole
from loadgen.records.cellparts import ClientLoad, GaugeSummary, PromqlCheck, ServerHistogram, SpecDecodeDeltas
from loadgen.records.request import CellKeyed


@dataclass(frozen=True)
class CellEntry(Whole, CellKeyed):
    """One ``cells.jsonl`` line (module docstring). ``role``, ``workload`` and ``concurrency`` are required."""

    role: str
    workload: str
    concurrency: int
    level: str = ""
    rate_rps: float | None = None
    repetition: int = 0
    started_utc: str | None = None
    duration_s: float = 0.0
    measured_prompt_ids: list[str] = field(default_factory=list)
    warmup_prompt_ids: list[str] = field(default_factory=list)
    spec_decode: SpecDecodeDeltas | None = None
    server_histograms: Mapping[str, ServerHistogram] = field(default_factory=dict)
    gauges: Mapping[str, GaugeSummary] | None = None  # None: a line without the summarized gauges
    server_finished_requests: float | None = None
    client_sent_requests: int | None = None
    foreign_traffic: bool = False
    client_window_failed: int | None = None  # older lines: None, the errors count stands in
    client_window_output_tokens: int | None = None
    server_generation_tokens: float | None = None
    server_engines: list[str] = field(default_factory=list)
    server_reset_engines: list[str] = field(default_factory=list)
    process_start_time_s: list[float | None] = field(default_factory=lambda: [None, None])
    errors: int = 0
    error_categories: Mapping[str, int] = field(default_factory=dict)
    usage_mismatches: int = 0
    output_length_mismatches: int = 0
    metrics_error: str | None = None
    failure: str | None = None
    notes: list[str] = field(default_factory=list)
    client: ClientLoad | None = None  # None: a line of older code
    restart_evidence: list[str] = field(default_factory=list)
    #: Signs that more than one server answered at the URL (measure/replicas.py); written only when found.
    replica_evidence: list[str] = field(default_factory=list)
    counter_faults: list[str] = field(default_factory=list)  # measure/counterfaults.py bad_samples
    push_error: str | None = None
    promql: PromqlCheck | None = None
    state: BlockState | None = None

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Self:
        """An entry built anew from its fields (run/cellentry.py), checked as a line read back would be."""
        return cls.from_json(dict(values), source="the cell entry being built")
