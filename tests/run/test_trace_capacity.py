"""``loadgen trace-capacity`` on scripted engines: a constant trace of 5 requests/s, the speculative server
crowded from 8 requests in flight on (tests/support/scripted_engine.py, ``SCRIPTED_ENGINE_CROWD``: 4x slower
steps, TPOT 100 ms against a 70 ms SLO); plain holds at every speed. Each speculative request holds its server
0.3 s, so it has 1.5 x speed in flight: 8x breaks it (12), sqrt(8) = 2.83x does not (4.2). Bad input: exit 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.errors import BadInput
from loadgen.profile.pairfile import load_pair
from loadgen.profile.trace import WORDS
from loadgen.run.tracecapacity import search_capacity
from tests.run.test_drift import _toml_table
from tests.support.clirun import exited
from tests.support.promstack import free_port_block
from tests.support.scripted_engine import PAIR, REPO
from tests.support.tokfactory import trained_vocab, write_model

#: Timed scripted runs: ratios a vLLM server's load beside them would move (make test runs them in a round of
#: their own, after the end-to-end tests).
pytestmark = pytest.mark.timed


def _pair(tmp_path: Path, slo: str = "[slo]\npercentile = 90.0\ntpot_s = 0.07\n") -> Path:
    model = write_model(tmp_path / "model", trained_vocab((" ".join(WORDS),)))
    (tmp_path / "trace.jsonl").write_text(
        "".join(json.dumps({"timestamp": 200 * i, "input_length": 6, "output_length": 11}) + "\n" for i in range(20))
    )
    (tmp_path / "workloads").mkdir(exist_ok=True)
    (tmp_path / "workloads" / "tr.toml").write_text(
        f'kind = "trace"\npath = "{tmp_path / "trace.jsonl"}"\noutput_tokens = 11\nwindow_s = 2.0\n'
    )
    env = {"PYTHONPATH": str(REPO), "SCRIPTED_ENGINE_STEP_S": "0.05"}
    text = (
        PAIR.format(name="cap", k=1, python=sys.executable, repo=REPO)
        .replace(f'env = {{ PYTHONPATH = "{REPO}" }}', f"env = {_toml_table(env)}")
        .replace('model = "org/target"\nrevision = "0123456789abcdef0123456789abcdef01234567"', f'model = "{model}"')
        .replace("port = 8300", f"port = {free_port_block()}")
        .replace('workloads = ["w"]', 'workloads = ["tr"]')
        + f"[servers.speculative]\nenv = {_toml_table(env | {'SCRIPTED_ENGINE_CROWD': '8:4'})}\n"
        '[design]\nblocks = 1\nplacebo = "off"\nco_resident = true\n' + slo
    )
    (tmp_path / "pair.toml").write_text(text)
    return tmp_path / "pair.toml"


@pytest.mark.slow
def test_the_bisection_finds_where_the_crowded_server_stops_holding(tmp_path: Path) -> None:
    pair = load_pair(str(_pair(tmp_path)), workloads_dir=tmp_path / "workloads")
    found = search_capacity(pair, "tr", (1.0, 8.0), 1, tmp_path / "runs", log=lambda _: None)
    assert sorted(found.tested) == [1.0, pytest.approx(8**0.5), 8.0]
    assert found.tested[8.0] == {"plain": True, "speculative": False}
    assert found.capacity == {"plain": 8.0, "speculative": pytest.approx(8**0.5)}
    card = json.loads((found.run_dirs[8.0] / "card.json").read_text())
    assert card["workloads"][0]["name"] == "tr@ts0.125" and card["workloads"][0]["time_scale"] == 0.125


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--workload", "nope"], "--workload 'nope' is not a trace workload"),
        (["--workload", "nope", "--no-progress"], "--workload 'nope' is not a trace workload"),  # taken as compare
        (
            ["--workload", "tr", "--speeds", "2:1"],
            "'2:1' is no range of speeds; give LOW:HIGH with 0.001 <= LOW < HIGH",
        ),
        # a speed under 1/1000 is a time_scale over the workload file's cap: a replay 1e9 times slower hung the search
        (
            ["--workload", "tr", "--speeds", "1e-9:1"],
            "Error: Invalid value for '--speeds': '1e-9:1' is no range of "
            "speeds; give LOW:HIGH with 0.001 <= LOW < HIGH (a time_scale of at "
            "most 1,000, as in a workload file), e.g. 0.5:2",
        ),
        (["--workload", "tr", "--speeds", "1:inf"], "'1:inf' is no range of speeds"),
    ],
)
def test_bad_capacity_searches_are_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], says: str
) -> None:
    path = _pair(tmp_path)
    (tmp_path / "profiles").mkdir()
    (tmp_path / "workloads").rename(tmp_path / "profiles" / "workloads")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["trace-capacity", str(path), *args])
    lines = exited(result, 2)
    if "--speeds" in args:  # a click parameter type (cli/paramtypes.py SpeedRange): click's usage error
        assert lines[0].startswith("Usage: ") and lines[-1].startswith("Error: ") and says in lines[-1], result.output
    else:
        assert len(lines) == 1 and lines[0].startswith("loadgen: error: ") and says in lines[0], result.output


def test_a_capacity_search_needs_slos(tmp_path: Path) -> None:
    pair = load_pair(str(_pair(tmp_path, slo="")), workloads_dir=tmp_path / "workloads")
    with pytest.raises(BadInput, match="a capacity search needs service-level objectives; declare"):
        search_capacity(pair, "tr", (1.0, 2.0), 1, tmp_path / "runs")
