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

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from loadgen.check.asyncsched import async_findings
from loadgen.check.draftcheck import check_draft_context, check_draft_kind
from loadgen.check.engine import check_engine_args
from loadgen.check.enginestart import EngineStart
from loadgen.check.finding import Finding
from loadgen.check.hashes import ARTIFACTS, artifact_hashes, model_hashes, sha256_file
from loadgen.check.headvocab import head_vocab_findings
from loadgen.check.lossy import lossy_findings
from loadgen.check.promptlines import skipped_line_findings
from loadgen.check.serverconfig import attached_findings, generation_findings, launch_findings, mtp_findings
from loadgen.check.specconfig import (
    HEX40,
    check_draft_revision,
    check_speculative_config,
    looks_like_hub_id,
    lookup_findings,
)
from loadgen.check.targetcheck import chat_template_findings, speculators_target
from loadgen.check.vocab import (
    TokenizerInfo,
    VocabDiff,
    compare_vocabularies,
    load_tokenizer_info,
)
from loadgen.check.vocabrules import check_vocabulary, vocab_findings
from loadgen.profile.fields import METHOD_RANGES
from loadgen.profile.pair import ModelRef, Pair
from loadgen.records.modelconfig import ModelConfig
from loadgen.records.speculative import SpeculativeConfig
from loadgen.util.argv import flag_value, vllm_int

__all__ = [
    "ARTIFACTS",
    "Finding",
    "TokenizerInfo",
    "VocabDiff",
    "artifact_hashes",
    "check_pair",
    "check_vocabulary",
    "compare_vocabularies",
    "load_tokenizer_info",
    "model_hashes",
    "sha256_file",
]


def _locate(role: str, ref: ModelRef, key: str, allow_unpinned: bool) -> tuple[list[Finding], Path | None]:
    path = Path(ref.model)
    if path.is_dir():
        content = model_hashes(ref).content_sha256
        ignored = f"; revision {ref.revision!r} is ignored for a local directory" if ref.revision else ""
        data = {"content_sha256": content, "artifacts": artifact_hashes(path)}
        return [
            Finding(
                f"{role} revision",
                not ignored,
                False,
                f"local directory {ref.model} pinned by content sha256 {content}{ignored}",
                data,
            )
        ], path
    if not looks_like_hub_id(ref.model):
        return [
            Finding(role, False, True, f"{ref.model} is not a local directory; build it (`make models`) or fix {key}")
        ], None
    if role == "draft":
        return [], None
    if ref.revision is not None and HEX40.match(ref.revision):
        return [Finding("target revision", True, False, f"{ref.model} pinned to commit {ref.revision}")], None
    return [
        Finding(
            "target revision",
            False,
            not allow_unpinned,
            f"target {ref.model} is not a local directory, so "
            f"a hub id, with revision {ref.revision!r}, not a 40-hex commit: a branch or tag can move; set "
            '[target].revision = "<commit sha>"'
            + (" (allowed by --allow-unpinned)" if allow_unpinned else " or pass --allow-unpinned"),
        )
    ], None


def check_pair(
    pair: Pair, engine_version: str | None = None, allow_unpinned: bool = False, engine_start: EngineStart | None = None
) -> list[Finding]:
    """All pre-flight checks of ``pair`` (no server needed) for the installed engine version
    (``enginestart.probe_engine``; None: unknown, one warning and the schema is not checked; pass it
    always: the default only keeps older callers working). ``engine_start``: what probing ``[engine].command``
    told (None: not probed, every server attached); a command that cannot start is one blocking ``engine
    command`` finding in place of the unknown version's warning.
    ``allow_unpinned`` turns unpinned hub revisions from blocking into warnings. Never raises for a bad
    pair: every problem is a finding (failed blocking ones stop the run with exit 2)."""
    out = check_engine_args(pair.engine.args)
    for role, extra in sorted(pair.servers.items()):
        out += check_engine_args(extra.args, f"[servers.{role}].args")
    spec_role, plain_role = pair.servers.get("speculative"), pair.servers.get("plain")
    args = [*pair.engine.args, *(spec_role.args if spec_role else ())]
    env = {**pair.engine.env, **(spec_role.env if spec_role else {})}
    out += async_findings(
        pair.method, engine_version, [*pair.engine.args, *(plain_role.args if plain_role else ())], args, env
    )
    found, target_dir = _locate("target", pair.target, "[target].model", allow_unpinned)
    out += found + _declared_findings(pair, target_dir, env)
    draft_dir = None
    if pair.draft is not None:
        found, draft_dir = _locate("draft", pair.draft, "[speculative].model", allow_unpinned)
        out += found + check_draft_revision(pair.speculative, True if draft_dir else None, allow_unpinned)
    head = pair.method != "draft_model"  # a head uses the target's tokenizer (headvocab.py)
    t_info = load_tokenizer_info(target_dir) if target_dir and draft_dir and not head else None
    d_info = load_tokenizer_info(draft_dir) if target_dir and draft_dir and not head else None
    differ = t_info is not None and d_info is not None and compare_vocabularies(t_info, d_info).kind != "identical"
    if engine_version is None:
        out += [_unknown_version(engine_start), *version_free_findings(pair.speculative)]
    else:
        t_cfg = ModelConfig.read(target_dir) if target_dir else ModelConfig()
        max_len = vllm_int(flag_value(args, "--max-model-len")) or t_cfg.max_position_embeddings
        tp = vllm_int(flag_value(args, "--tensor-parallel-size", "-tp")) or 1
        found = check_speculative_config(
            pair.speculative,
            engine_version,
            max_len if isinstance(max_len, int) else None,
            tp,
            ModelConfig.read(draft_dir).model_type if draft_dir else None,
            draft_is_local=True if draft_dir else None,
            allow_unpinned=allow_unpinned,
        )
        # the draft revision is checked above; vocabulary findings restate heterogeneous-mode problems
        skip = {"draft revision"} | ({"heterogeneous vocabulary"} if differ else set())
        out += [f for f in found if f.check not in skip]
    if draft_dir is not None:  # the draft's kind and context limit (draftcheck.py)
        d_cfg = ModelConfig.read(draft_dir)
        t_cfg = ModelConfig.read(target_dir) if target_dir else ModelConfig()
        serving = vllm_int(flag_value(args, "--max-model-len")) or t_cfg.max_position_embeddings
        out += check_draft_kind(pair.method, d_cfg, f"the draft {draft_dir}") + check_draft_context(
            d_cfg,
            pair.speculative,
            serving if isinstance(serving, int) else None,
            [(w.name, w.input_tokens, w.output_tokens) for w in pair.workloads],
        )
    if target_dir and draft_dir and head:
        out += head_vocab_findings(pair.method, target_dir, draft_dir)
    elif target_dir and draft_dir:
        out += vocab_findings(target_dir, draft_dir, t_info, d_info, pair.speculative, engine_version, env)
    elif pair.draft is not None and not any(f.check in ("target", "draft") for f in out):
        out.append(
            Finding(
                "vocabulary",
                False,
                False,
                "not compared: the target or the draft is not a local "
                "directory (no tokenizer files here); vLLM checks vocab_size only",
            )
        )
    return out


def _declared_findings(pair: Pair, target_dir: Path | None, env: Mapping[str, str]) -> list[Finding]:
    """What the declared pair lets loadgen know before launch: a lossy rejection (lossy.py, ``env`` the
    speculative server's), prompt-file lines that would be skipped (promptlines.py), a speculators checkpoint as
    target and the chat template (targetcheck.py), and the launch settings of the servers loadgen launches
    (serverconfig.py: an attached server's are its own, not the pair file's)."""
    out = lossy_findings(pair.speculative, env, pair.criteria) + skipped_line_findings(pair)
    if target_dir is not None:
        out += speculators_target(ModelConfig.read(target_dir), f"the target {target_dir}")
    attached = [r for r in ("plain", "speculative") if (s := pair.servers.get(r)) and s.url]
    roles = {
        r: [*pair.engine.args, *(s.args if (s := pair.servers.get(r)) else ())]
        for r in ("plain", "speculative")
        if r not in attached
    }
    out += attached_findings(attached) + launch_findings(
        roles,
        [lv.concurrency for lv in pair.load.levels() if lv.rate_rps is None],
        bool(pair.speculative.num_speculative_tokens_per_batch_size),
    )
    out += generation_findings(target_dir, asdict(pair.sampling))
    out += mtp_findings(pair.method, pair.num_speculative_tokens, target_dir)
    return out + chat_template_findings(pair, target_dir)


def _unknown_version(start: EngineStart | None) -> Finding:
    """The finding of an unknown engine version: blocking when ``start`` says the engine command cannot start
    (its one line names the command and the fix), else a warning that the speculative config was checked
    against every release loadgen knows."""
    if start is not None and start.problem is not None:
        return Finding("engine command", False, True, start.problem)
    why = (
        "every server is attached and none was asked"
        if start is None
        else "no vLLM version answered through [engine].command; `make engine` installs the CPU build for the "
        "embedded pairs"
    )
    return Finding(
        "speculative config",
        False,
        False,
        f"engine version unknown ({why}): the speculative config was checked against every release 0.10-0.33, "
        "not the installed one",
    )


def version_free_findings(spec: SpeculativeConfig) -> list[Finding]:
    """What is wrong with ``spec`` (the speculative config) in every vLLM release loadgen knows
    (profile/fields.py: 0.10-0.33): a method none of them has, and the prompt-lookup rule
    (specconfig.lookup_findings). Blocking findings; an empty list when none applies."""
    out: list[Finding] = []
    method = spec.method
    if method is not None and method not in METHOD_RANGES:
        out.append(
            Finding(
                "speculative method",
                False,
                True,
                f"[speculative].method {method!r} is no method of "
                f"any vLLM release 0.10-0.33 (known: {', '.join(sorted(METHOD_RANGES))}); fix it",
            )
        )
    return out + lookup_findings(spec)
