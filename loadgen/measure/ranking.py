"""Ranking a sweep's candidates against one plain baseline, purely (``loadgen sweep``).

Every figure is a speedup over plain of the primary metric: ``1 / ratio`` for a latency ratio
(speculative / plain; lower is better), the ratio itself for a throughput (higher is better), with the
95% CI mapped the same way. A candidate **beats plain** at a cell when its CI's low end is above 1 (no
CI: its value). The **best** at a cell is the candidate with the highest speedup; every candidate whose
value lies inside the best one's CI **ties** with it, and a tie goes to the cheaper candidate (no draft
weights, then smaller K). The **upper bound** of a cell is what a perfect draft would give at the
measured step-time ratio: every step emits K + 1 tokens, so the speedup is ``(K + 1) / step_time_ratio``
(step_time_ratio = speculative step time / plain step time; the cost decomposition of the pair card).

A sweep measured in blocks gives each entry its **effect** against the A/A noise floor (measure/blocks.py):
a candidate beats plain only when its CI lies clear of the noise band (faster); one whose CI overlaps it is
**not distinguishable** and is never ranked as a winner. The same tie rule serves the per-level best, the
static choice and the K schedule: a candidate ties with the leader when its speedup lies inside the leader's
CI (at every cell, for the static choice), and a tie goes to the cheaper.

The **drift** of a sweep of older code is plain-after / plain-before of the primary metric on the same
prompts, with its CI. It warns only where it matters: its CI excludes 1 and the cell's decision (which
candidate is best and whether it beats plain) differs between the two baselines.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

from loadgen.measure.decision import FASTER
from loadgen.records.cardcell import Ratio
from loadgen.records.sweep import Drift

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
    effect: str | None = None  # measure/decision.py outcome; None: older card
    criteria_status: str | None = None

    def cost_key(self) -> tuple[int, int, str]:
        """Cheaper first: no draft weights, then smaller K, then the name."""
        return int(self.draft_weights), self.k, self.candidate

    def beats_plain(self) -> bool:
        """True when the speedup is clear of the noise floor (``effect`` faster); for an entry of an older
        card, when its CI lies above 1 (without a CI: the value)."""
        if self.effect is not None:
            return self.effect == FASTER
        low = self.ci_low if self.ci_low is not None else self.speedup
        return low is not None and low > 1.0

    def pays(self, criteria_declared: bool) -> bool:
        """Beats plain and, when criteria are declared, passes them at this cell."""
        return self.beats_plain() and (not criteria_declared or self.criteria_status == "pass")

    def ties(self, other: Entry) -> bool:
        """True when ``other``'s speedup lies inside this entry's CI (without one: equals its value)."""
        low = self.ci_low if self.ci_low is not None else self.speedup
        high = self.ci_high if self.ci_high is not None else self.speedup
        return other.speedup is not None and low is not None and high is not None and low <= other.speedup <= high


def speedup_of(metric: str, ratio: Ratio | None) -> tuple[float | None, float | None, float | None]:
    """(speedup, ci_low, ci_high) from the pair card's ratio (speculative / plain) of ``metric``."""
    value = None if ratio is None else ratio.value
    if ratio is None or not value:
        return None, None, None
    low, high = ratio.ci_low, ratio.ci_high
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
    tied = [e for e in measured if e is leader or leader.ties(e)]
    return min(tied, key=Entry.cost_key), sorted(e.candidate for e in tied)


def _decision(entries: Sequence[Entry], scale: float) -> str:
    """The cell's decision with every speedup (and CI) multiplied by ``scale``: the best candidate that beats
    plain, or ``plain``."""
    scaled = [
        Entry(
            e.candidate,
            e.k,
            e.draft_weights,
            e.speedup * scale if e.speedup is not None else None,
            e.ci_low * scale if e.ci_low is not None else None,
            e.ci_high * scale if e.ci_high is not None else None,
        )
        for e in entries
    ]
    winner, _ = best([e for e in scaled if e.beats_plain()])
    return winner.candidate if winner is not None else "plain"


def drift_warning(cell: str, drift: Drift | None, entries: Sequence[Entry], lower_is_better: bool = True) -> str | None:
    """One line when the plain baseline's drift (after / before, with its CI) is distinguishable from 1 and
    the decision at the cell differs between the two baselines; None otherwise (module docstring)."""
    value = None if drift is None else drift.value
    low, high = (None, None) if drift is None else (drift.ci_low, drift.ci_high)
    if drift is None or not value or (low is not None and high is not None and low <= 1.0 <= high):
        return None
    scale = value if lower_is_better else 1.0 / value  # the speedups against plain-after
    before, after = _decision(entries, 1.0), _decision(entries, scale)
    if before == after:
        return None
    ci = f" [95% CI {low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    return (
        f"{cell}: the plain baseline drifted {100 * (value - 1):+.1f}%{ci} between before and after, and the "
        f"decision depends on it: {before} against plain-before, {after} against plain-after"
    )


def upper_bound(k: int, step_time_ratio: float | None) -> float | None:
    """The speedup of a perfect draft: ``(K + 1) / step_time_ratio``; None without a step-time ratio."""
    if not step_time_ratio or step_time_ratio <= 0:
        return None
    return (k + 1) / step_time_ratio


def off_above(winners: Sequence[tuple[int, Entry | None]], undecided: Set[int] = frozenset()) -> tuple[int | None, str]:
    """From (concurrency, winner that pays or None) per level measured: the concurrency N above which no
    candidate pays (None: some candidate pays at the highest level, or at none) and the sentence saying so,
    naming the next level measured, where none pays. Not paying there is not being slower (it may be inside the
    noise or undecided): ``undecided`` holds the levels where some candidate is still inconclusive, which the
    sentence names as such; the pair cards' crossover range (measure/decision.py ``crossover_range``) says where
    speculation is decided slower."""
    ordered = sorted(winners, key=lambda w: w[0])
    paying = [c for c, w in ordered if w is not None]
    if not ordered:
        return None, "no level measured: nothing decided"
    if not paying:
        still = sorted(c for c, _ in ordered if c in undecided)
        if still:
            return None, (
                "no candidate is decided faster at any level: do not speculate yet (undecided at concurrency "
                f"{', '.join(map(str, still))}: measure more blocks)"
            )
        return None, "no candidate beats plain at any level: do not speculate"
    if paying[-1] == ordered[-1][0]:
        return None, f"speculation pays up to the highest level measured (concurrency {paying[-1]})"
    nxt = next(c for c, _ in ordered if c > paying[-1])
    there = (
        f"is undecided at {nxt}, the next level measured: measure more blocks there"
        if nxt in undecided
        else f"not at {nxt}, the next level measured"
    )
    return paying[-1], f"speculation off above concurrency {paying[-1]} (it pays up to {paying[-1]} and {there})"


def geomean(values: Sequence[float | None]) -> float | None:
    """The geometric mean of the measured values (None when any is missing or none is given)."""
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values if v is not None) / len(values))


def static_choice(
    scores: Mapping[str, tuple[bool, float | None]],
    cost: Mapping[str, tuple[int, int, str]],
    cells: Sequence[Sequence[Entry]] = (),
) -> str | None:
    """The one static configuration: among candidates meeting the criteria (``scores[name] = (meets,
    geometric-mean speedup over the declared range)``), the highest speedup above 1; a candidate whose speedup
    lies inside the leader's CI at every one of ``cells`` (each cell's entries) ties with it, and a tie goes
    to the cheaper (without ``cells``: only an equal speedup ties). None: no candidate meets them."""
    eligible = {n: s for n, (meets, s) in scores.items() if meets and s is not None and s > 1.0}
    if not eligible:
        return None
    leader = max(eligible, key=lambda n: (eligible[n], [-x for x in cost[n][:2]]))

    def tied(name: str) -> bool:
        if not cells:
            return eligible[name] == eligible[leader]
        pairs = [
            (next((e for e in c if e.candidate == leader), None), next((e for e in c if e.candidate == name), None))
            for c in cells
        ]
        return all(a is not None and b is not None and a.ties(b) for a, b in pairs if a is not None or b is not None)

    return min((n for n in eligible if n == leader or tied(n)), key=lambda n: cost[n])


def k_schedule(best_ks: Sequence[tuple[int, int]]) -> list[list[int]]:
    """``num_speculative_tokens_per_batch_size`` (vLLM 0.24+, vllm/config/speculative.py: a list of
    ``[lo, hi, K]`` batch-size ranges; K = 0 turns speculation off) from (concurrency, best K or 0)
    per measured level: each level covers the batch sizes above the previous level up to its own;
    neighbouring ranges with the same K merge. Nothing is claimed above the highest level measured."""
    out: list[list[int]] = []
    lo = 1
    for conc, k in sorted(best_ks):
        if out and out[-1][2] == k:
            out[-1][1] = conc
        else:
            out.append([lo, conc, k])
        lo = conc + 1
    return out
