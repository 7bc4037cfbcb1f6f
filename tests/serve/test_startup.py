"""An engine that dies while starting: loadgen fails within seconds of the fatal log line, quoting it and
the log's path, instead of waiting out the start-up timeout (a fake engine command, real processes)."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from loadgen.errors import ServerError
from loadgen.profile.pairfile import load_pair
from loadgen.records.usage import Teardown
from loadgen.run.arms import launch_spec
from loadgen.serve import servers
from loadgen.serve.startup import LogWatch, fatal_line
from tests.support.promstack import free_port

ENGINE = """\
import sys, time
print("INFO 12-01 04:00:00 [api_server.py:1] vLLM API server version 0.11.0", flush=True)
print("(EngineCore_DP0 pid=4242) ERROR 12-01 04:00:03 [core.py:708] EngineCore failed to start.", flush=True)
print("(EngineCore_DP0 pid=4242) Traceback (most recent call last):", flush=True)
time.sleep(120)  # the API server lingers without ever serving
"""


def test_engine_that_fails_to_start_is_reported_within_seconds(tmp_path: Path) -> None:
    script = tmp_path / "fake_engine.py"
    script.write_text(ENGINE)
    pair = load_pair("demo-cpu")
    pair = replace(
        pair,
        engine=replace(pair.engine, command=(sys.executable, str(script)), port=free_port(), startup_timeout_s=30.0),
    )
    spec = launch_spec(pair, "plain", tmp_path)
    t0 = time.monotonic()
    teardown: list[Teardown | None] = []
    with pytest.raises(ServerError) as info, servers.running(spec, teardown.append):
        pass
    assert time.monotonic() - t0 < 8.0  # not the 30 s start-up timeout
    message = str(info.value)
    assert "EngineCore failed to start." in message and str(tmp_path / "servers" / "plain.log") in message
    assert teardown and teardown[0] is not None and teardown[0].survivors == ()  # the lingering process was stopped


def test_fatal_lines() -> None:
    assert (
        fatal_line(["INFO loading", "ModuleNotFoundError: No module named 'vllm._C'"])
        == "ModuleNotFoundError: No module named 'vllm._C'"
    )
    assert (
        fatal_line(
            [
                "ValueError: No available memory for the cache blocks. Try increasing "
                "`gpu_memory_utilization` when initializing the engine."
            ]
        )
        is not None
    )
    assert fatal_line(["(EngineCore_DP0 pid=7) ImportError: cannot import name 'x'"]) is not None
    assert fatal_line(["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"]) is not None
    assert fatal_line(["RuntimeError: Engine core initialization failed. See root cause above."]) is not None
    # a warning that merely mentions an import error is no failure
    assert fatal_line(["WARNING [utils.py:1] Failed to import flash_attn: ImportError: libcuda.so", "INFO ok"]) is None


def test_log_watch_judges_complete_lines_once(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    watch = LogWatch(log)
    assert watch.fatal() is None  # no log yet
    log.write_text("INFO starting\nERROR EngineCore failed")
    assert watch.fatal() is None  # the line is not complete yet
    with log.open("a") as fh:
        fh.write(" to start.\nINFO more\n")
    assert watch.fatal() == "ERROR EngineCore failed to start."
    assert watch.fatal() is None
