"""The click parameter types of flag values (cli/paramtypes.py) and the options record of compare and sweep
(cli/options.py): each type converts good values and refuses bad ones with its message; the record is what
click built from the command line, the same options declared once for both commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.cli.options import SWEEP_ONLY, RunOptions, run_options
from loadgen.cli.paramtypes import LevelList, Minutes, SpeedRange, Tolerance, Url, WorkloadList
from loadgen.records.overrides import Overrides


def _refusal(kind: click.ParamType, value: str) -> str:
    with pytest.raises(click.BadParameter) as bad:
        kind.convert(value, None, None)
    return bad.value.message


@pytest.mark.parametrize(
    ("kind", "value", "expected"),
    [
        (LevelList(), "1,4,16", (1, 4, 16)),
        (LevelList(), " 8 , 2", (8, 2)),
        (LevelList(), "100000", (100_000,)),
        (WorkloadList(), "chat,code", ("chat", "code")),
        (Minutes(), "30", 30.0),
        (Minutes(), "0.5", 0.5),
        (Tolerance(), "5%", 0.05),
        (Tolerance(), "0.05", 0.05),
        (Tolerance(), "250%", 2.5),
        (Tolerance(), "0", 0.0),
        (Url(), "http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        (Url(), "https://host.example/v1", "https://host.example/v1"),
        (SpeedRange(), "0.5:2", (0.5, 2.0)),
        (SpeedRange(), "0.001:1e3", (0.001, 1000.0)),
    ],
)
def test_a_good_value_converts(kind: click.ParamType, value: str, expected: Any) -> None:
    assert kind.convert(value, None, None) == expected


def test_a_workload_file_becomes_its_absolute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "w.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    assert WorkloadList().convert("chat,w.toml", None, None) == ("chat", str(tmp_path / "w.toml"))


@pytest.mark.parametrize(
    ("kind", "value", "message"),
    [
        (
            LevelList(),
            "1,x",
            "'1,x' is not a list of concurrency levels; give integers from 1 to 100,000 separated by "
            "commas, e.g. 1,4,16",
        ),
        (
            LevelList(),
            "100001",
            "'100001' is not a list of concurrency levels; give integers from 1 to 100,000 "
            "separated by commas, e.g. 1,4,16",
        ),
        (LevelList(), "4,4", "'4,4' lists a level twice; give each level once, e.g. 1,4,16"),
        (WorkloadList(), "a,,b", "'a,,b' has an empty workload name; give names or .toml files separated by commas"),
        (
            WorkloadList(),
            "no/such.toml",
            "workload file 'no/such.toml' does not exist; give a workload .toml file or a workload name of the pair",
        ),
        (Minutes(), "0", "'0' is no budget; give the minutes the sweep may take, a number above 0 such as 30"),
        (Minutes(), "inf", "'inf' is no budget; give the minutes the sweep may take, a number above 0 such as 30"),
        (Tolerance(), "-5%", "'-5%' is no tolerance; give a percentage such as 5% (or the fraction 0.05)"),
        (Tolerance(), "5", "'5' reads as the fraction 5 (500%); write 5% for 5 percent, or 500% if you mean it"),
        (
            Url(),
            "localhost:8000",
            "'localhost:8000' does not start with http:// or https://; give a URL such as http://127.0.0.1:8000",
        ),
        (
            Url(),
            "http://u:secret@:8000/?token=t",
            "'http://:8000/' names no host; give a URL such as http://127.0.0.1:8000",
        ),
        (Url(), "http://h:0", "'http://h:0' has a port outside 1..65535; give a URL such as http://127.0.0.1:8000"),
        (
            SpeedRange(),
            "fast",
            "'fast' is no range of speeds; give LOW:HIGH with 0.001 <= LOW < HIGH (a time_scale of "
            "at most 1,000, as in a workload file), e.g. 0.5:2",
        ),
        (
            SpeedRange(),
            "2:nan",
            "'2:nan' is no range of speeds; give LOW:HIGH with 0.001 <= LOW < HIGH (a time_scale of "
            "at most 1,000, as in a workload file), e.g. 0.5:2",
        ),
    ],
)
def test_a_bad_value_is_refused_with_the_fix(kind: click.ParamType, value: str, message: str) -> None:
    assert _refusal(kind, value) == message


@pytest.mark.parametrize("command", ["compare", "sweep"])
@pytest.mark.parametrize(
    ("option", "value"), [("--concurrency", "0"), ("--attach-plain", "ftp://h"), ("--requests", "-1")]
)
def test_both_commands_refuse_a_shared_flag_the_same_way(command: str, option: str, value: str) -> None:
    result = CliRunner().invoke(main, [command, "demo-cpu", option, value])
    assert result.exit_code == 2 and result.output.startswith(f"Usage: main {command} [OPTIONS] [PAIR]\n")
    assert result.output.splitlines()[-1].startswith(f"Error: Invalid value for '{option}': ")


def _built(*args: str) -> RunOptions:
    """The record a sweep-like command gets from ``args``."""
    seen: list[RunOptions] = []

    @click.command()
    @run_options("sweep", *SWEEP_ONLY)
    def probe(o: RunOptions) -> None:
        seen.append(o)

    result = CliRunner().invoke(probe, list(args), env={"OPENAI_API_KEY": "k"}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return seen[0]


def test_click_builds_one_typed_record(tmp_path: Path) -> None:
    o = _built(
        "p.toml",
        "--concurrency",
        "4,1",
        "--workload",
        "a,b",
        "--workload",
        "a,c",
        "--requests",
        "7",
        "--budget-min",
        "12",
        "--history",
        str(tmp_path),
        "--attach-plain",
        "http://h:1",
    )
    assert o == RunOptions(
        pair="p.toml",
        resume_dir=None,
        runs_dir=Path("runs"),
        attach_plain="http://h:1",
        allow_unpinned=False,
        api_key="k",
        overrides=Overrides((4, 1), 7, ("a", "b", "c")),
        history_dirs=(tmp_path,),
        budget_min=12.0,
    )
    assert o.attach == {"plain": "http://h:1"}
    assert _built().overrides is None and _built().history_dirs == ()


def test_compares_sink_options_arrive_as_one_observe_record() -> None:
    from loadgen.cli.runcmds import _COMPARE_ONLY
    from loadgen.run.observe import ObserveOptions

    seen: list[RunOptions] = []

    @click.command()
    @run_options("run", *_COMPARE_ONLY)
    def probe(o: RunOptions) -> None:
        seen.append(o)

    args = [
        "p",
        "--metrics-port",
        "9100",
        "--pushgateway",
        "http://pg:9091",
        "--prometheus-url",
        "http://pr:9090",
        "--no-progress",
    ]
    assert CliRunner().invoke(probe, args, catch_exceptions=False).exit_code == 0
    assert seen[0].observe == ObserveOptions(
        metrics_port=9100, pushgateway="http://pg:9091", prometheus_url="http://pr:9090", progress=False
    )
