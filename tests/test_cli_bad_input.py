"""Bad input found by trying the CLI as a new user: each is one line and exit 2, never a traceback."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from loadgen.cli import main
from loadgen.errors import BadInput
from loadgen.run.observe import ObserveOptions, Observers
from loadgen.store.rundir import new_run_dir, read_json, read_jsonl
from tests.support.clirun import exited

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "h200" / "h200-1b-draft"


def _one_error_line(result: Result) -> str:
    lines = exited(result, 2)
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.mark.parametrize("command", ["compare", "sweep"])
@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("", "does not start with http:// or https://"),
        ("http://", "names no host"),
        ("http://127.0.0.1:70000", "has a port outside 1..65535"),
        ("http://a b", "holds a space or a control character"),
    ],
)
def test_a_bad_attach_url_is_a_usage_error_even_when_empty(command: str, url: str, problem: str) -> None:
    result = CliRunner().invoke(main, [command, "demo-cpu", "--attach-plain", url])
    assert result.exit_code == 2 and result.output.startswith("Usage: ")
    assert result.output.splitlines()[-1] == (
        f"Error: Invalid value for '--attach-plain': {url!r} {problem}; give a URL such as http://127.0.0.1:8000"
    )


def test_a_metrics_port_out_of_range_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["compare", "demo-cpu", "--metrics-port", "70000"])
    assert result.exit_code == 2 and "70000 is not in the range 1<=x<=65535" in result.output


def test_a_metrics_port_in_use_is_bad_input() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(BadInput, match=f"--metrics-port {port}: cannot listen there"):
            Observers("p", ObserveOptions(metrics_port=port, progress=False), lambda _line: None)


@pytest.mark.parametrize("root", ["/proc/no-such-folder", "/dev/null"])
def test_a_runs_dir_where_no_folder_can_be_made_is_bad_input(root: str) -> None:
    with pytest.raises(BadInput, match="cannot create the run folder .*give --runs-dir a folder"):
        new_run_dir(Path(root), "pair")


@pytest.mark.parametrize("content", [b"\xff\xfe\x00garbage", b"", b'{"cells": [', b"[1, 2]"])
def test_diff_of_a_broken_card_is_one_line_exit_2(tmp_path: Path, content: bytes) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    shutil.copytree(EXAMPLE, good)
    bad.mkdir()
    (bad / "card.json").write_bytes(content)
    result = CliRunner().invoke(main, ["diff", str(good), str(bad)])
    assert result.exit_code == 2
    assert str(bad / "card.json") in _one_error_line(result)


def test_report_with_a_broken_protocol_is_one_line_exit_2(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(EXAMPLE, run)
    (run / "protocol.json").write_text('{"pair": ')
    result = CliRunner().invoke(main, ["report", str(run)])
    [error] = [line for line in exited(result, 2) if line.startswith("loadgen: error:")]
    assert "protocol.json is not a readable JSON file" in error


def test_undecodable_bytes_in_a_jsonl_file_are_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    path.write_bytes(json.dumps({"a": 1}).encode() + b"\n\xff\xfe garbage\n" + json.dumps({"b": 2}).encode() + b"\n")
    torn: list[str] = []
    assert list(read_jsonl(path, torn)) == [{"a": 1}, {"b": 2}] and len(torn) == 1
    with pytest.raises(BadInput, match="is not a readable JSON file"):
        read_json(path)


@pytest.mark.parametrize("option", ["--pushgateway", "--prometheus-url"])
def test_a_malformed_prometheus_url_is_exit_2(option: str) -> None:
    result = CliRunner().invoke(main, ["compare", "demo-cpu", option, "notaurl"])
    assert result.exit_code == 2 and result.output.startswith("Usage: ")
    assert result.output.splitlines()[-1] == (
        f"Error: Invalid value for '{option}': 'notaurl' does not start with "
        "http:// or https://; give a URL such as http://127.0.0.1:8000"
    )


def test_pairs_outside_the_repository_root_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["pairs"])
    assert result.exit_code == 2
    assert "run loadgen from the repository root" in _one_error_line(result)
    result = CliRunner().invoke(main, ["check", "demo-cpu"])
    assert result.exit_code == 2 and "run loadgen from the repository root" in result.output
