"""The ratios of one card cell, arm / plain, with their 95% CIs (pure).

- A run measured in blocks (protocol.json has a ``design``): every ratio comes from the block-level paired
  ratios (measure/blocks.py): the p50 latencies per block as the paired ratio of medians over the block's
  prompts (measure/ratios.py), the p99 latencies and throughputs per block from each side's statistics over
  the block. Each ratio carries ``ci_method = "blocks"``, its block count and spreads.
- A run of older code (no blocks): the p50 latencies with the paired bootstrap over the prompts of the one
  time window, ``ci_method = "within-run"``: those intervals do not include the server's own movement.

Every ratio is the card's :class:`~loadgen.records.cardcell.Ratio` with ``value``, ``ci_low``, ``ci_high`` and
``pairs`` written even when None (measure/ratios.py ``Ratio``), then its method's fields.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from loadgen.measure.blocks import block_ratio
from loadgen.measure.metrics import CellStats, MeasuredRequest, cell_stats, per_prompt
from loadgen.measure.ratios import Ratio, paired_median_ratio, paired_median_with_sd, simple_ratio
from loadgen.records import cardcell
from loadgen.records.request import RequestRecord

#: The paired p50 latencies and the per-request timing each is the median of.
PAIRED = {"ttft_p50": "ttft_s", "tpot_p50": "tpot_s", "e2e_p50": "e2e_s"}
#: The ratios of two cells' statistics (no per-prompt pairing): metric -> the statistic it reads.
SIDES: dict[str, Callable[[CellStats], float | None]] = {
    "itl_p50": lambda s: s.itl_s.p50,
    "ttft_p95": lambda s: s.ttft_s.p95,
    "ttft_p99": lambda s: s.ttft_s.p99,
    "e2e_p95": lambda s: s.e2e_s.p95,
    "e2e_p99": lambda s: s.e2e_s.p99,
    "output_throughput": lambda s: s.output_throughput_tps,
    "request_throughput": lambda s: s.request_throughput_rps,
}
METRICS = (*PAIRED, *SIDES)
#: A block ratio's keys on the card, in their order.
_BLOCKED = (
    "value",
    "ci_low",
    "ci_high",
    "pairs",
    "ci_method",
    "blocks",
    "between_block_sd",
    "within_block_sd",
    "block_ratios",
)


def stats_of(records: Sequence[RequestRecord]) -> CellStats:
    """cell_stats over ``records`` (no counters)."""
    return cell_stats(
        [
            MeasuredRequest(r.scheduled_s, r.send_s, r.chunk_arrivals_s, r.chunk_tokens, r.error is not None)
            for r in records
        ],
        None,
    )


def within_run_ratios(
    plain: Sequence[RequestRecord], arm: Sequence[RequestRecord], p: CellStats, a: CellStats
) -> dict[str, cardcell.Ratio]:
    """The ratios of a run without blocks (module docstring), as older cards had them, marked within-run."""
    out: dict[str, Ratio] = {
        m: paired_median_ratio(per_prompt(plain, f), per_prompt(arm, f)) for m, f in PAIRED.items()
    }
    out |= {m: simple_ratio(read(p), read(a)) for m, read in SIDES.items()}
    return {
        m: cardcell.Ratio(r.value, r.ci_low, r.ci_high, r.pairs, ci_method="within-run").keyed(
            "value", "ci_low", "ci_high", "pairs", "ci_method"
        )
        for m, r in out.items()
    }


def _by_block(records: Sequence[RequestRecord]) -> dict[int, list[RequestRecord]]:
    out: dict[int, list[RequestRecord]] = {}
    for r in records:
        out.setdefault(r.repetition, []).append(r)
    return out


def blocked_ratios(plain: Sequence[RequestRecord], arm: Sequence[RequestRecord]) -> dict[str, cardcell.Ratio]:
    """Every ratio of :data:`METRICS` from the blocks both sides measured (module docstring)."""
    p_blocks, a_blocks = _by_block(plain), _by_block(arm)
    common = sorted(set(p_blocks) & set(a_blocks))
    per_block: dict[str, list[float | None]] = {m: [] for m in METRICS}
    within: dict[str, list[float | None]] = {m: [] for m in PAIRED}
    pairs: dict[str, int] = dict.fromkeys(METRICS, 0)
    for b in common:
        pb, ab = p_blocks[b], a_blocks[b]
        for m, f in PAIRED.items():
            r, sd = paired_median_with_sd(per_prompt(pb, f), per_prompt(ab, f))
            per_block[m].append(r.value)
            within[m].append(sd)
            pairs[m] += r.pairs
        ps, as_ = stats_of(pb), stats_of(ab)
        for m, read in SIDES.items():
            per_block[m].append(simple_ratio(read(ps), read(as_)).value)
            pairs[m] += 1
    out: dict[str, cardcell.Ratio] = {}
    for m in METRICS:
        br = block_ratio(per_block[m], within.get(m, ()))
        out[m] = cardcell.Ratio(
            br.value,
            br.ci_low,
            br.ci_high,
            pairs[m],
            ci_method="blocks",
            blocks=br.blocks,
            between_block_sd=br.between_block_sd,
            within_block_sd=br.within_block_sd,
            block_ratios=tuple(br.block_ratios),
        ).keyed(*_BLOCKED)
    return out
