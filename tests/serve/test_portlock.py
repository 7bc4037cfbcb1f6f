"""Port holds between two real loadgen processes (serve/portlock.py): a port held by one is refused by the other
in one line naming the holder's pid, free again once the holder releases it or dies; a busy port is refused."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from loadgen.errors import ServerError
from loadgen.serve.portlock import ENV_DIR, PortHolds, hold
from tests.support.promstack import free_port

REPO = Path(__file__).resolve().parents[2]
HOLDER = (
    "import sys; from loadgen.serve.portlock import hold; h = hold('127.0.0.1', int(sys.argv[1]), 'plain'); "
    "print('held', flush=True); sys.stdin.readline(); h.release(); print('released', flush=True); "
    "sys.stdin.read()"
)


@pytest.fixture(autouse=True)
def _own_hold_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_DIR, str(tmp_path / "holds"))


def _holder(port: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_a_port_held_by_another_process_is_refused_naming_its_pid_until_it_releases() -> None:
    port = free_port()
    proc = _holder(port)
    try:
        with pytest.raises(ServerError) as err:
            hold("127.0.0.1", port, "speculative")
        assert str(err.value) == (
            f"port {port} (the speculative server's) is held by loadgen process {proc.pid}, "
            "whose server is starting there; wait for that run, or set [engine].port (or "
            "[servers.speculative].port) to a free port"
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()  # the holder releases (its server answers) and stays alive
        assert proc.stdout.readline() == "released\n"
        hold("127.0.0.1", port, "plain").release()
    finally:
        proc.kill()
        proc.communicate(timeout=10)  # waits and closes its pipes


def test_a_holder_that_dies_leaves_no_stale_hold() -> None:
    port = free_port()
    proc = _holder(port)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)  # waits and closes its pipes
    hold("127.0.0.1", port, "plain").release()


def test_a_busy_port_is_refused_and_holds_are_released_on_a_refusal() -> None:
    free = free_port()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        holds = PortHolds()
        with pytest.raises(
            ServerError,
            match=f"port {port} on 127.0.0.1 \\(the speculative server's\\) is already in use; stop what listens there",
        ):
            holds.take([("plain", "127.0.0.1", free), ("speculative", "127.0.0.1", port)])
    assert holds.by_port == {}
    hold("127.0.0.1", free, "plain").release()  # the plain port's hold went with the refusal


def test_a_shared_port_is_held_until_the_last_of_its_servers_answers() -> None:
    port = free_port()
    holds = PortHolds()
    holds.take([("plain", "127.0.0.1", port), ("speculative", "127.0.0.1", port)])
    holds.answered("plain")
    with pytest.raises(ServerError, match="is held by loadgen process"):
        hold("127.0.0.1", port, "placebo")
    holds.answered("speculative")
    hold("127.0.0.1", port, "placebo").release()
