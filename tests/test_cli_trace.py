"""A bad trace line through the CLI: one line naming the file, the line and the fix, exit 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from tests.support.clirun import exited


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (
            '{"timestamp": "soon", "input_length": 8, "output_length": 4}',
            "line 2: timestamp must be a number of milliseconds",
        ),
        ("{not json", "line 2 is not JSON"),
    ],
)
def test_a_bad_trace_line_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, says: str
) -> None:
    (tmp_path / "profiles" / "workloads").mkdir(parents=True)
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"timestamp": 0, "input_length": 8, "output_length": 4}) + "\n" + line + "\n")
    (tmp_path / "profiles" / "workloads" / "tr.toml").write_text(
        f'kind = "trace"\npath = "{trace}"\noutput_tokens = 4\n'
    )
    text = Path("profiles/pairs/demo-cpu-ngram.toml").read_text()
    text = text.replace('workloads = ["short-homogeneous", "long-diverse", "grounded"]', 'workloads = ["tr"]')
    (tmp_path / "pair.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["compare", str(tmp_path / "pair.toml")])
    lines = exited(result, 2)
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"loadgen: error: {trace}: ") and says in lines[0]
