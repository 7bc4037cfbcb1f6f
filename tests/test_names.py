"""One name, one meaning (docs/architecture.md "Names"): the module and function names that once meant
different things in different subpackages (``runner``, ``flow``, ``preflight``, ``read_json``, ``dumps``,
``record``) are each defined once in loadgen/, a cell key's level label is ``label``, and each card has its
``*data``, ``*md`` and ``*write`` module (no ``*card.py`` in report/ or fleet/; the ``*md`` modules do no I/O)."""

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


#: The three cards and their modules (docs/architecture.md "Names"): data (the card's record), md (its
#: Markdown), write (reads the folder, writes the card's files).
CARD_MODULES = {
    "pair card": ("report/carddata.py", "report/cardmd.py", "report/cardwrite.py"),
    "sweep card": ("report/sweepdata.py", "report/sweepmd.py", "report/sweepwrite.py"),
    "fleet card": ("fleet/fleetdata.py", "fleet/fleetmd.py", "fleet/fleetwrite.py"),
}
#: What a Markdown module never calls: the names of file I/O, as a function or a method.
IO_CALLS = frozenset(
    {"open", "read_text", "write_text", "read_bytes", "write_bytes", "read_json", "write_json", "write_sweep"}
)
#: The calls that write a card's JSON: store/rundir.py ``write_json``, or the card file's own writer in
#: store/files.py (sweep.json).
JSON_WRITES = frozenset({"write_json", "write_sweep"})


def _io_calls(path: Path) -> list[str]:
    """``line:name`` of every call in ``path`` to a name of :data:`IO_CALLS` (``open(...)``, ``p.read_text()``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in IO_CALLS:
                found.append(f"{node.lineno}:{name}")
    return found


def test_no_card_module_is_named_by_the_word_card_alone() -> None:
    named = sorted(str(p.relative_to(PACKAGE)) for sub in ("report", "fleet") for p in (PACKAGE / sub).glob("*card.py"))
    assert named == []


def test_each_card_has_its_data_md_and_write_module() -> None:
    for card, modules in CARD_MODULES.items():
        data, md, write = modules
        assert (data.endswith("data.py"), md.endswith("md.py"), write.endswith("write.py")) == (True, True, True)
        missing = [m for m in modules if not (PACKAGE / m).is_file()]
        assert (card, missing) == (card, [])


def test_the_markdown_modules_do_no_io() -> None:
    md_modules = sorted(p for sub in ("report", "fleet") for p in (PACKAGE / sub).glob("*md.py"))
    assert {f"{p.parent.name}/{p.name}" for p in md_modules} >= {m for _, m, _ in CARD_MODULES.values()}
    assert {str(p.relative_to(PACKAGE)): _io_calls(p) for p in md_modules} == {
        str(p.relative_to(PACKAGE)): [] for p in md_modules
    }


def test_the_io_check_sees_a_read_and_a_write(tmp_path: Path) -> None:
    probe = tmp_path / "probemd.py"
    probe.write_text("def f(p):\n    text = p.read_text()\n    with open(p) as h:\n        pass\n    return text\n")
    assert _io_calls(probe) == ["2:read_text", "3:open"]


def test_each_write_module_writes_its_card_files() -> None:
    """The write modules are where the cards reach the disk: each writes its JSON (:data:`JSON_WRITES`) and
    calls write_text."""
    for _, _, write in CARD_MODULES.values():
        calls = {c.split(":")[1] for c in _io_calls(PACKAGE / write)}
        assert "write_text" in calls and calls & JSON_WRITES, write
