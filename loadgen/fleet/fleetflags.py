"""Disagreement flags of the fleet card (pure): nodes of the same GPU type that measured the same pair
differently (docs/fleet/README.md, "Disagreement flags").

Rule: at the same pair, GPU type, cell (workload, level) and metric, two nodes **disagree** when the 95%
confidence intervals of their ratios (speculative / plain; measure/ratios.py, paired bootstrap over
prompts) do not overlap: ``a.ci_high < b.ci_low`` or ``b.ci_high < a.ci_low``. Non-overlap of two 95% CIs
is a conservative test of a difference (it implies p < 0.05 and more; Schenker & Gentleman, "On judging the
significance of differences by examining the overlap between confidence intervals", The American
Statistician 55(3), 2001), so a flag is a real difference, not noise of the bootstrap. A ratio without a
CI (TTFT p99, or fewer than 2 prompt pairs) and the acceptance figures (one value per cell, no CI) are not
compared; neither are nodes of unknown GPU type or tasks that did not finish (``done``). A difference
below :data:`MIN_RELATIVE_GAP` of the smaller value is not flagged even when the CIs are apart: a
bootstrap over a few dozen prompts gives narrow intervals, and a 2% gap between two healthy nodes is
not what a capacity team acts on. For sweeps the
same rule holds for each candidate's speedup at a cell, and two nodes of the same GPU type whose sweeps
recommend different candidates are flagged.

Each flag is a records/fleetparts.py ``Flag``: ``kind`` ("ratio" | "speedup" | "recommendation"), ``pair``,
``gpu_type``, ``workload``, ``level`` (both None for a recommendation), ``metric``, the two nodes as
``FlagSide`` (node, value, ci_low, ci_high, candidate) and the ``line`` shown.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import combinations
from typing import TypeVar

from loadgen.records.fleet import CompareCell, CompareEntry, ComparePair, SweepNodeEntry, SweepPair, SweepPairCell
from loadgen.records.fleetparts import CandidateSpeedup, Flag, FlagSide, FleetRatio

#: The names of the ratios as docs/metrics.md writes them.
METRIC_NAMES = {
    "tpot_p50": "TPOT p50",
    "ttft_p50": "TTFT p50",
    "e2e_p50": "E2E latency p50",
    "ttft_p95": "TTFT p95",
    "ttft_p99": "TTFT p99",
    "itl_p50": "ITL p50",
    "e2e_p95": "E2E latency p95",
    "e2e_p99": "E2E latency p99",
}
#: The smallest relative difference between two nodes' values that is flagged (5%).
MIN_RELATIVE_GAP = 0.05
CAUSES = (
    "look for a sick GPU (clocks, ECC errors, a degraded link), a different driver or CUDA version, or a "
    "noisy neighbour (another job on the node's GPUs, CPUs or network)"
)
FLAG_RULE = (
    "Two nodes of the same GPU type disagree when, at the same pair, cell and metric, the 95% CIs of their "
    "ratios (or of the same candidate's speedup) do not overlap and the values differ by more than "
    f"{MIN_RELATIVE_GAP:.0%}. Ratios without a CI (TTFT p99, or fewer "
    "than 2 prompt pairs) and the acceptance rate and mean acceptance length (no CI) are not compared; "
    "nodes of unknown GPU type and tasks that did not finish are not compared. Two nodes of the same GPU "
    "type whose sweeps recommend different candidates are flagged too. A disagreement means the nodes "
    f"are not interchangeable for this pair: {CAUSES}."
)


def disjoint(a: FleetRatio | None, b: FleetRatio | None) -> bool:
    """True when the intervals ``[ci_low, ci_high]`` of ``a`` and ``b`` do not overlap (touching overlaps);
    False when either has no interval."""
    if a is None or b is None or a.ci_low is None or a.ci_high is None or b.ci_low is None or b.ci_high is None:
        return False
    return a.ci_high < b.ci_low or b.ci_high < a.ci_low


def disagree(a: FleetRatio | None, b: FleetRatio | None) -> bool:
    """True when ``a`` and ``b`` are :func:`disjoint` and their values differ by more than
    :data:`MIN_RELATIVE_GAP` of the smaller one."""
    if a is None or b is None or not disjoint(a, b):
        return False
    low = min(abs(a.value), abs(b.value))
    return low > 0 and abs(a.value - b.value) > MIN_RELATIVE_GAP * low


Entry = TypeVar("Entry", CompareEntry, SweepNodeEntry)


def _comparable(entries: Sequence[Entry]) -> Iterator[tuple[Entry, Entry]]:
    """Pairs of node entries of a cell that may be compared: both finished, same known GPU type."""
    done = [e for e in entries if e.status == "done" and e.gpu_type is not None]
    yield from ((a, b) for a, b in combinations(done, 2) if a.gpu_type == b.gpu_type)


def _side(node: str, r: FleetRatio | None, candidate: str | None = None) -> FlagSide:
    if r is None:
        return FlagSide(node, candidate=candidate)
    return FlagSide(node, r.value, r.ci_low, r.ci_high, candidate)


def _fmt(side: FlagSide) -> str:
    return f"{side.node} {side.value:.3f} (95% CI {side.ci_low:.3f}-{side.ci_high:.3f})"


def _engines(pair: ComparePair | SweepPair, a: str, b: str) -> str:
    versions = {n.node: n.engine for n in pair.nodes}
    if versions.get(a) == versions.get(b) or None in (versions.get(a), versions.get(b)):
        return ""
    return f"; their engine versions differ ({a}: vLLM {versions[a]}, {b}: vLLM {versions[b]})"


def _flag(
    kind: str,
    pair: ComparePair | SweepPair,
    cell: CompareCell | SweepPairCell | None,
    metric: str,
    sides: tuple[tuple[FlagSide, str], ...],
    gpu_type: str,
    what: str,
) -> Flag:
    """The flag of two nodes' ``sides`` (each with its text) on ``gpu_type``; ``cell`` None for a pair's."""
    where = f"{cell.workload} {cell.level}, " if cell is not None else ""
    (a, text_a), (b, text_b) = sides
    line = f"{pair.pair} on {gpu_type}: {where}{what}: {text_a} vs {text_b}{_engines(pair, a.node, b.node)}"
    return Flag(
        kind,
        pair.pair,
        gpu_type,
        metric,
        [a, b],
        line,
        workload=cell.workload if cell else None,
        level=cell.level if cell else None,
    )


def ratio_flags(pairs: Sequence[ComparePair], metrics: Sequence[str]) -> list[Flag]:
    """Flags of the compare pairs (fleet card ``pairs``): per cell, metric and two nodes of one GPU type
    whose ratios' 95% CIs do not overlap."""
    out = []
    for pair in pairs:
        for cell in pair.cells:
            for metric in metrics:
                for a, b in _comparable(cell.nodes):
                    ra, rb = a.ratios.get(metric), b.ratios.get(metric)
                    if not disagree(ra, rb) or a.gpu_type is None:
                        continue
                    sides = tuple((s, _fmt(s)) for s in (_side(a.node, ra), _side(b.node, rb)))
                    what = f"{METRIC_NAMES.get(metric, metric)} ratio (speculative / plain), the 95% CIs do not overlap"
                    out.append(_flag("ratio", pair, cell, metric, sides, a.gpu_type, what))
    return out


def _interval(e: CandidateSpeedup | None) -> FleetRatio | None:
    """A candidate's speedup and its CI as an interval :func:`disagree` compares (None: no speedup)."""
    return None if e is None or e.speedup is None else FleetRatio(e.speedup, e.speedup_ci_low, e.speedup_ci_high)


def _speedup_flags(pair: SweepPair, cell: SweepPairCell, metric: str) -> Iterator[Flag]:
    for a, b in _comparable(cell.nodes):
        mine = {e.candidate: e for e in b.entries}
        for ea in a.entries:
            ra, rb = _interval(ea), _interval(mine.get(ea.candidate))
            if not disagree(ra, rb) or a.gpu_type is None:
                continue
            sides = tuple((s, _fmt(s)) for s in (_side(a.node, ra, ea.candidate), _side(b.node, rb, ea.candidate)))
            what = (
                f"speedup of {ea.candidate} ({METRIC_NAMES.get(metric, metric)}, plain / speculative), "
                "the 95% CIs do not overlap"
            )
            yield _flag("speedup", pair, cell, f"speedup:{metric}", sides, a.gpu_type, what)


def sweep_flags(sweeps: Sequence[SweepPair]) -> list[Flag]:
    """Flags of the sweep pairs (fleet card ``sweeps``): different recommendations on one GPU type, and
    per cell a candidate's speedup whose 95% CIs on two nodes of one GPU type do not overlap."""
    out = []
    for pair in sweeps:
        done = [n for n in pair.nodes if n.status == "done" and n.gpu_type is not None and n.measured]
        for a, b in combinations(done, 2):
            if a.gpu_type is None or a.gpu_type != b.gpu_type or a.recommendation == b.recommendation:
                continue
            sides = tuple(
                (_side(n.node, None, n.recommendation), f"{n.node} recommends {n.recommendation or 'no speculation'}")
                for n in (a, b)
            )
            out.append(
                _flag("recommendation", pair, None, "recommendation", sides, a.gpu_type, "different recommendations")
            )
        for cell in pair.cells:
            out += _speedup_flags(pair, cell, pair.primary_metric or "tpot_p50")
    return out
