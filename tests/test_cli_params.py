"""The command line's own parameter types and listing, called directly: ``--concurrency``/``--workload`` lists
and ``--tolerance`` (cli/paramtypes.py), and the status of each folder ``loadgen runs`` lists
(cli/runlist.py) on a runs folder written here."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from loadgen.cli.paramtypes import LevelList, Tolerance, WorkloadList
from loadgen.cli.runlist import INTERRUPTED, RunEntry, list_runs, run_status
from loadgen.records.runparts import StatusFile
from loadgen.run.closing import STOPPED
from tests.support.cards import full_card


def fails(kind: click.ParamType, value: object) -> str:  # type: ignore[type-arg]
    with pytest.raises(click.BadParameter) as info:
        kind.convert(value, None, None)
    return info.value.message


def test_level_lists() -> None:
    assert LevelList().convert(" 16, 1,4", None, None) == (16, 1, 4) and LevelList().convert((2,), None, None) == (2,)
    assert fails(LevelList(), "1,0") == (
        "'1,0' is not a list of concurrency levels; give integers from 1 to 100,000 separated by commas, e.g. 1,4,16"
    )
    assert "is not a list" in fails(LevelList(), "100001") and "is not a list" in fails(LevelList(), "1.5")
    assert fails(LevelList(), "4,1,4") == "'4,1,4' lists a level twice; give each level once, e.g. 1,4,16"


def test_workload_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w.toml").write_text("")
    assert WorkloadList().convert("chat, w.toml", None, None) == ("chat", str(tmp_path / "w.toml"))
    assert fails(WorkloadList(), "chat,,code") == (
        "'chat,,code' has an empty workload name; give names or .toml files separated by commas"
    )
    assert fails(WorkloadList(), "x.toml") == (
        "workload file 'x.toml' does not exist; give a workload .toml file or a workload name of the pair"
    )


@pytest.mark.parametrize(
    ("text", "fraction"), [("5%", 0.05), ("0.05", 0.05), ("0", 0.0), ("250%", 2.5), (" 0.5 ", 0.5)]
)
def test_tolerances(text: str, fraction: float) -> None:
    assert Tolerance().convert(text, None, None) == pytest.approx(fraction)


def test_tolerances_refused() -> None:
    assert fails(Tolerance(), "5") == (
        "'5' reads as the fraction 5 (500%); write 5% for 5 percent, or 500% if you mean it"
    )
    for bad in ("-1%", "1000%", "x", "nan"):
        assert fails(Tolerance(), bad) == (
            f"{bad!r} is no tolerance; give a percentage such as 5% (or the fraction 0.05)"
        )


def test_run_status() -> None:
    assert run_status(None) == ("partial", STOPPED)
    assert run_status(StatusFile(complete=True, failure="ignored")) == ("complete", None)
    assert run_status(StatusFile(complete=False, failure=INTERRUPTED)) == ("partial", INTERRUPTED)
    assert run_status(StatusFile(complete=False, failure=None)) == ("partial", None)
    assert run_status(StatusFile(complete=False, failure="server died")) == ("failed", "server died")


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_list_runs(tmp_path: Path) -> None:
    write(tmp_path / "p" / "a" / "protocol.json", {})
    write(tmp_path / "p" / "a" / "status.json", {"complete": True, "failure": None})
    write(tmp_path / "p" / "a" / "card.json", full_card({"verdict": {"summary": "PASS: 4 cells"}}))
    write(tmp_path / "p" / "b" / "status.json", {"complete": False, "failure": "server died"})
    write(tmp_path / "p" / "c" / "refused.json", {"reason": "unreachable", "exit_code": 1, "refused_utc": ""})
    write(tmp_path / "p" / "s" / "status.json", {"complete": True, "failure": None})
    (tmp_path / "p" / "s" / "sweep.toml").write_text("")
    write(tmp_path / "p" / "s" / "sweep.json", {"recommendation": {"lines": ["speculate below c16"]}})
    (tmp_path / "p" / "empty").mkdir()
    write(tmp_path / "q" / "x" / "protocol.json", {})
    write(
        tmp_path / "f" / "tasks.json",
        {"tasks": [{"pair": "p", "status": "done", "exit_code": 3}, {"pair": "q", "status": "failed"}]},
    )
    assert list(list_runs(tmp_path, "p")) == [
        RunEntry("fleet", tmp_path / "f", "failed", "1 of 2 tasks done, 1 failed their declared criteria"),
        RunEntry("run", tmp_path / "p" / "a", "complete", "PASS: 4 cells"),
        RunEntry("run", tmp_path / "p" / "b", "failed", "0 measured requests on disk; stopped: server died"),
        RunEntry("run", tmp_path / "p" / "c", "refused", "unreachable"),
        RunEntry("sweep", tmp_path / "p" / "s", "complete", "speculate below c16"),
    ]
    assert [e.line() for e in list_runs(tmp_path, "q")][1] == (
        f"partial   run   {tmp_path / 'q' / 'x'}  0 measured requests on disk; stopped: {STOPPED}; "
        f"`loadgen compare --resume {tmp_path / 'q' / 'x'}` finishes it"
    )
    assert len(list(list_runs(tmp_path))) == 6
