"""vLLM argv read as vLLM's argparse reads it: dashes or underscores, = or a separate value, last one wins."""

from __future__ import annotations

from loadgen.util.argv import flag_name, flag_value, flags, vllm_int


def test_the_last_occurrence_wins_in_either_spelling() -> None:
    args = ["--max_model_len", "2k", "--tensor-parallel-size=2", "--max-model-len=4096"]
    assert flag_value(args, "--max-model-len") == "4096"
    assert flag_value(args, "--tensor-parallel-size", "-tp") == "2"
    assert flag_value(["-tp", "4"], "--tensor-parallel-size", "-tp") == "4"
    assert flag_value(["--enforce-eager"], "--max-model-len") is None
    assert flag_name("--gpu_memory_utilization=0.5") == "--gpu-memory-utilization"


def test_flags_take_a_value_only_where_told() -> None:
    args = ["--a", "1", "--b", "--c=3", "x", "--d", "--e"]
    assert flags(args, lambda n: n in ("--a", "--b", "--d")) == [
        ("--a", "1"),
        ("--b", None),
        ("--c", "3"),
        ("--d", None),
        ("--e", None),
    ]


def test_human_readable_ints_follow_vllm() -> None:
    assert [vllm_int(t) for t in ("2048", "2k", "2K", "1m", "1M", "x", None)] == [
        2048,
        2000,
        2048,
        1_000_000,
        1_048_576,
        None,
        None,
    ]
