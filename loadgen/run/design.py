"""The order in which the arms measure the blocks of every cell, and the servers each order starts (pure).

Arms are the plain server, the placebo (the A/A arm, when declared) and the speculative arms (``speculative``
in a compare, each candidate's name in a sweep). Block ``b`` of a cell sends the same prompts on every arm
(run/plan.py). Within block ``b`` the arms take turns in a balanced order: the arm list rotated by ``b // 2``,
reversed on odd blocks (for two arms A B: AB BA BA AB ...; for three: ABC CBA BCA ACB ...). Over each pair
of blocks every arm's mean position is the same, so a server speed that moves linearly with time moves
every arm alike (the counterbalanced "ABBA" design: Box, Hunter & Hunter, Statistics for Experimenters,
2nd ed., 2005, ch. 4; the rotation keeps one arm from always going first).

- **Co-resident** (every server up at once, only the measured one gets load): cell after cell, block after
  block, the arms in that order; a block's slots follow each other within seconds.
- **One server at a time** (servers that cannot share the accelerator): round ``b`` measures block ``b`` of
  every cell on each arm in turn, in the same balanced order, one phase per arm; consecutive phases on one
  server merge, every other phase starts its server. The placebo is then a launch of its own (with
  ``placebo = "server"``), so its spread includes a fresh server's.

A **slot** is (arm, cell block); a **phase** is a run of consecutive slots on one server.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loadgen.profile.cells import PLACEBO, PLAIN, CellKey, CellSpec


@dataclass(frozen=True)
class Slot:
    """One block of one cell on one arm."""

    arm: str
    cell: CellSpec

    def to_json(self) -> list[Any]:
        """``[arm, workload, level, block]``, as protocol.json's ``design.order`` lists it."""
        return [self.arm, self.cell.workload, self.cell.level.label, self.cell.repetition]


def arms(speculative: Sequence[str], placebo: str) -> tuple[str, ...]:
    """The arms in their base order: plain, the placebo unless ``placebo == "off"``, then ``speculative``."""
    return (PLAIN, *((PLACEBO,) if placebo != "off" else ()), *speculative)


def block_order(arm_list: Sequence[str], block: int) -> list[str]:
    """The arms' turn within block ``block`` (module docstring): rotated by ``block // 2``, reversed when
    ``block`` is odd."""
    if not arm_list:
        return []
    k = (block // 2) % len(arm_list)
    base = [*arm_list[k:], *arm_list[:k]]
    return base if block % 2 == 0 else base[::-1]


def _groups(cells: Sequence[CellSpec]) -> dict[CellKey, list[CellSpec]]:
    out: dict[CellKey, list[CellSpec]] = {}
    for c in cells:
        out.setdefault(c.key, []).append(c)
    return {k: sorted(v, key=lambda c: c.repetition) for k, v in out.items()}


def balanced_order(cells: Sequence[CellSpec], arm_list: Sequence[str], co_resident: bool) -> list[Slot]:
    """Every (arm, block) of ``cells`` (the blocks to measure, in plan order) once, in the balanced order of
    the module docstring; ``co_resident`` chooses between its two layouts."""
    groups = _groups(cells)
    if co_resident:
        return [
            Slot(arm, c) for blocks in groups.values() for c in blocks for arm in block_order(arm_list, c.repetition)
        ]
    rounds = sorted({c.repetition for c in cells})
    return [
        Slot(arm, c)
        for b in rounds
        for arm in block_order(arm_list, b)
        for blocks in groups.values()
        for c in blocks
        if c.repetition == b
    ]


def phases(slots: Sequence[Slot], server_of: Callable[[str], str]) -> list[tuple[str, list[Slot]]]:
    """``slots`` cut into phases: (server, its consecutive slots). ``server_of(arm)`` names an arm's server
    (the placebo's is the plain server's with ``placebo = "blocks"``)."""
    return [(server, list(group)) for server, group in itertools.groupby(slots, key=lambda s: server_of(s.arm))]


def server_starts(
    slots: Sequence[Slot], server_of: Callable[[str], str], co_resident: bool, attached: frozenset[str] = frozenset()
) -> int:
    """How many servers the order starts: one per launched server when co-resident, else one per phase
    whose server is launched (an attached server starts nothing)."""
    if co_resident:
        return len({server_of(s.arm) for s in slots} - attached)
    return sum(1 for server, _ in phases(slots, server_of) if server not in attached)


def replay_order(order: Sequence[Sequence[Any]], cells: Sequence[CellSpec]) -> list[Slot]:
    """The slots of protocol.json's ``design.order`` over the planned ``cells``. Raises KeyError when a slot
    names a block that is not planned."""
    by_key = {(c.workload, c.level.label, c.repetition): c for c in cells}
    return [Slot(str(arm), by_key[(str(workload), str(level), int(block))]) for arm, workload, level, block in order]


def next_blocks(
    planned: Sequence[CellSpec],
    done: Mapping[CellKey, int],
    wanted: Mapping[CellKey, Sequence[str]],
    arm_list: Sequence[str],
    co_resident: bool,
) -> list[Slot]:
    """One more block for each cell in ``wanted`` (cell -> the arms still to measure it): the planned block
    after the ``done[cell]`` blocks measured so far, in the balanced order of ``arm_list`` (the base order)
    over those arms; none for a cell whose planned blocks are used up. One server at a time: one round,
    arm after arm over every such cell."""
    more = [
        c for key, left in wanted.items() if left for c in planned if c.key == key and c.repetition == done.get(key, 0)
    ]
    if not more:
        return []
    if co_resident:
        return [Slot(a, c) for c in more for a in block_order(arm_list, c.repetition) if a in wanted[c.key]]
    turn = block_order(arm_list, min(c.repetition for c in more))
    return [Slot(a, c) for a in turn for c in more if a in wanted[c.key]]
