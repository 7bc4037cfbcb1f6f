"""Per-workload figures across a pair card's closed-loop levels (built by report/carddata.py): the SLO
capacity of each server (measure/diagnosis.capacity: the highest concurrency holding every declared SLO, and its
goodput) and where the TPOT p50 ratio crosses 1 (measure/ratios.crossover, the interpolated guide, and
measure/decision.crossover_range, the range the cells' decisions bracket)."""

from __future__ import annotations

from collections.abc import Sequence

from loadgen.measure.decision import crossover_range, side
from loadgen.measure.diagnosis import capacity
from loadgen.measure.ratios import crossover
from loadgen.profile.cells import ROLES
from loadgen.profile.pair import SLO
from loadgen.records.card import Crossover, RoleCapacity
from loadgen.records.cardcell import CardCell

__all__ = ["capacities", "crossovers"]


def _closed(cells: Sequence[CardCell], workload: str) -> list[CardCell]:
    """The closed-loop cells of ``workload``, by concurrency."""
    return sorted((c for c in cells if c.workload == workload and c.rate_rps is None), key=lambda c: c.concurrency)


def capacities(cells: Sequence[CardCell], slo: SLO) -> dict[str, dict[str, RoleCapacity]]:
    """Per workload and server: the highest closed-loop concurrency holding every SLO, and its goodput."""
    if not slo.limits():
        return {}
    out: dict[str, dict[str, RoleCapacity]] = {}
    for workload in dict.fromkeys(c.workload for c in cells):
        for role in ROLES:
            sides = [(c.concurrency, side) for c in _closed(cells, workload) if (side := c.role(role)) is not None]
            held = tuple(side.slo_holds for _, side in sides)
            best = capacity([lv for lv, _ in sides], held)
            good = next((side.goodput_rps for lv, side in sides if lv == best), None)
            out.setdefault(workload, {})[role] = RoleCapacity(
                tuple(lv for lv, _ in sides), held, None if best is None else int(best), good
            ).in_full()
    return out


def crossovers(cells: Sequence[CardCell]) -> dict[str, Crossover]:
    """Per workload: the closed-loop concurrency where the TPOT p50 ratio crosses 1, and the range it lies in:
    from the last level ahead of plain (clear of the A/A floor on the fast side) to the first after it decided
    slower (measure/decision.py ``side``, from each ratio's decided ``effect``; None when the decisions do not
    bracket a crossing)."""
    out: dict[str, Crossover] = {}
    for workload in dict.fromkeys(c.workload for c in cells):
        closed = _closed(cells, workload)
        levels = [c.concurrency for c in closed]
        tpot = [c.ratio("tpot_p50") for c in closed]
        ratios = [None if r is None else r.value for r in tpot]
        cis = [(None, None) if r is None else (r.ci_low, r.ci_high) for r in tpot]
        span = crossover_range(
            levels, [side("tpot_p50", r, c.aa_ratio("tpot_p50")) for r, c in zip(tpot, closed, strict=True)]
        )
        out[workload] = Crossover(
            levels=tuple(levels),
            ratios=tuple(ratios),
            crossover_concurrency=crossover(levels, ratios),
            metric="tpot_p50",
            ratio_cis=tuple(cis),
            crossover_range=None if span is None else tuple(span),
        ).keyed("metric", "levels", "ratios", "ratio_cis", "crossover_concurrency", "crossover_range")
    return out
