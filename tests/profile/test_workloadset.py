"""profile/workloadset.py: the serving context read from the engine arguments, and a pair's synthetic workloads
loaded from workload files written here: context-length variants, the pair's overrides, the serving context
check, and every bad workload named in one line (no tokenizer is needed for synthetic workloads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.workloadset import pair_workloads, serving_context


@pytest.mark.parametrize(
    ("args", "tokens"),
    [
        (("--max-model-len", "2048"), 2048),
        (("--dtype", "half", "--max-model-len=4096"), 4096),
        (("--max-model-len", "2k"), 2000),  # vLLM's human-readable ints, as util/argv.py reads every flag
        (("--max-model-len", "2K"), 2048),
        (("--max_model_len=512",), 512),  # vLLM's argparse turns underscores into dashes
        (("--max-model-len", "1024", "--max-model-len", "4096"), 4096),  # the last one wins
        (("--max-model-len", "auto"), None),
        (("--max-model-len",), None),
        ((), None),
        (["--max-model-len", "8"], 8),
    ],
)
def test_serving_context(args: tuple[str, ...], tokens: int | None) -> None:
    assert serving_context(args) == tokens


def folder(tmp_path: Path) -> Path:
    d = tmp_path / "workloads"
    d.mkdir()
    (d / "short.toml").write_text(
        'name = "short"\nkind = "short-homogeneous"\noutput_tokens = 16\ninput_tokens = 32\nseed = 1\n'
    )
    (d / "ctx.toml").write_text(
        'name = "ctx"\nkind = "long-diverse"\nendpoint = "chat"\noutput_tokens = 8\n'
        "input_tokens = [64, 512]\nseed = 2\n"
    )
    return d


def test_variants_and_overrides(tmp_path: Path) -> None:
    d = folder(tmp_path)
    got = pair_workloads(("short", "ctx"), d, "unused", ("--max-model-len", "1024"))
    assert [(w.name, w.input_tokens, w.output_tokens, w.context_tokens) for w in got] == [
        ("short", 32, 16, 1024),
        ("ctx@64", 64, 8, 1024),
        ("ctx@512", 512, 8, 1024),
    ]
    one = pair_workloads(("ctx", "short"), d, "unused", (), output_tokens=4, input_tokens=100)
    assert [(w.name, w.input_tokens, w.output_tokens, w.context_tokens) for w in one] == [
        ("ctx", 100, 4, None),
        ("short", 100, 4, None),
    ]  # the pair's one length replaces the list


def test_a_workload_past_the_serving_context_and_every_error_in_one_line(tmp_path: Path) -> None:
    d = folder(tmp_path)
    with pytest.raises(ProfileError) as info:
        pair_workloads(("ctx", "nope", "short"), d, "unused", ("--max-model-len", "256"))
    first, second = str(info.value).split(" | ")
    assert first == (
        "workload ctx@512: 512 input + 8 output tokens exceed the serving context (256 tokens, "
        "--max-model-len); lower input_tokens or raise --max-model-len in [engine].args"
    )
    assert second.startswith(f"unknown workload 'nope': no {d / 'nope.toml'}; available workloads: ctx, short")
