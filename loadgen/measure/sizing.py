"""Cells sized to a declared precision (pure; docs/metrics.md "Sizing").

With ``[criteria].ci_half_width = h``, after each round of blocks:

- a speculative arm whose primary ratio is clear of the noise floor (measure/blocks.py ``effect``: faster or
  slower) at **every** cell it was measured in is decided: it gets no more blocks anywhere, and its time goes
  to the undecided cells;
- an undecided arm needs one more block at each cell where its primary ratio has no CI yet or a CI whose
  half-width (log scale) is above ``h``;
- a cell that needs a block for any arm measures it on the plain server and the placebo too (the pairing
  and the noise floor need them);
- the run stops growing when no cell needs a block, when every needed cell has used its planned blocks
  (``[design].max_blocks``), or when the time left cannot hold another round; the cells still above ``h``
  then "stopped short", with the reason.

Choosing to continue from the intervals seen so far lets a run stop when an interval happens to be narrow;
with a cap on blocks and a goal on width (not on significance) that bias is small, and the card prints the
blocks each cell used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from loadgen.measure.blocks import FASTER, SLOWER, effect, half_width, noise_band
from loadgen.profile.cells import PLACEBO, PLAIN, CellKey
from loadgen.records.cardcell import Ratio


def _band(aa: Ratio | None) -> tuple[float, float]:
    return noise_band(None, None) if aa is None else noise_band(aa.ci_low, aa.ci_high)


def decided(
    ratios: Mapping[CellKey, Mapping[str, Ratio]], aa: Mapping[CellKey, Ratio | None], arm: str, lower_is_better: bool
) -> bool:
    """True when ``arm``'s primary ratio is faster or slower than plain, clear of the noise floor, at every
    cell where it was measured (and it was measured somewhere)."""
    seen = [(key, r[arm]) for key, r in ratios.items() if arm in r]
    return bool(seen) and all(
        effect(r.ci_low, r.ci_high, _band(aa.get(key)), lower_is_better) in (FASTER, SLOWER) for key, r in seen
    )


def wider(r: Ratio, goal: float) -> bool:
    """True when ``r`` has no CI yet or its log half-width exceeds ``goal``."""
    w = half_width(r.ci_low, r.ci_high)
    return w is None or w > goal


def needed(
    ratios: Mapping[CellKey, Mapping[str, Ratio]],
    aa: Mapping[CellKey, Ratio | None],
    speculative: Sequence[str],
    goal: float,
    lower_is_better: bool,
    placebo: bool,
) -> dict[CellKey, list[str]]:
    """The cells that need one more block and the arms that measure it (module docstring): ``ratios`` maps
    cell -> arm -> its primary ratio so far, ``aa`` cell -> the placebo's. Arms in base order (plain, the
    placebo when ``placebo``, then the speculative arms in ``speculative``'s order)."""
    open_arms = [a for a in speculative if not decided(ratios, aa, a, lower_is_better)]
    out: dict[CellKey, list[str]] = {}
    for key, by_arm in ratios.items():
        arms = [a for a in open_arms if a in by_arm and wider(by_arm[a], goal)]
        if arms:
            out[key] = [PLAIN, *([PLACEBO] if placebo else []), *arms]
    return out


def stopped_short(
    ratios: Mapping[CellKey, Mapping[str, Ratio]],
    aa: Mapping[CellKey, Ratio | None],
    goal: float,
    lower_is_better: bool,
) -> list[tuple[CellKey, str, float | None]]:
    """(cell, arm, half-width) for every undecided speculative arm whose primary CI is still wider than
    ``goal``: what the card lists as stopped short."""
    arms = {a for r in ratios.values() for a in r}
    out = []
    for key, by_arm in ratios.items():
        for a in sorted(arms & set(by_arm)):
            if not decided(ratios, aa, a, lower_is_better) and wider(by_arm[a], goal):
                out.append((key, a, half_width(by_arm[a].ci_low, by_arm[a].ci_high)))
    return out
