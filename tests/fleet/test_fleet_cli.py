"""``loadgen fleet`` on bad input: one line naming the problem and the fix, exit 2, never a hang (no Ray
cluster is started here)."""

from __future__ import annotations

import http.server
import socket
import threading
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


def test_nothing_listening_at_the_address_is_bad_input_before_ray_init(tmp_path: Path) -> None:
    (tmp_path / "f.toml").write_text(FLEET)
    code, out = _run("run", str(tmp_path / "f.toml"), "--ray-address", f"127.0.0.1:{_free_port()}")
    # the TCP pre-check's line: ray.init, which retries for minutes, was never reached
    assert code == 2 and "no Ray cluster answers at" in out and "ray start --head" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give exactly one of FLEET.toml or --resume"),
        (["nope"], "fleet file 'nope' not found"),
    ],
)
def test_run_needs_one_fleet_file_or_a_resume_folder(args: list[str], message: str) -> None:
    code, out = _run("run", *args)
    assert code == 2 and message in out


def test_resume_and_report_of_a_folder_that_is_no_fleet(tmp_path: Path) -> None:
    code, out = _run("report", str(tmp_path))
    assert code == 2 and "tasks.json" in out
    code, out = _run("run", "--resume", str(tmp_path))
    assert code == 2 and "not a fleet folder" in out


@pytest.mark.parametrize("address", ["127.0.0.1", "garbage", "http://127.0.0.1:6379", "ray://127.0.0.1:10001"])
def test_an_address_that_is_no_ray_address_is_one_line(tmp_path: Path, address: str) -> None:
    (tmp_path / "f.toml").write_text(FLEET)
    code, out = _run("run", str(tmp_path / "f.toml"), "--ray-address", address)
    assert (
        code == 2
        and out.count("\n") == 1
        and ("not a Ray address" in out or "no Ray cluster" in out or "Ray Client addresses are not supported" in out)
    ), out


@pytest.mark.slow
def test_something_else_listening_at_the_address_is_bad_input_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loadgen.fleet import taskrun

    monkeypatch.setattr(taskrun, "PROBE_TIMEOUT_S", 10.0)
    (tmp_path / "f.toml").write_text(FLEET)
    server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        code, out = _run("run", str(tmp_path / "f.toml"), "--ray-address", f"127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
    # the bounded probe's line (PROBE_TIMEOUT_S), not a hang in ray.init
    assert code == 2 and ("no Ray cluster answered" in out or "cannot connect" in out), out


def test_reload_pairs_goes_with_resume(tmp_path: Path) -> None:
    (tmp_path / "f.toml").write_text(FLEET)
    code, out = _run("run", str(tmp_path / "f.toml"), "--reload-pairs")
    assert code == 2 and "--reload-pairs goes with --resume" in out
