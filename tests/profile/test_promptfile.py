"""promptfile: the user's prompt files (JSONL prompts, ShareGPT-style conversations) read strictly; every bad
file is one ProfileError line, unusable lines are named, lengths are checked against the serving context,
and sampling is seeded. Exercised through the workload loader and the pair's workload set, as a pair uses them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.promptfile import read_prompt_file, sample
from loadgen.profile.workload import generate, load_tokenizer, load_workloads
from loadgen.profile.workloadset import pair_workloads, serving_context
from tests.support.tokfactory import trained_vocab, write_model


def _lines(tmp_path: Path, *records: object, name: str = "p.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def _workload(tmp_path: Path, file: Path, extra: str = "") -> Path:
    d = tmp_path / "workloads"
    d.mkdir(exist_ok=True)
    (d / "f.toml").write_text(f'kind = "file"\npath = "{file}"\noutput_tokens = 5\nseed = 3\n{extra}')
    return d


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "prompt file not found; set path to a JSONL file"),
        ("", "the prompt file is empty; write one JSON object per line"),
        ("\n\n", "the prompt file is empty"),
        ('{"prompt": "the cat"}\nthe dog ran\n', "line 2 is not JSON, so the file is not JSONL"),
        ('{"prompt": "the cat"}\n{"text": "the dog"}\n', 'line 2 has no prompt; each line needs "prompt", "messages"'),
        ('["the cat"]\n', "line 1 has no prompt"),
    ],
)
def test_bad_files_are_one_line_profile_errors(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "p.jsonl"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ProfileError, match=message) as err:
        load_workloads("f", _workload(tmp_path, path))
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_a_prompt_longer_than_the_serving_context_is_named_by_its_line(tmp_path: Path) -> None:
    model = str(write_model(tmp_path / "m", trained_vocab()))
    path = _lines(tmp_path, {"prompt": "the cat sat"}, {"prompt": "the cat sat on the mat " * 3})
    with pytest.raises(ProfileError) as err:
        pair_workloads(("f",), _workload(tmp_path, path), model, ("--max-model-len", "20"))
    assert str(err.value) == (
        f"{path}: line 2: 18 prompt + 5 output tokens exceed the serving context (20 tokens, "
        "--max-model-len); shorten the prompt or its output_tokens, or raise --max-model-len "
        "in [engine].args"
    )
    assert pair_workloads(("f",), _workload(tmp_path, path), model, ("--max-model-len=23",))[0].skipped == ()


def test_unusable_lines_are_counted_and_named_never_dropped_silently(tmp_path: Path) -> None:
    path = _lines(
        tmp_path,
        {"prompt": "the cat"},
        {"messages": [{"role": "user", "content": "a dog"}]},
        {"prompt": "the dog", "output_tokens": 0},
        {"prompt": ""},
        "",
        {"prompt": "my cat", "output_tokens": 4},
    )
    (w,) = load_workloads("f", _workload(tmp_path, path))
    assert (w.kind, w.endpoint, w.source_lines, w.path) == ("file", "completions", 5, str(path))
    assert w.skipped == (
        "line 2: a chat line in a completions file",
        "line 3: output_tokens must be a positive integer, got 0",
        "line 4: prompt is not a non-empty string",
    )
    import hashlib

    assert w.source_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    tok = load_tokenizer(str(write_model(tmp_path / "m", trained_vocab())))
    prompts = generate(w, 2, tok)
    assert sorted((p.text, p.output_tokens, p.prompt_id.rsplit("-", 1)[1]) for p in prompts) == [
        ("my cat", 4, "line6"),
        ("the cat", 5, "line1"),
    ]


def test_chat_lines_keep_their_messages_and_a_file_of_no_usable_line_is_refused(tmp_path: Path) -> None:
    msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "the cat"}]
    pf = read_prompt_file(_lines(tmp_path, {"messages": msgs, "output_tokens": 7}, {"prompt": "x"}))
    assert (pf.endpoint, pf.layout, [e.messages for e in pf.entries]) == ("chat", "jsonl", [tuple(msgs)])
    assert pf.skipped == ("line 2: a completions line in a chat file",)
    with pytest.raises(ProfileError, match=r"no usable line \(1 skipped; first: line 1: a completions line"):
        read_prompt_file(_lines(tmp_path, {"prompt": "x"}, name="q.jsonl"), "chat")


def test_sharegpt_first_human_turn_is_the_prompt_and_the_reply_sets_the_output_length(tmp_path: Path) -> None:
    model = str(write_model(tmp_path / "m", trained_vocab()))
    conv = [
        {"from": "human", "value": "the cat sat"},
        {"from": "gpt", "value": "on the mat in the park"},
        {"from": "human", "value": "the dog"},
        {"from": "gpt", "value": "ran"},
    ]
    path = _lines(
        tmp_path,
        {"conversations": conv},
        {"conversations": [{"from": "gpt", "value": "hi"}]},
        {"conversations": [{"from": "human", "value": "a dog"}]},
        {"conversations": [{"from": "human", "value": "the bird " * 10}, {"from": "gpt", "value": "a"}]},
    )
    (w,) = pair_workloads(("f",), _workload(tmp_path, path), model, ("--max-model-len", "16"))
    assert (w.endpoint, w.source_lines) == ("chat", 4)
    assert w.skipped == (
        "line 2: no human turn",
        "line 3: no reply after the first human turn",
        "line 4: 20 prompt + 1 output tokens exceed the serving context (16 tokens, --max-model-len)",
    )
    (p,) = generate(w, 1, load_tokenizer(model))
    assert (p.messages, p.text, p.output_tokens) == (({"role": "user", "content": "the cat sat"},), None, 6)
    # the public dumps are one JSON array
    array = tmp_path / "a.json"
    array.write_text(json.dumps([{"id": "x", "conversations": conv}]))
    assert read_prompt_file(array, "completions").entries[0].text == "the cat sat"


def test_sampling_is_seeded_without_repeats_when_the_file_has_enough() -> None:
    items = list(range(10))
    a = sample(items, 4, 1)
    assert a == sample(items, 4, 1) and len(set(a)) == 4 and a != sample(items, 4, 2)
    more = sample(items, 25, 1)
    assert len(more) == 25 and sorted(more[:10]) == items and max(more.count(i) for i in items) == 3


def test_the_serving_context_comes_from_max_model_len() -> None:
    assert serving_context(("--dtype", "float32", "--max-model-len", "1024")) == 1024
    assert serving_context(("--max-model-len=2048",)) == 2048
    assert serving_context(("--dtype", "float32")) is None


def test_the_shipped_example_files_load_without_skipped_lines() -> None:
    for name, endpoint in (("file-completions", "completions"), ("file-chat", "chat"), ("sharegpt", "chat")):
        (w,) = load_workloads(name)
        assert (w.endpoint, w.source_lines, w.skipped) == (endpoint, 30, ())


def test_a_byte_order_mark_is_no_part_of_the_first_line(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"prompt": "one"}\n{"prompt": "two"}\n')
    pf = read_prompt_file(path)
    assert [e.text for e in pf.entries] == ["one", "two"] and pf.skipped == ()


def test_a_lone_surrogate_is_one_line_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"prompt": "fine"}\n{"prompt": "a\\ud800"}\n')
    with pytest.raises(ProfileError, match="line 2 holds text that is not valid Unicode") as err:
        read_prompt_file(path)
    assert "\n" not in str(err.value)


def test_an_unknown_key_is_a_bad_line_with_did_you_mean(tmp_path: Path) -> None:
    path = _lines(tmp_path, {"prompt": "the cat"}, {"prompt": "the dog", "output_token": 16})
    with pytest.raises(ProfileError) as err:
        load_workloads("f", _workload(tmp_path, path))
    assert str(err.value) == (
        f"{path}: line 2 has an unknown key 'output_token' (did you mean 'output_tokens'?); "
        "a JSONL line has only the keys prompt, messages, output_tokens, response_format, structured_outputs"
    )


def test_every_bad_line_is_named_not_only_the_first(tmp_path: Path) -> None:
    path = _lines(
        tmp_path,
        {"prompt": "the cat"},
        "the dog ran",
        {"prompt": "a", "output_tokenz": 3},
        {"text": "x"},
        {"messages": [], "role": "user"},
    )
    with pytest.raises(ProfileError) as err:
        read_prompt_file(path)
    assert str(err.value) == (
        f"{path}: 4 bad lines: line 2 is not JSON, so the file is not JSONL; line 3 has an unknown key "
        "'output_tokenz' (did you mean 'output_tokens'?); line 4 has no prompt; line 5 has an unknown key 'role'; "
        'write one JSON object per line, e.g. {"prompt": "..."}; a JSONL line has only the keys prompt, '
        'messages, output_tokens, response_format, structured_outputs; each line needs "prompt", "messages" or '
        '"conversations"'
    )


def test_every_prompt_too_long_for_the_context_is_named(tmp_path: Path) -> None:
    model = str(write_model(tmp_path / "m", trained_vocab()))
    path = _lines(
        tmp_path,
        {"prompt": "the cat sat on the mat " * 3},
        {"prompt": "the cat"},
        {"prompt": "the dog ran to the park " * 3},
    )
    with pytest.raises(ProfileError) as err:
        pair_workloads(("f",), _workload(tmp_path, path), model, ("--max-model-len", "20"))
    assert str(err.value).startswith(
        f"{path}: 2 bad lines: line 1: 18 prompt + 5 output tokens exceed the serving "
        "context (20 tokens, --max-model-len); line 3: 18 prompt + 5"
    )
