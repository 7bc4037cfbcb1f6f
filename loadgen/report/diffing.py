"""Compare two cards of the same pair, for regression gates in CI pipelines (pure).

The compared metrics are the primary metrics the cards' criteria declare (``[criteria].primary``, both cards'
lists, the baseline's first; ``tpot_p50`` when neither declares one; records/criteria.py). Each is a ratio
speculative / plain with its 95% CI (measure/cellratios.py; docs/metrics.md "Blocks and the paired block
CI"). "Worse" follows the metric: a latency ratio (``ttft_p50``, ``tpot_p50``, ...) higher is worse, a
throughput ratio (``output_throughput``, ``request_throughput``) lower is worse (criteria.LATENCY_METRICS).

The candidate (B) **regressed** against the baseline (A) when, in a cell both measured, B's whole 95% CI lies
on the worse side of the bar: by default A's whole 95% CI (B's best end beyond A's worst end: worse clear of
both runs' noise), or, with a declared tolerance ``f`` (``loadgen diff --max-regression 5%``: f = 0.05), A's
ratio worsened by ``f`` (a latency ratio x (1 + f), a throughput ratio / (1 + f), as ``[criteria]
.max_regression``'s factors): a 10% worsening within the noise passes the default bar and fails a declared 5%.
A ratio without a CI (one block, a p99 of an older card) counts as its point value at both ends. B also
regressed where a cell A measured is missing, incomplete or failed in B, or its primary ratio is not measured
there; where a cell judged ``pass`` in A is judged ``fail`` or ``not-measured`` in B; and where B's verdict
fails its declared criteria and A's passed (criteria.py statuses). Every line shows the ratios with their
CIs and, beside them, the absolute figures of each server (ms, tokens/s, requests/s).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from loadgen.errors import BadInput
from loadgen.records.card import PairCard
from loadgen.records.cardcell import CardCell, Ratio
from loadgen.records.criteria import LATENCY_METRICS
from loadgen.util.numbers import MISSING, num, ratio

#: The card statistic behind each ratio: metric -> (the role's key, its field or None, unit, scale).
ABSOLUTE: dict[str, tuple[str, str | None, str, float]] = {
    "ttft_p50": ("ttft_s", "p50", "ms", 1e3),
    "tpot_p50": ("tpot_s", "p50", "ms", 1e3),
    "e2e_p50": ("e2e_s", "p50", "ms", 1e3),
    "itl_p50": ("itl_s", "p50", "ms", 1e3),
    "ttft_p99": ("ttft_s", "p99", "ms", 1e3),
    "e2e_p99": ("e2e_s", "p99", "ms", 1e3),
    "output_throughput": ("output_throughput_tps", None, "tok/s", 1.0),
    "request_throughput": ("request_throughput_rps", None, "req/s", 1.0),
}


@dataclass(frozen=True)
class Diff:
    """``lines``: one line per (shared cell, metric) plus the verdicts; ``regressions``: one line each (any:
    exit 3); ``summary``: them joined, or "no regression"."""

    lines: tuple[str, ...]
    regressions: tuple[str, ...]

    @property
    def regressed(self) -> bool:
        """True when the candidate regressed (the command exits 3)."""
        return bool(self.regressions)

    @property
    def summary(self) -> str:
        """The regressions joined by "; ", or "no regression"."""
        return "; ".join(self.regressions) if self.regressions else "no regression"


@dataclass(frozen=True)
class Interval:
    """A ratio's point value and its 95% CI ends (the value at both ends when it has no CI)."""

    value: float
    low: float
    high: float
    has_ci: bool = True

    @staticmethod
    def of(r: Ratio | None) -> Interval | None:
        """From a card's ratio (``value``, ``ci_low``, ``ci_high``); None when not measured."""
        if r is None or r.value is None:
            return None
        value, low, high = r.value, r.ci_low, r.ci_high
        return Interval(value, value, value, False) if low is None or high is None else Interval(value, low, high)


def worse_beyond(metric: str, before: Interval, after: Interval, tolerance: float | None) -> str | None:
    """Why ``after`` (B) regressed against ``before`` (A) on ``metric`` (module docstring), or None.

    ``tolerance``: None for the bar A's CI; a fraction ``f`` >= 0 for the bar A's value worsened by ``f``."""
    higher_worse = metric in LATENCY_METRICS
    if tolerance is None:
        bar = before.high if higher_worse else before.low
        what = (
            f"the baseline's 95% CI [{before.low:.3f}, {before.high:.3f}]"
            if before.has_ci
            else f"the baseline's {before.value:.3f} (no CI)"
        )
    else:
        bar = before.value * (1 + tolerance) if higher_worse else before.value / (1 + tolerance)
        what = f"the baseline's {before.value:.3f} {'x' if higher_worse else '/'} {1 + tolerance:g} = {bar:.3f}"
    best = after.low if higher_worse else after.high
    if (best > bar) if higher_worse else (best < bar):
        side = "above" if higher_worse else "below"
        return (
            f"{metric} spec/plain {ratio_text(after)} lies {side} {what} "
            f"({'higher' if higher_worse else 'lower'} is worse)"
        )
    return None


def ratio_text(i: Interval | None) -> str:
    """``value [low, high]`` to 3 decimals (the value alone without a CI; the en dash when None)."""
    if i is None:
        return MISSING
    return ratio(i.value, i.low if i.has_ci else None, i.high)


def primary_metrics(baseline: PairCard, candidate: PairCard) -> tuple[str, ...]:
    """The declared primary metrics of both cards, the baseline's first (``("tpot_p50",)`` when none)."""
    out: list[str] = []
    for card in (baseline, candidate):
        declared = card.verdict.criteria.primary if card.verdict.criteria else None
        out += [str(m) for m in declared or [] if m not in out]
    return tuple(out) or ("tpot_p50",)


def _absolute(cell: CardCell | None, role: str, metric: str) -> float | None:
    key, field, _, scale = ABSOLUTE[metric]
    side = None if cell is None else cell.role(role)
    stat = None if side is None else getattr(side, key)
    value = getattr(stat, field) if field is not None and stat is not None else stat
    return None if value is None else float(value) * scale


def _absolute_text(old: CardCell, new: CardCell | None, metric: str) -> str:
    unit = ABSOLUTE[metric][2]
    return ", ".join(
        f"{role} {num(_absolute(old, role, metric))} -> {num(_absolute(new, role, metric))} {unit}"
        for role in ("plain", "speculative")
    )


def _cell_status(card: PairCard) -> dict[tuple[str, int], str]:
    return {(c.workload, c.concurrency): c.status for c in card.verdict.cells}


def _failed(cell: CardCell) -> str | None:
    """Why a candidate's cell counts as failed (incomplete, or a server's failure), or None."""
    for role in ("plain", "speculative"):
        side = cell.role(role)
        if side is not None and side.failure:
            return f"failed on the {role} server ({side.failure})"
    return None if cell.complete else "incomplete"


def _cell_lines(
    name: str, old: CardCell, new: CardCell | None, metrics: Sequence[str], tolerance: float | None
) -> tuple[list[str], list[str]]:
    """The lines and regressions of one cell of the baseline (``new``: the candidate's, None when missing)."""
    lines: list[str] = []
    regressions: list[str] = []
    failed = "missing" if new is None else _failed(new)
    for metric in metrics:
        before = Interval.of(old.ratio(metric))
        after = None if new is None else Interval.of(new.ratio(metric))
        lines.append(
            f"{name}: {metric} spec/plain {ratio_text(before)} -> {ratio_text(after)}; "
            f"{_absolute_text(old, new, metric)}"
        )
        if before is None:
            continue
        if failed is not None:
            if not regressions:  # said once per cell
                regressions.append(f"{name}: measured in the baseline, {failed} in the candidate")
        elif after is None:
            regressions.append(f"{name}: {metric} measured in the baseline, not measured in the candidate")
        elif after is not None and (why := worse_beyond(metric, before, after, tolerance)) is not None:
            regressions.append(f"{name}: {why}")
    return lines, regressions


def _verdict_word(card: PairCard) -> str:
    """The verdict's own word (its summary's first words: PASS, FAIL, INCONCLUSIVE, NOT DISTINGUISHABLE)."""
    v = card.verdict
    if v.passed is None:
        return "not judged (no criteria declared)"
    head = (v.summary or "").split(":")[0]
    return head if head in ("PASS", "FAIL", "INCONCLUSIVE", "NOT DISTINGUISHABLE") else ("PASS" if v.passed else "FAIL")


def diff_cards(baseline: PairCard, candidate: PairCard, tolerance: float | None = None) -> Diff:
    """Diff ``candidate`` against ``baseline`` (module docstring for the rules); ``tolerance`` as
    :func:`worse_beyond`. Raises BadInput for cards of different pairs."""
    if baseline.pair != candidate.pair:
        raise BadInput(
            f"the cards are of different pairs ({baseline.pair!r} vs {candidate.pair!r}); "
            "diff compares two runs of the same pair"
        )
    metrics = primary_metrics(baseline, candidate)
    before, after = _cell_status(baseline), _cell_status(candidate)
    lines: list[str] = []
    regressions: list[str] = []
    for cell in baseline.cells:
        key = (cell.workload, cell.level)
        name = f"{key[0]} {key[1]}"
        cell_lines, cell_regressions = _cell_lines(name, cell, candidate.cell(*key), metrics, tolerance)
        status = (key[0], cell.concurrency)
        s_old, s_new = before.get(status), after.get(status)
        lines += [*cell_lines[:-1], f"{cell_lines[-1]}; verdict {s_old or MISSING} -> {s_new or MISSING}"]
        regressions += cell_regressions
        if s_old == "pass" and s_new not in (None, "pass", "not-judged"):
            regressions.append(f"{name} went from pass to {s_new}")
    shared = {(c.workload, c.level) for c in baseline.cells}
    lines += [
        f"{c.workload} {c.level}: only in the candidate" for c in candidate.cells if (c.workload, c.level) not in shared
    ]
    v_old, v_new = baseline.verdict.passed, candidate.verdict.passed
    lines.append(f"verdict: baseline {_verdict_word(baseline)}, candidate {_verdict_word(candidate)}")
    if v_old is True and v_new is False:
        regressions.insert(0, "the candidate's verdict fails its declared criteria, the baseline's passed")
    return Diff(tuple(lines), tuple(regressions))


def prefixed(diffs: Mapping[str, Diff], missing: Sequence[str]) -> Diff:
    """One diff of sweeps from each candidate's :func:`diff_cards` (lines and regressions prefixed with
    ``[name]``); ``missing``: candidates the baseline sweep measured that the candidate sweep lacks (each a
    regression)."""
    lines = [f"[{name}] {line}" for name, d in diffs.items() for line in d.lines]
    regressions = [f"[{name}] {r}" for name, d in diffs.items() for r in d.regressions]
    lines += [f"[{name}] measured in the baseline sweep, missing in the candidate sweep" for name in missing]
    regressions += [f"[{name}] measured in the baseline sweep, missing in the candidate sweep" for name in missing]
    return Diff(tuple(lines), tuple(regressions))
