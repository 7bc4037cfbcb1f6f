"""The parts of check/specconfig.py on their own: the engine version's findings, the size rules (K, the draft's
tensor-parallel size and max_model_len), the heterogeneous-vocabulary reasons, hub ids, prompt lookup and the
one-line form of a Finding (docs/vllm-notes.md, "Speculative config")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from loadgen.check.finding import Finding
from loadgen.check.specconfig import (
    _size_findings,
    _version_findings,
    check_draft_revision,
    heterogeneous_problems,
    looks_like_hub_id,
    lookup_findings,
)
from loadgen.records.speculative import SpeculativeConfig

K4 = {"method": "draft_model", "num_speculative_tokens": 4}


def spec_of(data: Mapping[str, Any]) -> SpeculativeConfig:
    """A speculative config record of ``data`` (as a pair file or protocol.json gives it)."""
    return SpeculativeConfig.from_json(dict(data), source="pair.toml")


def flags(findings: list[Finding]) -> list[tuple[str, bool, bool]]:
    return [(f.check, f.ok, f.blocking) for f in findings]


@pytest.mark.parametrize("text", ["0.10.0", "0.15.1", "0.32.0+cpu", "0.33.9"])
def test_known_versions_parse_without_a_finding(text: str) -> None:
    version, found = _version_findings(text)
    assert found == [] and version is not None and version[:2] == tuple(int(p) for p in text.split(".")[:2])


@pytest.mark.parametrize("text", ["dev", "", "latest", "v-next"])
def test_a_version_that_is_no_number_blocks(text: str) -> None:
    version, (f,) = _version_findings(text)
    assert version is None and flags([f]) == [("speculative config", False, True)]
    assert f.message.startswith(f"engine version {text!r} is not a version number") and "e.g. 0.32.0" in f.message


@pytest.mark.parametrize("text", ["0.9.2", "0.1.0", "0.9.99"])
def test_an_older_version_than_known_blocks(text: str) -> None:
    version, (f,) = _version_findings(text)
    assert version is None and (f.ok, f.blocking) == (False, True)
    assert f.message == (
        f"unsupported engine version {text}: loadgen knows the V1 speculative config of vLLM 0.10-0.33; "
        "use vLLM >= 0.15"
    )


@pytest.mark.parametrize(("text", "expected"), [("0.34.0", (0, 34, 0)), ("1.0.2", (1, 0, 2))])
def test_a_newer_version_warns_and_is_kept(text: str, expected: tuple[int, int, int]) -> None:
    version, (f,) = _version_findings(text)
    assert version == expected and (f.ok, f.blocking) == (False, False)
    assert f.message == f"vLLM {text} is newer than loadgen's table (0.10-0.33); checked against 0.33"


@pytest.mark.parametrize("k", [1, 4, 16])
def test_a_positive_k_alone_has_no_size_finding(k: int) -> None:
    assert _size_findings(spec_of({**K4, "num_speculative_tokens": k}), 2048, 1) == []


@pytest.mark.parametrize("k", [None, 0, -3])
def test_k_that_is_not_a_positive_integer_blocks(k: Any) -> None:
    spec = {"method": "ngram"} if k is None else {"method": "ngram", "num_speculative_tokens": k}
    (f,) = _size_findings(spec_of(spec), None, 1)
    assert flags([f]) == [("speculative.num_speculative_tokens", False, True)]
    assert f"must be a positive integer (got {k!r})" in f.message and "needs K" in f.message


@pytest.mark.parametrize(
    ("method", "dtp", "tp", "rule"),
    [
        ("draft_model", 1, 2, "equal"),
        ("draft_model", 4, 2, "equal"),
        ("draft_model", 0, 1, "equal"),
        ("eagle3", 2, 4, "be 1 or"),
        ("eagle", 0, 1, "be 1 or"),
    ],
)
def test_a_draft_tensor_parallel_size_against_the_rule_blocks(method: str, dtp: Any, tp: int, rule: str) -> None:
    (f,) = _size_findings(
        spec_of({"method": method, "num_speculative_tokens": 3, "draft_tensor_parallel_size": dtp}), None, tp
    )
    assert flags([f]) == [("speculative.draft_tensor_parallel_size", False, True)]
    assert f.message == (
        f"draft_tensor_parallel_size={dtp!r} must {rule} the target's tensor_parallel_size {tp} (vLLM 0.15+); "
        f"set it to {tp} or omit it"
    )


@pytest.mark.parametrize(
    ("method", "dtp", "tp"), [("draft_model", 1, 1), ("draft_model", 4, 4), ("eagle", 1, 4), ("eagle3", 8, 8)]
)
def test_a_draft_tensor_parallel_size_within_the_rule_passes(method: str, dtp: int, tp: int) -> None:
    assert (
        _size_findings(
            spec_of({"method": method, "num_speculative_tokens": 3, "draft_tensor_parallel_size": dtp}), None, tp
        )
        == []
    )


@pytest.mark.parametrize(
    ("mml", "serving", "bound"),
    [
        (4096, 1024, " <= the serving max_model_len 1024"),
        (1025, 1024, " <= the serving max_model_len 1024"),
        (0, 1024, " <= the serving max_model_len 1024"),
        (0, None, ""),
        (-1, None, ""),
    ],
)
def test_a_draft_max_model_len_out_of_bounds_blocks(mml: Any, serving: int | None, bound: str) -> None:
    (f,) = _size_findings(spec_of({**K4, "max_model_len": mml}), serving, 1)
    assert flags([f]) == [("speculative.max_model_len", False, True)]
    assert f.message == (
        f"draft max_model_len={mml!r} must be a positive integer{bound}; lower it or omit it "
        "(vLLM defaults it to the smaller of both)"
    )


@pytest.mark.parametrize(("mml", "serving"), [(1024, 1024), (1, 1024), (10**6, None)])
def test_a_draft_max_model_len_within_bounds_passes(mml: int, serving: int | None) -> None:
    assert _size_findings(spec_of({**K4, "max_model_len": mml}), serving, 1) == []


def test_every_size_rule_reports_in_order() -> None:
    spec = {"method": "draft_model", "num_speculative_tokens": 0, "draft_tensor_parallel_size": 1, "max_model_len": 9}
    assert [f.check for f in _size_findings(spec_of(spec), 8, 2)] == [
        "speculative.num_speculative_tokens",
        "speculative.draft_tensor_parallel_size",
        "speculative.max_model_len",
    ]


def test_heterogeneous_problems_name_each_reason() -> None:
    good = {"method": "draft_model"}
    assert heterogeneous_problems(spec_of(good), (0, 25, 0)) == [] and heterogeneous_problems(spec_of(good), None) == []
    assert heterogeneous_problems(spec_of({**good, "draft_sample_method": "greedy"}), (0, 33, 0)) == []
    (old,) = heterogeneous_problems(spec_of(good), (0, 24, 1))
    assert old == "vLLM 0.24.1 has no heterogeneous-vocabulary mode (added in 0.25.0)"
    assert heterogeneous_problems(spec_of({}), (0, 30, 0)) == [
        "use_heterogeneous_vocab only works with method='draft_model', not None"
    ]
    argmax = {**good, "use_local_argmax_reduction": True}
    assert (
        heterogeneous_problems(spec_of(argmax), (0, 32, 0)) == []
        and heterogeneous_problems(spec_of(argmax), None) == []
    )
    (both,) = heterogeneous_problems(spec_of(argmax), (0, 33, 1))
    assert "incompatible with use_local_argmax_reduction (0.33)" in both
    many = heterogeneous_problems(spec_of({"method": "eagle", "draft_sample_method": "probabilistic"}), (0, 20, 0))
    assert len(many) == 3 and "draft_sample_method='probabilistic' is not supported" in many[2]


@pytest.mark.parametrize(
    ("model", "hub"),
    [
        ("org/name", True),
        ("Qwen/Qwen3-0.6B", True),
        ("tiny-draft", True),
        ("/models/draft", False),
        ("./draft", False),
        ("~/draft", False),
        ("a/b/c", False),
        ("", False),
    ],
)
def test_looks_like_hub_id(model: str, hub: bool) -> None:
    assert looks_like_hub_id(model) is hub


def test_a_pinned_hub_draft_is_one_ok_and_ngram_needs_no_revision() -> None:
    (f,) = check_draft_revision(spec_of({"model": "org/d", "revision": "0123456789abcdef" * 2 + "01234567"}))
    assert flags([f]) == [("draft revision", True, False)] and "pinned to commit 0123456789" in f.message
    (short,) = check_draft_revision(spec_of({"model": "org/d", "revision": "abc123"}))
    assert (short.ok, short.blocking) == (False, True) and "revision 'abc123'" in short.message
    assert check_draft_revision(spec_of({"model": "org/d", "method": "ngram"})) == []
    assert (
        check_draft_revision(spec_of({"model": "org/d"}), draft_is_local=False, allow_unpinned=True)[0].blocking
        is False
    )
    assert check_draft_revision(spec_of({"model": "/local/d"})) == [] and check_draft_revision(spec_of({})) == []


@pytest.mark.parametrize(
    ("lo", "hi", "ok"),
    [(None, None, True), (1, 1, True), (2, 5, True), (3, None, True), (5, 2, False), (0, 3, False)],
)
def test_prompt_lookup_bounds(lo: Any, hi: Any, ok: bool) -> None:
    spec = {k: v for k, v in {"prompt_lookup_min": lo, "prompt_lookup_max": hi}.items() if v is not None}
    found = lookup_findings(spec_of(spec))
    assert (found == []) == ok
    if not ok:
        assert flags(found) == [("speculative.prompt_lookup_min", False, True)]
        assert f"prompt_lookup_min={lo!r} must be a positive integer <= prompt_lookup_max={hi!r}" in found[0].message


def test_a_finding_line_shows_its_status() -> None:
    assert Finding("vocabulary", True, False, "same").line() == "ok   vocabulary: same"
    assert Finding("vocabulary", False, True, "differs").line() == "FAIL vocabulary: differs"
    assert Finding("vocabulary", False, False, "differs").line() == "warn vocabulary: differs"
    assert Finding("x", True, True, "m", {"n": 1}).data == {"n": 1} and Finding("x", True, True, "m").data is None
