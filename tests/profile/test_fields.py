"""profile/fields.py's version arithmetic over vLLM's speculative-config tables (docs/vllm-notes.md): version
parsing, ranges (a patch-level first release, a minor-level last one), what each release has, why a name is
missing, and lossy rejection."""

from __future__ import annotations

import pytest

from loadgen.profile.fields import (
    FIELD_RANGES,
    FIELDS_BY_VERSION,
    METHOD_RANGES,
    METHODS_BY_VERSION,
    available,
    history,
    in_range,
    lossy_reason,
    parse_version,
)


@pytest.mark.parametrize(
    ("text", "version"),
    [("0.32.0+cpu", (0, 32, 0)), ("v0.24", (0, 24, 0)), (" 0.10.2rc1", (0, 10, 2)), ("1.2.3", (1, 2, 3))],
)
def test_versions(text: str, version: tuple[int, int, int]) -> None:
    assert parse_version(text) == version


@pytest.mark.parametrize("text", ["", "x0.1", "0", "latest"])
def test_not_versions(text: str) -> None:
    with pytest.raises(ValueError, match=f"not a version number: {text!r}"):
        parse_version(text)


def test_ranges_first_by_patch_last_by_minor() -> None:
    assert in_range((0, 10, 2), ("0.10.2", None)) and not in_range((0, 10, 1), ("0.10.2", None))
    assert in_range((0, 16, 9), ("0.10", "0.16")) and not in_range((0, 17, 0), ("0.10", "0.16"))
    assert in_range((1, 0, 0), ("0.10", None))


def test_what_each_release_has() -> None:
    assert (
        "disable_by_batch_size" in FIELDS_BY_VERSION["0.16"]
        and "disable_by_batch_size" not in FIELDS_BY_VERSION["0.17"]
    )
    assert "num_speculative_tokens_per_batch_size" in FIELDS_BY_VERSION["0.24"] - FIELDS_BY_VERSION["0.23"]
    assert FIELDS_BY_VERSION["0.33"] - FIELDS_BY_VERSION["0.32"] == {
        "disable_lookahead_block_hashes",
        "draft_lm_head_quantization",
        "xpress_topc",
        "fly_window_size",
        "fly_entropy_threshold",
        "fly_entropy_top_k",
    }
    assert "medusa" in METHODS_BY_VERSION["0.32"] and "medusa" not in METHODS_BY_VERSION["0.33"]
    assert "qwen3_next_mtp" in METHODS_BY_VERSION["0.10"]  # the table's 0.10 is 0.10.9: after 0.10.2
    assert available(METHOD_RANGES, (0, 10, 0)) == METHODS_BY_VERSION["0.10"] - {"ernie_mtp", "qwen3_next_mtp"}
    assert available(FIELD_RANGES, (0, 40, 0)) == FIELDS_BY_VERSION["0.33"]  # newer than known: 0.33's
    assert sorted(FIELDS_BY_VERSION) == sorted(f"0.{m}" for m in range(10, 34))


def test_why_a_name_is_missing() -> None:
    assert history("use_heterogeneous_vocab", FIELD_RANGES, (0, 24, 0)) == "added in 0.25"
    assert history("disable_by_batch_size", FIELD_RANGES, (0, 20, 0)) == "removed in 0.17"
    assert history("medusa", METHOD_RANGES, (0, 33, 0)) == "removed in 0.33"
    assert history("num-speculative-tokens", FIELD_RANGES, (0, 32, 0)) == (
        "unknown in vLLM 0.10-0.33; did you mean 'num_speculative_tokens'?"
    )
    assert history("zzz", METHOD_RANGES, (0, 32, 0)) == "unknown in vLLM 0.10-0.33"


@pytest.mark.parametrize(
    ("spec", "env", "reason"),
    [
        ({"rejection_sample_method": "fly"}, {}, "rejection_sample_method = fly"),
        ({"rejection_sample_method": "standard"}, {"VLLM_EARS_TOLERANCE": "0.00"}, None),
        ({}, {"VLLM_B_TOLERANCE": "1e-3", "VLLM_A_TOLERANCE": "x"}, "VLLM_A_TOLERANCE=x, VLLM_B_TOLERANCE=1e-3"),
        ({"rejection_sample_method": 3}, {"TOLERANCE": "1"}, None),
    ],
)
def test_lossy_reason(spec: dict[str, object], env: dict[str, str], reason: str | None) -> None:
    assert lossy_reason(spec, env) == reason
