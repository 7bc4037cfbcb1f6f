"""One name, one meaning (docs/architecture.md "Names"): the module and function names that once meant
different things in different subpackages (``runner``, ``flow``, ``preflight``, ``read_json``, ``dumps``,
``record``) are each defined once in loadgen/, and a cell key's level label is ``label``."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from loadgen.profile.cells import CellKey

PACKAGE = Path(__file__).resolve().parents[1] / "loadgen"
#: The names resolved across subpackages (issue 30, "One naming scheme").
ONCE = ("runner", "flow", "preflight", "read_json", "dumps", "record")


def _definitions() -> dict[str, list[str]]:
    """Name -> where it is defined in loadgen/: a module's stem, or a top-level function or class."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        if path.stem != "__init__":
            where[path.stem].append(rel)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                where[node.name].append(f"{rel}:{node.name}")
    return where


def test_each_once_colliding_name_is_defined_at_most_once() -> None:
    where = _definitions()
    twice = {name: where[name] for name in ONCE if len(where[name]) > 1}
    print({name: where[name] for name in ONCE})
    assert twice == {}


def test_a_cell_key_names_its_level_by_its_label() -> None:
    key = CellKey.named("chat", "r2.5", 64)
    assert key == CellKey("chat", "r2.5") and key.label == "r2.5"
    assert CellKey.named("chat", "", 4).label == "c4"  # a line of older code without a label
