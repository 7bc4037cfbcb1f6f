"""One cell of the pair card (``card.json`` ``cells[]``): both servers' statistics, the speculative / plain
ratios, the lossless check and the cost decomposition (docs/metrics.md defines every figure). Times in s,
throughputs per s, ratios speculative / plain. Built by report/carddata.py, read through
:class:`~loadgen.records.card.PairCard`; the reading rules are records/cardwire.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loadgen.records.cardwire import Wire
from loadgen.util.numbers import ratio


@dataclass(frozen=True)
class Distribution(Wire):
    """A sample's summary (measure/metrics.py Distribution): count, mean and percentiles, in the sample's unit
    (numpy linear interpolation; None when the sample is empty)."""

    count: int
    p50: float | None
    p99: float | None
    mean: float | None = None
    p90: float | None = None
    p95: float | None = None


@dataclass(frozen=True)
class Acceptance(Wire):
    """Speculative-decoding acceptance of a cell from vLLM's spec-decode counter deltas (docs/metrics.md
    "Acceptance"): rate = accepted / draft tokens, length = 1 + accepted / drafts."""

    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    per_position: tuple[float | None, ...] = ()
    num_drafts: float | None = None
    num_draft_tokens: float | None = None
    num_accepted_tokens: float | None = None


@dataclass(frozen=True)
class ServerVsClient(Wire):
    """The client p50 next to the server histogram's p50 of the same latency (measure/serverside.py)."""

    client_p50: float | None = None
    server_p50: float | None = None
    server_above_bound: bool | None = None
    metric: str | None = None
    agrees: bool | None = None
    bucket_bounds: tuple[float | str, ...] | None = None


@dataclass(frozen=True)
class StepTime(Wire):
    """One server's decode step time in a cell and the burst check (measure/steptime.py): the server
    histogram's mean step (s), the client's decode time per chunk (s) and its basis, the one used
    (``source``), the share of inter-chunk gaps under 0.1 ms and the p50s that are burst artefacts."""

    server_step_s: float | None
    client_step_s: float | None
    client_basis: str
    step_s: float | None
    source: str = field(metadata={"doc": "server or client"})
    burst_share: float | None
    icl_p50_s: float | None
    burst_artefacts: tuple[str, ...]


@dataclass(frozen=True)
class LosslessCheck(Wire):
    """The greedy lossless check of a cell (measure/diagnosis.py ``lossless``): the prompts both servers
    answered (``pairs``) and how many with identical token ids and finish reasons (``identical``), their share
    (``match_rate``, None without pairs), the first differing position of each differing pair, how many of
    those a stop rule ended differently (length or finish reason; a card of older code lacks it), whether the
    other differences all start past half the output (``late``), and for a lossy rejection ``lossy`` with its
    reason (the match rate is then information, not judged)."""

    pairs: int
    identical: int
    match_rate: float | None
    first_difference: tuple[int, ...]
    stop_differences: int = 0
    late: bool = False
    lossy: bool = False
    lossy_reason: str | None = None

    #: The keys the check writes, in order (every one, even at its default; ``lossy`` ones only when lossy).
    KEYS = ("pairs", "identical", "match_rate", "first_difference", "stop_differences", "late")


@dataclass(frozen=True)
class Cost(Wire):
    """The step-time cost decomposition of a cell (measure/diagnosis.py cost_decomposition): step times (s),
    their ratio, the speedup they predict (acceptance length / step-time ratio) against the measured TPOT
    speedup, ``why`` they disagree; ``unavailable`` instead when a step time is a burst artefact."""

    plain_step_s: float | None = None
    spec_step_s: float | None = None
    acceptance_length: float | None = None
    step_time_ratio: float | None = None
    predicted_speedup: float | None = None
    measured_tpot_speedup: float | None = None
    agrees: bool | None = None
    why: str | None = None
    unavailable: str | None = None
    step_source: str | None = None
    client_basis: str | None = None


@dataclass(frozen=True)
class RoleStats(Wire):
    """One server's statistics in a cell (measure/metrics.py CellStats plus the run's outcomes); ``failure``
    None when the server measured the cell."""

    requests: int
    errors: int
    output_throughput_tps: float | None
    request_throughput_rps: float | None
    ttft_s: Distribution | None
    tpot_s: Distribution | None
    itl_s: Distribution | None
    e2e_s: Distribution | None
    failure: str | None
    output_tokens: int | None = None
    window_s: float | None = None
    peak_output_throughput_tps: float | None = None
    peak_output_note: str | None = None
    icl_s: Distribution | None = None
    send_lag_s: Distribution | None = None
    mean_tokens_per_chunk: float | None = None
    mean_tokens_per_decode_chunk: float | None = None
    acceptance: Acceptance | None = None
    repetitions: int | None = None
    tpot_p50_per_repetition_s: tuple[float | None, ...] | None = None
    server_vs_client: Mapping[str, ServerVsClient] | None = None
    gauges: tuple[Any, ...] | None = field(
        default=None, metadata={"doc": "per repetition: the server's gauges over the window, as scraped"}
    )
    error_categories: Mapping[str, int] | None = None
    finish_reasons: Mapping[str, int] | None = None
    usage_mismatches: int | None = None
    first_chunk_multi_token_requests: int | None = None
    first_chunk_max_tokens: int | None = None
    acceptance_unmeasurable: Any = field(
        default=None, metadata={"doc": "why acceptance is not measured (a server restart), else null"}
    )
    goodput_rps: float | None = None
    slo_holds: bool | None = None
    partial: bool | None = None
    partial_requests: int | None = None
    step_time: StepTime | None = field(
        default=None, metadata={"doc": "the decode step time and its source (measure/steptime.py)"}
    )


@dataclass(frozen=True)
class Ratio(Wire):
    """speculative / plain of one statistic with its 95% CI (measure/cellratios.py; docs/metrics.md "Blocks and
    the paired block CI"); ``value`` None when not measured, the CI ends None without a CI."""

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    pairs: int | None = None
    unavailable: str | None = None
    effect: str | None = field(
        default=None, metadata={"doc": "the effect against the A/A noise floor (report/noisefloor.py)"}
    )
    ci_method: str | None = None
    blocks: int | None = None
    between_block_sd: float | None = None
    within_block_sd: float | None = None
    block_ratios: tuple[float | None, ...] | None = None

    def text(self, digits: int = 3) -> str:
        """``value [ci_low, ci_high]`` to ``digits`` decimals (util/numbers.py ratio; the en dash unmeasured)."""
        return ratio(self.value, self.ci_low, self.ci_high, digits)


@dataclass(frozen=True)
class CellNoiseFloor(Wire):
    """The A/A placebo's ratios in a cell (placebo / plain: the noise floor) and whether each CI holds 1."""

    ratios: Mapping[str, Ratio] | None = field(default=None, metadata={"doc": "metric -> the placebo's ratio"})
    holds: Mapping[str, bool | None] | None = field(
        default=None, metadata={"doc": "metric -> whether the placebo's CI holds 1"}
    )


@dataclass(frozen=True)
class CardCell(Wire):
    """One workload x load level: both servers' statistics (absent for a server that did not measure it), the
    ratios, the diagnosis and the notes."""

    workload: str
    level: str
    concurrency: int
    rate_rps: float | None
    complete: bool
    ratios: Mapping[str, Ratio] = field(metadata={"doc": "metric (ttft_p50, tpot_p50, ...) -> speculative / plain"})
    notes: tuple[str, ...] = field(
        metadata={"doc": "what a reader must know about the cell; BLOCKING: ones stop the verdict"}
    )
    plain: RoleStats | None = None
    speculative: RoleStats | None = None
    noise_floor: CellNoiseFloor | None = None
    lossless: LosslessCheck | None = field(
        default=None, metadata={"doc": "the greedy lossless check (measure/diagnosis.py); null unjudged"}
    )
    cost: Cost | None = field(default=None, metadata={"doc": "the step-time cost decomposition (measure/steptime.py)"})

    def role(self, name: str) -> RoleStats | None:
        """The statistics of the server ``name`` (``plain`` or ``speculative``), None when it did not measure."""
        stats: RoleStats | None = {"plain": self.plain, "speculative": self.speculative}.get(name)
        return stats

    def ratio(self, metric: str) -> Ratio | None:
        """The ratio of ``metric``, None when the card has none."""
        return self.ratios.get(metric)

    def aa_ratio(self, metric: str) -> Ratio | None:
        """The A/A placebo's ratio (placebo / plain) of ``metric``, None without a noise floor or that metric."""
        floor = None if self.noise_floor is None else self.noise_floor.ratios
        return None if floor is None else floor.get(metric)
