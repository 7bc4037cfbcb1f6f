"""The cell entry (records/cell.py): every committed cells.jsonl line reads and writes back byte-identically,
the reader gives typed entries, and a line that does not read is one line naming the file, the line and the
field (exit 2), from ``loadgen report`` too."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.errors import BadInput
from loadgen.records.blockstate import BlockState, HostState
from loadgen.records.cell import CellEntry
from loadgen.records.wire import RESTORE
from loadgen.store.files import read_cell_lines

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FILES = sorted(DOCS.rglob("cells.jsonl"))
EXAMPLE = DOCS / "examples" / "h200" / "h200-1b-draft"


def test_the_examples_are_there() -> None:
    assert len(FILES) == 13 and EXAMPLE / "cells.jsonl" in FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(DOCS)))
def test_every_committed_line_writes_back_byte_identically(path: Path) -> None:
    lines = path.read_text().splitlines()
    entries = read_cell_lines(path)
    assert [json.dumps(e.to_json()) for e in entries] == lines
    assert all(isinstance(e, CellEntry) for e in entries)


def test_the_reader_gives_typed_entries() -> None:
    first = read_cell_lines(EXAMPLE / "cells.jsonl")[0]
    line = json.loads((EXAMPLE / "cells.jsonl").read_text().splitlines()[0])
    assert (first.role, first.workload, first.concurrency, first.level, first.duration_s) == (
        line["role"],
        line["workload"],
        line["concurrency"],
        line["level"],
        line["duration_s"],
    )
    assert first.key == (line["workload"], line["level"])
    assert first.client_window_failed is None  # an older line: the errors count stands in (counterchecks.py)
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.errors = 3  # type: ignore[misc]


def test_an_entry_built_anew_writes_every_field_and_new_fields_go_last() -> None:
    entry = CellEntry.of({"role": "plain", "workload": "w", "concurrency": 4, "level": "c4", "duration_s": 2})
    assert list(entry.to_json()) == ["role", "workload", "concurrency", "level", "duration_s"]
    later = entry.with_fields(state=BlockState(host=HostState()), duration_s=3.5)
    assert later.to_json() == {
        "role": "plain",
        "workload": "w",
        "concurrency": 4,
        "level": "c4",
        "duration_s": 3.5,
        "state": {"host": {}},
    }
    assert list(CellEntry("plain", "w", 1).to_json())[:4] == ["role", "workload", "concurrency", "level"]
    assert CellEntry("plain", "w", 1).key == ("w", "c1")


def _corrupt(path: Path, line: int, change: dict[str, object]) -> None:
    lines = path.read_text().splitlines()
    lines[line - 1] = json.dumps(json.loads(lines[line - 1]) | change)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"duration_s": "abc"}, "duration_s: expected a number, got 'abc'"),
        ({"role": 3}, "role: expected a string, got 3"),
        ({"notes": "one note"}, "notes: expected a list of strings, got 'one note'"),
        ({"spec_decode": [1]}, "spec_decode: expected an object (spec-decode deltas) or null, got [1]"),
        (
            {"error_categories": {"http_5xx": 1.5}},
            "error_categories: expected an object of integers, got {'http_5xx': 1.5}",
        ),
    ],
)
def test_a_bad_line_names_the_file_the_line_and_the_field(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    path = tmp_path / "cells.jsonl"
    shutil.copyfile(EXAMPLE / "cells.jsonl", path)
    _corrupt(path, 3, change)
    with pytest.raises(BadInput) as caught:
        read_cell_lines(path)
    assert str(caught.value) == f"{path} line 3: {message}; {RESTORE}"


def test_a_line_without_its_workload_is_named() -> None:
    with pytest.raises(BadInput) as caught:
        CellEntry.from_json({"role": "plain", "concurrency": 1}, source="cells.jsonl line 9")
    assert str(caught.value) == f"cells.jsonl line 9: workload: missing (expected a string); {RESTORE}"


def test_loadgen_report_on_a_bad_cells_line_is_one_line_exit_2(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(EXAMPLE, run)
    _corrupt(run / "cells.jsonl", 3, {"duration_s": "abc"})
    result = CliRunner().invoke(main, ["report", str(run)])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        f"loadgen: error: {run / 'cells.jsonl'} line 3: duration_s: expected a number, got 'abc'; {RESTORE}"
    )


def test_no_cast_makes_a_record_of_an_unchecked_value() -> None:
    """A record is made by its checked ``from_json``, never by ``typing.cast`` of a dict (the cell line was)."""
    pattern = re.compile(r"\bcast\(\s*(CellLine|CellEntry|RequestRecord|Protocol|ProtocolCell)\b")
    found = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in sorted((ROOT / "loadgen").rglob("*.py"))
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []


def test_keys_of_other_code_are_kept_in_their_place() -> None:
    line = {"role": "plain", "from_later_code": {"x": [1]}, "workload": "w", "concurrency": 8, "errors": 2}
    entry = CellEntry.from_json(line, source="c")
    assert entry.to_json() == line and list(entry.to_json()) == list(line)
    assert entry.extra == {"from_later_code": {"x": [1]}} and entry.errors == 2
    assert entry == CellEntry("plain", "w", 8, errors=2)  # keys and extra do not count in equality
    later = entry.with_fields(errors=3, notes=["n"])
    assert list(later.to_json()) == [*line, "notes"] and later.to_json()["errors"] == 3


def test_a_line_of_older_code_takes_the_defaults() -> None:
    entry = CellEntry.from_json({"role": "speculative", "workload": "w", "concurrency": 8}, source="c")
    assert entry.key == ("w", "c8") and entry.repetition == 0 and entry.level == ""
    assert (entry.gauges, entry.client_window_failed, entry.spec_decode, entry.started_utc) == (None, None, None, None)
    assert entry.process_start_time_s == [None, None] and entry.server_histograms == {}
    with pytest.raises(BadInput) as caught:
        CellEntry.from_json({"role": "plain", "workload": "w"}, source="c line 2")
    assert str(caught.value) == f"c line 2: concurrency: missing (expected an integer); {RESTORE}"
    with pytest.raises(BadInput) as caught:
        CellEntry.from_json(
            {"role": "plain", "workload": "w", "concurrency": 1, "process_start_time_s": [1.5, "x"]}, source="c line 4"
        )
    assert str(caught.value).startswith("c line 4: process_start_time_s: expected a list of ")


def test_with_fields_on_an_entry_built_by_the_constructor_keeps_its_fields() -> None:
    got = CellEntry("plain", "w", 1).with_fields(errors=2).to_json()
    assert (got["role"], got["workload"], got["concurrency"], got["errors"]) == ("plain", "w", 1, 2)
    assert list(got) == list(CellEntry("plain", "w", 1).to_json())  # every field, in the record's order
