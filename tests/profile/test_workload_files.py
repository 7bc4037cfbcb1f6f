"""Workload files: the refusals test_workload.py leaves out (input_tokens lists, lengths on file and trace
workloads, one length asked of a list), each one line with exit code 2; a workload given by path takes its
file's stem as its name; a prompt or trace file changed since loading is refused when its prompts are built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.texts import WORDS
from loadgen.profile.workload import load_tokenizer, load_workload, load_workloads, needs_tokenizer
from loadgen.profile.workloadset import pair_workloads, replay_trace
from tests.support.tokfactory import trained_vocab, write_model


def _folder(tmp_path: Path, body: str, name: str = "x") -> Path:
    d = tmp_path / "workloads"
    d.mkdir(exist_ok=True)
    (d / f"{name}.toml").write_text(body)
    return d


def _prompts(tmp_path: Path) -> Path:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"prompt": "the cat sat"}) + "\n")
    return path


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'kind = "long-diverse"\noutput_tokens = 8\ninput_tokens = [64, 64]\n',
            r"input_tokens must list distinct lengths, e.g. \[128, 1024\], got \[64, 64\]$",
        ),
        (
            'kind = "long-diverse"\noutput_tokens = 8\ninput_tokens = []\n',
            r"input_tokens must list distinct lengths, e.g. \[128, 1024\], got \[\]$",
        ),
        ('kind = "long-diverse"\noutput_tokens = 8\ninput_tokens = "64"\n', "input_tokens must be"),
        (
            'kind = "file"\npath = "PROMPTS"\noutput_tokens = 8\ninput_tokens = 64\n',
            "a file workload sends its prompts as written; remove input_tokens$",
        ),
        (
            'kind = "trace"\npath = "PROMPTS"\noutput_tokens = 8\ninput_tokens = 64\n',
            "a trace workload sends its prompts as written; remove input_tokens$",
        ),
        ('kind = "long-diverse"\n', r"missing key output_tokens; add it \(see profiles/README.md\)"),
    ],
)
def test_a_bad_workload_file_is_one_line_and_exit_2(tmp_path: Path, body: str, message: str) -> None:
    d = _folder(tmp_path, body.replace("PROMPTS", str(_prompts(tmp_path))))
    with pytest.raises(ProfileError, match=message) as err:
        load_workloads("x", d)
    assert err.value.exit_code == 2 and "\n" not in str(err.value) and str(d / "x.toml") in str(err.value)


def test_one_workload_is_refused_for_a_list_of_lengths(tmp_path: Path) -> None:
    d = _folder(tmp_path, 'kind = "long-diverse"\noutput_tokens = 8\ninput_tokens = [64, 128]\n')
    assert [w.name for w in load_workloads("x", d)] == ["x@64", "x@128"]
    with pytest.raises(ProfileError, match=r"x.toml lists several input_tokens; use load_workloads$"):
        load_workload("x", d)


def test_a_workload_given_by_path_is_named_by_its_file_unless_it_names_itself(tmp_path: Path) -> None:
    d = _folder(tmp_path, 'kind = "short-homogeneous"\noutput_tokens = 4\n', name="mine")
    (w,) = load_workloads(str(d / "mine.toml"))
    assert (w.name, w.kind, w.endpoint, w.input_tokens, w.seed) == ("mine", "short-homogeneous", "completions", None, 0)
    (d / "named.toml").write_text('name = "other"\nkind = "long-diverse"\nendpoint = "chat"\noutput_tokens = 4\n')
    assert load_workloads(str(d / "named.toml"))[0].name == "other"


def test_which_workloads_need_the_targets_tokenizer(tmp_path: Path) -> None:
    d = _folder(tmp_path, 'kind = "long-diverse"\noutput_tokens = 8\n')
    (free,) = load_workloads("x", d)
    (d / "y.toml").write_text('kind = "long-diverse"\noutput_tokens = 8\ninput_tokens = 32\n')
    (d / "f.toml").write_text(f'kind = "file"\npath = "{_prompts(tmp_path)}"\noutput_tokens = 8\n')
    assert [needs_tokenizer(w) for w in (free, *load_workloads("y", d), *load_workloads("f", d))] == [False, True, True]


def test_a_trace_file_changed_since_loading_is_refused(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"timestamp": 0, "prompt": "the cat"}) + "\n")
    model = str(write_model(tmp_path / "m", trained_vocab()))
    d = _folder(tmp_path, f'kind = "trace"\npath = "{trace}"\noutput_tokens = 2\n')
    (w,) = pair_workloads(("x",), d, model, ())
    reqs, skipped = replay_trace(w, load_tokenizer(model))
    assert [(r.line, r.text, r.output_tokens) for r in reqs] == [(1, "the cat", 2)] and skipped == []
    trace.write_text(json.dumps({"timestamp": 0, "prompt": "a dog"}) + "\n")
    with pytest.raises(
        ProfileError,
        match=rf"{trace} changed since the workload was loaded \(sha256 [0-9a-f]{{12}}, "
        rf"expected {w.source_sha256[:12]}\); load the pair again$",
    ):
        replay_trace(w, load_tokenizer(model))


def test_trace_lines_too_long_for_the_serving_context_join_the_skipped_ones(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        json.dumps({"timestamp": 0, "input_length": 4, "output_length": 2})
        + "\n"
        + json.dumps({"timestamp": 5, "input_length": 40, "output_length": 2})
        + "\n"
    )
    model = str(write_model(tmp_path / "m", trained_vocab((" ".join(WORDS),))))
    d = _folder(tmp_path, f'kind = "trace"\npath = "{trace}"\noutput_tokens = 2\n')
    (w,) = pair_workloads(("x",), d, model, ("--max-model-len", "16"))
    assert w.context_tokens == 16 and w.skipped == (
        "line 2: 40 prompt + 2 output tokens exceed the serving context (16 tokens, --max-model-len)",
    )
    assert pair_workloads(("x",), d, model, ("--max-model-len", "42"))[0].skipped == ()
