"""No path of the command line prints a Python traceback: an exception loadgen does not expect (a defect,
injected here by tests/support/inject.py into each command, the command line run in a subprocess) ends with one
line naming the exception and where its traceback was written, and exit 1. A run cut by one keeps everything it
measured, on its card, its folder marked failed, the traceback in the folder; a command without a run folder
writes it to loadgen's cache folder (``$XDG_CACHE_HOME/loadgen``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from loadgen.cli.handling import _handles_errors
from tests.support.faultrun import Ran, engines, loadgen, run_dir, write_pair
from tests.support.inject import DEFECT
from tests.support.promstack import free_port_block

#: The start of the line every unexpected exception ends with.
SAID = f"loadgen: error: unexpected error ValueError: {DEFECT} (a defect in loadgen; its traceback is in "


def _one_line(ran: Ran) -> tuple[str, Path]:
    """The error line of ``ran`` and the traceback file it names, after asserting exit 1, no traceback printed,
    and a file holding the traceback."""
    assert ran.code == 1, ran.output
    assert "Traceback" not in ran.output, ran.output
    (line,) = [line for line in ran.output.splitlines() if line.startswith("loadgen: error: ")]
    assert line.startswith(SAID), line
    found = re.search(r"its traceback is in (\S+)\)", line)
    assert found is not None, line
    path = Path(found.group(1))
    text = path.read_text()
    assert "Traceback (most recent call last):" in text and f"ValueError: {DEFECT}" in text
    return line, path


@pytest.mark.slow
def test_a_defect_mid_run_keeps_every_measured_request_and_marks_the_folder_failed(tmp_path: Path) -> None:
    port = free_port_block(4)
    with engines(tmp_path, {"plain": port + 2, "speculative": port + 3}) as urls:
        pair = write_pair(tmp_path, port, "blocks")
        args = ["compare", str(pair), "--allow-unpinned", "--no-progress", "--runs-dir", str(tmp_path / "runs")]
        attach = ["--attach-plain", urls["plain"], "--attach-speculative", urls["speculative"]]
        ran = loadgen(tmp_path, [*args, *attach], inject="loadgen.run.cell:cell_entry@2")  # in the 2nd slot
    run = run_dir(tmp_path)
    line, path = _one_line(ran)
    assert path == run / "traceback.txt"
    assert line.endswith(f"; nothing measured is lost: it is in {run}, marked failed")
    status = json.loads((run / "status.json").read_text())
    assert status["complete"] is False and status["failure"] == line.removeprefix("loadgen: error: ")
    measured = [
        r
        for r in map(json.loads, (run / "requests.jsonl").read_text().splitlines())
        if r.get("phase", "measured") == "measured"
    ]
    assert len(measured) == 2 * 2  # the first slot's and the second's, whose cell entry failed
    card = json.loads((run / "card.json").read_text())
    assert card["complete"] is False and card["requests_on_disk"]["measured"] == len(measured)
    listed = loadgen(tmp_path, ["runs", "--runs-dir", str(tmp_path / "runs")])
    assert listed.code == 0 and f"failed    run   {run}  4 measured requests on disk; stopped: unexpected error" in (
        listed.output
    )
    # report, diff and runs over that folder, each with a defect of its own
    for args, target, folder in (
        (["report", str(run)], "loadgen.report.cardwrite:finish_card", run),
        (["diff", str(run), str(run)], "loadgen.report.diffing:diff_cards", None),
        (["runs", "--runs-dir", str(tmp_path / "runs")], "loadgen.cli.runlist:list_runs", None),
    ):
        line, path = _one_line(loadgen(tmp_path, args, inject=target))
        if folder is not None:  # the folder it works on keeps the traceback, and what it held
            assert path == folder / "traceback.txt" and line.endswith(f"); {folder} keeps what it held")
        else:
            assert path.parent == tmp_path / "cache" / "loadgen" and line.endswith(")")
    assert len(re.findall("Traceback", (run / "traceback.txt").read_text())) == 2  # compare's, then report's


@pytest.mark.parametrize(
    ("args", "target"),
    [
        (["check", "PAIR"], "loadgen.check.preflight:check_pair"),
        (["compare", "PAIR", "--runs-dir", "runs"], "loadgen.cli.runcmds:load_pair"),
        (["sweep", "demo-cpu-sweep", "--runs-dir", "runs"], "loadgen.run.sweep:run_sweep"),
        (["trace-capacity", "PAIR", "--workload", "w"], "loadgen.cli.tracecap:load_pair"),
        (["fleet", "report", "FOLDER"], "loadgen.fleet.fleetwrite:write_fleet_card"),
        (["runs", "--runs-dir", "runs"], "loadgen.cli.runlist:list_runs"),
        (["report", "FOLDER"], "loadgen.cli.commands:report_locked"),
        (["diff", "runs", "runs"], "loadgen.cli.commands:run_diff"),
    ],
    ids=lambda v: v[0] if isinstance(v, list) else None,
)
def test_a_defect_in_any_command_is_one_line_and_exit_1(tmp_path: Path, args: list[str], target: str) -> None:
    pair = write_pair(tmp_path, 8300, "blocks")
    (tmp_path / "folder").mkdir()
    (tmp_path / "runs").mkdir()
    given = {"PAIR": str(pair), "FOLDER": str(tmp_path / "folder")}
    line, path = _one_line(loadgen(tmp_path, [given.get(a, a) for a in args], inject=target))
    if "FOLDER" in args:
        assert path == tmp_path / "folder" / "traceback.txt" and line.endswith(
            f"); {tmp_path / 'folder'} keeps what it held"
        )
    else:
        assert path.parent == tmp_path / "cache" / "loadgen" and path.name.startswith("traceback-")


def test_clicks_own_exceptions_end_as_click_ends_them() -> None:
    """A usage error raised inside a command is click's (exit 2, its own lines), not an unexpected error."""

    @click.command()
    @_handles_errors
    def refuses() -> None:
        raise click.UsageError("give a folder")

    result = CliRunner().invoke(refuses, [])
    assert result.exit_code == 2 and "Error: give a folder" in result.output and "unexpected" not in result.output


def test_a_reader_that_goes_away_ends_the_listing_quietly(tmp_path: Path) -> None:
    """`loadgen runs | head -1`: the pipe closes after the first line; loadgen ends with exit 0 and prints
    nothing on stderr (no traceback, no 'unexpected error' line, no file written)."""
    import os
    import subprocess
    import sys

    for i in range(4000):  # far more than a pipe's buffer holds
        folder = tmp_path / "runs" / "p" / f"2026{i:06d}T000000Z"
        folder.mkdir(parents=True)
        (folder / "status.json").write_text('{"complete": true, "failure": null}')
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    with subprocess.Popen(
        [sys.executable, "-m", "loadgen", "runs", "--runs-dir", str(tmp_path / "runs")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().startswith(b"complete")
        proc.stdout.close()
        stderr = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 0, stderr
    assert stderr == "" and not (tmp_path / "cache").exists()
