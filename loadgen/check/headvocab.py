"""The vocabulary of a draft head (EAGLE, EAGLE-3, MTP, DFlash, ...), which drafts for the target and is
tokenized by the target's tokenizer (reads the head's config.json and safetensors headers; no network).

vLLM's vocabulary-size rule (``SpeculativeConfig.verify_equal_vocab_size_if_draft_model``, 0.15+) applies to
``method = "draft_model"`` only; a head needs no tokenizer files of its own. An EAGLE-3 head may draft in a
reduced vocabulary: config.json ``draft_vocab_size`` below the target's ``vocab_size`` and a ``d2t`` tensor
(draft id -> target id offset; ``t2d`` the reverse mask) in its checkpoint; vLLM loads ``d2t`` as
``draft_id_to_target_id`` and maps the head's logits onto the target's vocabulary
(vllm/model_executor/models/llama_eagle3.py, 0.10+; vLLM docs "EAGLE Draft Models",
features/speculative_decoding/eagle.md). Without ``d2t`` the offsets stay 0, so draft id i is taken for
target id i. Read from the code, not verified on a running engine (docs/vllm-notes.md, "Vocabularies").
"""

from __future__ import annotations

import json
from pathlib import Path

from loadgen.check.finding import Finding
from loadgen.records.checkparts import HeadVocab
from loadgen.records.modelconfig import MAPPING_NAMES, ModelConfig, read_model_json

#: A safetensors header above this many bytes is not read (a real one is a few hundred kB at most).
MAX_HEADER = 64 * 1024 * 1024


def safetensors_names(path: Path) -> frozenset[str]:
    """Tensor names in a ``.safetensors`` file's header (8-byte little-endian length, then JSON); empty
    when the file is unreadable or not safetensors."""
    try:
        with path.open("rb") as fh:
            length = int.from_bytes(fh.read(8), "little")
            header = json.loads(fh.read(length)) if 0 < length <= MAX_HEADER else {}
    except (OSError, ValueError):
        return frozenset()
    return frozenset(k for k in header if k != "__metadata__") if isinstance(header, dict) else frozenset()


def mapping_source(draft_dir: Path, config: ModelConfig) -> str | None:
    """Where the head keeps its draft->target token mapping: a config.json key ``d2t``/``t2d``, a tensor
    named ``d2t``/``t2d`` (any prefix) in a ``*.safetensors`` file or the safetensors index, or a file named
    ``d2t.*``/``t2d.*``; None when none is found (``pytorch_model.bin`` is not read)."""
    if config.mapping_keys:
        return "config.json " + "/".join(config.mapping_keys)
    index = read_model_json(draft_dir / "model.safetensors.index.json").get("weight_map")
    candidates = [(p.name, safetensors_names(p)) for p in sorted(draft_dir.glob("*.safetensors"))]
    candidates.append(("model.safetensors.index.json", frozenset(index) if isinstance(index, dict) else frozenset()))
    for name, tensors in candidates:
        if hits := sorted(t for t in tensors if t.rsplit(".", 1)[-1] in MAPPING_NAMES):
            return f"{name} tensors {'/'.join(hits)}"
    files = sorted(p.name for p in draft_dir.iterdir() if p.is_file() and p.name.split(".")[0] in MAPPING_NAMES)
    return f"file {files[0]}" if files else None


def head_vocab_findings(method: str, target_dir: Path, draft_dir: Path) -> list[Finding]:
    """The vocabulary finding of a head draft (``method`` other than ``draft_model``) at ``draft_dir`` for
    the target at ``target_dir``: ok when it drafts in the target's vocabulary, or in a reduced one
    (``draft_vocab_size`` < the target's) with a d2t/t2d mapping; a warning for a reduced one without a
    mapping found, or a full vocabulary of another size; blocking when ``draft_vocab_size`` exceeds the
    target's. ``data`` records ``draft_vocab_size`` and ``target_vocab_size`` (tokens)."""
    t_cfg, d_cfg = ModelConfig.read(target_dir), ModelConfig.read(draft_dir)
    target = t_cfg.vocab_size if t_cfg.vocab_size is not None else t_cfg.text_vocab_size
    full = next((n for n in (d_cfg.vocab_size, d_cfg.layer_vocab_size, d_cfg.text_vocab_size) if n is not None), None)
    reduced = d_cfg.draft_vocab_size
    counts = HeadVocab("head", method, target, reduced or full)
    head = f"the {method} head {draft_dir}"
    if reduced is not None and target is not None and reduced > target:
        line = (
            f"{head} has draft_vocab_size {reduced}, more than the target's vocab_size {target}: it was not "
            "trained for this target; use a head trained for it"
        )
        return [Finding("vocabulary", False, True, line, counts.to_json())]
    if reduced is not None and target is not None and reduced < target:
        source = mapping_source(draft_dir, d_cfg)
        counts = counts.with_fields(kind="reduced", mapping=source)
        if source is None:
            line = (
                f"{head} drafts in a reduced vocabulary (draft_vocab_size {reduced} of the target's {target}) but "
                "no d2t/t2d mapping was found (config.json, *.safetensors): vLLM would take draft id i for target "
                "id i and accept almost nothing; use the head's checkpoint with its d2t tensor"
            )
            return [Finding("vocabulary", False, False, line, counts.to_json())]
        line = (
            f"{head} drafts in a reduced vocabulary: draft_vocab_size {reduced} of the target's {target} tokens, "
            f"mapped to target ids by {source}; it uses the target's tokenizer, so no tokenizer files are needed"
        )
        return [Finding("vocabulary", True, False, line, counts.to_json())]
    if full is not None and target is not None and full != target:
        line = (
            f"{head} has vocab_size {full}, the target {target}: a head drafts in the target's vocabulary; check "
            "that it was trained for this target"
        )
        return [Finding("vocabulary", False, False, line, counts.to_json())]
    line = (
        f"{head} drafts in the target's vocabulary (vocab_size {target}); it uses the target's tokenizer, so no "
        "tokenizer files are needed"
    )
    return [Finding("vocabulary", True, False, line, counts.to_json())]
