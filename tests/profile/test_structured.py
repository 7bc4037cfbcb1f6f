"""A workload's grammar (profile/structured.py): each shape vLLM and the OpenAI API take is accepted and named, each
bad one is one phrase naming the key and the fix, a workload file's grammar reaches every prompt it generates and
prompts.jsonl, and a trace workload refuses one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.pair import Pair, RoleServer
from loadgen.profile.structured import constraint_of, constraint_problem, describe
from loadgen.profile.workload import Prompt, generate, load_workloads

GOOD: list[tuple[dict[str, Any], str]] = [
    ({"structured_outputs": {"choice": ["yes", "no"]}}, "structured_outputs choice"),
    ({"structured_outputs": {"regex": "[0-9]+", "disable_fallback": True}}, "structured_outputs regex"),
    ({"structured_outputs": {"json": {"type": "object"}, "whitespace_pattern": " "}}, "structured_outputs json"),
    ({"structured_outputs": {"grammar": 'root ::= "a"'}}, "structured_outputs grammar"),
    ({"structured_outputs": {"json_object": True}}, "structured_outputs json_object"),
    ({"response_format": {"type": "json_object"}}, "response_format json_object"),
    (
        {"response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {}}}},
        "response_format json_schema",
    ),
]


@pytest.mark.parametrize(("doc", "words"), GOOD)
def test_each_shape_is_accepted_sent_as_declared_and_named(doc: dict[str, Any], words: str) -> None:
    assert constraint_problem(doc) is None
    assert constraint_of({**doc, "prompt": "x"}) == doc  # only the grammar field is sent
    assert describe(doc) == words


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        (
            {"structured_outputs": {"choice": []}},
            "structured_outputs.choice must be a non-empty list of strings, got []",
        ),
        ({"structured_outputs": {"regex": ""}}, "structured_outputs.regex must be a non-empty regular expression"),
        ({"structured_outputs": {"json_object": False}}, "structured_outputs.json_object must be true, got False"),
        ({"structured_outputs": {"chioce": ["a"]}}, "unknown key 'chioce' (did you mean 'choice'?)"),
        ({"structured_outputs": {"disable_fallback": True}}, "needs exactly one of json, regex, choice"),
        ({"structured_outputs": {"regex": "a", "disable_fallback": "yes"}}, "disable_fallback must be a bool"),
        ({"structured_outputs": ["a"]}, "structured_outputs must be a table"),
        ({"response_format": {"type": "text"}}, "whose type is one of json_object, json_schema, structural_tag"),
        ({"response_format": {"type": "json_schema", "json_schema": {"schema": {}}}}, "needs json_schema = { name"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "n"}}}, "schema must be a JSON schema"),
        ({"response_format": {"type": "json_object"}, "structured_outputs": {"regex": "a"}}, "not both"),
        ({"guided_regex": "a"}, "guided_regex is vLLM's older field (removed in 0.12.0): write structured_outputs"),
    ],
)
def test_a_bad_shape_is_one_phrase_naming_it(doc: dict[str, Any], problem: str) -> None:
    assert problem in (constraint_problem(doc) or "")


def _workload(tmp_path: Path, kind: str, extra: str) -> Path:
    path = tmp_path / "g.toml"
    path.write_text(f'name = "g"\nkind = "{kind}"\noutput_tokens = 8\n{extra}')
    return path


def test_a_workload_files_grammar_reaches_every_prompt_and_prompts_jsonl(tmp_path: Path) -> None:
    (workload,) = load_workloads(
        str(_workload(tmp_path, "short-homogeneous", 'structured_outputs = { regex = "[a-z]+" }\n'))
    )
    assert workload.constrained == "structured_outputs regex on every request"
    prompts = generate(workload, 3)
    assert {p.constraint for p in prompts} == {json.dumps({"structured_outputs": {"regex": "[a-z]+"}})}
    line = prompts[0].to_json()
    assert line["constraint"] == {"structured_outputs": {"regex": "[a-z]+"}}
    plain = Prompt("p", "w", "completions", "t", None, 4)
    assert "constraint" not in plain.to_json()  # prompts.jsonl of an unconstrained workload as before


def test_a_trace_workload_refuses_a_grammar_and_a_bad_shape_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match=r"g\.toml: structured_outputs\.grammar must be a non-empty grammar"):
        load_workloads(str(_workload(tmp_path, "short-homogeneous", 'structured_outputs = { grammar = " " }\n')))
    trace = _workload(tmp_path, "trace", 'path = "t.jsonl"\nresponse_format = { type = "json_object" }\n')
    (tmp_path / "t.jsonl").write_text('{"timestamp": 0, "prompt": "a", "output_tokens": 2}\n')
    with pytest.raises(ProfileError, match="a trace workload replays its requests as traced; remove response_format"):
        load_workloads(str(trace))


def test_the_command_lines_metrics_urls_win_over_the_pair_files(tmp_path: Path) -> None:
    from tests.check.test_validate import make_pair

    pair: Pair = make_pair("org/target", None)
    pair = pair.with_metrics_urls({"speculative": "http://decode:8000"})
    assert pair.servers["speculative"] == RoleServer(metrics_url="http://decode:8000")
    assert pair.with_metrics_urls({}) is pair
