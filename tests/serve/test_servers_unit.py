"""serve/servers.py without vLLM: the engine command line (exact), the launch spec's URL and headers, the port
and log helpers, and real processes standing in for a server (``python -c``): a refused launch, a process that
exits before it is ready, a tree torn down whole, and the effective config read from a recorded vLLM start-up log
and a scripted ``/version``."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from loadgen.errors import ServerError
from loadgen.profile.pair import ModelRef
from loadgen.records.speculative import SpeculativeConfig
from loadgen.serve import resources, servers
from tests.support.promstack import free_port
from tests.support.scripted_server import scripted_server

DATA = Path(__file__).resolve().parents[1] / "data"
PY = sys.executable


def spec(tmp_path: Path, argv: list[str], port: int = 1, **kw: object) -> servers.LaunchSpec:
    return servers.LaunchSpec("plain", argv, {}, "127.0.0.1", port, "m", 5.0, tmp_path / "logs" / "plain.log", **kw)  # type: ignore[arg-type]


def test_build_argv_exactly() -> None:
    argv = servers.build_argv(
        ["vllm", "serve"],
        ModelRef("/models/t", "abc123"),
        "t",
        "0.0.0.0",
        8001,
        7,
        ["--dtype", "bfloat16"],
        SpeculativeConfig.from_json({"num_speculative_tokens": 3, "method": "ngram"}, source="pair.toml"),
    )
    assert argv == [
        "vllm",
        "serve",
        "--model",
        "/models/t",
        "--served-model-name",
        "t",
        "--host",
        "0.0.0.0",
        "--port",
        "8001",
        "--seed",
        "7",
        "--revision",
        "abc123",
        "--dtype",
        "bfloat16",
        "--speculative-config",
        '{"method": "ngram", "num_speculative_tokens": 3}',
    ]
    plain = servers.build_argv(["python3", "-m", "vllm"], ModelRef("t"), "t", "h", 1, 0, [], None)
    assert plain == [
        "python3",
        "-m",
        "vllm",
        "--model",
        "t",
        "--served-model-name",
        "t",
        "--host",
        "h",
        "--port",
        "1",
        "--seed",
        "0",
    ]


def test_base_url_and_headers(tmp_path: Path) -> None:
    assert spec(tmp_path, [], 8000).base_url == "http://127.0.0.1:8000"
    assert spec(tmp_path, [], attach_url="http://gpu:9/v1/").base_url == "http://gpu:9/v1"
    assert spec(tmp_path, []).headers == {} and spec(tmp_path, [], api_key="k").headers == {"Authorization": "Bearer k"}


def test_port_in_use_and_tail(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert servers.port_in_use("127.0.0.1", port) is True
    assert servers.port_in_use("127.0.0.1", port) is False
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i}\n" for i in range(40)))
    assert servers.tail(log) == "\n".join(f"line {i}" for i in range(25, 40))
    assert servers.tail(log, 2) == "line 38\nline 39" and servers.tail(tmp_path / "none") == ""


def test_a_taken_port_or_a_missing_command_is_refused_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(ServerError) as info:
            servers.launch(spec(tmp_path, [PY], port))
    assert str(info.value) == (
        f"port {port} on 127.0.0.1 is already in use; stop what listens there or set [engine].port to a free port"
    )
    with pytest.raises(ServerError) as info:
        servers.launch(spec(tmp_path, [str(tmp_path / "no-vllm")], free_port()))
    assert str(info.value).startswith(
        f"cannot start '{tmp_path / 'no-vllm'}': No such file or directory; check [engine].command"
    )


def test_a_process_that_exits_before_it_is_ready_names_its_code_and_last_log_line(tmp_path: Path) -> None:
    argv = [PY, "-c", "print('loading weights'); print('ValueError: no such model', flush=True); raise SystemExit(3)"]
    with pytest.raises(ServerError) as info, servers.running(spec(tmp_path, argv, free_port())):
        pass
    assert str(info.value) == (
        "plain server exited with code 3 before it was ready; last log line: 'ValueError: no "
        f"such model'; full log: {tmp_path / 'logs' / 'plain.log'}"
    )


def test_stop_ends_the_whole_tree(tmp_path: Path) -> None:
    child = (
        "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
        " print('up', flush=True); time.sleep(60)"
    )
    server = servers.launch(spec(tmp_path, [PY, "-c", child], free_port()))
    log = tmp_path / "logs" / "plain.log"
    for _ in range(100):
        if log.read_text() == "up\n":
            break
        servers.time.sleep(0.05)
    assert server.process is not None and server.alive() and not server.gone(within_s=0.2)
    tree = [p.pid for p in resources.process_tree(server.process.pid)]
    assert len(tree) == 2
    report = server.stop(grace_s=5.0)
    assert report is not None and report.survivors == () and resources.alive(tree) == [] and server.gone(within_s=0.1)
    assert list(report.to_json()) == ["survivors", "gpu_memory_after", "gpu_settle"]
    assert report.gpu_settle.measured in (True, False)  # NVML here or not: a record either way
    assert servers.attach(spec(tmp_path, [PY])).stop() is None  # an attached server is never stopped


def test_the_effective_config_from_a_recorded_startup_log(tmp_path: Path) -> None:
    s = spec(tmp_path, [PY])
    s.log_path.parent.mkdir(parents=True)
    config = "SpeculativeConfig(method='draft_model', model='/models/draft', num_spec_tokens=3)"
    s.log_path.write_text(
        (DATA / "vllm024_h200_draft_startup.log").read_text()  # plus the lines vLLM 0.32 writes
        + f"(EngineCore pid=3399) INFO ... speculative_config={config}, seed=0\n"
        + "(EngineCore pid=3399) INFO ... KV cache size: 1,234,567 tokens\n"
    )
    with scripted_server({}, gets={"/version": (200, json.dumps({"version": "0.24.0"}).encode())}) as url:
        s.attach_url = url
        attached = servers.attach(s).effective_config().to_json()
        launched = servers.Server(spec=s, process=subprocess.Popen([PY, "-c", "pass"]))
        got = launched.effective_config().to_json()
        assert launched.process is not None and launched.process.wait() == 0
    assert attached["engine_path"] == {"async_scheduling": None, "model_runner": None, "fallback_reasons": []}
    assert got["version"] == "0.24.0" and got["base_url"] == url
    assert launched.effective is not None and launched.effective.to_json() == got
    assert (got["speculative_config_log"], got["kv_cache_tokens_log"]) == (config, 1_234_567)
    assert list(got) == [
        "base_url",
        "version",
        "speculative_config_log",
        "kv_cache_tokens_log",
        "engine_path",
        "cudagraph_ceiling",
    ]
    assert got["engine_path"] == {
        "async_scheduling": False,
        "model_runner": "V1",
        "fallback_reasons": [
            "Async scheduling not supported with draft_model-based speculative decoding and will be disabled.",
            "Model Runner V2 does not yet support speculative method 'draft_model'; using the V1 model runner instead.",
        ],
    }
    s.log_path.write_text("speculative_config=None\n")
    s.attach_url = f"http://127.0.0.1:{free_port()}"
    got = servers.attach(s).effective_config().to_json()
    assert (got["speculative_config_log"], got["kv_cache_tokens_log"], got["cudagraph_ceiling"]) == ("None", None, None)
    assert "version" not in got  # nothing answered /version
