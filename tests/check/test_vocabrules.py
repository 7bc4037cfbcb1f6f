"""check/vocabrules.py's rules one at a time: differing token maps accepted or refused by the
heterogeneous-vocabulary mode (vLLM 0.25+, docs/vllm-notes.md), the padding-only message, special-token roles
and the model-runner rules, on tokenizers built here with known overlaps."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from loadgen.check.finding import Finding
from loadgen.check.vocab import TokenizerInfo, compare_vocabularies, describe
from loadgen.check.vocabrules import _differing_maps, _runner_findings, _side_findings
from loadgen.records.checkparts import VocabCounts
from loadgen.records.speculative import SpeculativeConfig

PIPE = {"normalizer": None, "pre_tokenizer": None, "post_processor": None, "decoder": None}
PIPE_TEXT = {k: json.dumps(v) for k, v in PIPE.items()}
ROLES = {"bos": ("<s>", 1), "eos": ("</s>", 2), "pad": (None, None), "unk": ("<unk>", 0)}
HETERO = {"use_heterogeneous_vocab": True, "method": "draft_model"}
DATA = VocabCounts("marker", 3, 2, None, 4, 0, 1, 0, 2)


def spec_of(data: Mapping[str, Any]) -> SpeculativeConfig:
    """A speculative config record of ``data`` (as a pair file or protocol.json gives it)."""
    return SpeculativeConfig.from_json(dict(data), source="pair.toml")


def info(vocab: dict[str, int], size: int | None = 256, **kw: Any) -> TokenizerInfo:
    return TokenizerInfo(
        vocab,
        kw.get("special", frozenset({"<s>"})),
        kw.get("roles", ROLES),
        size,
        {k: json.dumps(v) for k, v in PIPE.items()},
    )


#: 150 shared tokens; the draft adds one of its own ("x"), so 150 of its 151 tokens are in both (99.3%).
TARGET = info({f"t{i}": i for i in range(200)})
DRAFT = info({f"t{i}": i for i in range(150)} | {"x": 150})
SMALL = info({f"t{i}": i for i in range(10)} | {"y": 10})


def differing(
    draft: TokenizerInfo, spec: dict[str, Any], version: str | None = "0.32.0", target: Any = TARGET
) -> Finding:
    d = compare_vocabularies(target, draft)
    (f,) = _differing_maps(d, draft, spec_of(spec), version, DATA)
    assert f.check == "vocabulary" and f.data == DATA.to_json() and f.data["kind"] == "marker"
    return f


def test_a_large_intersection_is_accepted_in_the_heterogeneous_mode() -> None:
    f = differing(DRAFT, HETERO)
    assert (f.ok, f.blocking) == (True, False)
    assert f.message.endswith(
        "; accepted in the heterogeneous-vocabulary mode (vLLM 0.25+): 150 tokens in both (99.3% of the draft's)"
    )
    assert f.message.startswith("token-id mismatch: 50 target tokens missing from the draft")


def test_a_small_intersection_is_accepted_with_a_warning() -> None:
    f = differing(SMALL, {**HETERO, "draft_sample_method": "greedy"}, "0.25.0", info({f"t{i}": i for i in range(12)}))
    assert (f.ok, f.blocking) == (False, False)
    assert "10 tokens in both (90.9% of the draft's); very small intersection, expect almost no acceptance" in f.message


@pytest.mark.parametrize(
    ("spec", "version", "reason"),
    [
        (HETERO, "0.24.0", "use_heterogeneous_vocab cannot cover it: vLLM 0.24.0 has no heterogeneous-vocabulary"),
        ({**HETERO, "method": "eagle"}, "0.30.0", "cannot cover it: use_heterogeneous_vocab only works with method="),
        ({**HETERO, "draft_sample_method": "probabilistic"}, "0.30.0", "draft_sample_method='probabilistic' is not"),
        ({**HETERO, "use_local_argmax_reduction": True}, "0.33.0", "incompatible with use_local_argmax_reduction"),
        (HETERO, None, "cannot cover it: the engine version is unknown, so vLLM >= 0.25 cannot be confirmed"),
    ],
)
def test_the_heterogeneous_mode_refused_names_why(spec: dict[str, Any], version: str | None, reason: str) -> None:
    f = differing(DRAFT, spec, version)
    assert (f.ok, f.blocking) == (False, True) and reason in f.message


def test_an_unknown_version_comes_first_among_the_reasons() -> None:
    f = differing(DRAFT, {**HETERO, "method": "ngram"}, None)
    reasons = f.message.split("cannot cover it: ", 1)[1].split("; ")
    assert reasons[0].startswith("the engine version is unknown") and "not 'ngram'" in reasons[-1]


@pytest.mark.parametrize("flag", [None, False])
def test_a_mismatch_without_the_mode_is_refused_with_the_fix(flag: Any) -> None:
    spec = {"method": "draft_model"} | ({} if flag is None else {"use_heterogeneous_vocab": flag})
    f = differing(DRAFT, spec)
    assert (f.ok, f.blocking) == (False, True) and "verify_equal_vocab_size" not in f.message
    assert f.message.endswith(
        "; fix: use_heterogeneous_vocab = true on vLLM >= 0.25 (method draft_model, greedy draft sampling), "
        "or a draft trained with the target's tokenizer"
    )


def test_padding_only_names_vllms_size_check() -> None:
    d = compare_vocabularies(TARGET, info(dict(TARGET.vocab), 512))
    assert d.kind == "padding"
    (f,) = _differing_maps(d, d.draft, spec_of({}), "0.32.0", DATA)
    assert (f.ok, f.blocking) == (False, True)
    assert f.message == (
        f"{describe(d)}; vLLM's draft_model check compares vocab_size only (SpeculativeConfig."
        "verify_equal_vocab_size_if_draft_model, 0.15+) and refuses it; fix: use_heterogeneous_vocab = true on "
        "vLLM >= 0.25 (method draft_model, greedy draft sampling), or a draft with matching padding"
    )
    (ok,) = _differing_maps(d, d.draft, spec_of(HETERO), "0.32.0", DATA)
    assert (ok.ok, ok.blocking) == (True, False) and "200 tokens in both (100.0% of the draft's)" in ok.message


def test_special_token_roles_that_differ_warn_with_both_sides() -> None:
    other = info(dict(TARGET.vocab), roles=ROLES | {"eos": ("<s>", 1)})
    (f,) = _side_findings(compare_vocabularies(TARGET, other), TARGET, other)
    assert (f.check, f.ok, f.blocking) == ("special tokens", False, False)
    assert "different special-token roles (eos: target ('</s>', 2), draft ('<s>', 1))" in f.message
    sets = info(dict(TARGET.vocab), special=frozenset({"<s>", "</s>"}))
    (g,) = _side_findings(compare_vocabularies(TARGET, sets), TARGET, sets)
    assert "(special sets differ by ['</s>'])" in g.message
    mismatch = info({"other": 0}, roles=ROLES | {"eos": ("<s>", 1)})
    assert _side_findings(compare_vocabularies(TARGET, mismatch), TARGET, mismatch) == []


@pytest.mark.parametrize(
    ("hetero", "version", "runner", "expected"),
    [
        (True, "0.31.0", None, [(False, False)]),
        (True, "0.31.2", "1", [(False, False)]),
        (True, "0.31.0", "0", []),
        (True, "0.32.0", "1", [(False, True)]),
        (True, "0.33.0", "1", [(False, True)]),
        (True, "0.32.0", "0", []),
        (True, "0.30.0", "1", []),
        (True, None, "1", []),
        (False, "0.32.0", "1", []),
        (False, "0.31.0", None, []),
    ],
)
def test_the_model_runner_rules(hetero: bool, version: str | None, runner: str | None, expected: list[Any]) -> None:
    env = {} if runner is None else {"VLLM_USE_V2_MODEL_RUNNER": runner}
    found = _runner_findings(hetero, version, env)
    assert [(f.ok, f.blocking) for f in found] == expected
    assert all(f.check == "model runner" and "VLLM_USE_V2_MODEL_RUNNER" in f.message for f in found)
