"""vLLM's speculative config per engine version, as tables (pure data: no I/O, no clock): the fields and
methods of ``SpeculativeConfig`` per minor release, and the version arithmetic over them. The rules that
check a pair against them are check/specconfig.py; launch flags are check/engine.py.

Every fact is in docs/vllm-notes.md (speculative config), read from the vLLM wheels 0.10.0-0.33.0:
fields (``SpeculativeConfig``: ``vllm/config/speculative.py`` 0.11+,
``vllm/config/__init__.py`` 0.10.2, ``vllm/config.py`` 0.10.0), methods (method re-classification in
``SpeculativeConfig.__post_init__``) and vocabularies (``use_heterogeneous_vocab``). A range ``(first, last)`` holds
for every minor release from ``first`` through ``last`` (``None``: still in 0.33); versions compare as
(major, minor) except where a range names a patch (0.10.2).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

Version = tuple[int, int, int]
Range = tuple[str, str | None]
FIRST_KNOWN, LAST_KNOWN = "0.10", "0.33"
_ALL: Range = ("0.10", None)


#: User-facing ``SpeculativeConfig`` fields -> (first, last) minor release holding them (reference 2.2).
FIELD_RANGES: dict[str, Range] = {
    **dict.fromkeys(
        (
            "method",
            "model",
            "num_speculative_tokens",
            "draft_tensor_parallel_size",
            "quantization",
            "max_model_len",
            "revision",
            "code_revision",
            "prompt_lookup_max",
            "prompt_lookup_min",
        ),
        _ALL,
    ),
    "disable_by_batch_size": ("0.10", "0.16"),
    "disable_logprobs": ("0.10", "0.11"),
    "speculative_token_tree": ("0.10", "0.20"),
    **dict.fromkeys(("enforce_eager", "disable_padded_drafter_batch"), ("0.11", None)),
    **dict.fromkeys(
        (
            "suffix_decoding_max_tree_depth",
            "suffix_decoding_max_cached_requests",
            "suffix_decoding_max_spec_factor",
            "suffix_decoding_min_token_prob",
        ),
        ("0.12", None),
    ),
    "parallel_drafting": ("0.16", None),
    **dict.fromkeys(("use_local_argmax_reduction", "draft_load_config"), ("0.17", None)),
    "rejection_sample_method": ("0.18", None),
    "synthetic_acceptance_rate": ("0.19", "0.19"),
    "moe_backend": ("0.19", None),
    **dict.fromkeys(("synthetic_acceptance_rates", "synthetic_acceptance_length"), ("0.20", None)),
    **dict.fromkeys(("attention_backend", "draft_sample_method"), ("0.21", None)),
    "num_speculative_tokens_per_batch_size": ("0.24", None),
    "use_heterogeneous_vocab": ("0.25", None),
    "kv_cache_dtype": ("0.26", None),
    **dict.fromkeys(("enable_adaptive_verification", "dspark_draft_topk"), ("0.28", None)),
    "index_share_for_mtp_iteration": ("0.29", None),
    "disable_eagle_block_drop": ("0.30", None),
    **dict.fromkeys(
        (
            "disable_lookahead_block_hashes",
            "draft_lm_head_quantization",
            "xpress_topc",
            "fly_window_size",
            "fly_entropy_threshold",
            "fly_entropy_top_k",
        ),
        ("0.33", None),
    ),
}
#: Filled by vLLM itself; never user input (reference 2.2, last row).
INTERNAL_FIELDS = frozenset(
    {
        "target_model_config",
        "target_parallel_config",
        "draft_model_config",
        "draft_parallel_config",
        "enable_chunked_prefill",
        "disable_log_stats",
    }
)
#: Allowed values of enumerated fields per range (reference 2.2).
VALUE_RANGES: dict[str, tuple[tuple[str, str | None, str], ...]] = {
    "rejection_sample_method": (
        ("0.18", "0.18", "strict probabilistic"),
        ("0.19", "0.20", "strict probabilistic synthetic"),
        ("0.21", "0.24", "standard synthetic"),
        ("0.25", "0.32", "standard synthetic block"),
        ("0.33", None, "standard synthetic block fly"),
    ),
    "draft_sample_method": (("0.21", "0.21", "greedy gumbel"), ("0.22", None, "greedy probabilistic")),
}
#: ``SpeculativeMethod`` literal values -> range (reference 2.3).
METHOD_RANGES: dict[str, Range] = {
    **dict.fromkeys(("ngram", "eagle", "eagle3", "draft_model", "deepseek_mtp"), _ALL),
    **dict.fromkeys(("medusa", "mlp_speculator"), ("0.10", "0.32")),
    **dict.fromkeys(("ernie_mtp", "qwen3_next_mtp"), ("0.10.2", None)),
    **dict.fromkeys(("mimo_mtp", "longcat_flash_mtp", "mtp"), ("0.11", None)),
    "suffix": ("0.12", None),
    "extract_hidden_states": ("0.17", None),
    "ngram_gpu": ("0.18", None),
    "dflash": ("0.20", None),
    "custom_class": ("0.22", None),
    "dspark": ("0.25", None),
}
#: Methods accepted by the schema but failing at start-up before a version (reference 2.3).
METHOD_WORKS_FROM: dict[str, tuple[str | None, str]] = {
    "draft_model": (
        "0.15",
        "raises NotImplementedError('Speculative decoding with draft model is not supported "
        "yet'); draft models work from vLLM 0.15 (vllm/v1/spec_decode/draft_model.py)",
    ),
    "mlp_speculator": (None, "has no V1 proposer in any release ('Unknown speculative decoding method')"),
}
#: Draft-name substrings that re-classify an explicit draft_model (``SpeculativeConfig.__post_init__``).
NAME_SWITCHES = (
    ("eagle-", "eagle", "0.10"),
    ("eagle3", "eagle3", "0.10"),
    ("dflash", "dflash", "0.20"),
    ("dspark", "dspark", "0.25"),
)
HETEROGENEOUS_FROM = "0.25"
#: ``rejection_sample_method`` values that do not keep the target's output distribution -> first release
#: accepting them (:data:`VALUE_RANGES`): ``synthetic`` accepts drafts at a declared rate
#: (``synthetic_acceptance_rate(s)``, a benchmarking aid), ``fly`` accepts by the draft's entropy (``fly_*``
#: fields; vLLM docs "FLy Verification (Lossy)", docs/features/speculative_decoding/fly.md). ``strict``,
#: ``probabilistic``, ``standard`` and ``block`` are lossless. Read from the docs and wheels, not verified on a
#: running engine (docs/vllm-notes.md, "Lossy rejection").
LOSSY_REJECTION: dict[str, str] = {"synthetic": "0.19", "fly": "0.33"}
#: Environment variables that loosen acceptance by a tolerance (e.g. ``VLLM_EARS_TOLERANCE``): lossy unless 0.
TOLERANCE_ENV = re.compile(r"^VLLM_\w*TOLERANCE")


def lossy_reason(spec: Mapping[str, object], env: Mapping[str, str]) -> str | None:
    """Why the speculative config ``spec`` (``[speculative]``) run with ``env`` (``[engine].env`` merged with
    ``[servers.speculative].env``) does not keep the target's distribution, as one clause
    (``"rejection_sample_method = fly"``, ``"VLLM_EARS_TOLERANCE=0.05"``, joined by ``", "``); None when
    lossless. A tolerance variable set to a number equal to 0 is off; any other value counts."""
    reasons = []
    method = spec.get("rejection_sample_method")
    if isinstance(method, str) and method in LOSSY_REJECTION:
        reasons.append(f"rejection_sample_method = {method}")
    for name, value in sorted(env.items()):
        if TOLERANCE_ENV.match(name) and not _zero(value):
            reasons.append(f"{name}={value}")
    return ", ".join(reasons) or None


def _zero(text: str) -> bool:
    try:
        return float(text) == 0.0
    except ValueError:
        return False


def parse_version(text: str) -> Version:
    """``"0.32.0+cpu"`` -> ``(0, 32, 0)``; ``"v0.24"`` -> ``(0, 24, 0)``. Raises ValueError otherwise."""
    m = re.match(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?", text)
    if m is None:
        raise ValueError(f"not a version number: {text!r}")
    return int(m[1]), int(m[2]), int(m[3] or 0)


def in_range(version: Version, rng: Range) -> bool:
    """True when ``version`` lies in ``rng`` (first inclusive with its patch; last inclusive by minor)."""
    first, last = rng
    return version >= parse_version(first) and (last is None or version[:2] <= parse_version(last)[:2])


def available(ranges: Mapping[str, Range], version: Version) -> frozenset[str]:
    """Names in ``ranges`` (:data:`FIELD_RANGES` or :data:`METHOD_RANGES`) that ``version`` has (newer
    than 0.33: 0.33's)."""
    major, minor, _ = parse_version(LAST_KNOWN)
    clamped = version if version[:2] <= (major, minor) else (major, minor, 0)
    return frozenset(k for k, r in ranges.items() if in_range(clamped, r))


#: Fields and methods per minor release "0.10" ... "0.33", computed from the ranges above.
FIELDS_BY_VERSION = {f"0.{m}": available(FIELD_RANGES, (0, m, 9)) for m in range(10, 34)}
METHODS_BY_VERSION = {f"0.{m}": available(METHOD_RANGES, (0, m, 9)) for m in range(10, 34)}
ALL_FIELDS = frozenset(FIELD_RANGES)


def history(name: str, ranges: Mapping[str, Range], version: Version) -> str:
    """Why ``name`` (a field or method) is missing from ``version``: ``"added in 0.25"``, ``"removed in
    0.17"``, or ``"unknown ..."`` with a did-you-mean among the names ``version`` has."""
    if name in ranges:
        first, last = ranges[name]
        if version < parse_version(first):
            return f"added in {first}"
        major, minor, _ = parse_version(last or LAST_KNOWN)
        return f"removed in {major}.{minor + 1}"
    close = difflib.get_close_matches(name.replace("-", "_"), sorted(available(ranges, version)), n=1)
    return "unknown in vLLM 0.10-0.33" + (f"; did you mean {close[0]!r}?" if close else "")
