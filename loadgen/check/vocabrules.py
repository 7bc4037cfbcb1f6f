"""Whether vLLM can serve a target and draft with these tokenizers (pure over the two vocabularies, apart
from reading the configs' ``vocab_size`` when a tokenizer is missing); see validate.py's docstring for
vLLM's own check and the heterogeneous-vocabulary mode (docs/vllm-notes.md)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from loadgen.check.finding import Finding
from loadgen.check.specconfig import heterogeneous_problems
from loadgen.check.vocab import (
    PIPELINE,
    ROLES,
    TokenizerInfo,
    VocabDiff,
    compare_vocabularies,
    describe,
    load_tokenizer_info,
)
from loadgen.profile.fields import parse_version
from loadgen.records.checkparts import VocabCounts
from loadgen.records.modelconfig import ModelConfig
from loadgen.records.speculative import SpeculativeConfig


def check_vocabulary(
    target: Path, draft: Path, spec: SpeculativeConfig, engine_version: str | None, env: Mapping[str, str] | None = None
) -> list[Finding]:
    """Compare the tokenizers of two local model directories and decide whether the engine can serve
    the pair: identical, or different but covered by ``use_heterogeneous_vocab`` on vLLM >= 0.25 with
    method draft_model and greedy draft sampling. ``spec`` is ``[speculative]``, ``env`` ``[engine].env``."""
    return vocab_findings(
        target, draft, load_tokenizer_info(target), load_tokenizer_info(draft), spec, engine_version, env or {}
    )


def vocab_findings(
    target: Path,
    draft: Path,
    t_info: TokenizerInfo | None,
    d_info: TokenizerInfo | None,
    spec: SpeculativeConfig,
    engine_version: str | None,
    env: Mapping[str, str],
) -> list[Finding]:
    """The vocabulary findings of a target and draft directory from their tokenizers (None: no
    tokenizer.json or vocab.json), ``spec`` ``[speculative]`` and ``env`` ``[engine].env``."""
    hetero = spec.use_heterogeneous_vocab is True
    if t_info is None or d_info is None:
        which = "target" if t_info is None else "draft"
        sizes = [ModelConfig.read(p).vocab_size for p in (target, draft)]
        block = hetero or sizes[0] != sizes[1]
        return [
            Finding(
                "vocabulary",
                False,
                block,
                f"the {which} has no tokenizer.json or vocab.json, so the token "
                f"maps cannot be compared (config vocab_size target {sizes[0]}, draft {sizes[1]}; vLLM "
                "refuses different sizes and needs both tokenizers for use_heterogeneous_vocab); add the "
                "tokenizer files",
            )
        ]
    d = compare_vocabularies(t_info, d_info)
    data = VocabCounts(
        d.kind,
        len(t_info.vocab),
        len(d_info.vocab),
        t_info.vocab_size,
        d_info.vocab_size,
        len(d.remapped),
        len(d.missing_in_draft),
        len(d.missing_in_target),
        d.intersection,
    )
    out = _map_findings(d, t_info, d_info, spec, engine_version, data)
    out += _side_findings(d, t_info, d_info)
    return out + _runner_findings(hetero, engine_version, env)


def _map_findings(
    d: VocabDiff,
    t_info: TokenizerInfo,
    d_info: TokenizerInfo,
    spec: SpeculativeConfig,
    engine_version: str | None,
    data: VocabCounts,
) -> list[Finding]:
    """The token maps: identical, or covered (or not) by the heterogeneous-vocabulary mode."""
    hetero = spec.use_heterogeneous_vocab is True
    out: list[Finding] = []
    if d.kind == "identical":
        out.append(
            Finding(
                "vocabulary",
                True,
                False,
                f"identical token->id maps ({len(t_info.vocab)} tokens) and vocab_size {t_info.vocab_size}",
                data.to_json(),
            )
        )
        if hetero:
            out.append(
                Finding(
                    "heterogeneous vocabulary",
                    False,
                    False,
                    "use_heterogeneous_vocab is unnecessary: the "
                    "vocabularies are identical; remove it (it costs a token-mapping step)",
                )
            )
    else:
        out += _differing_maps(d, d_info, spec, engine_version, data)
    return out


def _differing_maps(
    d: VocabDiff, d_info: TokenizerInfo, spec: SpeculativeConfig, engine_version: str | None, data: VocabCounts
) -> list[Finding]:
    """Token maps that differ: covered by the heterogeneous-vocabulary mode (vLLM 0.25+), or refused."""
    hetero = spec.use_heterogeneous_vocab is True
    out: list[Finding] = []
    problems = heterogeneous_problems(spec, None if engine_version is None else parse_version(engine_version))
    if engine_version is None:
        problems.insert(
            0,
            "the engine version is unknown, so vLLM >= 0.25 cannot be confirmed; make "
            "[engine].command a `python -m vllm...` or `vllm` command",
        )
    if hetero and not problems:
        pct = 100 * d.intersection / max(len(d_info.vocab), 1)
        share = f"{d.intersection} tokens in both ({pct:.1f}% of the draft's)"
        small = d.intersection < 100
        out.append(
            Finding(
                "vocabulary",
                not small,
                False,
                f"{describe(d)}; accepted in the heterogeneous-"
                f"vocabulary mode (vLLM 0.25+): {share}"
                + ("; very small intersection, expect almost no acceptance" if small else ""),
                data.to_json(),
            )
        )
    elif hetero:
        out.append(
            Finding(
                "vocabulary",
                False,
                True,
                f"{describe(d)}; use_heterogeneous_vocab cannot cover it: " + "; ".join(problems),
                data.to_json(),
            )
        )
    else:
        rule = (
            "vLLM's draft_model check compares vocab_size only (SpeculativeConfig."
            "verify_equal_vocab_size_if_draft_model, 0.15+) and refuses it; "
            if d.kind == "padding"
            else ""
        )
        out.append(
            Finding(
                "vocabulary",
                False,
                True,
                f"{describe(d)}; {rule}fix: use_heterogeneous_vocab = true "
                "on vLLM >= 0.25 (method draft_model, greedy draft sampling)"
                + (
                    ", or a draft with matching padding"
                    if d.kind == "padding"
                    else ", or a draft trained with the target's tokenizer"
                ),
                data.to_json(),
            )
        )
    return out


def _side_findings(d: VocabDiff, t_info: TokenizerInfo, d_info: TokenizerInfo) -> list[Finding]:
    """Same token maps, but special-token roles or the tokenizer pipeline differ (costs acceptance)."""
    out: list[Finding] = []
    if d.kind != "mismatch" and d.roles_differ():
        shown = (
            "; ".join(f"{r}: target {t_info.roles[r]}, draft {d_info.roles[r]}" for r in d.roles_differ() if r in ROLES)
            or f"special sets differ by {sorted(t_info.special ^ d_info.special)[:3]}"
        )
        out.append(
            Finding(
                "special tokens",
                False,
                False,
                f"same ids but different special-token roles ({shown}); "
                "vLLM verifies with the target's tokenizer and stops on its EOS, so this costs acceptance, "
                "not correctness; use a draft with the target's special tokens for best acceptance",
            )
        )
    pipe = [k for k in PIPELINE if t_info.pipeline[k] != d_info.pipeline[k]]
    if d.kind != "mismatch" and pipe:
        out.append(
            Finding(
                "tokenizer",
                False,
                False,
                "same token maps but tokenizer.json differs in "
                f"{', '.join(pipe)}; vLLM tokenizes with the target's, so the draft may see unfamiliar "
                "splits",
            )
        )
    return out


def _runner_findings(hetero: bool, engine_version: str | None, env: Mapping[str, str]) -> list[Finding]:
    """vLLM's model runner against the heterogeneous-vocabulary mode (0.31 lacks it, 0.32+ refuses V2)."""
    out: list[Finding] = []
    version = parse_version(engine_version) if engine_version else None
    runner = env.get("VLLM_USE_V2_MODEL_RUNNER")
    if hetero and version is not None and version[:2] == (0, 31) and runner != "0":
        out.append(
            Finding(
                "model runner",
                False,
                False,
                "vLLM 0.31 runs draft_model on Model Runner V2, which has no "
                "vocabulary mapping for use_heterogeneous_vocab (from its code, docs/vllm-notes.md); set "
                'VLLM_USE_V2_MODEL_RUNNER = "0" in [engine].env',
            )
        )
    if hetero and version is not None and version[:2] >= (0, 32) and runner == "1":
        out.append(
            Finding(
                "model runner",
                False,
                True,
                "VLLM_USE_V2_MODEL_RUNNER=1 makes vLLM 0.32+ refuse "
                "heterogeneous-vocabulary drafts (ValueError); remove it from [engine].env",
            )
        )
    return out
