"""Per-block acceptance that trends, black box on the scripted engine that loadgen launches, its speculative server
accepting a scheduled share of its drafts that changes every block (``SCRIPTED_ENGINE_ACCEPT``): a fall is shown
with its per-block values, a rise with the warm-up advice, and ``[design].warmup_pass`` sends every arm's prompts
once, unmeasured, before its first block (logged, recorded in protocol.json, no record kept), so the measured
blocks start warm and no trend is left to show."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from loadgen.profile.pairfile import load_pair
from loadgen.run.flow import run_compare
from loadgen.serve.portlock import ENV_DIR
from tests.support.promstack import free_port_block
from tests.support.scripted_engine import write_small_pair

METRICS = 'SCRIPTED_ENGINE_METRICS = "1"'


@pytest.fixture(autouse=True)
def _own_hold_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_DIR, str(tmp_path / "holds"))


def _run(root: Path, rates: str, warmup_pass: bool = False) -> tuple[Path, list[str]]:
    """A run of 3 blocks (1 warmup and 2 measured requests each) whose speculative server accepts ``rates``
    (one per block, ``SCRIPTED_ENGINE_ACCEPT``); its folder and log lines."""
    root.mkdir(parents=True)
    design = '[design]\nblocks = 3\nplacebo = "off"\nco_resident = true\n'  # one server process each, its count
    design += "warmup_pass = true\n" if warmup_pass else ""
    spec = f'[servers.speculative]\nenv = {{ SCRIPTED_ENGINE_ACCEPT = "{rates}@3" }}\n'
    path = write_small_pair(root, "trend", free_port_block(2), design + spec, METRICS)
    lines: list[str] = []
    pair = load_pair(str(path), workloads_dir=root / "workloads")
    return run_compare(pair, root / "runs", log=lines.append, allow_unpinned=True), lines


def _rates(note: str) -> list[float]:
    return [float(x) for x in re.search(r"block by block \(([^)]*)\)", note).group(1).split(", ")]  # type: ignore[union-attr]


def _note(run_dir: Path, words: str) -> str | None:
    (cell,) = json.loads((run_dir / "card.json").read_text())["cells"]
    return next((n for n in cell["notes"] if words in n), None)


def test_a_falling_acceptance_is_shown_block_by_block(tmp_path: Path) -> None:
    run_dir, _ = _run(tmp_path / "fall", "0.9,0.5,0.1")
    note = _note(run_dir, "acceptance fell block by block")
    assert note is not None and note.startswith("speculative: acceptance fell block by block (")
    rates = _rates(note)
    assert len(rates) == 3 and rates[0] > rates[1] > rates[2] and rates[0] >= 1.5 * rates[2]
    assert "read them apart" in note and note in (run_dir / "card.md").read_text()


def test_a_rise_advises_the_warm_up_pass_which_leaves_no_trend(tmp_path: Path) -> None:
    cold, _ = _run(tmp_path / "cold", "0.2,0.5,0.9")
    rose = _note(cold, "acceptance rose block by block")
    assert rose is not None and "[design].warmup_pass = true" in rose
    rates = _rates(rose)
    assert rates[0] < rates[1] < rates[2] and rates[2] >= 1.5 * rates[0]

    warm, lines = _run(tmp_path / "warm", "0.2,0.5,0.9", warmup_pass=True)
    passes = [x for x in lines if "warm-up pass" in x]
    assert [x.split(":")[0] for x in passes] == ["[plain] warm-up pass (w)", "[speculative] warm-up pass (w)"]
    assert all(re.search(r": 9/9 unmeasured requests ok in [\d.]+ s$", x) for x in passes), passes
    assert json.loads((warm / "protocol.json").read_text())["design"]["warmup_pass"] is True
    records = [json.loads(x) for x in (warm / "requests.jsonl").read_text().splitlines()]
    assert {r["repetition"] for r in records} == {0, 1, 2}  # the pass keeps no record
    assert _note(warm, "block by block") is None
    (cell,) = json.loads((warm / "card.json").read_text())["cells"]
    # every measured block as warm as the cold run's last one (the same scheduled share)
    assert cell["speculative"]["acceptance"]["acceptance_rate"] == pytest.approx(rates[2], abs=0.02)
