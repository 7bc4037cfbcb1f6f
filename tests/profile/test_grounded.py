"""grounded: seeded input-grounded prompts at exact input lengths (a byte-level BPE tokenizer trained here, so
cuts land between merged tokens), whose answers reuse the prompt's text; the context-length axis expands a
list of input lengths into one workload per length; the serving context bounds the lengths."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from loadgen.errors import ProfileError
from loadgen.profile.grounded import TASKS, _grow, compose, grounded_prompt, reference_answer, sentence
from loadgen.profile.workload import Workload, generate, load_workloads
from loadgen.profile.workloadset import pair_workloads
from tests.support.tokfactory import trained_vocab, write_model


@pytest.fixture(scope="module")
def bpe() -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    rng = random.Random(0)
    text = [sentence(rng) for _ in range(400)] + list(TASKS)
    tok.train_from_iterator(
        text,
        trainers.BpeTrainer(vocab_size=400, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()),
    )
    return tok


def test_grounded_prompts_have_exact_input_lengths(bpe: Tokenizer) -> None:
    for n in (90, 128, 300):
        w = Workload("g", "grounded", "completions", 8, input_tokens=n, seed=1)
        assert {len(bpe.encode(p.text or "").ids) for p in generate(w, 30, bpe)} == {n}
    chat = generate(Workload("g", "grounded", "chat", 8, input_tokens=100), 5, bpe)
    assert [len(bpe.encode(p.messages[0]["content"]).ids) for p in chat if p.messages] == [100] * 5


def test_grounded_prompts_are_seeded(bpe: Tokenizer) -> None:
    w = Workload("g", "grounded", "completions", 8, input_tokens=100, seed=1)
    assert generate(w, 6, bpe) == generate(w, 6, bpe)
    assert [p.text for p in generate(w, 6, bpe)] != [
        p.text for p in generate(Workload("g", "grounded", "completions", 8, input_tokens=100, seed=2), 6, bpe)
    ]
    assert len({p.text for p in generate(w, 20, bpe)}) == 20


def test_too_few_input_tokens_for_the_task_is_a_profile_error(bpe: Tokenizer) -> None:
    with pytest.raises(ProfileError, match="workload g: 5 input tokens cannot hold a passage and the task"):
        generate(Workload("g", "grounded", "completions", 8, input_tokens=5), 1, bpe)


def _ngrams(text: str, n: int = 3) -> set[tuple[str, ...]]:
    words = text.replace("\n", " ").split()
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def test_the_answer_reuses_the_prompts_text() -> None:
    rng = random.Random(4)
    shares = []
    for _ in range(60):
        prompt, passage, task = grounded_prompt(rng, None, None)
        assert passage in prompt and task in prompt
        answer = _ngrams(reference_answer(passage, task).replace("- ", "").replace('"', ""))
        shares.append(len(answer & _ngrams(prompt.replace('"', ""))) / len(answer))
    # word trigrams of the answer found in the prompt: the edits (DAY, bullets, JSON) touch only a few
    assert min(shares) >= 0.5 and sum(shares) / len(shares) >= 0.8


def test_a_list_of_input_lengths_expands_into_one_workload_per_length(tmp_path: Path) -> None:
    (tmp_path / "g.toml").write_text('kind = "grounded"\ninput_tokens = [128, 512]\noutput_tokens = 16\nseed = 2\n')
    assert [(w.name, w.input_tokens, w.kind, w.seed) for w in load_workloads("g", tmp_path)] == [
        ("g@128", 128, "grounded", 2),
        ("g@512", 512, "grounded", 2),
    ]
    model = str(write_model(tmp_path / "m", trained_vocab()))
    assert [w.name for w in pair_workloads(("g",), tmp_path, model, ())] == ["g@128", "g@512"]
    # the pair's one input length replaces the list
    assert [(w.name, w.input_tokens) for w in pair_workloads(("g",), tmp_path, model, (), None, 64)] == [("g", 64)]
    with pytest.raises(
        ProfileError,
        match=r"workload g@512: 512 input \+ 16 output tokens exceed the serving "
        r"context \(256 tokens, --max-model-len\)",
    ):
        pair_workloads(("g",), tmp_path, model, ("--max-model-len", "256"))
    for bad in ("[]", "[128, 128]", "[128, 0]", '"long"'):
        (tmp_path / "b.toml").write_text(f'kind = "grounded"\ninput_tokens = {bad}\noutput_tokens = 16\n')
        with pytest.raises(ProfileError, match="input_tokens"):
            load_workloads("b", tmp_path)


def test_the_demo_ngram_pair_runs_the_grounded_workload() -> None:
    from loadgen.profile.pairfile import load_pair

    pair = load_pair("demo-cpu-ngram")
    grounded = [w for w in pair.workloads if w.kind == "grounded"]
    assert [(w.input_tokens, w.output_tokens, w.context_tokens) for w in grounded] == [(256, 64, 1024)]


def _exact_passage(rng: random.Random, tokens: int, count: Callable[[str], int]) -> str:
    """The rule _grow keeps, counting every prefix: whole sentences until the prompt reaches ``tokens``."""
    passage = sentence(rng)
    while count(passage) < tokens:
        passage = f"{passage} {sentence(rng)}"
    return passage


@pytest.mark.parametrize("tokens", [40, 90, 300, 900])
def test_the_estimated_growth_builds_the_passage_of_the_exact_rule(bpe: Tokenizer, tokens: int) -> None:
    def count(p: str) -> int:
        return len(bpe.encode(compose(p, TASKS[0])).ids)

    for seed in range(20):
        fast, exact = random.Random(seed), random.Random(seed)
        assert _grow(fast, tokens, count, bpe) == _exact_passage(exact, tokens, count)
        assert fast.getstate() == exact.getstate()  # the prompts after it are the same too


def test_an_estimate_that_runs_past_the_target_falls_back_to_the_exact_rule(bpe: Tokenizer) -> None:
    # a count that jumps once the passage holds a sentence with "3" in it: far above what the estimate adds
    def count(p: str) -> int:
        return len(bpe.encode(compose(p, TASKS[0])).ids) + (200 if "3" in p else 0)

    for seed in range(20):
        fast, exact = random.Random(seed), random.Random(seed)
        assert _grow(fast, 260, count, bpe) == _exact_passage(exact, 260, count)
        assert fast.getstate() == exact.getstate()
