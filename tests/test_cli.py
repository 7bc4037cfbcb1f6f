"""The command line's exit codes and one-line errors (click's CliRunner)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from loadgen.cli import main
from tests.support.clirun import exited


def test_unknown_pair_exits_2_with_one_line() -> None:
    result = CliRunner().invoke(main, ["compare", "no-such-pair"])
    lines = exited(result, 2)
    assert len(lines) == 1
    assert lines[0].startswith(
        "loadgen: error: unknown pair 'no-such-pair': no profiles/pairs/no-such-pair.toml; "
        "available pairs: demo-cpu, demo-cpu-ngram, "
    )
    assert lines[0].endswith(" (give a pair name or the path to a .toml file)")


def test_bad_profile_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("extra = 1\n" + Path("profiles/pairs/demo-cpu.toml").read_text())
    result = CliRunner().invoke(main, ["check", str(bad)])
    assert result.exit_code == 2
    assert "unknown key 'extra'" in result.output


def test_check_missing_models_exits_2(tmp_path: Path) -> None:
    text = Path("profiles/pairs/demo-cpu.toml").read_text()
    text = text.replace(".models/smollm2-135m-instruct", str(tmp_path / "none"))
    pair = tmp_path / "missing.toml"
    pair.write_text(text)
    result = CliRunner().invoke(main, ["check", str(pair)])
    assert result.exit_code == 2
    assert "is not a local directory" in result.output


def test_pairs_lists_profiles() -> None:
    result = CliRunner().invoke(main, ["pairs"])
    assert result.exit_code == 0
    assert {"demo-cpu", "demo-cpu-ngram"} <= set(result.output.split())


def test_report_on_a_folder_that_is_no_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 2
    assert "not a run folder" in result.output
