"""`loadgen sweep` with command-line overrides: the sweep folder's sweep.toml and every candidate's pair file
hold the values as their own, protocol.json records them, and the cells measured follow them (scripted servers
on loopback, as in test_sweep_flow)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from loadgen.profile.pairfile import load_pair
from loadgen.profile.tomlread import read_toml
from loadgen.records.overrides import Overrides
from loadgen.run.sweep import run_sweep
from tests.run.test_sweep_flow import GETS, _attach, _options, _stream
from tests.support.scripted_server import scripted_server

#: Timed scripted runs: ratios a vLLM server's load beside them would move (make test runs them in a round of
#: their own, after the end-to-end tests).
pytestmark = pytest.mark.timed


@pytest.mark.slow
def test_a_sweep_runs_and_records_the_command_lines_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    o, path = _options(tmp_path)
    (tmp_path / "sweep.toml").write_text(
        (tmp_path / "sweep.toml").read_text().replace("[design]\n", "[design]\nblocks = 1\n")
    )
    o = replace(o, overrides=Overrides(concurrency=(3,), requests=2))
    with (
        scripted_server(_stream(0), None, GETS) as p,
        scripted_server(_stream(1), None, GETS) as k1,
        scripted_server(_stream(2), None, GETS) as k2,
        scripted_server(_stream(3), None, GETS) as k3,
    ):
        _attach(monkeypatch, {0: p, 1: k1, 2: k2, 3: k3})
        sweep_dir = run_sweep(path, o, lambda _: None)
    saved = read_toml(sweep_dir / "sweep.toml")
    assert saved["run"]["concurrency"] == [3] and (saved["stop"]["min_requests"], saved["stop"]["rounds"]) == (2, 1)
    for name in ("ngram-k1", "ngram-k2", "wide-k3"):
        pair = load_pair(str(sweep_dir / "candidates" / f"{name}.toml"), workloads_dir=tmp_path / "workloads")
        assert pair.load.concurrency == (3,) and pair.stop.measured_requests(3) == 3  # max(2, one per slot)
    proto = json.loads((sweep_dir / "protocol.json").read_text())
    assert proto["command_line"] == {"concurrency": [3], "requests": 2}
    assert [(c["level"], len(c["measured"])) for c in proto["cells"]] == [("c3", 3)]
    card = json.loads((sweep_dir / "sweep.json").read_text())
    assert [c["level"] for c in card["cells"]] == ["c3"]
    assert card["command_line"] == {"concurrency": [3], "requests": 2}
    md = (sweep_dir / "sweep.md").read_text()
    assert (
        "From the command line (not the sweep file): --concurrency 3 ([run].concurrency); --requests 2 "
        "([stop].min_requests and rounds = 1, or max_requests by duration)."
    ) in md
    jsonschema.validate(card, json.loads(Path("loadgen/records/sweep.schema.json").read_text()))
    cut = json.loads((sweep_dir / "ngram-k1" / "card.json").read_text())  # each candidate's own pair card
    assert cut["command_line"] == {"concurrency": [3], "requests": 2}
    # the sweep card's TTFT ratios at p50, p95 and p99: every arm's first token comes after one step (ratio 1)
    assert "| TTFT spec/plain p50 / p95 / p99 | criteria |" in md
    for e in card["cells"][0]["entries"]:
        assert list(e["ttft_ratios"]) == ["p50", "p95", "p99"]
        assert all(v == pytest.approx(1.0, rel=0.3) for v in e["ttft_ratios"].values())
