"""records/modelconfig.py: a model folder's config.json read leniently into the fields the pair check uses."""

from __future__ import annotations

import json
from pathlib import Path

from loadgen.records.modelconfig import ModelConfig, read_model_json

EAGLE3_HEAD = {
    "architectures": ["Eagle3Speculator", 7],
    "speculators_model_type": "eagle3",
    "speculators_config": {"algorithm": "eagle3", "verifier": {"name_or_path": "meta-llama/Llama-3.1-8B-Instruct"}},
    "transformer_layer_config": {"vocab_size": 128256, "max_position_embeddings": 2048},
    "draft_vocab_size": 32000,
    "d2t": [0, 1],
    "bos_token_id": 128000,
    "eos_token_id": [128001, 128009],
}


def test_a_speculators_head_reads_its_kind_vocabularies_mapping_and_token_ids() -> None:
    cfg = ModelConfig.from_json(EAGLE3_HEAD)
    assert cfg.architectures == ("Eagle3Speculator",)  # a non-string entry is left out
    assert (cfg.speculators, cfg.speculators_model_type, cfg.speculators_algorithm) == (True, "eagle3", "eagle3")
    assert cfg.speculators_verifier == "meta-llama/Llama-3.1-8B-Instruct"
    assert (cfg.vocab_size, cfg.layer_vocab_size, cfg.text_vocab_size, cfg.draft_vocab_size) == (
        None,
        128256,
        None,
        32000,
    )
    assert cfg.mapping_keys == ("d2t",)
    assert cfg.token_ids == {"bos": 128000, "eos": [128001, 128009], "pad": None, "unk": None}


def test_a_field_of_another_kind_reads_as_absent() -> None:
    cfg = ModelConfig.from_json(
        {
            "model_type": 3,
            "architectures": "LlamaForCausalLM",
            "max_position_embeddings": True,
            "vocab_size": "49152",
            "text_config": {"vocab_size": 256},
            "speculators_config": "yes",
        }
    )
    assert (cfg.model_type, cfg.architectures, cfg.max_position_embeddings, cfg.vocab_size) == (None, (), None, None)
    assert cfg.text_vocab_size == 256 and cfg.speculators is False and cfg.speculators_verifier is None


def test_a_folder_reads_its_config_and_a_missing_or_broken_one_reads_empty(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "max_position_embeddings": 8192})
    )
    cfg = ModelConfig.read(tmp_path)
    assert (cfg.model_type, cfg.architectures, cfg.max_position_embeddings) == ("llama", ("LlamaForCausalLM",), 8192)
    absent = ModelConfig.read(tmp_path / "absent")
    assert absent == ModelConfig.from_json({}) and (absent.model_type, absent.vocab_size, absent.speculators) == (
        None,
        None,
        False,
    )
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "torn.json").write_text('{"vocab_size": ')
    assert read_model_json(tmp_path / "list.json") == {} and read_model_json(tmp_path / "torn.json") == {}
