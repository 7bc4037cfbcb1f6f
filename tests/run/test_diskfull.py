"""A run folder that cannot be written (full disk, read-only file system, a path taken by a folder):
each request line is on disk whole or not at all, the cell's entry comes before its optional files,
the run stops with one line naming the folder and its free space (exit 1), and ``loadgen report``
finishes the card from what is on disk once the folder can be written again, counting every finished
request (those of the cell cut short marked partial) and the records that could not be written."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.errors import RunDirUnwritable
from loadgen.run import execute
from loadgen.run.closing import first_unwritable
from loadgen.store.rundir import JsonlAppender, read_jsonl, write_json
from tests.support.fakerun import (
    attach_roles,
    cell,
    execute_roles,
    measured_on_disk,
    remount,
    run_folder,
    small_tmpfs,
    stream,
)
from tests.support.scripted_server import Counters, scripted_server


def test_a_write_cut_short_leaves_whole_lines_and_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    appender = JsonlAppender(tmp_path / "requests.jsonl")
    appender.append({"n": 1, "text": "x" * 100})
    real_write = os.write

    def write_half_then_fail(fd: int, data: bytes | memoryview) -> int:
        if len(data) > 20:  # the disk takes the first 20 bytes, then is full
            return real_write(fd, bytes(data[:20]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", write_half_then_fail)
    with pytest.raises(RunDirUnwritable) as err:
        appender.append({"n": 2, "text": "y" * 100})
    with pytest.raises(RunDirUnwritable):
        appender.append({"n": 3})
    monkeypatch.undo()
    appender.close()
    message = str(err.value)
    assert "\n" not in message and err.value.exit_code == 1
    assert f"cannot write requests.jsonl in {tmp_path} (No space left on device;" in message and "KiB free" in message
    # truncated back to the last whole line: nothing of record 2 stays
    assert (tmp_path / "requests.jsonl").read_text() == json.dumps({"n": 1, "text": "x" * 100}) + "\n"
    assert appender.lost == 2


def test_a_line_torn_by_a_crash_is_ended_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    path.write_text('{"n": 1}\n{"n": 2, "tex')  # the process died mid-line
    appender = JsonlAppender(path)
    appender.append({"n": 3})
    appender.close()
    assert [r["n"] for r in read_jsonl(path)] == [1, 3]  # record 3 did not merge into the torn line
    torn: list[str] = []
    assert [r["n"] for r in read_jsonl(path, torn)] == [1, 3] and torn == ['{"n": 2, "tex']


def test_the_cell_entry_is_written_before_its_optional_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = cell(2, 6, "m")
    pair, run_dir = run_folder(tmp_path, [c])
    (run_dir / "metrics" / f"{c.stem('plain')}__gauges.jsonl").mkdir()  # the gauges' path is taken by a folder
    with scripted_server({"*": stream(0.0)}) as url:
        attach_roles(monkeypatch, url)
        with pytest.raises(RunDirUnwritable, match=r"cannot write plain__short-homogeneous__c2__rep0__gauges.jsonl"):
            execute_roles(pair, run_dir, {"plain": [c]})
    entries = list(read_jsonl(run_dir / "cells.jsonl"))
    assert [(e["role"], e["level"]) for e in entries] == [("plain", "c2")]
    assert measured_on_disk(run_dir) == 6
    card = json.loads((run_dir / "card.json").read_text())
    assert card["cells"][0]["plain"]["requests"] == 6 and card["requests_on_disk"]["partial"] == 0


def test_a_full_disk_stops_with_one_line_and_report_counts_every_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2 MiB: the filler leaves the same 16 KiB whatever the size, and once it is gone the report has room for
    # the card, its HTML and its plots (at 512 KiB they once found 220 KiB free)
    with small_tmpfs(tmp_path, 2048) as mnt:
        c = cell(4, 400, "m")
        pair, run_dir = run_folder(mnt, [c])
        filler = mnt / "filler"
        free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
        filler.write_bytes(b"\0" * (free - 16 * 1024))  # room for status.json and some 20 requests
        with scripted_server({"*": stream(0.001)}) as url:
            attach_roles(monkeypatch, url)
            with pytest.raises(RunDirUnwritable) as err:
                execute_roles(pair, run_dir, {"plain": [c]})
        message = str(err.value)
        assert "\n" not in message
        assert f"in {run_dir} (No space left on device; " in message and "KiB free there" in message
        assert "no card was written" in message and f"`loadgen report {run_dir}` writes it" in message
        lines = (run_dir / "requests.jsonl").read_text().splitlines()
        assert all(json.loads(line) for line in lines)  # whole lines only
        on_disk = measured_on_disk(run_dir)
        assert 0 < on_disk < 400
        status = json.loads((run_dir / "status.json").read_text())
        assert status["complete"] is False and "No space left on device" in status["failure"]
        assert status["requests_not_written"] >= 1
        assert not (run_dir / "card.json").exists()

        filler.unlink()  # space freed: the report finishes the card from the folder alone
        result = CliRunner().invoke(main, ["report", str(run_dir)])
        assert result.exit_code == 0, result.output
        card = json.loads((run_dir / "card.json").read_text())
        assert card["requests_on_disk"] == {
            "measured": on_disk,
            "partial": on_disk,
            "torn_lines": 0,
            "not_written": status["requests_not_written"],
        }
        plain = card["cells"][0]["plain"]
        assert plain["requests"] == on_disk and plain["partial"] is True and plain["partial_requests"] == on_disk
        assert card["cells"][0]["complete"] is False
        assert (
            f"{on_disk} of {on_disk} measured requests on disk are from cells cut short" in card["failure"]
            and f"{status['requests_not_written']} request records could not be written" in card["failure"]
        )
        assert "INCOMPLETE" in (run_dir / "card.md").read_text()


def test_a_read_only_run_folder_is_one_line_before_any_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with small_tmpfs(tmp_path, 1024) as mnt:
        c = cell(2, 4, "m")
        pair, run_dir = run_folder(mnt, [c])
        remount(mnt, "ro")
        counters = Counters()
        with scripted_server({"*": stream(0.0)}, counters) as url:
            attach_roles(monkeypatch, url)
            with pytest.raises(RunDirUnwritable) as err:
                execute_roles(pair, run_dir, {"plain": [c]})
        assert counters.requests == 0
        assert "\n" not in str(err.value)
        assert f"cannot write status.json in {run_dir} (Read-only file system; " in str(err.value)
        # the CLI: one line and exit 1, for the report and for --resume (which rewrites requests.jsonl)
        for args in (["report", str(run_dir)], ["compare", "--resume", str(run_dir)]):
            result = CliRunner().invoke(main, args)
            assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
            assert result.output.count("\n") == 1 and "Read-only file system" in result.output, result.output
            assert result.output.startswith("loadgen: error: cannot write ")
        remount(mnt, "rw")


def test_the_stop_line_names_the_write_that_failed_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = cell(2, 6, "m")
    pair, run_dir = run_folder(tmp_path, [c])
    (run_dir / "metrics" / f"{c.stem('plain')}__gauges.jsonl").mkdir()  # the first write to fail
    (run_dir / "servers" / "plain-teardown.json").mkdir()  # and the teardown record, written later in a finally

    def close_with_teardown_record(self: execute.Session) -> None:
        write_json(self.run_dir / "servers" / "plain-teardown.json", {"survivors": []})

    monkeypatch.setattr(execute.Session, "close", close_with_teardown_record)
    with scripted_server({"*": stream(0.0)}) as url:
        attach_roles(monkeypatch, url)
        with pytest.raises(RunDirUnwritable) as err:
            execute_roles(pair, run_dir, {"plain": [c]})
    first = f"cannot write plain__short-homogeneous__c2__rep0__gauges.jsonl in {run_dir / 'metrics'} (Is a directory;"
    assert str(err.value).startswith(first) and "plain-teardown.json" not in str(err.value).split("; no card")[0]
    assert json.loads((run_dir / "status.json").read_text())["failure"].startswith(first)


def test_first_unwritable_walks_the_chain_to_the_earliest_failed_write() -> None:
    first, later = RunDirUnwritable("cannot write requests.jsonl"), RunDirUnwritable("cannot write status.json")
    try:
        try:
            raise first
        finally:
            try:
                raise OSError(errno.ENOSPC, "No space left on device")
            except OSError:
                raise later from None
    except RunDirUnwritable as exc:
        assert exc is later and first_unwritable(exc) is first
    other = RuntimeError("not a write")
    assert first_unwritable(other) is other and first_unwritable(None) is None
