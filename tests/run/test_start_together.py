"""Co-resident servers without a GPU start at once (run/bench.py ``Bench.open_together``; the CPU build of vLLM
reserves a declared KV-cache space, so no start-up profiles memory that another takes), on the scripted engine
with a known start-up time; one that never gets ready stops the one started beside it."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from loadgen.errors import LoadgenError
from loadgen.profile.pairfile import load_pair
from loadgen.records.usage import HardwareGpu
from loadgen.run.flow import run_compare
from loadgen.serve import resources
from loadgen.serve.portlock import ENV_DIR
from tests.support.promstack import free_port_block
from tests.support.scripted_engine import write_small_pair

START_S = 3.0
HOST = resources.hardware()


def _gpus(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    gpus = tuple(HardwareGpu(i, "NVIDIA H200", 150_000_000_000) for i in range(n))
    monkeypatch.setattr(resources, "hardware", lambda: replace(HOST, gpus=gpus))


@pytest.fixture(autouse=True)
def _own_hold_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_DIR, str(tmp_path / "holds"))


def _compare(tmp_path: Path, extra: str, log: list[tuple[float, str]]) -> Path:
    design = '[design]\nblocks = 1\nplacebo = "off"\nco_resident = true\n'
    env = f'SCRIPTED_ENGINE_START_S = "{START_S}"'
    path = write_small_pair(tmp_path, "together", free_port_block(2), design + extra, env)
    pair = load_pair(str(path), workloads_dir=tmp_path / "workloads")
    stamped = lambda line: log.append((time.monotonic(), line))  # noqa: E731
    return run_compare(pair, tmp_path / "runs", log=stamped, allow_unpinned=True)


def _when(log: list[tuple[float, str]], text: str) -> list[float]:
    return [t for t, line in log if text in line]


def test_cpu_servers_start_at_once_and_each_is_proven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _gpus(monkeypatch, 0)
    log: list[tuple[float, str]] = []
    run_dir = _compare(tmp_path, "", log)
    starts, readies = _when(log, "] starting: "), _when(log, "] ready after ")
    assert len(starts) == len(readies) == 2
    assert max(starts) < min(readies)  # the second launch did not wait for the first server
    assert max(readies) - min(starts) < 2 * START_S  # one after the other would take at least 2 x START_S
    for role in ("plain", "speculative"):
        effective = json.loads((run_dir / "servers" / f"{role}-effective.json").read_text())
        assert effective["ready_s"] >= START_S
    card = json.loads((run_dir / "card.json").read_text())
    assert card["complete"] is True


def test_with_a_gpu_the_servers_start_one_after_the_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _gpus(monkeypatch, 1)
    log: list[tuple[float, str]] = []
    _compare(tmp_path, "", log)
    starts, readies = _when(log, "] starting: "), _when(log, "] ready after ")
    assert starts[0] < readies[0] < starts[1] < readies[1]  # vLLM's memory profiling must see each alone


def test_a_server_that_never_gets_ready_stops_the_one_started_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _gpus(monkeypatch, 0)
    log: list[tuple[float, str]] = []
    with pytest.raises(LoadgenError, match="plain server exited with code 1 before it was ready"):
        _compare(tmp_path, '[servers.plain]\nenv = { SCRIPTED_ENGINE_FAIL = "1" }\n', log)
    assert len(_when(log, "] starting: ")) == 2
    (run_dir,) = (tmp_path / "runs" / "together").iterdir()
    for role in ("plain", "speculative"):  # both stopped, the speculative one never waited for
        teardown = json.loads((run_dir / "servers" / f"{role}-teardown.json").read_text())
        assert teardown.get("survivors", []) == []
    assert [line for _, line in log if "[speculative] stopped" in line]
