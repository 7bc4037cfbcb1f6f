"""Every command's exit code and its lines through click's CliRunner: pairs, check, compare's argument
checks, report on a hand-written run folder and on a folder that is no run (diff: tests/test_diffing.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import commands as cli
from loadgen.cli import main, verdict_exit
from loadgen.errors import CriteriaFailed
from tests.profile.test_pairfile import BASE
from tests.report.test_carddata import write_run
from tests.support.cards import full_card


def test_pairs_lists_every_profile_in_order() -> None:
    result = CliRunner().invoke(main, ["pairs"])
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.output.splitlines()] == sorted(
        p.stem for p in Path("profiles/pairs").glob("*.toml")
    )


def test_version_and_help_exit_0() -> None:
    assert CliRunner().invoke(main, ["--version"]).exit_code == 0
    result = CliRunner().invoke(main, ["-h"])
    assert result.exit_code == 0 and all(c in result.output for c in ("check", "compare", "diff", "pairs", "report"))


def test_check_of_an_unknown_pair_exits_2_in_one_line() -> None:
    result = CliRunner().invoke(main, ["check", "no-such-pair"])
    assert result.exit_code == 2
    assert result.output.startswith("loadgen: error: unknown pair 'no-such-pair'") and result.output.count("\n") == 1


def test_check_with_blocking_findings_exits_2_and_says_how_many(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loadgen.check import enginestart

    monkeypatch.setattr(enginestart, "probe_engine", lambda command, env: enginestart.EngineStart(None))
    pair = tmp_path / "p.toml"
    pair.write_text(BASE.replace('model = "t"', f'model = "{tmp_path / "none"}"'))
    result = CliRunner().invoke(main, ["check", str(pair)])
    assert result.exit_code == 2
    assert result.output.splitlines()[0] == "engine version (installed): unknown"
    last = result.output.splitlines()[-1]
    assert last.startswith("loadgen: error: ") and last.endswith(
        f"blocking finding(s); fix them and run `loadgen check {pair}` again"
    )


def test_the_check_command_to_run_again_is_shell_quoted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pair path with a space was named as `loadgen check /x/my pairs/p.toml`: two arguments once pasted."""
    from loadgen.check import enginestart

    monkeypatch.setattr(enginestart, "probe_engine", lambda command, env: enginestart.EngineStart(None))
    pair = tmp_path / "my pairs" / "p.toml"
    pair.parent.mkdir()
    pair.write_text(BASE.replace('model = "t"', f'model = "{tmp_path / "none"}"'))
    result = CliRunner().invoke(main, ["check", str(pair)])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1].endswith(
        f"blocking finding(s); fix them and run `loadgen check '{pair}'` again"
    )


@pytest.mark.parametrize("args", [[], ["demo-cpu", "--resume", "x"], ["demo-cpu", "--protocol", "p.json"]])
def test_compare_needs_exactly_one_source(args: list[str]) -> None:
    result = CliRunner().invoke(main, ["compare", *args])
    assert result.exit_code == 2
    assert "give exactly one of PAIR, --protocol RUN_DIR/protocol.json or --resume RUN_DIR" in result.output


def test_compare_with_a_bad_attach_url_exits_2_before_any_server(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["compare", "demo-cpu", "--runs-dir", str(tmp_path), "--attach-plain", "localhost:8000"]
    )
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        "Error: Invalid value for '--attach-plain': 'localhost:8000' does not "
        "start with http:// or https://; give a URL such as http://127.0.0.1:8000"
    )
    assert list(tmp_path.iterdir()) == []  # no run folder made


def test_report_on_a_run_folder_writes_the_card_and_exits_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import loadgen.report.plots

    monkeypatch.setattr(loadgen.report.plots, "render_plots", lambda card, records, folder: [])
    run = write_run(tmp_path / "run", criteria={"primary": ["tpot_p50"], "declared": ["primary"]})
    result = CliRunner().invoke(main, ["report", str(run)])
    assert result.exit_code == 0  # report re-renders; only compare exits 3 on a failed verdict
    assert result.output.splitlines()[-1] == f"card: {run / 'card.md'}"
    assert "verdict: FAIL: 1 failed check(s)" in result.output
    card = json.loads((run / "card.json").read_text())
    assert card["crossover"]["w"]["crossover_concurrency"] == pytest.approx(1.5) and card["plots"] == []
    assert (run / "card.md").read_text().startswith("# Pair card: t\n")


def test_report_on_a_folder_without_protocol_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output == (
        f"loadgen: error: {tmp_path} is not a run folder (no protocol.json); pass runs/<pair>/<timestamp>\n"
    )
    assert CliRunner().invoke(main, ["report", str(tmp_path / "missing")]).exit_code == 2  # click's own check


@pytest.mark.parametrize(("passed", "code"), [(False, 3), (True, 0), (None, 0)])
def test_the_verdict_decides_compares_exit(
    tmp_path: Path, passed: bool | None, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "card.json").write_text(json.dumps(full_card({"verdict": {"passed": passed}})))
    if code == 3:  # a finished run is no crash: its last lines say so on stdout, and no error line follows
        with pytest.raises(CriteriaFailed) as failed:
            verdict_exit(tmp_path)
        assert str(failed.value) == "" and failed.value.exit_code == 3
    else:
        verdict_exit(tmp_path)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"card: {tmp_path / 'card.md'}"
    assert out[1:] == (
        ["exit 3: the run finished and its verdict failed the criteria declared in the pair file"] if code == 3 else []
    )


def test_a_full_disk_outside_the_runs_own_writes_is_one_line_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno

    @cli._handles_errors
    def write() -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "card.json"))

    with pytest.raises(SystemExit) as exit_:
        write()
    assert exit_.value.code == 1  # RunDirUnwritable: the run failed
    err = capsys.readouterr().err
    assert err.startswith(f"loadgen: error: cannot write card.json in {tmp_path} (No space left on device; ")
    assert err.endswith("free space or make the folder writable\n") and err.count("\n") == 1
