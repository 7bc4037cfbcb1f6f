"""Rules for the speculative config per engine version (pure: no I/O, no clock), over the tables in
profile/fields.py; launch flags are in engine.py.

Every fact is in docs/vllm-notes.md (speculative config); the wheels and files each table was read
from are named in profile/fields.py.
"""

from __future__ import annotations

import json
import re
from typing import Any

from loadgen.check.finding import Finding
from loadgen.profile.fields import (
    FIELD_RANGES,
    FIRST_KNOWN,
    HETEROGENEOUS_FROM,
    INTERNAL_FIELDS,
    LAST_KNOWN,
    METHOD_RANGES,
    METHOD_WORKS_FROM,
    NAME_SWITCHES,
    VALUE_RANGES,
    Version,
    available,
    history,
    in_range,
    parse_version,
)
from loadgen.records.speculative import SpeculativeConfig

HEX40 = re.compile(r"^[0-9a-f]{40}$")


def looks_like_hub_id(model: str) -> bool:
    """``org/name`` or ``name`` (no leading ``/``, ``.``, ``~``, at most one ``/``): a model-hub id."""
    return re.fullmatch(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?", model) is not None


def heterogeneous_problems(spec: SpeculativeConfig, version: Version | None) -> list[str]:
    """Reasons ``use_heterogeneous_vocab`` cannot work with ``spec`` on ``version`` (empty: it can).

    Source: docs/vllm-notes.md (vllm/v1/spec_decode/vocab_mapping.py, PR 38174, 0.25.0-0.33.0): only
    ``method='draft_model'``, only greedy draft sampling (target temperature is not restricted), and in
    0.33 not with ``use_local_argmax_reduction``."""
    out = []
    if version is not None and version < parse_version(HETEROGENEOUS_FROM):
        out.append(f"vLLM {'.'.join(map(str, version))} has no heterogeneous-vocabulary mode (added in 0.25.0)")
    if spec.method != "draft_model":
        out.append(f"use_heterogeneous_vocab only works with method='draft_model', not {spec.method!r}")
    if (spec.draft_sample_method or "greedy") != "greedy":
        out.append(
            "use_heterogeneous_vocab supports only greedy draft sampling; draft_sample_method="
            f"{spec.draft_sample_method!r} is not supported (omit it or set 'greedy')"
        )
    if spec.use_local_argmax_reduction and version is not None and version[:2] >= (0, 33):
        out.append("use_heterogeneous_vocab is incompatible with use_local_argmax_reduction (0.33); drop one")
    return out


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _schema(spec: SpeculativeConfig, version: Version, engine: str, newer: bool) -> list[Finding]:
    out = []
    fields = available(FIELD_RANGES, version)
    given = spec.to_json()
    for key in given:
        if key == "tensor_parallel_size":
            out.append(
                Finding(
                    "speculative.tensor_parallel_size",
                    False,
                    True,
                    "'tensor_parallel_size' is not a valid key of the speculative config (vLLM 0.15+ "
                    "raises); write draft_tensor_parallel_size = <target TP> instead",
                )
            )
        elif key in INTERNAL_FIELDS:
            out.append(Finding(f"speculative.{key}", False, True, f"{key!r} is filled by vLLM itself; remove it"))
        elif key not in fields:
            why = history(key, FIELD_RANGES, version)
            effect = (
                "vLLM 0.10-0.15 would ignore it silently"
                if version[:2] <= (0, 15)
                else "vLLM would fail at start-up with 'Unexpected keyword argument'"
            )
            fix = "upgrade vLLM or remove it" if why.startswith("added") else "remove it"
            out.append(
                Finding(
                    f"speculative.{key}",
                    False,
                    not newer,
                    f"{key!r} is not a speculative-config field of vLLM {engine} ({why}); {effect}; {fix}",
                )
            )
    for key, ranges in VALUE_RANGES.items():
        allowed = next((vals.split() for first, last, vals in ranges if in_range(version, (first, last))), None)
        if key in given and allowed is not None and given[key] not in allowed:
            out.append(
                Finding(
                    f"speculative.{key}",
                    False,
                    True,
                    f"{key}={given[key]!r} is not accepted by vLLM {engine}; allowed: {', '.join(sorted(allowed))}",
                )
            )
    return out


def _method(spec: SpeculativeConfig, version: Version, engine: str) -> list[Finding]:
    method = spec.method
    if not isinstance(method, str):
        return [
            Finding(
                "speculative.method",
                False,
                True,
                f"method must be given as a string (got {method!r}); "
                'vLLM would guess it from the model name; write e.g. method = "draft_model"',
            )
        ]
    if method.endswith("_mtp") and version[:2] >= (0, 11):
        return [
            Finding(
                "speculative.method",
                False,
                False,
                f"method {method!r} is deprecated: vLLM 0.11+ rewrites it to 'mtp'; write method = \"mtp\"",
            )
        ]
    methods = available(METHOD_RANGES, version)
    if method not in methods:
        return [
            Finding(
                "speculative.method",
                False,
                True,
                f"vLLM {engine} has no speculative method {method!r} "
                f"({history(method, METHOD_RANGES, version)}); available: {', '.join(sorted(methods))}",
            )
        ]
    first_ok, reason = METHOD_WORKS_FROM.get(method, ("0.10", ""))
    if first_ok is None or version < parse_version(first_ok):
        return [
            Finding(
                "speculative.method",
                False,
                True,
                f"vLLM {engine} accepts method {method!r} but {reason}; "
                "use another method" + ("" if first_ok is None else f" or vLLM >= {first_ok}"),
            )
        ]
    return []


def _method_switch(spec: SpeculativeConfig, version: Version, draft_model_type: str | None) -> list[Finding]:
    """The silent re-classification of an explicit ``draft_model`` (docs/vllm-notes.md, ``__post_init__``)."""
    model = spec.model
    if spec.method != "draft_model" or not isinstance(model, str):
        return []
    name = model.lower()
    for needle, becomes, since in NAME_SWITCHES:
        if needle in name and version >= parse_version(since):
            return [
                Finding(
                    "speculative.model",
                    False,
                    True,
                    f"the draft path {model!r} contains {needle!r}, so "
                    f"vLLM silently runs method {becomes!r} instead of 'draft_model' (SpeculativeConfig."
                    "__post_init__, vllm/config/speculative.py); rename the directory (every path component) "
                    f"or set method = {becomes!r} if it is such a head",
                )
            ]
    mtype = draft_model_type or ""
    if mtype == "mtp" or mtype.endswith("_mtp") or (mtype in ("medusa", "mlp_speculator") and version[:2] <= (0, 32)):
        becomes = "mtp" if "mtp" in mtype else mtype
        return [
            Finding(
                "speculative.model",
                False,
                True,
                f"the draft's config model_type {mtype!r} makes vLLM "
                f"silently run method {becomes!r} instead of 'draft_model' (SpeculativeConfig.__post_init__); "
                f"set method = {becomes!r} or use a plain causal-LM draft",
            )
        ]
    return []


def check_draft_revision(
    spec: SpeculativeConfig, draft_is_local: bool | None = None, allow_unpinned: bool = False
) -> list[Finding]:
    """A hub-id draft (``[speculative].model``) must pin ``revision`` to a 40-hex commit; blocking unless
    ``allow_unpinned`` (then a warning). ``draft_is_local`` None: decided by :func:`looks_like_hub_id`."""
    model, revision = spec.model, spec.revision
    if not isinstance(model, str) or model in ("ngram", "[ngram]") or spec.method in ("ngram", "suffix"):
        return []
    if draft_is_local or (draft_is_local is None and not looks_like_hub_id(model)):
        return []
    if isinstance(revision, str) and HEX40.match(revision):
        return [Finding("draft revision", True, False, f"{model} pinned to commit {revision}")]
    return [
        Finding(
            "draft revision",
            False,
            not allow_unpinned,
            f"draft {model} is a hub id with revision {revision!r}, not a 40-hex commit: a branch or tag "
            'can move; set [speculative].revision = "<commit sha>"'
            + (" (allowed by --allow-unpinned)" if allow_unpinned else " or pass --allow-unpinned"),
        )
    ]


def lookup_findings(spec: SpeculativeConfig) -> list[Finding]:
    """``prompt_lookup_min`` / ``prompt_lookup_max`` (n-gram lookup): positive integers, min <= max, in every
    vLLM release (``SpeculativeConfig.__post_init__``). One blocking finding, or none."""
    lo, hi = spec.prompt_lookup_min, spec.prompt_lookup_max
    if any(v is not None and not _positive_int(v) for v in (lo, hi)) or (
        isinstance(lo, int) and isinstance(hi, int) and lo > hi
    ):
        return [
            Finding(
                "speculative.prompt_lookup_min",
                False,
                True,
                f"prompt_lookup_min={lo!r} must be a positive integer <= prompt_lookup_max={hi!r}; swap or fix them",
            )
        ]
    return []


def _version_findings(engine_version: str) -> tuple[tuple[int, int, int] | None, list[Finding]]:
    """The parsed ``engine_version`` and its findings: None and a blocking finding when it is no version or
    older than FIRST_KNOWN; a warning when it is newer than LAST_KNOWN (checked against LAST_KNOWN)."""
    try:
        version = parse_version(engine_version)
    except ValueError:
        return None, [
            Finding(
                "speculative config",
                False,
                True,
                f"engine version {engine_version!r} is not a version "
                "number; fix the engine command so it reports e.g. 0.32.0",
            )
        ]
    if version < parse_version(FIRST_KNOWN):
        return None, [
            Finding(
                "speculative config",
                False,
                True,
                f"unsupported engine version {engine_version}: loadgen "
                f"knows the V1 speculative config of vLLM {FIRST_KNOWN}-{LAST_KNOWN}; use vLLM >= 0.15",
            )
        ]
    if version[:2] > parse_version(LAST_KNOWN)[:2]:
        return version, [
            Finding(
                "speculative config",
                False,
                False,
                f"vLLM {engine_version} is newer than loadgen's table "
                f"({FIRST_KNOWN}-{LAST_KNOWN}); checked against {LAST_KNOWN}",
            )
        ]
    return version, []


def _size_findings(spec: SpeculativeConfig, serving_max_model_len: int | None, target_tp: int) -> list[Finding]:
    """K, the draft's tensor-parallel size and its max_model_len (vllm/config/speculative.py
    ``__post_init__``, ``_verify_and_get_draft_tp``; vllm/v1/spec_decode/draft_model.py 0.15+)."""
    out = []
    k = spec.num_speculative_tokens
    if not _positive_int(k):
        out.append(
            Finding(
                "speculative.num_speculative_tokens",
                False,
                True,
                f"num_speculative_tokens must be a positive integer (got {k!r}); loadgen needs K to verify the server",
            )
        )
    dtp = spec.draft_tensor_parallel_size
    if dtp is not None and (
        not _positive_int(dtp) or (spec.method == "draft_model" and dtp != target_tp) or dtp not in (1, target_tp)
    ):
        rule = "equal" if spec.method == "draft_model" else "be 1 or"
        out.append(
            Finding(
                "speculative.draft_tensor_parallel_size",
                False,
                True,
                f"draft_tensor_parallel_size={dtp!r}"
                f" must {rule} the target's tensor_parallel_size {target_tp} (vLLM 0.15+); set it to "
                f"{target_tp} or omit it",
            )
        )
    mml = spec.max_model_len
    if mml is not None and (not _positive_int(mml) or (serving_max_model_len and mml > serving_max_model_len)):
        bound = "" if serving_max_model_len is None else f" <= the serving max_model_len {serving_max_model_len}"
        out.append(
            Finding(
                "speculative.max_model_len",
                False,
                True,
                f"draft max_model_len={mml!r} must be a positive "
                f"integer{bound}; lower it or omit it (vLLM defaults it to the smaller of both)",
            )
        )
    return out


def check_speculative_config(
    spec: SpeculativeConfig,
    engine_version: str,
    serving_max_model_len: int | None,
    target_tp: int = 1,
    draft_model_type: str | None = None,
    *,
    draft_is_local: bool | None = None,
    allow_unpinned: bool = False,
) -> list[Finding]:
    """Check ``spec`` (the ``[speculative]`` table, passed as ``--speculative-config``) against vLLM
    ``engine_version`` (e.g. ``"0.32.0+cpu"``). Known: 0.10-0.33; older is refused, newer is checked
    against 0.33 with unknown keys as warnings. ``serving_max_model_len`` (tokens, None = unknown) bounds
    the draft's ``max_model_len``; ``target_tp`` is the target's tensor-parallel size;
    ``draft_model_type`` is the draft config.json ``model_type``. Returns findings; never raises. Rules from
    vllm/config/speculative.py (``__post_init__``: method, prompt lookup, max_model_len; ``_verify_and_get_draft_tp``)
    and vllm/v1/spec_decode/draft_model.py (``_raise_if_draft_tp_mismatch``, 0.15+)."""
    version, out = _version_findings(engine_version)
    if version is None:
        return out
    newer = version[:2] > parse_version(LAST_KNOWN)[:2]
    out += _schema(spec, version, engine_version, newer) + _method(spec, version, engine_version)
    out += _size_findings(spec, serving_max_model_len, target_tp)
    out += lookup_findings(spec)
    if spec.use_heterogeneous_vocab is True and version >= parse_version(HETEROGENEOUS_FROM):
        out += [Finding("heterogeneous vocabulary", False, True, p) for p in heterogeneous_problems(spec, version)]
    out += _method_switch(spec, version, draft_model_type)
    out += check_draft_revision(spec, draft_is_local, allow_unpinned)
    if not any(f.blocking and not f.ok for f in out):
        out.append(
            Finding(
                "speculative config",
                True,
                False,
                f"valid for vLLM {engine_version}: " + json.dumps(spec.to_json(), sort_keys=True),
            )
        )
    return out
