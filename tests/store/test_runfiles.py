"""store/runfiles.py: a run folder read once for the card, on the committed example
docs/examples/h200/h200-1b-ngram and on folders written here (a placebo server, an older effective record with
its startup log kept, no status.json, no cell line)."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from loadgen.errors import BadInput
from loadgen.profile.cells import PLACEBO, ROLES
from loadgen.records.cell import CellEntry
from loadgen.records.runparts import StatusFile
from loadgen.report.enginelog import with_engine_path, with_engine_paths
from loadgen.store.ondisk import NO_STATUS
from loadgen.store.runfiles import read_run, run_ended_utc
from tests.support.cards import effective, effective_file

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "h200" / "h200-1b-ngram"
DATA = Path(__file__).resolve().parents[1] / "data"


def test_the_example_folder() -> None:
    files = read_run(EXAMPLE, ROLES, (PLACEBO,))
    assert files.protocol.to_json() == json.loads((EXAMPLE / "protocol.json").read_text())
    assert files.status == StatusFile(complete=True, failure=None) and files.records == []
    lines = [json.loads(x) for x in (EXAMPLE / "cells.jsonl").read_text().splitlines()]
    assert len(files.entries) == len(lines) and files.entries[0].role == lines[0]["role"]
    assert [e.to_json() for e in files.entries] == lines  # each line read back whole
    assert sorted(files.servers) == ["plain", "speculative"]
    launch = files.servers["plain"].launch
    assert launch is not None and launch.to_json() == json.loads(
        (EXAMPLE / "servers" / "plain-launch.json").read_text()
    )
    assert files.on_disk.requests_on_disk == {"measured": 0, "partial": 0, "torn_lines": 0, "not_written": 0}
    ends = [datetime.fromisoformat(e["started_utc"]) + timedelta(seconds=e["duration_s"]) for e in lines]
    assert files.generated_utc == max(ends).replace(microsecond=0).isoformat() == "2026-11-29T20:52:00+00:00"


def test_a_placebo_an_older_effective_record_and_no_status(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(EXAMPLE, run)
    (run / "status.json").unlink()
    shutil.copyfile(DATA / "vllm024_h200_draft_startup.log", run / "servers" / "speculative.log")
    (run / "servers" / "placebo-effective.json").write_text(json.dumps(effective(version="0.24.0")))
    files = with_engine_paths(read_run(run, ROLES, (PLACEBO,)), run)
    assert files.status == NO_STATUS
    assert sorted(files.servers) == ["placebo", "plain", "speculative"]
    assert files.servers["placebo"].to_json() == {
        "launch": None,
        "effective": effective(version="0.24.0"),
        "resources": None,
        "teardown": None,
    }
    spec, plain = files.servers["speculative"].effective, files.servers["plain"].effective
    assert spec is not None and spec.engine_path is not None and spec.engine_path.model_runner == "V1"  # from the log
    assert plain is not None and "engine_path" not in plain.to_json()  # no log kept: unknown on the card


def test_with_engine_path_keeps_a_record_that_has_one(tmp_path: Path) -> None:
    (tmp_path / "servers").mkdir()
    (tmp_path / "servers" / "plain.log").write_text("anything")
    path = {"async_scheduling": None, "model_runner": "V2", "fallback_reasons": []}
    kept = effective_file(engine_path=path)
    assert with_engine_path(kept, tmp_path, "plain") is kept
    assert with_engine_path(None, tmp_path, "plain") is None
    found = with_engine_path(effective_file(), tmp_path, "plain")
    assert found is not None and found.to_json() == effective(
        engine_path={"async_scheduling": None, "model_runner": None, "fallback_reasons": []}
    )


def test_run_ended_utc_without_cell_lines_is_protocols_time(tmp_path: Path) -> None:
    (tmp_path / "protocol.json").write_text("{}")
    os.utime(tmp_path / "protocol.json", (1_800_000_000.7, 1_800_000_000.7))
    assert run_ended_utc([], tmp_path) == "2027-01-15T08:00:00+00:00"
    lines = [
        CellEntry("plain", "w", 4, started_utc="2026-01-01T00:00:00+01:00", duration_s=59.9),
        CellEntry("plain", "w", 4, started_utc=None),
    ]
    assert run_ended_utc(lines, tmp_path) == "2025-12-31T23:00:59+00:00"


def test_a_folder_without_protocol_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="is not a run folder \\(no protocol.json\\); pass runs/<pair>/<timestamp>"):
        read_run(tmp_path, ROLES)
