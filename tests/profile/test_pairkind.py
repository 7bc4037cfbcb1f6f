"""`loadgen pairs` marks each pair file CPU demo / GPU / sweep from its content, never from its name."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.profile.pairkind import PairKind, pair_kind
from loadgen.records.candidates import is_sweep
from loadgen.records.launchtable import LaunchTable

CPU_ENGINE = '[engine]\nargs = ["--dtype", "float32"]\nenv = { VLLM_CPU_KVCACHE_SPACE = "1" }\n'
GPU_ENGINE = '[engine]\nargs = ["--gpu-memory-utilization", "0.3"]\n'
SWEEP_SPEC = '[speculative]\nmethod = "ngram"\nnum_speculative_tokens = [1, 2]\n'
ONE_SPEC = '[speculative]\nmethod = "ngram"\nnum_speculative_tokens = 2\n'


@pytest.mark.parametrize(
    ("doc", "kind"),
    [
        ({"engine": {"args": ["--device", "cpu"]}}, PairKind("cpu", False)),
        ({"engine": {"args": ["--device=cuda"]}}, PairKind("gpu", False)),
        ({"engine": {"env": {"VLLM_CPU_OMP_THREADS_BIND": "0-1"}}}, PairKind("cpu", False)),
        (
            {"engine": {"args": []}, "servers": {"plain": {"env": {"CUDA_VISIBLE_DEVICES": "0"}}}},
            PairKind("gpu", False),
        ),
        ({"engine": {"args": ["--tensor-parallel-size", "2"]}, "candidates": [{}]}, PairKind("gpu", True)),
        ({"engine": {"args": ["--dtype", "float32"]}}, PairKind(None, False)),
    ],
)
def test_the_kind_comes_from_the_engine_tables_and_the_candidates(doc: dict, kind: PairKind) -> None:
    assert pair_kind(LaunchTable.all_of(doc), is_sweep(doc)) == kind


def test_pairs_marks_each_file_by_its_content_not_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = tmp_path / "profiles" / "pairs"
    pairs.mkdir(parents=True)
    (pairs / "gpu-sweep.toml").write_text(ONE_SPEC + CPU_ENGINE)  # named like a GPU sweep: a plain CPU demo
    (pairs / "cpu-demo.toml").write_text(SWEEP_SPEC + GPU_ENGINE)  # named like a CPU demo: a GPU sweep
    (pairs / "plain.toml").write_text(ONE_SPEC + "[engine]\nargs = []\n")
    (pairs / "broken.toml").write_text("[engine\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["pairs"])
    assert result.exit_code == 0, result.output
    lines = dict(line.split(None, 1) for line in result.output.splitlines())
    assert lines["gpu-sweep"] == "CPU demo"
    assert lines["cpu-demo"] == "GPU, sweep"
    assert lines["plain"] == "device not stated"
    assert lines["broken"].startswith("unreadable: ") and "not valid TOML" in lines["broken"]


def test_the_repository_pairs_are_marked() -> None:
    result = CliRunner().invoke(main, ["pairs"])
    lines = dict(line.split(None, 1) for line in result.output.splitlines())
    assert lines["demo-cpu"] == "CPU demo" and lines["demo-cpu-sweep"] == "CPU demo, sweep"
    assert lines["h200-1b-draft"] == "GPU" and lines["h200-smollm2-sweep"] == "GPU, sweep"
