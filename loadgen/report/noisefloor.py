"""The card's ratios with their intervals and the A/A noise floor beside them (pure; measure/blocks.py has the
formulas, measure/cellratios.py the ratios).

- :func:`cell_ratios`: a card cell's speculative / plain ratios (block CIs for a run measured in blocks,
  within-run bootstrap CIs for a run of older code) and, with a placebo, its ``noise_floor``: the placebo /
  plain ratio of every metric with its block CI and whether that CI covers 1 (``holds``). Each speculative
  ratio then carries its ``effect``: measure/decision.py's outcome against the noise floor and the declared
  criteria (faster, short, slower, not distinguishable, inconclusive), the one decision every surface reads.
- :func:`noise_notes`: per shown metric of a cell, one line where its A/A interval excludes 1 and one where its
  effect is inside the noise.
- :func:`noise_summary`: the card's noise floor over every cell, for the headline.
- :func:`design_summary`: the design the run was measured with (protocol.json's ``design`` without its order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from loadgen.measure.blocks import aa_holds, far_blocks, half_width
from loadgen.measure.cellratios import blocked_ratios, within_run_ratios
from loadgen.measure.decision import NOT_DISTINGUISHABLE, Bar, decide
from loadgen.measure.metrics import CellStats
from loadgen.records.card import NoiseFloor, NoiseMetric
from loadgen.records.cardcell import CardCell, CellNoiseFloor, Ratio
from loadgen.records.criteria import Criteria, criteria_of
from loadgen.records.protocol import Protocol
from loadgen.records.protoparts import RunDesign
from loadgen.records.request import RequestRecord

#: The metrics whose noise floor the card prints (the paired p50 latencies).
SHOWN = ("tpot_p50", "ttft_p50", "e2e_p50")


def cell_ratios(
    proto: Protocol,
    plain: Sequence[RequestRecord],
    spec: Sequence[RequestRecord],
    placebo: Sequence[RequestRecord],
    stats: Mapping[str, CellStats],
) -> tuple[dict[str, Ratio], CellNoiseFloor | None]:
    """(ratios, noise floor or None) of one cell (module docstring); no ratios unless both sides have stats."""
    blocked = proto.design is not None
    floor: CellNoiseFloor | None = None
    if blocked and placebo and plain:
        aa = blocked_ratios(plain, placebo)
        floor = CellNoiseFloor(ratios=aa, holds={m: aa_holds(r.ci_low, r.ci_high) for m, r in aa.items()})
    if len(stats) < 2:
        return {}, floor
    criteria = None if proto.criteria is None else criteria_of(proto.criteria, Path("protocol.json"))
    raw = (
        blocked_ratios(plain, spec) if blocked else within_run_ratios(plain, spec, stats["plain"], stats["speculative"])
    )
    return with_effects(raw, floor, criteria), floor


def with_effects(
    ratios: Mapping[str, Ratio], floor: CellNoiseFloor | None, criteria: Criteria | None
) -> dict[str, Ratio]:
    """Each measured ratio with its ``effect``: measure/decision.py's outcome against ``floor`` and ``criteria``."""
    aa_all = (floor.ratios if floor else None) or {}
    return {
        m: r.with_fields(effect=decide(m, r, aa_all.get(m), Bar.of(criteria, m)).outcome) if r.value else r
        for m, r in ratios.items()
    }


def _ci(r: Ratio) -> str:
    return (
        f"[{r.ci_low:.3f}, {r.ci_high:.3f}]" if r.ci_low is not None and r.ci_high is not None else "(no CI: one block)"
    )


def noise_notes(ratios: Mapping[str, Ratio], floor: CellNoiseFloor | None) -> list[str]:
    """Per shown metric (:data:`SHOWN`): one line when the placebo's interval excludes 1 (the design did not
    hold for that metric), one naming each block far off the others with its value (measure/blocks.py
    ``far_blocks``), and one when the speculative ratio is not distinguishable from the noise floor."""
    out = []
    aa = (floor.ratios if floor else None) or {}
    holds = (floor.holds if floor else None) or {}
    for m in SHOWN:
        r, a = ratios.get(m) or Ratio(None), aa.get(m) or Ratio(None)
        if holds.get(m) is False:
            out.append(
                f"A/A {m} {a.value:.3f} {_ci(a)} excludes 1: the placebo moved against plain, so the design "
                "did not hold on this machine; treat this cell's ratios as unreliable"
            )
        far = far_blocks([x for x in r.block_ratios or () if x is not None]) if r.block_ratios else []
        if far:
            shown = ", ".join(f"block {i} {(r.block_ratios or ())[i]:.3f}" for i in far)
            rest = [x for i, x in enumerate(r.block_ratios or ()) if i not in far and x is not None]
            out.append(
                f"{m}: {shown} far off the cell's other blocks ({min(rest):.3f}-{max(rest):.3f}); kept in the "
                "interval (no exclusion rule is declared)"
                + ("; a slow first block points at a level not yet warmed" if 0 in far else "")
            )
        if r.effect == NOT_DISTINGUISHABLE and r.value is not None:
            out.append(
                f"{m} spec/plain {r.value:.3f} {_ci(r)} is not distinguishable from the A/A noise floor "
                + (f"{a.value:.3f} {_ci(a)}" if a.value is not None else "(no placebo: from 1)")
            )
    return out


def renoted(cell: CardCell, ratios: Mapping[str, Ratio]) -> CardCell:
    """``cell`` with ``ratios`` (their effects decided again, e.g. by a newer rule) and its noise notes
    (:func:`noise_notes`) written again from them, in the place the old ones held."""
    new, notes = noise_notes(ratios, cell.noise_floor), list(cell.notes)
    at = next((i for i, n in enumerate(notes) if _is_noise_note(n)), len(notes))
    kept = [n for n in notes[:at] if not _is_noise_note(n)], [n for n in notes[at:] if not _is_noise_note(n)]
    return replace(cell, ratios=dict(ratios), notes=(*kept[0], *new, *kept[1]))


def _is_noise_note(note: str) -> bool:
    """Whether ``note`` is one :func:`noise_notes` writes (in this version's words or an earlier one's)."""
    return any(
        note.startswith(f"A/A {m} ")
        or (note.startswith(f"{m}: block ") and " far off the cell's other blocks " in note)
        or (note.startswith(f"{m} spec/plain ") and " is not distinguishable from the A/A noise floor " in note)
        for m in SHOWN
    )


def noise_summary(cells: Sequence[CardCell]) -> NoiseFloor:
    """Over every cell with a placebo: per shown metric the A/A ratios' range, the widest half-width (log
    scale) and the cells whose A/A interval excludes 1; ``measured`` False without a placebo."""
    floors = [(c, c.noise_floor.ratios or {}) for c in cells if c.noise_floor is not None]
    if not floors:
        return NoiseFloor(measured=False)
    metrics = {}
    for m in SHOWN:
        rs = [(c, r, r.value) for c, f in floors if (r := f.get(m)) is not None and r.value is not None]
        if not rs:
            continue
        widths = [w for _, r, _ in rs if (w := half_width(r.ci_low, r.ci_high)) is not None]
        metrics[m] = NoiseMetric(
            min=min(v for *_, v in rs),
            max=max(v for *_, v in rs),
            widest_half_width=max(widths) if widths else None,
            excluding_1=tuple(f"{c.workload} {c.level}" for c, r, _ in rs if aa_holds(r.ci_low, r.ci_high) is False),
        )
    return NoiseFloor(measured=True, cells=len(floors), metrics=metrics).in_full()


def design_summary(proto: Protocol) -> RunDesign | None:
    """protocol.json's ``design`` without its order, plus the slots it ran; None for a run of older code
    (one time window per server: its intervals are within-run only)."""
    return None if proto.design is None else proto.design.summary()
