"""The parts of a ``cells.jsonl`` line (records/cell.py ``CellEntry``) that prom/ and measure/ build for run/ to
put on it: the server's counter deltas (:class:`ServerCounters`, measure/counterchecks.py ``server_counters``),
the spec-decode deltas (:class:`SpecDecodeDeltas`) with K beside them (:class:`VerificationDepth`,
``verification_depth``), one gauge sample (:class:`GaugeSample`, prom/scrape.py ``sample_gauges``; a line of
``metrics/<cell>__gauges.jsonl``), one gauge's summary over the cell (:class:`GaugeSummary`,
``summarize_gauges``), one server histogram's delta (:class:`ServerHistogram`, ``server_histograms``),
loadgen's own load (:class:`ClientLoad`) and the Prometheus cross-check (:class:`PromqlCheck`). Units: s,
requests, tokens, Unix seconds; gauges as vLLM exposes them (a share 0-1, requests).

Each but the gauge sample is a :class:`~loadgen.records.cardwire.Wire` record: ``to_json`` writes every
required field in declared order (the line's keys as earlier code wrote them) and ``from_json`` reads one back
checked, keeping the keys it read in their order, so a line reads and writes back byte-identically whatever
code wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loadgen.records.cardcell import Distribution
from loadgen.records.cardwire import Wire


@dataclass(frozen=True)
class ServerCounters(Wire):
    """The server's counters over a cell, read per ``engine``: finished requests (every ``finished_reason``)
    and generated tokens, summed over the engines whose counters held (None: the counter is absent from a
    scrape); the engine labels seen and those whose counters went down or vanished; the process start time
    (Unix s) before and after (None entries where the server does not expose it)."""

    server_finished_requests: float | None
    server_generation_tokens: float | None
    server_engines: tuple[str, ...]
    server_reset_engines: tuple[str, ...]
    process_start_time_s: tuple[float | None, ...]


@dataclass(frozen=True)
class VerificationDepth(Wire):
    """K beside a cell's spec-decode deltas: ``k`` (declared ``num_speculative_tokens``; None when absent),
    ``k_fixed`` (whether draft tokens = K x drafts applies), ``k_variable_reason`` (why not, a phrase; None when
    fixed) and ``mean_verified_tokens_per_step`` (Δdraft tokens / Δdrafts, 0..K; None without drafts)."""

    k: int | None
    k_fixed: bool
    k_variable_reason: str | None
    mean_verified_tokens_per_step: float | None


@dataclass(frozen=True)
class GaugeSummary(Wire):
    """One gauge over a cell: mean and max of the samples that carry it (None when none do), their number
    (``samples``, a float as earlier code wrote it) and ``metric``, the name read (an older one on an older
    server)."""

    mean: float | None
    max: float | None
    samples: float
    metric: str | None = None  # None: a line of older code, which read the current name only


@dataclass(frozen=True)
class SpecDecodeDeltas(Wire):
    """A cell's spec-decode counter deltas as ``cells.jsonl`` holds them (``spec_decode``): prom/deltas.py
    ``SpecDecodeCounters``' fields (drafts, draft tokens, accepted tokens, accepted per position 0..K-1, whether
    every engine reset, the engines seen and those left out), then :class:`VerificationDepth`'s. A delta that
    was NaN or Inf reads null (measure/counterfaults.py names it); a line of older code lacks the engines and
    K."""

    TITLE = "spec-decode deltas"

    num_drafts: float | None
    num_draft_tokens: float | None
    num_accepted_tokens: float | None
    accepted_per_position: tuple[float | None, ...]
    reset: bool = False
    engines: tuple[str, ...] = ()
    reset_engines: tuple[str, ...] = ()
    k: int | None = None
    k_fixed: bool = True
    k_variable_reason: str | None = None
    mean_verified_tokens_per_step: float | None = None

    def value(self, name: str) -> float:
        """The delta ``name`` (a field above) as a number, 0 where it read null."""
        return float(getattr(self, name) or 0)


@dataclass(frozen=True)
class ClientLoad(Wire):
    """loadgen's own load during a cell (measure/metrics.py ``ClientUse``): CPU seconds of the process, cores
    (CPU s / wall s) and the measured requests' send lag (s; records/cardcell.py ``Distribution``)."""

    TITLE = "client load"

    cpu_s: float
    cpu_cores: float
    send_lag_s: Distribution


@dataclass(frozen=True)
class ServerHistogram(Wire):
    """One server histogram's delta over a cell: the name read (``metric``), observations (``count``) and their
    ``sum`` (s), the bucket bounds (s; the last ``"+Inf"`` in strict JSON, null in older strict files) with
    their cumulative counts, whether a counter reset was seen, and p50/p90/p99 (PromQL ``histogram_quantile``;
    None without observations) with whether each lies in the ``+Inf`` bucket (its value is then the highest
    finite bound, the true quantile above it)."""

    metric: str | None = None
    count: float = 0.0
    sum: float = 0.0
    upper_bounds: tuple[float | str | None, ...] = ()
    cumulative_counts: tuple[float, ...] = ()
    reset: bool = False
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    p50_above_bound: bool = False
    p90_above_bound: bool = False
    p99_above_bound: bool = False


@dataclass(frozen=True)
class GaugeSample:
    """One scrape of the gauges during a cell: ``t_s`` (s on the cell's clock; None in a sample built without
    one), each gauge's value by the name the server exposes it under (None: absent), or the scrape's
    ``error`` (its exception, 200 characters at most) instead of values. Its line is flat:
    ``{"t_s": ..., "<metric>": value, ...}`` or ``{"t_s": ..., "error": message}``."""

    t_s: float | None = None
    values: Mapping[str, float | None] = field(default_factory=dict)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The flat line (class docstring); ``t_s`` first, left out when None, then the values, then the error."""
        out: dict[str, Any] = {} if self.t_s is None else {"t_s": self.t_s}
        out |= self.values
        return out if self.error is None else out | {"error": self.error}

    @classmethod
    def of(cls, line: Mapping[str, Any]) -> GaugeSample:
        """The sample of a flat line (inverse of :meth:`to_json`): ``t_s`` and ``error`` by name, every other key
        a gauge (a value that is not a number reads as None)."""
        values = {
            k: v if isinstance(v, int | float) and not isinstance(v, bool) else None
            for k, v in line.items()
            if k not in ("t_s", "error")
        }
        t_s, error = line.get("t_s"), line.get("error")
        return cls(float(t_s) if isinstance(t_s, int | float) else None, values, None if error is None else str(error))

    def value(self, name: str) -> float | None:
        """The gauge ``name``'s value in this sample; None when absent."""
        return self.values.get(name)


@dataclass(frozen=True)
class PromqlCheck(Wire):
    """The cell's spec-decode deltas as Prometheus saw them (run/observe.py, ``cells.jsonl`` ``promql``): the
    series ``selector``, the ``window`` [start, end] (Unix s), the ``counters`` (prom/deltas.py
    ``SpecDecodeCounters`` fields; None when Prometheus had none) and the ``disagreements`` with the direct
    scrape (one phrase each); or only the query's ``error``."""

    selector: str | None = None
    window: tuple[float, ...] = ()
    counters: Mapping[str, Any] | None = None
    disagreements: tuple[str, ...] = ()
    error: str | None = None
