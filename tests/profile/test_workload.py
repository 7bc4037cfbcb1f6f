"""workload: strict loading of prompt-set files, seeded deterministic prompt sets, exact input token lengths
with a tokenizer (a WordLevel one built by tests/tokfactory.py), chat vs completions prompts."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.workload import Workload, fit_to_tokens, generate, load_tokenizer, load_workload, prompts_digest
from tests.support.tokfactory import trained_vocab, write_model

SHORT = Workload("s", "short-homogeneous", "completions", output_tokens=16, seed=3)
LONG = Workload("l", "long-diverse", "chat", output_tokens=256, seed=3)


def _write(tmp_path: Path, body: str, name: str = "x") -> Path:
    (tmp_path / f"{name}.toml").write_text(body)
    return tmp_path


def test_the_same_seed_gives_the_same_prompts_and_digest() -> None:
    a, b = generate(SHORT, 20), generate(SHORT, 20)
    assert a == b and prompts_digest(a) == prompts_digest(b)
    other = generate(Workload("s", "short-homogeneous", "completions", 16, seed=4), 20)
    assert [p.text for p in other] != [p.text for p in a]
    assert prompts_digest(other) != prompts_digest(a)
    assert generate(SHORT, 5) == a[:5]  # a longer set extends a shorter one


def test_completions_prompts_carry_text_and_ids_by_index() -> None:
    prompts = generate(SHORT, 3)
    assert [p.prompt_id for p in prompts] == ["s-0000", "s-0001", "s-0002"]
    assert all(p.messages is None and p.text and p.endpoint == "completions" and p.output_tokens == 16 for p in prompts)
    assert prompts[0].to_json()["messages"] is None


def test_chat_prompts_carry_one_user_message() -> None:
    p = generate(LONG, 1)[0]
    assert p.text is None and p.endpoint == "chat" and p.output_tokens == 256
    assert p.messages is not None and len(p.messages) == 1 and p.messages[0]["role"] == "user"
    assert p.to_json()["messages"] == [{"role": "user", "content": p.messages[0]["content"]}]


def test_the_two_kinds_draw_from_their_own_templates() -> None:
    short = {p.text.split()[0] for p in generate(SHORT, 50) if p.text}
    assert short <= {"The", "Here", "In", "Once"}
    long = [p.messages[0]["content"] for p in generate(LONG, 50) if p.messages]
    assert all(t.startswith(("Write", "Explain", "Compare", "Give", "Summarize")) for t in long)


def test_prompts_digest_is_the_sha256_of_canonical_lines() -> None:
    import hashlib
    import json

    prompts = generate(SHORT, 2)
    lines = "".join(json.dumps(p.to_json(), sort_keys=True) + "\n" for p in prompts)
    assert prompts_digest(prompts) == hashlib.sha256(lines.encode()).hexdigest()


def test_input_tokens_are_exact_with_the_targets_tokenizer(tmp_path: Path) -> None:
    tokenizer = load_tokenizer(str(write_model(tmp_path / "m", trained_vocab())))
    for n in (5, 17, 40):
        w = Workload("s", "short-homogeneous", "completions", 8, input_tokens=n, seed=1)
        prompts = generate(w, 4, tokenizer)
        assert [len(tokenizer.encode(p.text or "").ids) for p in prompts] == [n] * 4
    chat = generate(Workload("l", "long-diverse", "chat", 8, input_tokens=30), 3, tokenizer)
    assert [len(tokenizer.encode(p.messages[0]["content"]).ids) for p in chat if p.messages] == [30] * 3


def test_fit_to_tokens_cuts_a_long_text_at_a_token_boundary(tmp_path: Path) -> None:
    tokenizer = load_tokenizer(str(write_model(tmp_path / "m", trained_vocab())))
    assert fit_to_tokens("the cat sat on the mat", 3, tokenizer, random.Random(0)) == "the cat sat"
    longer = fit_to_tokens("the cat", 12, tokenizer, random.Random(0))
    assert longer.startswith("the cat ") and len(tokenizer.encode(longer).ids) == 12


def test_input_tokens_without_a_tokenizer_is_an_error() -> None:
    with pytest.raises(ValueError, match="needs the target's tokenizer"):
        generate(Workload("s", "short-homogeneous", "completions", 8, input_tokens=10), 1)


def test_a_model_without_tokenizer_json_is_a_profile_error(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="tokenizer.json does not exist; use a local model directory"):
        load_tokenizer(str(tmp_path))


def test_load_workload_reads_every_field(tmp_path: Path) -> None:
    d = _write(
        tmp_path,
        'kind = "long-diverse"\nendpoint = "chat"\noutput_tokens = 64\ninput_tokens = 128\n'
        'seed = 7\ndescription = "d"\n',
    )
    assert load_workload("x", d) == Workload("x", "long-diverse", "chat", 64, 128, 7, "d")
    d2 = _write(tmp_path, 'kind = "short-homogeneous"\noutput_tokens = 8\n', "y")
    assert load_workload("y", d2) == Workload("y", "short-homogeneous", "completions", 8, None, 0, "")


def test_the_shipped_workloads_load() -> None:
    w = load_workload("short-homogeneous")
    assert (w.name, w.kind) == ("short-homogeneous", "short-homogeneous") and w.output_tokens > 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'kind = "random"\noutput_tokens = 8\n',
            "kind must be one of short-homogeneous, long-diverse, grounded, file, trace, got 'random'",
        ),
        (
            'kind = "long-diverse"\nendpoint = "embeddings"\noutput_tokens = 8\n',
            "endpoint must be 'completions' or 'chat', got 'embeddings'",
        ),
        ('kind = "long-diverse"\noutput_tokens = 0\n', "output_tokens"),
        ('kind = "long-diverse"\noutput_tokens = 8\ncolour = "red"\n', "colour"),
    ],
)
def test_bad_workload_files_are_one_line_profile_errors(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ProfileError, match=message) as err:
        load_workload("x", _write(tmp_path, body))
    assert "\n" not in str(err.value) and str(tmp_path / "x.toml") in str(err.value)


def test_a_near_miss_of_a_workload_name_or_kind_is_told_and_an_empty_folder_says_where_names_are_read(
    tmp_path: Path,
) -> None:
    """`loadgen check /abs/profiles/pairs/demo-cpu.toml` from another folder said "available workloads: (none)"
    with no fix; a kind or name one letter off said no "did you mean"."""
    with pytest.raises(ProfileError) as err:
        load_workload("short", tmp_path / "empty")
    assert str(err.value) == (
        f"unknown workload 'short': no {tmp_path / 'empty' / 'short.toml'}; available workloads: "
        f"none in {tmp_path / 'empty'} (workload names are read from the repository's "
        "profiles/workloads/: run loadgen from the repository root) (or give a workload file's "
        "path)"
    )
    _write(tmp_path, 'kind = "short-homogenous"\noutput_tokens = 8\n', "short-homogeneous")
    with pytest.raises(ProfileError, match=r"got 'short-homogenous' \(did you mean 'short-homogeneous'\?\)$"):
        load_workload("short-homogeneous", tmp_path)
    with pytest.raises(
        ProfileError,
        match="no .*short-homogenous.toml; did you mean 'short-homogeneous'\\? available workloads: short-homogeneous",
    ):
        load_workload("short-homogenous", tmp_path)


def test_an_unknown_workload_names_the_available_ones(tmp_path: Path) -> None:
    _write(tmp_path, 'kind = "long-diverse"\noutput_tokens = 8\n', "b")
    _write(tmp_path, 'kind = "long-diverse"\noutput_tokens = 8\n', "a")
    with pytest.raises(ProfileError, match="unknown workload 'z': no .*z.toml; available workloads: a, b"):
        load_workload("z", tmp_path)
