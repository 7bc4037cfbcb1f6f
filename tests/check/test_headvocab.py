"""The vocabulary of a draft head (check/headvocab.py through validate.check_pair): an EAGLE-3 head with a
reduced draft vocabulary and a d2t/t2d mapping is a valid pair, needs no tokenizer files, and its finding
records ``draft_vocab_size``; vLLM's vocab_size rule stays with ``draft_model``."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from loadgen.check.headvocab import safetensors_names
from loadgen.check.validate import check_pair
from tests.check.test_validate import VOCAB, blocking, by_check, make_pair, warnings
from tests.support.tokfactory import write_model


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], int]]) -> Path:
    """A safetensors file: name -> (dtype, shape, byte size), zero-filled data."""
    header: dict[str, Any] = {}
    offset = 0
    for name, (dtype, shape, size) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))
    return path


def eagle3_head(path: Path, config: dict[str, Any], mapping: bool = True) -> Path:
    """An EAGLE-3 head folder as published: config.json and model.safetensors, no tokenizer files."""
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLMEagle3"], **config}))
    tensors = {"fc.weight": ("F32", [4, 12], 192)}
    if mapping:
        tensors |= {"d2t": ("I64", [8], 64), "t2d": ("BOOL", [len(VOCAB)], len(VOCAB))}
    write_safetensors(path / "model.safetensors", tensors)
    return path


def test_an_eagle3_head_with_a_reduced_vocabulary_and_d2t_is_a_valid_pair(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)  # vocab_size 22
    head = eagle3_head(tmp_path / "head", {"vocab_size": 22, "draft_vocab_size": 8})
    assert safetensors_names(head / "model.safetensors") == {"fc.weight", "d2t", "t2d"}
    findings = check_pair(make_pair(target, head, method="eagle3"), "0.32.0")
    assert blocking(findings) == [] and warnings(findings) == []
    vocab = by_check(findings, "vocabulary")
    assert vocab.ok and vocab.data == {
        "kind": "reduced",
        "method": "eagle3",
        "target_vocab_size": 22,
        "draft_vocab_size": 8,
        "mapping": "model.safetensors tensors d2t/t2d",
    }
    assert "draft_vocab_size 8 of the target's 22 tokens" in vocab.message
    assert "no tokenizer files are needed" in vocab.message and "add the tokenizer files" not in vocab.message
    # speculators format: no top-level vocab_size, the mapping named in config.json
    spec_head = tmp_path / "spec-head"
    eagle3_head(
        spec_head,
        {
            "speculators_model_type": "eagle3",
            "draft_vocab_size": 8,
            "d2t": [0] * 8,
            "transformer_layer_config": {"vocab_size": 22},
        },
        mapping=False,
    )
    found = by_check(check_pair(make_pair(target, spec_head, method="eagle3"), "0.32.0"), "vocabulary")
    assert found.ok and found.data is not None and found.data["mapping"] == "config.json d2t"


def test_a_reduced_head_without_a_mapping_warns_and_draft_model_keeps_the_size_rule(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    head = eagle3_head(tmp_path / "head", {"vocab_size": 22, "draft_vocab_size": 8}, mapping=False)
    (warn,) = warnings(check_pair(make_pair(target, head, method="eagle3"), "0.32.0"))
    assert warn.check == "vocabulary" and warn.data is not None and warn.data["draft_vocab_size"] == 8
    assert "no d2t/t2d mapping was found" in warn.message and "draft id i for target id i" in warn.message
    # the same sizes under draft_model: vLLM's vocab_size rule applies, so the missing tokenizer blocks
    small = write_model(tmp_path / "small", VOCAB, vocab_size=8, tokenizer=False)
    (refused,) = [f for f in blocking(check_pair(make_pair(target, small), "0.32.0")) if f.check == "vocabulary"]
    assert "vLLM refuses different sizes" in refused.message and "target 22, draft 8" in refused.message


def test_the_heads_reduced_vocabulary_reaches_the_protocol_and_the_card_line(tmp_path: Path) -> None:
    from loadgen.check.hashes import model_hashes
    from loadgen.profile.pair import ModelRef
    from loadgen.report.cardmd import _model_line

    head = eagle3_head(tmp_path / "head", {"vocab_size": 22, "draft_vocab_size": 8})
    record = model_hashes(ModelRef(str(head)))
    hashes = record.to_json()
    assert hashes["draft_vocab_size"] == 8
    line = _model_line(SimpleNamespace(draft=record), "draft")  # type: ignore[arg-type]
    assert line.endswith(f"(content sha256 `{hashes['content_sha256']}`; draft vocabulary 8 tokens)")
    target = write_model(tmp_path / "t", VOCAB)
    assert "draft_vocab_size" not in model_hashes(ModelRef(str(target))).to_json()  # a full vocabulary: nothing to say
