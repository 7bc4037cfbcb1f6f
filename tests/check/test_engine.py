"""Whether the engine command can start and its version (without starting a server), and the launch flags refused
in [engine].args."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from loadgen.check.engine import check_engine_args, legacy_equivalent
from loadgen.check.enginestart import EngineStart, detect_engine_version, probe_engine, version_probe

VLLM_PYTHON = Path(".venv-vllm/bin/python")


def fake_vllm(tmp_path: Path, body: str) -> Path:
    """An executable named ``vllm`` running the shell ``body``."""
    path = tmp_path / "bin" / "vllm"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_version_probe_shapes() -> None:
    assert version_probe(["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]) == [
        "/venv/bin/python",
        "-c",
        "import vllm, sys; print(vllm.__version__)",
    ]
    assert version_probe(["vllm", "serve"]) == ["vllm", "--version"]
    assert version_probe(["/opt/bin/vllm", "serve"]) == ["/opt/bin/vllm", "--version"]
    assert version_probe(["docker", "run", "vllm/vllm-openai"]) is None
    assert version_probe(["python", "-m", "sglang.launch_server"]) is None
    assert version_probe([]) is None


def test_detect_from_vllm_version_output(tmp_path: Path) -> None:
    vllm = fake_vllm(tmp_path, 'echo "INFO 11-29 loading plugins" >&2\necho "INFO banner"\necho "0.24.0+cu130"')
    assert detect_engine_version([str(vllm), "serve"], {}) == "0.24.0+cu130"


def test_detect_lays_env_over_the_environment(tmp_path: Path) -> None:
    vllm = fake_vllm(tmp_path, 'echo "$FAKE_VERSION"')
    assert detect_engine_version([str(vllm), "serve"], {"FAKE_VERSION": "0.31.1"}) == "0.31.1"


@pytest.mark.parametrize("body", ["exit 1", "echo no version here", "sleep 5; echo 0.32.0"])
def test_detect_returns_none_on_failure(tmp_path: Path, body: str) -> None:
    vllm = fake_vllm(tmp_path, body)
    assert detect_engine_version([str(vllm), "serve"], {}, timeout_s=1.0) is None


def test_detect_never_raises_for_missing_interpreter(tmp_path: Path) -> None:
    assert detect_engine_version([str(tmp_path / "nope" / "python"), "-m", "vllm.x"], {}) is None
    assert detect_engine_version([str(tmp_path / "nope" / "vllm"), "serve"], {}) is None
    assert detect_engine_version(["sh", "-c", "true"], {}) is None


def test_detect_where_vllm_is_not_installed() -> None:
    # loadgen's own interpreter has no vllm: the probe fails and says so with None
    assert (
        detect_engine_version([sys.executable, "-m", "vllm.entrypoints.openai.api_server"], {"PYTHONPATH": ""}) is None
    )


def test_a_command_that_cannot_start_is_named_with_the_fix(tmp_path: Path) -> None:
    missing = probe_engine([str(tmp_path / "nope" / "python"), "-m", "vllm.entrypoints.openai.api_server"], {})
    assert missing.version is None and missing.problem == (
        f"[engine].command '{tmp_path / 'nope' / 'python'}' does not exist; install vLLM there (`make engine` builds "
        ".venv-vllm for the embedded pairs) or fix [engine].command"
    )
    off_path = probe_engine(["no-such-vllm-here", "serve"], {"PATH": str(tmp_path)})
    assert off_path.problem is not None and "'no-such-vllm-here' is not on PATH" in off_path.problem
    plain_file = tmp_path / "vllm"
    plain_file.write_text("#!/bin/sh\necho 0.32.0\n")  # not executable
    stuck = probe_engine([str(plain_file), "serve"], {})
    assert stuck.problem is not None and f"'{plain_file}' is not an executable file; `chmod +x` it" in stuck.problem
    no_vllm = probe_engine([sys.executable, "-m", "vllm.entrypoints.openai.api_server"], {"PYTHONPATH": ""})
    assert no_vllm.version is None and no_vllm.problem is not None
    assert no_vllm.problem.startswith(f"[engine].command cannot start vLLM: `{sys.executable} -c ")
    assert "exited 1 (ModuleNotFoundError: No module named 'vllm')" in no_vllm.problem


def test_a_command_that_starts_without_a_version_is_no_problem(tmp_path: Path) -> None:
    assert probe_engine(["sh", "-c", "true"], {}) == EngineStart(None)  # not a vLLM command: only looked up
    assert probe_engine([str(fake_vllm(tmp_path, "echo banner")), "serve"], {}) == EngineStart(None)
    slow = fake_vllm(tmp_path, "sleep 5; echo 0.32.0")  # bounded: the version is unknown, the command not refused
    assert probe_engine([str(slow), "serve"], {}, timeout_s=1.0) == EngineStart(None)
    assert probe_engine([str(fake_vllm(tmp_path, "echo 0.32.0")), "serve"], {}) == EngineStart("0.32.0")


@pytest.mark.slow
@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="needs the CPU build of vLLM in .venv-vllm (make engine)")
def test_detect_real_cpu_build() -> None:
    version = detect_engine_version([str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server"], {})
    assert version is not None and version.startswith("0.32")


def test_legacy_flags_print_the_exact_json() -> None:
    (f,) = check_engine_args(["--dtype", "float32", "--speculative-model", "m", "--num-speculative-tokens", "5"])
    assert f.blocking and not f.ok and f.check == "engine.args"
    assert '--speculative-config \'{"method": "draft_model", "model": "m", "num_speculative_tokens": 5}\'' in f.message
    assert "were removed in vLLM 0.8.3" in f.message and "put these keys in [speculative]" in f.message


def test_legacy_ngram_and_equals_forms() -> None:
    (f,) = check_engine_args(
        [
            "--speculative_model=[ngram]",
            "--num-speculative-tokens=3",
            "--ngram-prompt-lookup-max",
            "4",
            "--speculative-draft-tensor-parallel-size",
            "1",
        ]
    )
    spec = json.loads(f.message.split("--speculative-config '")[1].split("'")[0])
    assert spec == {
        "method": "ngram",
        "num_speculative_tokens": 3,
        "prompt_lookup_max": 4,
        "draft_tensor_parallel_size": 1,
    }
    assert list(spec)[:2] == ["method", "num_speculative_tokens"]


def test_shortcut_flags() -> None:
    (f,) = check_engine_args(["--spec-method", "draft_model", "--spec-model", "/d", "--spec-tokens", "4"])
    assert "vLLM 0.22+ shortcuts" in f.message
    assert '{"method": "draft_model", "model": "/d", "num_speculative_tokens": 4}' in f.message


def test_legacy_equivalent_quantization_and_len() -> None:
    assert legacy_equivalent(
        [
            ("--speculative-model", "d"),
            ("--speculative-max-model-len", "2048"),
            ("--speculative-model-quantization", "fp8"),
        ]
    ) == {"method": "draft_model", "model": "d", "max_model_len": 2048, "quantization": "fp8"}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--speculative-config", '{"method": "ngram"}'], "move its keys into [speculative]"),
        (["-sc", "{}"], "move its keys into [speculative]"),
        (["--disable-log-stats"], "no vllm:* metrics"),
        (["--port", "9000"], "use [engine].port"),
        (["--use-v2-block-manager"], "has no equivalent (a no-op, removed 0.10)"),
        (["--speculative-disable-by-batch-size", "4"], "has no equivalent"),
        (["--spec-decoding-acceptance-method", "typical_acceptance_sampler"], "V0 only"),
        (["--speculative-disable-mqa-scorer"], "V0 only"),
    ],
)
def test_refused_flags(args: list[str], needle: str) -> None:
    (f,) = check_engine_args(args)
    assert f.blocking and needle in f.message and args[0] in f.message


def test_ordinary_args_pass() -> None:
    assert (
        check_engine_args(
            [
                "--dtype",
                "float32",
                "--max-model-len",
                "1024",
                "--enforce-eager",
                "--gpu-memory-utilization",
                "0.3",
                "-tp",
                "2",
            ]
        )
        == []
    )


def test_where_is_named() -> None:
    (f,) = check_engine_args(["--disable-log-stats"], "[servers.plain].args")
    assert "--disable-log-stats in [servers.plain].args" in f.message
