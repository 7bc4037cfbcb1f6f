"""``loadgen check`` and ``loadgen compare`` refuse a pair whose engine command cannot start a server it launches
(the program missing, not executable, or a python without vLLM), with one FAIL line naming the command and the
fix and exit 2, before any run folder exists; an engine that starts without telling its version is a warning;
attached servers are not probed (their engine command is never run), so an attached run measures as before."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from tests.support.clirun import exited
from tests.support.faultrun import engines, loadgen, run_dir
from tests.support.promstack import free_port_block
from tests.support.scripted_engine import write_small_pair

SCRIPTED = '["{python}", "-m", "tests.support.scripted_engine"]'
FIX = "install vLLM there (`make engine` builds .venv-vllm for the embedded pairs) or fix [engine].command"


def _pair(tmp: Path, command: str, tail: str = "") -> Path:
    """The scripted engine's small pair (tests/support/scripted_engine.py) with ``[engine].command = command``."""
    path = write_small_pair(tmp, "p", free_port_block(2), tail)
    text = path.read_text().replace(SCRIPTED.format(python=sys.executable), command)
    path.write_text(text.replace('workloads = ["w"]', f'workloads = ["{tmp / "workloads" / "w.toml"}"]'))
    return path


def _check(pair: Path) -> tuple[int, list[str]]:
    """``loadgen check PAIR``: its exit code (no uncaught exception) and its non-blank lines."""
    result = CliRunner().invoke(main, ["check", str(pair)])
    if result.exit_code == 0:  # a check that passes returns without SystemExit
        assert result.exception is None, result.exception
        return 0, [line for line in result.output.splitlines() if line.strip()]
    return result.exit_code, exited(result, result.exit_code)


def test_a_missing_engine_program_fails_the_check_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "venv" / "bin" / "python"
    code, lines = _check(_pair(tmp_path, f'["{missing}", "-m", "vllm.entrypoints.openai.api_server"]'))
    assert code == 2
    assert f"FAIL engine command: [engine].command '{missing}' does not exist; {FIX}" in lines
    again = f"loadgen check {tmp_path / 'p.toml'}"
    assert lines[-1] == f"loadgen: error: 1 blocking finding(s); fix them and run `{again}` again"


def test_a_python_without_vllm_fails_the_check_with_its_import_error(tmp_path: Path) -> None:
    # loadgen's own interpreter has no vLLM (the pair's env sets PYTHONPATH to the repository only)
    code, lines = _check(_pair(tmp_path, f'["{sys.executable}", "-m", "vllm.entrypoints.openai.api_server"]'))
    assert code == 2
    (fail,) = [line for line in lines if line.startswith("FAIL ")]
    assert fail.startswith(f"FAIL engine command: [engine].command cannot start vLLM: `{sys.executable} -c ")
    assert fail.endswith(f"exited 1 (ModuleNotFoundError: No module named 'vllm'); {FIX}")


def test_a_file_that_is_not_executable_fails_the_check(tmp_path: Path) -> None:
    vllm = tmp_path / "vllm"
    vllm.write_text("#!/bin/sh\necho 0.32.0\n")
    code, lines = _check(_pair(tmp_path, f'["{vllm}", "serve"]'))
    assert code == 2
    said = f"FAIL engine command: [engine].command '{vllm}' is not an executable file; `chmod +x` it or fix "
    assert any(line.startswith(said) for line in lines), lines


def test_an_engine_that_starts_without_a_version_is_a_warning(tmp_path: Path) -> None:
    code, lines = _check(_pair(tmp_path, SCRIPTED.format(python=sys.executable)))
    assert code == 0, lines
    assert lines[0] == "engine version (installed): unknown"
    assert any(line.startswith("warn speculative config: engine version unknown (no vLLM version") for line in lines)
    assert not [line for line in lines if line.startswith("FAIL")]


def test_servers_attached_in_the_pair_file_are_not_probed(tmp_path: Path) -> None:
    urls = '[servers.plain]\nurl = "http://127.0.0.1:9"\n[servers.speculative]\nurl = "http://127.0.0.1:9"\n'
    code, lines = _check(_pair(tmp_path, f'["{tmp_path / "nope"}", "serve"]', urls))
    assert code == 0, lines
    assert lines[0] == "engine version: unknown (every server is attached: no engine command is run here)"
    assert not [line for line in lines if "engine command" in line and line.startswith("FAIL")]


@pytest.mark.slow
def test_compare_refuses_a_launch_that_cannot_start_and_measures_attached_servers(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "vllm"
    pair = _pair(tmp_path, f'["{missing}", "serve"]', '[design]\nblocks = 1\nplacebo = "blocks"\n')
    args = ["compare", str(pair), "--allow-unpinned", "--no-progress", "--runs-dir", str(tmp_path / "runs")]
    refused = loadgen(tmp_path, args)
    assert refused.code == 2 and "Traceback" not in refused.output, refused.output
    assert f"FAIL engine command: [engine].command '{missing}' does not exist; {FIX}" in refused.output
    assert refused.output.splitlines()[-1] == (
        "loadgen: error: pair check failed: 1 blocking finding(s) above (engine command); fix them first"
    )
    assert not (tmp_path / "runs").exists()  # refused before any run folder
    port = free_port_block(2)
    with engines(tmp_path, {"plain": port, "speculative": port + 1}) as urls:
        attach = ["--attach-plain", urls["plain"], "--attach-speculative", urls["speculative"]]
        ran = loadgen(tmp_path, [*args, *attach])
    assert ran.code == 0, ran.output
    assert "engine command" not in ran.output and "starting:" not in ran.output
    card = json.loads((run_dir(tmp_path) / "card.json").read_text())
    assert card["complete"] is True and card["requests_on_disk"]["measured"] == 3 * 2  # plain, placebo, speculative
