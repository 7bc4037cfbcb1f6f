"""CellKey names a cell the same way from every file; CellSpec binds to a server without changing its cell."""

from __future__ import annotations

from loadgen.profile.cells import ROLES, CellKey, CellSpec
from loadgen.profile.pair import Level


def test_a_key_falls_back_on_the_concurrency_when_a_line_has_no_level() -> None:
    assert CellKey.named("w", None, 4) == ("w", "c4")
    assert CellKey.named("w", "r2.5", 4) == CellKey("w", "r2.5")
    assert CellKey.named("w", "", 8.0) == CellKey("w", "c8")


def test_a_cell_bound_to_a_server_keeps_its_key_and_stem() -> None:
    cell = CellSpec("w", "chat", Level(4, 2.5), repetition=1)
    bound = cell.on("speculative", 30.0, 12.0)
    assert (bound.role, bound.duration_s, bound.read_timeout_s) == ("speculative", 30.0, 12.0)
    assert bound.key == cell.key == CellKey("w", "r2.5")
    assert cell.stem("plain") == "plain__w__r2.5__rep1" and bound.concurrency == 4
    assert ROLES == ("plain", "speculative")
