"""`loadgen check` names every prompt-file line that would be skipped and exits 2 unless the pair file allows
skipping (``[run].allow_skipped_lines``, check/promptlines.py)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from loadgen.cli import main
from tests.profile.test_files_anywhere import write_pair, write_workload
from tests.support.tokfactory import trained_vocab, write_model

LINES: list[object] = [
    {"prompt": "the cat"},
    {"messages": [{"role": "user", "content": "a dog"}]},
    {"prompt": "the dog"},
    {"prompt": "", "output_tokens": 2},
]


def _check(tmp_path: Path, run_extra: str) -> tuple[int, str]:
    model = write_model(tmp_path / "m", trained_vocab())
    write_workload(tmp_path / "p" / "f.toml", "f.jsonl", LINES)
    result = CliRunner().invoke(main, ["check", str(write_pair(tmp_path / "p", model, ["f.toml"], run_extra))])
    # CliRunner catches every exception: an uncaught one is result.exception, never a traceback in the output
    assert result.exception is None or isinstance(result.exception, SystemExit), (result.exception, result.output)
    return result.exit_code, result.output


def test_check_names_every_skipped_line_and_exits_2(tmp_path: Path) -> None:
    code, out = _check(tmp_path, "")
    assert code == 2
    assert (
        f"FAIL prompt file: workload f: 2 of the 4 lines of {tmp_path}/p/f.jsonl would be skipped: line 2: a chat "
        "line in a completions file; line 4: prompt is not a non-empty string; fix them, or set "
        "[run].allow_skipped_lines = true in the pair file to sample the other lines"
    ) in out.splitlines()


def test_the_pair_file_can_allow_skipping(tmp_path: Path) -> None:
    code, out = _check(tmp_path, "allow_skipped_lines = true\n")
    assert code == 0, out
    assert (
        f"warn prompt file: workload f: 2 of the 4 lines of {tmp_path}/p/f.jsonl would be skipped: line 2: a chat "
        "line in a completions file; line 4: prompt is not a non-empty string; allowed by "
        "[run].allow_skipped_lines"
    ) in out.splitlines()


def test_check_names_the_bad_lines_of_every_prompt_file_not_only_the_first(tmp_path: Path) -> None:
    model = write_model(tmp_path / "m", trained_vocab())
    a = write_workload(tmp_path / "p" / "a.toml", "a.jsonl", [{"prompt": "the cat", "output_token": 3}])
    b = write_workload(tmp_path / "p" / "b.toml", "b.jsonl", [{"prompt": "a dog"}, {"promt": "x"}])
    result = CliRunner().invoke(main, ["check", str(write_pair(tmp_path / "p", model, ["a.toml", "b.toml"]))])
    assert result.exit_code == 2
    assert result.output == (
        f"loadgen: error: {a}: line 1 has an unknown key 'output_token' (did you mean "
        "'output_tokens'?); a JSONL line has only the keys prompt, messages, output_tokens, response_format, "
        "structured_outputs | "
        f"{b}: line 2 has no prompt (unknown key 'promt' (did you mean 'prompt'?)); each line "
        'needs "prompt", "messages" or "conversations"\n'
    )
