"""``loadgen fleet`` on bad input: one line naming the problem and the fix, exit 2, in seconds (no Ray
cluster is started here)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main

FLEET = 'name = "x"\n[[measure]]\npairs = ["demo-cpu"]\nnodes = "every-gpu-node"\n'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["fleet", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_nothing_listening_at_the_address_is_bad_input_within_seconds(tmp_path: Path) -> None:
    (tmp_path / "f.toml").write_text(FLEET)
    t0 = time.monotonic()
    code, out = _run("run", str(tmp_path / "f.toml"), "--ray-address", f"127.0.0.1:{_free_port()}")
    assert code == 2 and "no Ray cluster answers at" in out and "ray start --head" in out
    assert time.monotonic() - t0 < 30


@pytest.mark.parametrize(("args", "message"), [
    ([], "give exactly one of FLEET.toml or --resume"),
    (["nope"], "fleet file 'nope' not found"),
])
def test_run_needs_one_fleet_file_or_a_resume_folder(args: list[str], message: str) -> None:
    code, out = _run("run", *args)
    assert code == 2 and message in out


def test_resume_and_report_of_a_folder_that_is_no_fleet(tmp_path: Path) -> None:
    code, out = _run("report", str(tmp_path))
    assert code == 2 and "tasks.json" in out
    code, out = _run("run", "--resume", str(tmp_path))
    assert code == 2 and "fleet.toml" in out
