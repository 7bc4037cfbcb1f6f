"""Pre-flight checks of a local draft checkpoint against the declared speculative config (pure; the caller
reads config.json): its kind against ``[speculative].method``, and its context limit against the serving
length and the workloads.

Kind: a checkpoint's ``architectures`` (config.json, Hugging Face convention) names what it is. EAGLE,
EAGLE3, DFlash, MTP and Medusa drafts are heads that need the target's hidden states; a plain
``*ForCausalLM`` is a standalone draft model. vLLM decides the method from the declared one, the
checkpoint's path and its ``model_type`` (vllm/config/speculative.py, ``SpeculativeConfig.__post_init__``):
an EAGLE head at a neutral path under ``method = "draft_model"`` is loaded as a standalone model, and a
plain model under ``method = "eagle"`` is loaded as an EAGLE head; neither measures what was declared.

Context: vLLM's draft ``max_model_len`` is the smaller of the speculative config's ``max_model_len`` and the
draft's own limit (``max_position_embeddings``); a request longer than it cannot be drafted for.
"""

from __future__ import annotations

from collections.abc import Sequence

from loadgen.check.finding import Finding
from loadgen.records.modelconfig import ModelConfig
from loadgen.records.speculative import SpeculativeConfig

#: Substrings of an ``architectures`` entry (case-insensitive) -> the method that serves such a draft,
#: first match wins (``Eagle3`` before ``Eagle``).
KINDS = (
    ("dflash", "dflash"),
    ("eagle3", "eagle3"),
    ("eagle", "eagle"),
    ("mtp", "mtp"),
    ("medusa", "medusa"),
    ("mlpspeculator", "mlp_speculator"),
)
#: Declared methods whose draft is a checkpoint this module can classify.
CHECKPOINT_METHODS = ("draft_model", "eagle", "eagle3", "dflash", "mtp", "medusa", "mlp_speculator")


def draft_kind(config: ModelConfig) -> tuple[str, str] | None:
    """(method that serves it, what named it) for a draft's config.json, or None when it names nothing.
    ``speculators_model_type`` (speculators format) wins; else ``architectures``; else an MTP or Medusa
    ``model_type``; any other ``*ForCausalLM`` / ``*ForConditionalGeneration`` is ``draft_model``."""
    if (name := config.speculators_model_type) is not None:
        return _match(name) or name, f"speculators_model_type {name!r}"
    archs = list(config.architectures)
    for arch in archs:
        if (kind := _match(arch)) is not None:
            return kind, f"architectures {archs}"
    model_type = config.model_type or ""
    if model_type.endswith("_mtp") or model_type in ("medusa", "mlp_speculator"):
        return _match(model_type) or "mtp", f"model_type {model_type!r}"
    if any(a.endswith(("ForCausalLM", "ForConditionalGeneration")) for a in archs):
        return "draft_model", f"architectures {archs}"
    return None


def _match(name: str) -> str | None:
    low = name.lower()
    return next((method for key, method in KINDS if key in low), None)


def check_draft_kind(method: str, config: ModelConfig, where: str) -> list[Finding]:
    """Blocking finding when the draft at ``where`` (its config.json ``config``) is of another kind than
    ``method`` declares; ok when they agree; nothing when the config names no kind."""
    kind = draft_kind(config) if method in CHECKPOINT_METHODS else None
    if kind is None:
        return []
    found, named = kind
    declared = "mtp" if method.endswith("_mtp") else method
    if found == declared:
        return [Finding("draft kind", True, False, f"{where} is a {found} draft ({named}), as declared")]
    fix = (
        f'set [speculative].method = "{found}"'
        if found != "draft_model"
        else 'set [speculative].method = "draft_model", or use a draft trained for ' + repr(method)
    )
    return [
        Finding(
            "draft kind",
            False,
            True,
            f"{where} is a {found} draft ({named}) but [speculative].method = "
            f"{method!r}: vLLM would load it as the declared kind and measure something else; {fix}",
        )
    ]


def check_draft_context(
    config: ModelConfig,
    spec: SpeculativeConfig,
    serving: int | None,
    workloads: Sequence[tuple[str, int | None, int]],
) -> list[Finding]:
    """The draft's context limit (min of config ``max_position_embeddings`` and ``[speculative].max_model_len``,
    tokens) against ``serving`` (the target's ``--max-model-len``) and ``workloads`` ((name, input tokens or
    None for natural lengths, output tokens)). Blocking when a workload's input + output exceeds it; a
    warning when only the serving length does; nothing when no limit is known."""
    limits = {
        k: v
        for k, v in (
            ("max_position_embeddings", config.max_position_embeddings),
            ("[speculative].max_model_len", spec.max_model_len),
        )
        if isinstance(v, int) and not isinstance(v, bool) and v > 0
    }
    if not limits:
        return []
    source = min(limits, key=lambda k: limits[k])
    limit = limits[source]
    data = {"draft_limit": limit, "source": source, "serving_max_model_len": serving}
    over = [(name, i + o) for name, i, o in workloads if i is not None and i + o > limit]
    if over:
        name, need = max(over, key=lambda x: x[1])
        return [
            Finding(
                "draft context",
                False,
                True,
                f"the draft sees at most {limit} tokens ({source}) but workload "
                f"{name!r} needs {need} (input + output): those requests cannot be drafted for; use a draft "
                "with a longer context or shorter workloads ([run].input_tokens/output_tokens)",
                data,
            )
        ]
    if serving is not None and serving > limit:
        return [
            Finding(
                "draft context",
                False,
                False,
                f"the serving --max-model-len {serving} exceeds the draft's "
                f"{limit} tokens ({source}); the workloads fit, longer requests would get no drafts; set "
                f"--max-model-len {limit} in [engine].args or use a draft with a longer context",
                data,
            )
        ]
    return [
        Finding(
            "draft context",
            True,
            False,
            f"the draft sees {limit} tokens ({source}), enough for the serving length and the workloads",
            data,
        )
    ]
