"""records/speculative.py: the speculative config's typed fields, its free-form other keys (``extra``),
byte-identical JSON, and the one-line error of a field of the wrong kind."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from loadgen.errors import BadInput
from loadgen.records.cardwire import kinds
from loadgen.records.protocol import Protocol
from loadgen.records.speculative import SpeculativeConfig

NGRAM_RUN = Path(__file__).resolve().parents[2] / "docs/examples/h200/h200-1b-ngram/protocol.json"


def test_a_committed_protocols_speculative_config_reads_typed_and_writes_back_the_same_bytes() -> None:
    text = NGRAM_RUN.read_text()
    raw = json.loads(text)["speculative_config"]
    spec = SpeculativeConfig.from_json(raw, source=str(NGRAM_RUN))
    assert (spec.method, spec.num_speculative_tokens, spec.prompt_lookup_min, spec.prompt_lookup_max) == (
        "ngram",
        4,
        2,
        4,
    )
    assert spec.model is None and spec.extra == {}
    assert json.dumps(spec.to_json()) == (
        '{"method": "ngram", "prompt_lookup_min": 2, "prompt_lookup_max": 4, "num_speculative_tokens": 4}'
    )
    proto = Protocol.from_json(json.loads(text), source=str(NGRAM_RUN))
    assert proto.speculative_config == spec
    assert json.dumps(proto.to_json(), indent=2) == json.dumps(json.loads(text), indent=2)


def test_untyped_keys_stay_free_form_and_in_their_order() -> None:
    raw = {"quantization": "fp8", "method": "eagle3", "model": "org/head", "speculative_token_tree": "[(0,)]"}
    spec = SpeculativeConfig.from_json(raw, source="pair.toml")
    assert spec.extra == {"quantization": "fp8", "speculative_token_tree": "[(0,)]"}
    assert list(spec.to_json()) == ["quantization", "method", "model", "speculative_token_tree"]
    assert spec.to_json() == raw


def test_with_fields_sets_a_typed_field_and_appends_a_new_key() -> None:
    spec = SpeculativeConfig.from_json({"method": "ngram", "num_speculative_tokens": 2}, source="pair.toml")
    assert spec.with_fields(num_speculative_tokens=5).to_json() == {"method": "ngram", "num_speculative_tokens": 5}
    assert list(spec.with_fields(disable_by_batch_size=8).to_json()) == [
        "method",
        "num_speculative_tokens",
        "disable_by_batch_size",
    ]


def test_one_built_in_code_writes_its_set_fields_then_the_rest() -> None:
    spec = SpeculativeConfig(method="draft_model", num_speculative_tokens=3, extra={"enforce_eager": True})
    assert spec.to_json() == {"method": "draft_model", "num_speculative_tokens": 3, "enforce_eager": True}


def test_a_null_typed_value_reads_as_none_and_writes_back_as_null() -> None:
    spec = SpeculativeConfig.from_json({"method": "ngram", "max_model_len": None}, source="x.json")
    assert spec.max_model_len is None and spec.to_json() == {"method": "ngram", "max_model_len": None}


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("num_speculative_tokens", "4", "an integer or null"),
        ("num_speculative_tokens", True, "an integer or null"),
        ("method", 3, "a string or null"),
        ("use_heterogeneous_vocab", "true", "true or false or null"),
        ("num_speculative_tokens_per_batch_size", {"1": 2}, "a list or null"),
    ],
)
def test_a_field_of_the_wrong_kind_fails_with_one_line_naming_it(field: str, value: object, expected: str) -> None:
    with pytest.raises(BadInput) as err:
        SpeculativeConfig.from_json({"method": "ngram", field: value}, source="runs/x/protocol.json")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"runs/x/protocol.json: {field}: expected {expected}, got {value!r}; restore ")


def test_a_protocols_bad_speculative_field_names_its_path() -> None:
    data = json.loads(NGRAM_RUN.read_text())
    data["speculative_config"]["prompt_lookup_min"] = 2.5
    with pytest.raises(BadInput, match=r"^p.json: speculative_config.prompt_lookup_min: expected an integer or null"):
        Protocol.from_json(data, source="p.json")


def test_a_config_that_is_no_object_is_refused() -> None:
    with pytest.raises(BadInput, match=r"^s.json: expected an object, got \[1\]"):
        SpeculativeConfig.from_json([1], source="s.json")


def test_every_typed_field_has_its_kind_and_the_rest_and_keys_have_none() -> None:
    assert list(kinds(SpeculativeConfig)) == [
        f.name for f in fields(SpeculativeConfig) if f.name not in ("keys", "extra")
    ]
