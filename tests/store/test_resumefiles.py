"""store/resumefiles.py keep_finished on real folders: which (arm, workload, level, block) slots it keeps, the
requests it moves to requests.partial.jsonl (appended, never lost), the lines it keeps exactly as written, and a
bad request line named by file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import BadInput
from loadgen.store.resumefiles import keep_finished
from tests.support.fakerun import cell_line, request_line


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_finished_blocks_stay_and_the_rest_move_to_the_partial_file(tmp_path: Path) -> None:
    # c1 block 0 finished on both arms; block 1 finished on plain only; c2 failed on plain
    _write(
        tmp_path / "cells.jsonl",
        [
            cell_line("plain", "c1", 0),
            cell_line("speculative", "c1", 0),
            cell_line("plain", "c1", 1),
            cell_line("plain", "c2", 0, "server died"),
        ],
    )
    records = [
        request_line(role, lv, i, block=b)
        for lv, b in (("c1", 0), ("c1", 1), ("c2", 0))
        for role in ("plain", "speculative")
        for i in range(2)
    ]
    _write(tmp_path / "requests.jsonl", records)
    done, moved = keep_finished(tmp_path)
    assert done == {
        ("plain", "short-homogeneous", "c1", 0),
        ("speculative", "short-homogeneous", "c1", 0),
        ("plain", "short-homogeneous", "c1", 1),
    }
    assert moved == 6  # c1 block 1 on speculative (2) and both arms at c2 (4)
    kept = [json.loads(x) for x in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert kept == records[:6]
    partial = [json.loads(x) for x in (tmp_path / "requests.partial.jsonl").read_text().splitlines()]
    assert partial == records[6:]
    cells = [json.loads(x) for x in (tmp_path / "cells.jsonl").read_text().splitlines()]
    assert [(c["role"], c["level"], c["repetition"]) for c in cells] == [
        ("plain", "c1", 0),
        ("speculative", "c1", 0),
        ("plain", "c1", 1),
    ]


def test_a_second_resume_appends_to_the_partial_file(tmp_path: Path) -> None:
    _write(tmp_path / "cells.jsonl", [])
    first = [request_line("plain", "c1", 0)]
    _write(tmp_path / "requests.jsonl", first)
    assert keep_finished(tmp_path) == (set(), 1)
    second = [request_line("plain", "c1", 1)]
    _write(tmp_path / "requests.jsonl", second)
    assert keep_finished(tmp_path) == (set(), 1)
    partial = [json.loads(x) for x in (tmp_path / "requests.partial.jsonl").read_text().splitlines()]
    assert partial == first + second
    assert (tmp_path / "requests.jsonl").read_text() == ""


def test_a_kept_request_line_is_written_back_with_its_keys_in_order(tmp_path: Path) -> None:
    _write(tmp_path / "cells.jsonl", [cell_line("plain", "c1")])
    record = request_line("plain", "c1", 0) | {"ttft_s": 0.125, "output_tokens": 1}
    _write(tmp_path / "requests.jsonl", [record])
    keep_finished(tmp_path)
    assert list(json.loads((tmp_path / "requests.jsonl").read_text())) == list(record)


def test_a_request_line_that_is_not_a_request_is_named(tmp_path: Path) -> None:
    _write(tmp_path / "cells.jsonl", [])
    (tmp_path / "requests.jsonl").write_text(json.dumps(request_line("plain", "c1", 0)) + "\n" + '{"role": 3}\n')
    with pytest.raises(BadInput, match=r"requests\.jsonl.*line 2"):
        keep_finished(tmp_path)
    # nothing was rewritten or moved
    assert len((tmp_path / "requests.jsonl").read_text().splitlines()) == 2
    assert not (tmp_path / "requests.partial.jsonl").exists()
