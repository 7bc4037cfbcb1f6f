"""store/rundir.py's readers on files written here: each JSON line with its place (``<path> line <n>``, blank
lines counted, torn and undecodable lines skipped and collected), cells.jsonl read as cell entries, and a
file that is not JSON named in one line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgen.errors import BadInput
from loadgen.records.cell import CellEntry
from loadgen.records.wire import RESTORE
from loadgen.store.files import read_cell_lines
from loadgen.store.rundir import numbered_jsonl, read_json


def test_each_line_comes_with_its_place_and_torn_lines_are_collected(tmp_path: Path) -> None:
    path = tmp_path / "cells.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"b": 2\n\xff\xfe{"c"\n{"d": [3]}\n')
    torn: list[str] = []
    assert list(numbered_jsonl(path, torn)) == [(f"{path} line 1", {"a": 1}), (f"{path} line 5", {"d": [3]})]
    assert torn == ['{"b": 2', '\ufffd\ufffd{"c"']  # undecodable bytes: a torn line, not an error
    assert list(numbered_jsonl(path)) == [(f"{path} line 1", {"a": 1}), (f"{path} line 5", {"d": [3]})]
    assert list(numbered_jsonl(tmp_path / "absent.jsonl", torn)) == [] and len(torn) == 2


def test_cells_jsonl_reads_as_entries_and_a_bad_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "cells.jsonl"
    lines = [
        {"role": "plain", "workload": "w", "concurrency": 2, "level": "c2"},
        {"role": "speculative", "workload": "w", "concurrency": 2, "level": "c2", "repetition": 1},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + '\n{"role": "pla\n')
    torn: list[str] = []
    assert read_cell_lines(path, torn) == [
        CellEntry("plain", "w", 2, level="c2"),
        CellEntry("speculative", "w", 2, level="c2", repetition=1),
    ]
    assert torn == ['{"role": "pla']
    path.write_text(json.dumps(lines[0]) + "\n\n" + json.dumps(lines[1] | {"repetition": "1"}) + "\n")
    with pytest.raises(BadInput) as caught:
        read_cell_lines(path)
    assert str(caught.value) == f"{path} line 3: repetition: expected an integer, got '1'; {RESTORE}"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b'{"a": ', "JSONDecodeError: Expecting value: line 1 column 7"),
        (b'{"a": "\xff"}', "UnicodeDecodeError: 'utf-8' codec can't decode"),
    ],
)
def test_a_file_that_is_not_json_is_one_line(tmp_path: Path, content: bytes, why: str) -> None:
    path = tmp_path / "status.json"
    path.write_bytes(content)
    with pytest.raises(BadInput) as caught:
        read_json(path)
    message = str(caught.value)
    assert message.startswith(f"{path} is not a readable JSON file ({why}")
    assert message.endswith("); restore it or pass another run folder") and "\n" not in message
