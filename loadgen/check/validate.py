"""Pre-flight checks of a pair, before any server starts (reads local model files; no network, no clock).

Vocabulary: vLLM itself compares only the configs' ``vocab_size`` for a draft model
(``SpeculativeConfig.verify_equal_vocab_size_if_draft_model``, vllm/config/speculative.py, 0.15+), so a
draft with another tokenizer of the same size passes silently (and runs with the target's tokenizer),
while a same-tokenizer draft with padded embeddings (Qwen2 151936 vs 152064) is refused. Here token->id
maps, added/special tokens, BOS/EOS/PAD/UNK and ``vocab_size`` are compared; a differing pair needs the
heterogeneous-vocabulary mode (``use_heterogeneous_vocab``, vLLM 0.25+, draft_model, greedy draft
sampling; docs/vllm-notes.md). Also: revisions pinned, artifact hashes, the
speculative config for the engine version (specconfig.py), and refused launch flags (engine.py).
Each finding is one line with its fix.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loadgen.check.draftcheck import check_draft_context, check_draft_kind
from loadgen.check.engine import check_engine_args
from loadgen.check.finding import Finding
from loadgen.check.specconfig import (
    HEX40,
    check_draft_revision,
    check_speculative_config,
    heterogeneous_problems,
    looks_like_hub_id,
)
from loadgen.check.vocab import (
    PIPELINE,
    ROLES,
    TokenizerInfo,
    VocabDiff,
    compare_vocabularies,
    describe,
    load_tokenizer_info,
)
from loadgen.check.vocab import read_json as _json
from loadgen.profile.fields import parse_version
from loadgen.profile.pair import ModelRef, Pair
from loadgen.util.argv import flag_value, vllm_int

__all__ = ["ARTIFACTS", "Finding", "TokenizerInfo", "VocabDiff", "artifact_hashes", "check_pair",
           "check_vocabulary", "compare_vocabularies", "load_tokenizer_info", "model_hashes", "sha256_file"]

#: Files whose hashes identify a model's tokenizer and configuration.
ARTIFACTS = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
             "special_tokens_map.json", "vocab.json", "merges.txt", "tokenizer.model")


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def artifact_hashes(model_dir: Path) -> dict[str, str]:
    """``{file name: hex sha256}`` of the :data:`ARTIFACTS` present in ``model_dir`` (tokenizer and config)."""
    return {name: sha256_file(model_dir / name) for name in ARTIFACTS if (model_dir / name).is_file()}


def model_hashes(model: ModelRef) -> dict[str, Any]:
    """sha256 of every file of a local model directory, plus a digest over all of them.

    Returns ``{"model", "revision", "local": bool, "files": {name: sha256}, "content_sha256"}``; a hub id
    (not a local directory) gets ``local: False`` and no files.
    """
    root = Path(model.model)
    out: dict[str, Any] = {"model": model.model, "revision": model.revision, "local": root.is_dir()}
    if not root.is_dir():
        return out
    files = {str(p.relative_to(root)): sha256_file(p)
             for p in sorted(root.rglob("*")) if p.is_file() and not p.name.startswith(".")}
    out["files"] = files
    out["content_sha256"] = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    return out


def check_vocabulary(target: Path, draft: Path, spec: Mapping[str, Any], engine_version: str | None,
                     env: Mapping[str, str] | None = None) -> list[Finding]:
    """Compare the tokenizers of two local model directories and decide whether the engine can serve
    the pair: identical, or different but covered by ``use_heterogeneous_vocab`` on vLLM >= 0.25 with
    method draft_model and greedy draft sampling. ``spec`` is ``[speculative]``, ``env`` ``[engine].env``."""
    return _vocab_findings(target, draft, load_tokenizer_info(target), load_tokenizer_info(draft), spec,
                           engine_version, env or {})


def _vocab_findings(target: Path, draft: Path, t_info: TokenizerInfo | None, d_info: TokenizerInfo | None,
                    spec: Mapping[str, Any], engine_version: str | None, env: Mapping[str, str]) -> list[Finding]:
    hetero = spec.get("use_heterogeneous_vocab") is True
    if t_info is None or d_info is None:
        which = "target" if t_info is None else "draft"
        sizes = [_json(p / "config.json").get("vocab_size") for p in (target, draft)]
        block = hetero or sizes[0] != sizes[1]
        return [Finding("vocabulary", False, block, f"the {which} has no tokenizer.json or vocab.json, so the token "
                        f"maps cannot be compared (config vocab_size target {sizes[0]}, draft {sizes[1]}; vLLM "
                        "refuses different sizes and needs both tokenizers for use_heterogeneous_vocab); add the "
                        "tokenizer files")]
    d = compare_vocabularies(t_info, d_info)
    data = {"kind": d.kind, "target_tokens": len(t_info.vocab), "draft_tokens": len(d_info.vocab),
            "target_vocab_size": t_info.vocab_size, "draft_vocab_size": d_info.vocab_size,
            "remapped": len(d.remapped), "missing_in_draft": len(d.missing_in_draft),
            "missing_in_target": len(d.missing_in_target), "intersection": d.intersection}
    out: list[Finding] = []
    if d.kind == "identical":
        out.append(Finding("vocabulary", True, False, f"identical token->id maps ({len(t_info.vocab)} tokens) and "
                           f"vocab_size {t_info.vocab_size}", data))
        if hetero:
            out.append(Finding("heterogeneous vocabulary", False, False, "use_heterogeneous_vocab is unnecessary: the "
                               "vocabularies are identical; remove it (it costs a token-mapping step)"))
    else:
        problems = heterogeneous_problems(spec, None if engine_version is None else parse_version(engine_version))
        if engine_version is None:
            problems.insert(0, "the engine version is unknown, so vLLM >= 0.25 cannot be confirmed; make "
                               "[engine].command a `python -m vllm...` or `vllm` command")
        if hetero and not problems:
            pct = 100 * d.intersection / max(len(d_info.vocab), 1)
            share = f"{d.intersection} tokens in both ({pct:.1f}% of the draft's)"
            small = d.intersection < 100
            out.append(Finding("vocabulary", not small, False, f"{describe(d)}; accepted in the heterogeneous-"
                               f"vocabulary mode (vLLM 0.25+): {share}" + ("; very small intersection, expect "
                               "almost no acceptance" if small else ""), data))
        elif hetero:
            out.append(Finding("vocabulary", False, True, f"{describe(d)}; use_heterogeneous_vocab cannot cover it: "
                               + "; ".join(problems), data))
        else:
            rule = ("vLLM's draft_model check compares vocab_size only (SpeculativeConfig."
                    "verify_equal_vocab_size_if_draft_model, 0.15+) and refuses it; " if d.kind == "padding" else "")
            out.append(Finding("vocabulary", False, True, f"{describe(d)}; {rule}fix: use_heterogeneous_vocab = true "
                               "on vLLM >= 0.25 (method draft_model, greedy draft sampling)" + (
                                   ", or a draft with matching padding" if d.kind == "padding"
                                   else ", or a draft trained with the target's tokenizer"), data))
    if d.kind != "mismatch" and d.roles_differ():
        shown = "; ".join(f"{r}: target {t_info.roles[r]}, draft {d_info.roles[r]}" for r in d.roles_differ()
                          if r in ROLES) or f"special sets differ by {sorted(t_info.special ^ d_info.special)[:3]}"
        out.append(Finding("special tokens", False, False, f"same ids but different special-token roles ({shown}); "
                           "vLLM verifies with the target's tokenizer and stops on its EOS, so this costs acceptance, "
                           "not correctness; use a draft with the target's special tokens for best acceptance"))
    pipe = [k for k in PIPELINE if t_info.pipeline[k] != d_info.pipeline[k]]
    if d.kind != "mismatch" and pipe:
        out.append(Finding("tokenizer", False, False, "same token maps but tokenizer.json differs in "
                           f"{', '.join(pipe)}; vLLM tokenizes with the target's, so the draft may see unfamiliar "
                           "splits"))
    version = parse_version(engine_version) if engine_version else None
    runner = env.get("VLLM_USE_V2_MODEL_RUNNER")
    if hetero and version is not None and version[:2] == (0, 31) and runner != "0":
        out.append(Finding("model runner", False, False, "vLLM 0.31 runs draft_model on Model Runner V2, which has no "
                           "vocabulary mapping for use_heterogeneous_vocab (from its code, docs/vllm-notes.md); set "
                           "VLLM_USE_V2_MODEL_RUNNER = \"0\" in [engine].env"))
    if hetero and version is not None and version[:2] >= (0, 32) and runner == "1":
        out.append(Finding("model runner", False, True, "VLLM_USE_V2_MODEL_RUNNER=1 makes vLLM 0.32+ refuse "
                           "heterogeneous-vocabulary drafts (ValueError); remove it from [engine].env"))
    return out


def _locate(role: str, ref: ModelRef, key: str, allow_unpinned: bool) -> tuple[list[Finding], Path | None]:
    path = Path(ref.model)
    if path.is_dir():
        content = model_hashes(ref)["content_sha256"]
        ignored = f"; revision {ref.revision!r} is ignored for a local directory" if ref.revision else ""
        data = {"content_sha256": content, "artifacts": artifact_hashes(path)}
        return [Finding(f"{role} revision", not ignored, False, f"local directory {ref.model} pinned by content "
                        f"sha256 {content}{ignored}", data)], path
    if not looks_like_hub_id(ref.model):
        return [Finding(role, False, True, f"{ref.model} is not a local directory; build it (`make models`) or fix "
                        f"{key}")], None
    if role == "draft":
        return [], None
    if ref.revision is not None and HEX40.match(ref.revision):
        return [Finding("target revision", True, False, f"{ref.model} pinned to commit {ref.revision}")], None
    return [Finding("target revision", False, not allow_unpinned, f"target {ref.model} is not a local directory, so "
                    f"a hub id, with revision {ref.revision!r}, not a 40-hex commit: a branch or tag can move; set "
                    "[target].revision = \"<commit sha>\"" + (" (allowed by --allow-unpinned)" if allow_unpinned
                                                               else " or pass --allow-unpinned"))], None


def check_pair(pair: Pair, engine_version: str | None = None, allow_unpinned: bool = False) -> list[Finding]:
    """All pre-flight checks of ``pair`` (no server needed) for the installed engine version
    (``engine.detect_engine_version``; None: unknown, one warning and the schema is not checked; pass it
    always: the default only keeps older callers working).
    ``allow_unpinned`` turns unpinned hub revisions from blocking into warnings. Never raises for a bad
    pair: every problem is a finding (failed blocking ones stop the run with exit 2)."""
    out = check_engine_args(pair.engine.args)
    for role, extra in sorted(pair.servers.items()):
        out += check_engine_args(extra.args, f"[servers.{role}].args")
    spec_role = pair.servers.get("speculative")
    args = [*pair.engine.args, *(spec_role.args if spec_role else ())]
    env = {**pair.engine.env, **(spec_role.env if spec_role else {})}
    found, target_dir = _locate("target", pair.target, "[target].model", allow_unpinned)
    out += found
    draft_dir = None
    if pair.draft is not None:
        found, draft_dir = _locate("draft", pair.draft, "[speculative].model", allow_unpinned)
        out += found + check_draft_revision(pair.speculative, True if draft_dir else None, allow_unpinned)
    t_info = load_tokenizer_info(target_dir) if target_dir and draft_dir else None
    d_info = load_tokenizer_info(draft_dir) if target_dir and draft_dir else None
    differ = t_info is not None and d_info is not None and compare_vocabularies(t_info, d_info).kind != "identical"
    if engine_version is None:
        out.append(Finding("speculative config", False, False, "engine version unknown: the speculative config was "
                           "not checked against the installed vLLM's schema; make [engine].command a `python -m "
                           "vllm...` or `vllm` command"))
    else:
        t_cfg = _json(target_dir / "config.json") if target_dir else {}
        max_len = vllm_int(flag_value(args, "--max-model-len")) or t_cfg.get("max_position_embeddings")
        tp = vllm_int(flag_value(args, "--tensor-parallel-size", "-tp")) or 1
        found = check_speculative_config(
            pair.speculative, engine_version, max_len if isinstance(max_len, int) else None, tp,
            _json(draft_dir / "config.json").get("model_type") if draft_dir else None,
            draft_is_local=True if draft_dir else None, allow_unpinned=allow_unpinned)
        # the draft revision is checked above; vocabulary findings restate heterogeneous-mode problems
        skip = {"draft revision"} | ({"heterogeneous vocabulary"} if differ else set())
        out += [f for f in found if f.check not in skip]
    if draft_dir is not None:  # the draft's kind and context limit (draftcheck.py)
        d_cfg, t_cfg = _json(draft_dir / "config.json"), _json(target_dir / "config.json") if target_dir else {}
        serving = vllm_int(flag_value(args, "--max-model-len")) or t_cfg.get("max_position_embeddings")
        out += check_draft_kind(pair.method, d_cfg, f"the draft {draft_dir}") + check_draft_context(
            d_cfg, pair.speculative, serving if isinstance(serving, int) else None,
            [(w.name, w.input_tokens, w.output_tokens) for w in pair.workloads])
    if target_dir and draft_dir:
        out += _vocab_findings(target_dir, draft_dir, t_info, d_info, pair.speculative, engine_version, env)
    elif pair.draft is not None and not any(f.check in ("target", "draft") for f in out):
        out.append(Finding("vocabulary", False, False, "not compared: the target or the draft is not a local "
                           "directory (no tokenizer files here); vLLM checks vocab_size only"))
    return out
