"""Command-line overrides (`--concurrency`, `--requests`, `--workload` on compare and sweep): click usage errors
for bad values, the values written into the pair document as the file's own, recorded in the run folder's
pair.toml and protocol.json (so `--protocol` repeats the run) and named on the card."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.errors import ProfileError
from loadgen.profile.overrides import Overrides, apply_overrides
from loadgen.profile.pairfile import load_pair
from loadgen.run.plan import replay_protocol
from tests.support.promstack import free_port_block
from tests.support.scripted_engine import PAIR, REPO, WORKLOAD


@pytest.mark.parametrize("command", ["compare", "sweep"])
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--concurrency", "1,x"], "is not a list of concurrency levels"),
        (["--concurrency", "0"], "is not a list of concurrency levels"),
        (["--concurrency", "100001"], "give integers from 1 to 100,000"),
        (["--concurrency", "4,4"], "lists a level twice"),
        (["--requests", "0"], "0 is not in the range 1<=x<=10000000"),
        (["--workload", "no/such/file.toml"], "workload file 'no/such/file.toml' does not exist"),
        (["--workload", "a,,b"], "has an empty workload name"),
    ],
)
def test_a_bad_value_is_a_click_usage_error_exit_2(command: str, args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, [command, "demo-cpu", *args])
    assert result.exit_code == 2
    assert result.output.startswith("Usage: ") and message in result.output


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("compare", ["--resume", "runs/x"]),
        ("compare", ["--protocol", "runs/x/protocol.json"]),
        ("sweep", ["--resume", "runs/x"]),
    ],
)
def test_overrides_with_resume_or_protocol_are_refused_in_one_line(command: str, args: list[str]) -> None:
    result = CliRunner().invoke(main, [command, *args, "--requests", "5"])
    assert result.exit_code == 2
    assert result.output.startswith("loadgen: error: --concurrency, --requests and --workload change")
    assert result.output.count("\n") == 1


def test_a_workload_the_pair_does_not_run_is_named_with_a_suggestion() -> None:
    result = CliRunner().invoke(main, ["compare", "demo-cpu", "--workload", "long-divers"])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert "--workload long-divers: profiles/pairs/demo-cpu.toml runs no workload of that name" in result.output
    assert "did you mean 'long-diverse'?" in result.output


def test_a_workload_the_pair_gives_by_path_is_chosen_by_its_files_stem() -> None:
    """A pair listing `workloads = ["/data/w.toml", "long-diverse"]` refused `--workload w` ("runs no workload of
    that name (/data/w.toml)"); the stem now picks the declared path, as written in the pair file."""
    doc = {"run": {"workloads": ["/data/w.toml", "long-diverse"]}}
    chosen = apply_overrides(doc, Overrides(workloads=("w",)), Path("p.toml"))
    assert chosen["run"]["workloads"] == ["/data/w.toml"]
    with pytest.raises(
        ProfileError,
        match=r"--workload ww: p.toml runs no workload of that name \(/data/w.toml, "
        r"long-diverse\); did you mean 'w'\?",
    ):
        apply_overrides(doc, Overrides(workloads=("ww",)), Path("p.toml"))


def test_the_overrides_read_as_the_files_own_values() -> None:
    plain = load_pair("demo-cpu")
    pair = load_pair("demo-cpu", overrides=Overrides((1, 8), 5, ("long-diverse",)))
    assert pair.load.concurrency == (1, 8) and pair.load.rates_rps == plain.load.rates_rps
    assert (pair.stop.min_requests, pair.stop.rounds) == (5, 1)
    assert [pair.stop.measured_requests(c) for c in (1, 8)] == [5, 8]  # every slot at least once
    assert [w.name for w in pair.workloads] == ["long-diverse"]
    assert pair.workloads[0] == next(w for w in plain.workloads if w.name == "long-diverse")
    # by duration, --requests caps the cell: [stop].max_requests
    timed = apply_overrides({"stop": {"duration_s": 30, "min_requests": 2}}, Overrides(requests=7), Path("p.toml"))
    assert timed["stop"] == {"duration_s": 30, "min_requests": 2, "max_requests": 7}
    with pytest.raises(ProfileError, match=r"\[stop\].min_requests must be an integer >= 1"):
        load_pair("demo-cpu", overrides=Overrides(requests=0))  # checked like the file's own values


def test_a_compare_with_overrides_records_them_as_the_pair_files_and_protocol_repeats_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real compare (the scripted engine, launched) with all three overrides: the run folder's pair.toml and
    protocol.json hold them as the pair file's own values (the workload file given relative, recorded absolute),
    the card names them, and `--protocol`'s replay reads back the same pair and cells."""
    (tmp_path / "w2.toml").write_text(WORKLOAD.replace('name = "w"', 'name = "w2"').replace("seed = 1", "seed = 2"))
    pair_file = tmp_path / "scripted.toml"
    pair_file.write_text(
        PAIR.format(name="handy", k=1, python=sys.executable, repo=REPO).replace(
            "port = 8300", f"port = {free_port_block()}"
        )
        + '[design]\nblocks = 1\nplacebo = "off"\n'
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main,
        [
            "compare",
            str(pair_file),
            "--runs-dir",
            str(tmp_path / "runs"),
            "--allow-unpinned",
            "--no-progress",
            "--concurrency",
            "1,2",
            "--requests",
            "3",
            "--workload",
            "w2.toml",
        ],
    )
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs" / "handy").iterdir()
    w2 = str((tmp_path / "w2.toml").resolve())
    proto = json.loads((run_dir / "protocol.json").read_text())
    assert proto["concurrency"] == [1, 2] and proto["load"]["concurrency"] == [1, 2]
    assert (proto["stop_rule"]["min_requests"], proto["stop_rule"]["rounds"]) == (3, 1)
    assert [w["name"] for w in proto["workloads"]] == ["w2"]
    assert [(c["level"], len(c["measured"])) for c in proto["cells"]] == [("c1", 3), ("c2", 3)]
    assert proto["command_line"] == {"concurrency": [1, 2], "requests": 3, "workload": [w2]}
    again = load_pair(str(run_dir / "pair.toml"))  # the run folder's pair file says them itself
    assert again.load.concurrency == (1, 2) and (again.stop.min_requests, again.stop.rounds) == (3, 1)
    assert [w.name for w in again.workloads] == ["w2"] and again.overrides is None
    replayed, cells, _ = replay_protocol(run_dir / "protocol.json")
    assert [(c.level.label, len(c.measured)) for c in cells] == [("c1", 3), ("c2", 3)]
    assert replayed.load == again.load and replayed.overrides == Overrides((1, 2), 3, (w2,))
    card_md = (run_dir / "card.md").read_text()
    assert (
        "- **from the command line** (not the pair file): --concurrency 1,2 ([run].concurrency); --requests 3 "
        "([stop].min_requests and rounds = 1, or max_requests by duration); --workload "
        f"{w2} ([run].workloads)"
    ) in card_md
    assert json.loads((run_dir / "card.json").read_text())["command_line"] == proto["command_line"]
