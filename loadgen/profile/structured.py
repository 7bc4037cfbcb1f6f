"""Structured outputs as a workload option (pure): the request fields that constrain an output to a grammar, their
shape checked before anything starts, and how the card names them.

Two request fields, sent as declared and identically to both servers (stream/client.py ``build_payload``):

- ``response_format`` (the OpenAI field): ``{"type": "json_object"}``, ``{"type": "json_schema", "json_schema":
  {"name": ..., "schema": {...}}}`` or ``{"type": "structural_tag", ...}``;
- ``structured_outputs`` (vLLM's extension, vLLM docs "Structured Outputs",
  https://docs.vllm.ai/en/latest/features/structured_outputs/): exactly one of ``json`` (a JSON schema),
  ``regex``, ``choice`` (a list of strings), ``grammar`` (an EBNF grammar), ``json_object`` (true) or
  ``structural_tag``, with the options ``disable_fallback``, ``disable_any_whitespace``,
  ``disable_additional_properties`` (booleans) and ``whitespace_pattern`` (a string). It replaced the older
  ``guided_json``, ``guided_regex``, ``guided_choice`` and ``guided_grammar`` fields (deprecated in 0.10.2, removed
  in 0.12.0, per those docs), which loadgen refuses, naming the field to write instead.

Declared per workload file (top-level keys) or per line of a JSONL prompt file (a line's own replaces its workload's).
A grammar ends the output where it ends, so a constrained request is sent without ``ignore_eos`` and
``min_tokens``: loadgen lets the grammar end it and compares per-token figures (docs/metrics.md, "Structured
outputs"); the grammar also refuses draft tokens it does not allow, so fewer than K draft tokens per step are
expected.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

#: The request fields that constrain an output.
FIELDS = ("response_format", "structured_outputs")
RESPONSE_TYPES = ("json_object", "json_schema", "structural_tag")
#: ``structured_outputs``' constraints (exactly one) and options, with what each must be.
CONSTRAINTS = ("json", "regex", "choice", "grammar", "json_object", "structural_tag")
OPTIONS = {
    "disable_fallback": bool,
    "disable_any_whitespace": bool,
    "disable_additional_properties": bool,
    "whitespace_pattern": str,
}
#: vLLM's fields before ``structured_outputs`` (removed in 0.12.0) and their key inside it.
LEGACY = {"guided_json": "json", "guided_regex": "regex", "guided_choice": "choice", "guided_grammar": "grammar"}


def _response_format(value: Any) -> str | None:
    if not isinstance(value, Mapping) or value.get("type") not in RESPONSE_TYPES:
        kind = value.get("type") if isinstance(value, Mapping) else value
        return f"response_format must be a table whose type is one of {', '.join(RESPONSE_TYPES)}, got {kind!r}"
    if value["type"] == "json_schema":
        schema = value.get("json_schema")
        if not isinstance(schema, Mapping) or not isinstance(schema.get("name"), str):
            return 'response_format of type json_schema needs json_schema = { name = "...", schema = {...} }'
        if not isinstance(schema.get("schema"), Mapping):
            return "response_format.json_schema.schema must be a JSON schema (a table)"
    return None


def _constraint(key: str, value: Any) -> str | None:
    """What is wrong with ``structured_outputs.<key> = value``, or None."""
    good = {
        "json": isinstance(value, Mapping | str) and bool(value),
        "regex": isinstance(value, str) and bool(value),
        "choice": isinstance(value, list) and bool(value) and all(isinstance(c, str) for c in value),
        "grammar": isinstance(value, str) and bool(value.strip()),
        "json_object": value is True,
        "structural_tag": isinstance(value, Mapping | str) and bool(value),
    }[key]
    want = {
        "json": "a JSON schema (a table or a JSON string)",
        "regex": "a non-empty regular expression",
        "choice": "a non-empty list of strings",
        "grammar": "a non-empty grammar",
        "json_object": "true",
        "structural_tag": "a structural tag (a table or a JSON string)",
    }[key]
    return None if good else f"structured_outputs.{key} must be {want}, got {value!r}"


def _structured_outputs(value: Any) -> str | None:
    if not isinstance(value, Mapping):
        return f'structured_outputs must be a table, e.g. {{ choice = ["yes", "no"] }}, got {value!r}'
    for key in value:
        if key not in (*CONSTRAINTS, *OPTIONS):
            close = difflib.get_close_matches(str(key), (*CONSTRAINTS, *OPTIONS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            return (
                f"structured_outputs has an unknown key {key!r}{hint}; its keys: {', '.join((*CONSTRAINTS, *OPTIONS))}"
            )
    given = [k for k in CONSTRAINTS if k in value]
    if len(given) != 1:
        return f"structured_outputs needs exactly one of {', '.join(CONSTRAINTS)}, got {len(given)}"
    bad = [k for k, kind in OPTIONS.items() if k in value and not isinstance(value[k], kind)]
    if bad:
        return f"structured_outputs.{bad[0]} must be a {OPTIONS[bad[0]].__name__}, got {value[bad[0]]!r}"
    return _constraint(given[0], value[given[0]])


def constraint_problem(doc: Mapping[str, object]) -> str | None:
    """What is wrong with the structured-output fields of ``doc`` (a workload file's top level or a prompt line),
    one phrase with the fix; None when they are well formed or absent."""
    for old, new in LEGACY.items():
        if old in doc:
            return f"{old} is vLLM's older field (removed in 0.12.0): write structured_outputs = {{ {new} = ... }}"
    if all(k in doc for k in FIELDS):
        return "give response_format or structured_outputs, not both"
    if "response_format" in doc:
        return _response_format(doc["response_format"])
    if "structured_outputs" in doc:
        return _structured_outputs(doc["structured_outputs"])
    return None


def constraint_of(doc: Mapping[str, object]) -> dict[str, object] | None:
    """The structured-output field of ``doc`` as sent (``{"response_format": {...}}`` or ``{"structured_outputs":
    {...}}``), None when it has none; check it with :func:`constraint_problem` first."""
    found = {k: doc[k] for k in FIELDS if k in doc}
    return found or None


def describe(constraint: Mapping[str, object]) -> str:
    """The card's words for a constraint: ``structured_outputs choice``, ``response_format json_schema``."""
    form = constraint.get("response_format")
    if isinstance(form, Mapping):
        return f"response_format {form.get('type')}"
    inner = constraint.get("structured_outputs")
    return "structured_outputs " + next((k for k in CONSTRAINTS if isinstance(inner, Mapping) and k in inner), "?")
