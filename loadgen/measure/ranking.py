"""Ranking a sweep's candidates against one plain baseline, purely (``loadgen sweep``).

Every figure is a speedup over plain of the primary metric: ``1 / ratio`` for a latency ratio
(speculative / plain; lower is better), the ratio itself for a throughput (higher is better), with the
95% CI mapped the same way. A candidate **beats plain** at a cell when its CI's low end is above 1 (no
CI: its value). The **best** at a cell is the candidate with the highest speedup; every candidate whose
value lies inside the best one's CI **ties** with it, and a tie goes to the cheaper candidate (no draft
weights, then smaller K). The **upper bound** of a cell is what a perfect draft would give at the
measured step-time ratio: every step emits K + 1 tokens, so the speedup is ``(K + 1) / step_time_ratio``
(step_time_ratio = speculative step time / plain step time; the cost decomposition of the pair card).
The **drift** is plain-after / plain-before of the primary metric on the same prompts; a drift larger
than a difference being ranked at a cell (best vs runner-up, best vs plain) makes that ranking a
warning.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: Ratios where lower is better (latencies); the others (throughputs) are better higher.
LOWER_IS_BETTER = frozenset({"ttft_p50", "tpot_p50", "e2e_p50", "itl_p50", "ttft_p99", "e2e_p99"})


@dataclass(frozen=True)
class Entry:
    """One candidate at one cell: its speedup over plain with a 95% CI (None: not measured)."""

    candidate: str
    k: int
    draft_weights: bool
    speedup: float | None
    ci_low: float | None = None
    ci_high: float | None = None

    def cost_key(self) -> tuple[int, int, str]:
        """Cheaper first: no draft weights, then smaller K, then the name."""
        return int(self.draft_weights), self.k, self.candidate

    def beats_plain(self) -> bool:
        """True when the speedup's CI lies above 1 (without a CI: the value)."""
        low = self.ci_low if self.ci_low is not None else self.speedup
        return low is not None and low > 1.0


def speedup_of(metric: str, ratio: Mapping[str, float | None] | None) -> tuple[float | None, float | None,
                                                                                 float | None]:
    """(speedup, ci_low, ci_high) from a card ratio ``{"value", "ci_low", "ci_high"}`` of ``metric``."""
    value = (ratio or {}).get("value")
    if not value:
        return None, None, None
    low, high = (ratio or {}).get("ci_low"), (ratio or {}).get("ci_high")
    if metric not in LOWER_IS_BETTER:
        return value, low, high
    return 1 / value, (1 / high if high else None), (1 / low if low else None)


def best(entries: Sequence[Entry]) -> tuple[Entry | None, list[str]]:
    """The best entry at a cell after the tie rule, and the names tied with the leader (itself
    included). None when nothing was measured."""
    measured = [e for e in entries if e.speedup is not None]
    if not measured:
        return None, []
    leader = max(measured, key=lambda e: (e.speedup, [-x for x in e.cost_key()[:2]]))
    low = leader.ci_low if leader.ci_low is not None else leader.speedup
    high = leader.ci_high if leader.ci_high is not None else leader.speedup
    tied = [e for e in measured if e is leader or (low is not None and high is not None
                                                   and low <= (e.speedup or 0.0) <= high)]
    return min(tied, key=Entry.cost_key), sorted(e.candidate for e in tied)


def ranked_gap(entries: Sequence[Entry]) -> float | None:
    """The smallest difference being ranked at a cell: the best speedup against the runner-up's and
    against plain's 1.0 (only plain's with one measured candidate)."""
    values = sorted((e.speedup for e in entries if e.speedup is not None), reverse=True)
    if not values:
        return None
    return min([abs(values[0] - 1.0)] + ([values[0] - values[1]] if len(values) > 1 else []))


def drift_warning(cell: str, drift: float | None, gap: float | None) -> str | None:
    """One line when the plain baseline's drift (after / before) exceeds the ranked difference."""
    if drift is None or gap is None or abs(drift - 1.0) <= abs(gap):
        return None
    return (f"{cell}: the plain baseline drifted {100 * (drift - 1):+.1f}% between before and after, more than "
            f"the {abs(gap):.3f} speedup difference being ranked; the ranking there is within the noise")


def upper_bound(k: int, step_time_ratio: float | None) -> float | None:
    """The speedup of a perfect draft: ``(K + 1) / step_time_ratio``; None without a step-time ratio."""
    if not step_time_ratio or step_time_ratio <= 0:
        return None
    return (k + 1) / step_time_ratio


def off_above(winners: Sequence[tuple[int, Entry | None]]) -> tuple[int | None, str]:
    """From (concurrency, winner beating plain or None) per level: the concurrency N above which no
    candidate beats plain (None: some candidate beats plain at the highest level, or at none) and the
    sentence saying so."""
    ordered = sorted(winners, key=lambda w: w[0])
    paying = [c for c, w in ordered if w is not None and w.beats_plain()]
    if not paying:
        return None, "no candidate beats plain at any level: do not speculate"
    if paying[-1] == ordered[-1][0]:
        return None, f"speculation pays up to the highest level measured (concurrency {paying[-1]})"
    return paying[-1], f"speculation off above concurrency {paying[-1]}"


def geomean(values: Sequence[float | None]) -> float | None:
    """The geometric mean of the measured values (None when any is missing or none is given)."""
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values if v is not None) / len(values))


def static_choice(scores: Mapping[str, tuple[bool, float | None]],
                  cost: Mapping[str, tuple[int, int, str]]) -> str | None:
    """The one static configuration: among candidates meeting the criteria (``scores[name] = (meets,
    geometric-mean speedup over the declared range)``), the highest speedup above 1; ties to the
    cheaper. None: no candidate meets them (do not speculate)."""
    eligible = [(s, n) for n, (meets, s) in scores.items() if meets and s is not None and s > 1.0]
    if not eligible:
        return None
    top = max(s for s, _ in eligible)
    return min((n for s, n in eligible if s == top), key=lambda n: cost[n])


def k_schedule(levels: Sequence[tuple[int, int]]) -> list[list[int]]:
    """``num_speculative_tokens_per_batch_size`` (vLLM 0.24+, vllm/config/speculative.py: a list of
    ``[lo, hi, K]`` batch-size ranges; K = 0 turns speculation off) from (concurrency, best K or 0)
    per measured level: each level covers the batch sizes above the previous level up to its own;
    neighbouring ranges with the same K merge. Nothing is claimed above the highest level measured."""
    out: list[list[int]] = []
    lo = 1
    for conc, k in sorted(levels):
        if out and out[-1][2] == k:
            out[-1][1] = conc
        else:
            out.append([lo, conc, k])
        lo = conc + 1
    return out
