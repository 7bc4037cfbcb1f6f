"""A launched server's busy port is found before the first server starts, and its port is held against other
loadgen runs until its server answers (run/execute.py, serve/portlock.py), on the scripted engine."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from loadgen.errors import LoadgenError, ServerError
from loadgen.profile.pairfile import load_pair
from loadgen.run.flow import run_compare
from loadgen.serve.portlock import ENV_DIR, hold
from tests.serve.test_portlock import _holder
from tests.support.promstack import free_port_block
from tests.support.scripted_engine import write_small_pair


@pytest.fixture(autouse=True)
def _own_hold_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_DIR, str(tmp_path / "holds"))


def _compare(tmp_path: Path, port: int, log: list[str]) -> Path:
    path = write_small_pair(tmp_path, "ports", port, '[design]\nblocks = 1\nplacebo = "off"\nco_resident = false\n')
    pair = load_pair(str(path), workloads_dir=tmp_path / "workloads")
    return run_compare(pair, tmp_path / "runs", log=log.append, allow_unpinned=True)


def test_a_busy_speculative_port_is_found_before_the_plain_server_starts(tmp_path: Path) -> None:
    port, log = free_port_block(2), []
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port + 1))
        busy.listen()
        with pytest.raises(LoadgenError, match=f"port {port + 1} on 127.0.0.1 .*is already in use"):
            _compare(tmp_path, port, log)
    assert not [line for line in log if "starting" in line], log  # no server was launched
    (run_dir,) = (tmp_path / "runs" / "ports").iterdir()
    assert not (run_dir / "servers" / "plain.log").exists()


def test_a_port_held_by_another_loadgen_process_is_refused_naming_its_pid(tmp_path: Path) -> None:
    port, log = free_port_block(2), []
    proc = _holder(port)
    try:
        with pytest.raises(
            LoadgenError,
            match=f"port {port} \\(the plain server's\\) is held by loadgen process "
            f"{proc.pid}, whose server is starting there",
        ):
            _compare(tmp_path, port, log)
    finally:
        proc.kill()
        proc.communicate(timeout=10)  # waits and closes its pipes
    assert not [line for line in log if "starting" in line], log


def test_each_port_is_held_until_its_server_answers(tmp_path: Path) -> None:
    port, seen = free_port_block(2), []

    def probe(line: str) -> None:  # what a second run would meet at each server's start and readiness
        if line.endswith(": started"):  # a cell's start line; its end line, after the server answered, counts
            return
        if line.startswith(("[plain] starting", "[plain] w c1", "[speculative] starting", "[speculative] w c1")):
            for p in (port, port + 1):
                try:
                    hold("127.0.0.1", p, "plain").release()
                    seen.append((" ".join(line.split()[:2]), p, "free"))
                except ServerError as exc:
                    seen.append((" ".join(line.split()[:2]), p, "held" if "held by loadgen" in str(exc) else "in use"))

    log: list[str] = []
    path = write_small_pair(tmp_path, "ports", port, '[design]\nblocks = 1\nplacebo = "off"\nco_resident = false\n')
    pair = load_pair(str(path), workloads_dir=tmp_path / "workloads")
    run_dir = run_compare(
        pair, tmp_path / "runs", log=lambda line: (log.append(line), probe(line))[0], allow_unpinned=True
    )
    assert json.loads((run_dir / "card.json").read_text())["complete"] is True
    assert seen == [
        ("[plain] starting:", port, "held"),
        ("[plain] starting:", port + 1, "held"),
        ("[plain] w", port, "in use"),
        ("[plain] w", port + 1, "held"),  # answered: plain's hold gone
        ("[speculative] starting:", port, "free"),
        ("[speculative] starting:", port + 1, "held"),
        ("[speculative] w", port, "free"),
        ("[speculative] w", port + 1, "in use"),
    ], log
