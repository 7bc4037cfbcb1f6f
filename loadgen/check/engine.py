"""The launch arguments loadgen refuses in ``[engine].args`` (whether the engine command starts, and its
version: check/enginestart.py).

Flag facts (docs/vllm-notes.md): old scattered flags removed in vLLM 0.8.3, ``--speculative-config`` since 0.8.2,
``-sc`` 0.19+, ``--spec-*`` shortcuts 0.22+; ``--disable-log-stats`` removes every ``vllm:*`` metric.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from loadgen.check.finding import Finding
from loadgen.util.argv import flags as parse_flags

#: Removed (<= 0.8.1) and 0.22+ shortcut flags -> the speculative-config key they set, and its type.
LEGACY_FLAGS: dict[str, tuple[str, type]] = {
    "--speculative-model": ("model", str),
    "--num-speculative-tokens": ("num_speculative_tokens", int),
    "--speculative-draft-tensor-parallel-size": ("draft_tensor_parallel_size", int),
    "--speculative-max-model-len": ("max_model_len", int),
    "--speculative-model-quantization": ("quantization", str),
    "--ngram-prompt-lookup-max": ("prompt_lookup_max", int),
    "--ngram-prompt-lookup-min": ("prompt_lookup_min", int),
    "--spec-method": ("method", str),
    "--spec-model": ("model", str),
    "--spec-tokens": ("num_speculative_tokens", int),
}
SHORTCUT_FLAGS = frozenset({"--spec-method", "--spec-model", "--spec-tokens"})
#: Removed flags with no equivalent -> (takes a value, why).
DROPPED_FLAGS: dict[str, tuple[bool, str]] = {
    "--speculative-disable-by-batch-size": (True, "unused by the V1 engine and removed from the config in 0.17"),
    "--spec-decoding-acceptance-method": (True, "V0 only; V1 always uses rejection sampling"),
    "--typical-acceptance-sampler-posterior-threshold": (True, "V0 only"),
    "--typical-acceptance-sampler-posterior-alpha": (True, "V0 only"),
    "--speculative-disable-mqa-scorer": (False, "V0 only"),
    "--use-v2-block-manager": (False, "a no-op, removed 0.10"),
}
#: Flags loadgen sets itself -> the fix.
_SPEC_CONFIG_FIX = (
    "loadgen passes --speculative-config itself, to the speculative server only; move its keys into [speculative]"
)
OWNED_FLAGS: dict[str, str] = {
    "--speculative-config": _SPEC_CONFIG_FIX,
    "-sc": _SPEC_CONFIG_FIX,
    "--model": "loadgen sets it; use [target].model",
    "--revision": "loadgen sets it; use [target].revision",
    "--host": "loadgen sets it; use [engine].host",
    "--port": "loadgen sets it; use [engine].port",
    "--seed": "loadgen sets it; use [engine].seed",
    "--served-model-name": "loadgen sets it; remove it",
    "--disable-log-stats": "remove it: with it vLLM exports no vllm:* metrics, which loadgen reads",
}


def _takes_value(name: str) -> bool:
    if name == "--disable-log-stats":
        return False
    return name in LEGACY_FLAGS or (DROPPED_FLAGS[name][0] if name in DROPPED_FLAGS else name in OWNED_FLAGS)


def legacy_equivalent(flags: Sequence[tuple[str, str | None]]) -> dict[str, Any]:
    """The speculative-config dict that legacy/shortcut ``(flag, value)`` pairs stand for, ordered
    method, model, num_speculative_tokens, then the rest (method inferred like vLLM: ``[ngram]`` -> ngram,
    a model -> draft_model, only prompt-lookup flags -> ngram)."""
    keys: dict[str, Any] = {}
    for flag, value in flags:
        key, kind = LEGACY_FLAGS[flag]
        keys[key] = int(value) if kind is int and value is not None and value.isdigit() else value
    if keys.get("model") in ("ngram", "[ngram]"):
        keys.pop("model")
        keys.setdefault("method", "ngram")
    elif "model" in keys:
        keys.setdefault("method", "draft_model")
    elif "prompt_lookup_max" in keys or "prompt_lookup_min" in keys:
        keys.setdefault("method", "ngram")
    order = ("method", "model", "num_speculative_tokens")
    return {k: keys[k] for k in order if k in keys} | {k: v for k, v in keys.items() if k not in order}


def check_engine_args(args: Sequence[str], where: str = "[engine].args") -> list[Finding]:
    """Refuse, in ``args`` (found at ``where``, e.g. ``[servers.plain].args``): removed speculative flags
    (only ``--speculative-config`` since vLLM 0.8.3) and the 0.22+ ``--spec-*`` shortcuts, with the
    equivalent ``--speculative-config`` JSON; flags without equivalent; and flags loadgen sets itself
    (incl. ``--disable-log-stats``). Every finding is blocking, check name ``engine.args``."""
    flags = parse_flags(args, _takes_value)
    legacy = [(f, v) for f, v in flags if f in LEGACY_FLAGS]
    out = []
    if legacy:
        names = ", ".join(f for f, _ in legacy)
        kind = (
            "are vLLM 0.22+ shortcuts; loadgen passes --speculative-config itself"
            if all(f in SHORTCUT_FLAGS for f, _ in legacy)
            else "were removed in vLLM 0.8.3"
        )
        spec = json.dumps(legacy_equivalent(legacy))
        out.append(
            Finding(
                "engine.args",
                False,
                True,
                f"{names} {kind}: the equivalent is --speculative-config "
                f"'{spec}'; put these keys in [speculative] and remove the flags from {where}",
            )
        )
    for flag, _ in flags:
        if flag in DROPPED_FLAGS:
            out.append(
                Finding(
                    "engine.args",
                    False,
                    True,
                    f"{flag} has no equivalent ({DROPPED_FLAGS[flag][1]}); remove it from {where}",
                )
            )
        elif flag in OWNED_FLAGS:
            out.append(Finding("engine.args", False, True, f"{flag} in {where}: {OWNED_FLAGS[flag]}"))
    return out
