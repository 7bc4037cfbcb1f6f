"""check/vocab.py and check/vocabrules.py on tokenizers with known differences: token maps compared as vLLM's
heterogeneous-vocabulary mode normalises them (word-initial Ġ/▁ -> space), the one clause that names the
difference, the tokenizer read from a model directory written here, and the finding for each case."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from loadgen.check.vocab import TokenizerInfo, compare_vocabularies, describe, load_tokenizer_info, read_model_json
from loadgen.check.vocabrules import vocab_findings
from loadgen.records.speculative import SpeculativeConfig
from tests.support.tokfactory import trained_vocab, write_model

PIPE = {"normalizer": None, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None, "decoder": None}
ROLES = {"bos": ("<s>", 1), "eos": ("</s>", 2), "pad": (None, None), "unk": ("<unk>", 0)}


def pipeline(sections: dict[str, object]) -> dict[str, str]:
    """tokenizer.json sections as TokenizerInfo keeps them (canonical JSON text)."""
    return {k: json.dumps(v, sort_keys=True) for k, v in sections.items()}


def spec_of(data: Mapping[str, Any]) -> SpeculativeConfig:
    """A speculative config record of ``data`` (as a pair file or protocol.json gives it)."""
    return SpeculativeConfig.from_json(dict(data), source="pair.toml")


def info(vocab: dict[str, int], size: int | None = 8, **kw: object) -> TokenizerInfo:
    fields: dict[str, object] = {"special": frozenset({"<s>", "</s>"}), "roles": ROLES, "pipeline": pipeline(PIPE)} | kw
    return TokenizerInfo(vocab, fields["special"], fields["roles"], size, fields["pipeline"])  # type: ignore[arg-type]


BASE = {"<unk>": 0, "<s>": 1, "</s>": 2, "Ġthe": 3, "cat": 4, "▁dog": 5}


def test_identical_padding_and_mismatch() -> None:
    assert compare_vocabularies(info(BASE), info(dict(BASE))).kind == "identical"
    padded = compare_vocabularies(info(BASE), info(dict(BASE), 16))
    assert padded.kind == "padding" and describe(padded) == (
        "same tokenizer (6 tokens) but config vocab_size differs (target 8, draft 16): padding only (embedding rows "
        "past the last token id)"
    )
    other = {"<unk>": 0, "<s>": 1, "</s>": 2, "cat": 3, " the": 4, "▁dog": 5, "bird": 6}
    d = compare_vocabularies(info(BASE), info(other))
    assert d.kind == "mismatch" and d.remapped == (("cat", 4, 3),)
    assert d.missing_in_draft == ("Ġthe",) and d.missing_in_target == (" the", "bird")
    assert d.intersection == 6  # "Ġthe" and " the" are one token after normalisation
    assert describe(d) == (
        "token-id mismatch: 1 tokens map to different ids (e.g. 'cat': target 4, draft 3), 1 target tokens missing "
        "from the draft (e.g. 'Ġthe'), 2 draft tokens missing from the target (e.g. ' the'); renaming a model cannot "
        "fix a token-id mismatch; vLLM would not notice (it compares vocab_size only, both 8)"
    )


def test_roles_and_special_sets_that_differ() -> None:
    d = compare_vocabularies(info(BASE), info(BASE, roles=ROLES | {"eos": ("<s>", 1)}, special=frozenset({"<s>"})))
    assert d.roles_differ() == ["eos", "special tokens"]


def test_a_model_directory_written_here(tmp_path: Path) -> None:
    vocab = trained_vocab()
    got = load_tokenizer_info(write_model(tmp_path / "m", vocab, vocab_size=len(vocab) + 64))
    assert got is not None and dict(got.vocab) == vocab and got.vocab_size == len(vocab) + 64
    assert got.roles["bos"][0] == "<s>" and got.roles["eos"][0] == "</s>"
    assert load_tokenizer_info(write_model(tmp_path / "bare", vocab, tokenizer=False)) is None
    (tmp_path / "bad.json").write_text("[1]")
    assert read_model_json(tmp_path / "bad.json") == {} and read_model_json(tmp_path / "none.json") == {}


def findings(
    t: TokenizerInfo | None,
    d: TokenizerInfo | None,
    spec: dict[str, object],
    version: str | None = "0.32.0",
    env: dict[str, str] | None = None,
) -> list[tuple[str, bool, bool]]:
    return [
        (f.check, f.ok, f.blocking)
        for f in vocab_findings(Path("t"), Path("d"), t, d, spec_of(spec), version, env or {})
    ]


def test_the_findings_of_each_case() -> None:
    other = info({**BASE, "bird": 6})
    assert findings(info(BASE), info(BASE), {}) == [("vocabulary", True, False)]
    assert findings(info(BASE), info(BASE), {"use_heterogeneous_vocab": True}) == [
        ("vocabulary", True, False),
        ("heterogeneous vocabulary", False, False),
    ]
    assert findings(info(BASE), other, {}) == [("vocabulary", False, True)]  # a mismatch blocks without the mode
    hetero = {"use_heterogeneous_vocab": True, "method": "draft_model"}
    assert findings(info(BASE), other, hetero) == [("vocabulary", False, False)]  # 6 tokens in both: very small
    assert findings(info(BASE), other, hetero, None)[0] == ("vocabulary", False, True)  # version unknown
    assert findings(info(BASE), other, hetero, "0.32.0", {"VLLM_USE_V2_MODEL_RUNNER": "1"})[-1] == (
        "model runner",
        False,
        True,
    )
    assert findings(info(BASE), other, hetero, "0.31.0")[-1] == ("model runner", False, False)
    assert findings(info(BASE), info(BASE, pipeline=pipeline(PIPE | {"normalizer": {"type": "NFC"}})), {}) == [
        ("vocabulary", True, False),
        ("tokenizer", False, False),
    ]
    assert findings(None, info(BASE), {}) == [("vocabulary", False, False)]  # both configs' sizes unknown alike


def test_a_missing_tokenizer_names_the_side_and_the_sizes(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", trained_vocab(), vocab_size=100)
    draft = write_model(tmp_path / "d", trained_vocab(), vocab_size=128, tokenizer=False)
    (f,) = vocab_findings(target, draft, load_tokenizer_info(target), None, spec_of({}), "0.32.0", {})
    assert (f.ok, f.blocking) == (False, True)
    assert f.message.startswith(
        "the draft has no tokenizer.json or vocab.json, so the token maps cannot be compared "
        "(config vocab_size target 100, draft 128;"
    )


@pytest.mark.parametrize("size", [None, 6])
def test_identical_maps_name_the_count(size: int | None) -> None:
    (f,) = vocab_findings(Path("t"), Path("d"), info(BASE, size), info(BASE, size), spec_of({}), "0.32.0", {})
    assert f.message == f"identical token->id maps (6 tokens) and vocab_size {size}"
