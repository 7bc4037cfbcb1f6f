"""`loadgen sweep` through click's CliRunner: its argument checks and a bad sweep file end with one line
and exit 2 before any server starts."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from loadgen.cli import main


def test_sweep_needs_exactly_one_of_pair_or_resume(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["sweep"])
    assert result.exit_code == 2 and "give exactly one of PAIR or --resume SWEEP_DIR" in result.output
    result = CliRunner().invoke(main, ["sweep", "--resume", str(tmp_path)])
    assert result.exit_code == 2 and "is not a sweep folder (no sweep.toml)" in result.output


def test_a_k_listed_twice_is_refused_before_anything_starts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(Path("profiles/pairs/demo-cpu-sweep.toml").read_text().replace("[1, 2]", "[1, 2, 2]"))
    result = CliRunner().invoke(main, ["sweep", str(bad), "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2 and "num_speculative_tokens lists a K twice" in result.output
    assert not (tmp_path / "runs").exists()


def test_check_and_compare_point_a_sweep_file_at_sweep() -> None:
    result = CliRunner().invoke(main, ["check", "demo-cpu-sweep"])
    assert result.exit_code == 2 and "is a sweep pair file" in result.output
    assert "loadgen sweep demo-cpu-sweep" in result.output


def test_a_history_folder_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["sweep", "demo-cpu-sweep", "--history", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "--history" in result.output and "does not exist" in result.output
