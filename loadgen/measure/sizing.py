"""Cells sized until they are decided (pure; docs/metrics.md "Sizing").

With ``[criteria].ci_half_width = h`` declared, after each block of a cell:

- a speculative arm whose primary ratio is **decided** there (measure/decision.py: faster, short, slower or not
  distinguishable at the declared bar and precision) gets no more blocks at that cell, and its time goes to
  the cells still undecided; an arm decided at every cell it was measured in has stopped early;
- an arm that is still **inconclusive** at a cell needs one more block there;
- a cell that needs a block for any arm measures it on the plain server and the placebo too (the pairing
  and the noise floor need them);
- a cell stops growing when no arm needs a block, when it has used its planned blocks
  (``[design].max_blocks``), or when the time left cannot hold another block and the cells still to measure;
  an arm still inconclusive then "stopped short", with the reason.

Continuing from the intervals seen so far lets a cell stop when an interval happens to be narrow or clear; with
a cap on blocks that bias is small, and the card prints the blocks each cell used and why each stopped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from loadgen.measure.decision import Bar, decide
from loadgen.profile.cells import PLACEBO, PLAIN, CellKey
from loadgen.records.cardcell import Ratio


def decided(
    ratios: Mapping[CellKey, Mapping[str, Ratio]], aa: Mapping[CellKey, Ratio | None], arm: str, metric: str, bar: Bar
) -> bool:
    """True when ``arm`` is decided at every cell where it was measured (and it was measured somewhere)."""
    seen = [(key, r[arm]) for key, r in ratios.items() if arm in r]
    return bool(seen) and all(decide(metric, r, aa.get(key), bar).decided for key, r in seen)


def needed(
    ratios: Mapping[CellKey, Mapping[str, Ratio]],
    aa: Mapping[CellKey, Ratio | None],
    speculative: Sequence[str],
    metric: str,
    bar: Bar,
    placebo: bool,
) -> dict[CellKey, list[str]]:
    """The cells that need one more block and the arms that measure it (module docstring): ``ratios`` maps
    cell -> arm -> its primary ratio so far, ``aa`` cell -> the placebo's. Arms in base order (plain, the
    placebo when ``placebo``, then the undecided speculative arms in ``speculative``'s order)."""
    out: dict[CellKey, list[str]] = {}
    for key, by_arm in ratios.items():
        arms = [a for a in speculative if a in by_arm and not decide(metric, by_arm[a], aa.get(key), bar).decided]
        if arms:
            out[key] = [PLAIN, *([PLACEBO] if placebo else []), *arms]
    return out
