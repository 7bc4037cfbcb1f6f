"""The whole sweep flow against scripted servers on loopback (real sockets), each arm attached to its own: the
plain server (and the placebo's blocks on it) streams one token per chunk, each ngram candidate K + 1 tokens
per chunk at the same chunk interval (a perfect draft), so candidate K's TPOT speedup over plain is about
min(K + 1, 6 / chunks). Checked: the sweep folder (one run folder of every arm, in the balanced order, and
each candidate's own compare folder cut out of it with its pair card and protocol), the sweep card (schema
loadgen.sweep/2), the noise floor, the ranking, exit 3 under unmeetable criteria, the budget refusal and
--resume."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from loadgen.errors import BadInput, CriteriaFailed
from loadgen.run.sweep import SweepOptions, run_sweep
from tests.support.fakerun import attach_arms
from tests.support.scripted_server import DONE, completion_chunk, models_body, scripted_server, usage_chunk

#: Timed scripted runs: ratios a vLLM server's load beside them would move (make test runs them in a round of
#: their own, after the end-to-end tests).
pytestmark = pytest.mark.timed

SWEEP = """
name = "scripted-sweep"
[target]
model = "org/target"
revision = "0123456789abcdef0123456789abcdef01234567"
[speculative]
method = "ngram"
prompt_lookup_min = 2
prompt_lookup_max = 4
num_speculative_tokens = [1, 2]
[[candidates]]
name = "wide"
method = "ngram"
prompt_lookup_min = 2
prompt_lookup_max = 5
num_speculative_tokens = 3
[engine]
command = ["/bin/true"]  # the servers are scripted; the pair check only finds the program
startup_timeout_s = 20
[sampling]
temperature = 0.0
ignore_eos = true
[run]
workloads = ["w"]
concurrency = [1, 2]
output_tokens = 7
[stop]
min_requests = 4
rounds = 1
warmup_requests = 1
cooldown = false
[design]
placebo = "blocks"
co_resident = true
"""
WORKLOAD = 'name = "w"\nkind = "short-homogeneous"\nendpoint = "completions"\noutput_tokens = 7\nseed = 1\n'
GETS = {"/v1/models": (200, models_body("target"))}
STEP_S = 0.05


def _stream(k: int) -> dict[str, Any]:
    """Token ids 1..7: the first alone, then chunks of k + 1 (k = 0: plain), one chunk per STEP_S."""
    ids, chunks, at = list(range(1, 8)), [[1]], 1
    while at < 7:
        chunks.append(ids[at : at + k + 1])
        at += k + 1
    steps = [
        (STEP_S, completion_chunk(" x" * len(c), c, "length" if i == len(chunks) - 1 else None))
        for i, c in enumerate(chunks)
    ]
    return {"*": (200, [*steps, (0.0, usage_chunk(5, 7)), (0.0, DONE)])}


def _attach(monkeypatch: pytest.MonkeyPatch, urls: dict[int, str]) -> None:
    """Measure each arm on the scripted server of its K (0: plain and the placebo) instead of launching vLLM."""
    attach_arms(monkeypatch, lambda arm: urls[arm.pair.num_speculative_tokens if arm.speculative else 0])


def _options(tmp_path: Path, criteria: str = "", budget_min: float | None = None) -> tuple[SweepOptions, str]:
    (tmp_path / "workloads").mkdir(exist_ok=True)
    (tmp_path / "workloads" / "w.toml").write_text(WORKLOAD)
    (tmp_path / "sweep.toml").write_text(SWEEP + criteria)
    return SweepOptions(runs_dir=tmp_path / "runs", budget_min=budget_min, workloads_dir=tmp_path / "workloads"), str(
        tmp_path / "sweep.toml"
    )


def _sweep(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    criteria: str = "",
    resume: Path | None = None,
    replay: Path | None = None,
) -> tuple[Path | None, list[str]]:
    o, path = _options(tmp_path, criteria)
    lines: list[str] = []
    with (
        scripted_server(_stream(0), None, GETS) as p,
        scripted_server(_stream(1), None, GETS) as k1,
        scripted_server(_stream(2), None, GETS) as k2,
        scripted_server(_stream(3), None, GETS) as k3,
    ):
        _attach(monkeypatch, {0: p, 1: k1, 2: k2, 3: k3})
        again = resume or replay
        return run_sweep(None if again else path, o, lines.append, resume=resume, replay=replay), lines


@pytest.mark.slow
def test_sweep_measures_every_candidate_in_interleaved_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sweep_dir, lines = _sweep(tmp_path, monkeypatch)
    assert sweep_dir is not None and sweep_dir.name.startswith("sweep-")
    assert any("estimated wall time" in line for line in lines)
    names = ["ngram-k1", "ngram-k2", "wide-k3"]
    arms = ["plain", "placebo", *names]
    assert json.loads((sweep_dir / "status.json").read_text())["complete"] is True
    proto = json.loads((sweep_dir / "protocol.json").read_text())
    order = proto["design"]["order"]
    # co-resident (declared): per cell and block the five arms in the balanced order
    assert proto["design"]["co_resident"] is True and proto["design"]["placebo_effective"] == "blocks"
    first = [a for a, w, lv, b in order if (lv, b) == ("c1", 0)]
    second = [a for a, w, lv, b in order if (lv, b) == ("c1", 1)]
    assert first == arms and second == arms[::-1] and len(order) == 2 * 3 * 5
    for name in names:  # each candidate: its own compare folder with its pair card and protocol
        card = json.loads((sweep_dir / name / "card.json").read_text())
        assert card["speculative_config"]["num_speculative_tokens"] == int(name[-1])
        mine = json.loads((sweep_dir / name / "protocol.json").read_text())["design"]["order"]
        assert {a for a, *_ in mine} == {"plain", "placebo", "speculative"} and len(mine) == 2 * 3 * 3
        assert (sweep_dir / name / "pair.toml").is_file()
        assert {r["role"] for r in map(json.loads, (sweep_dir / name / "requests.jsonl").read_text().splitlines())} == {
            "plain",
            "placebo",
            "speculative",
        }
    card = json.loads((sweep_dir / "sweep.json").read_text())
    schema = json.loads((Path("loadgen/records/sweep.schema.json")).read_text())
    jsonschema.validate(card, schema)
    assert card["schema"] == "loadgen.sweep/2" and card["primary_metric"] == "tpot_p50"
    assert set(card["times_s"]) == {"plain", "placebo", *names}
    assert card["design"]["blocks"] == 3 and card["design"]["ci_method"] == "blocks"
    assert card["noise_floor"]["measured"] is True and "A/A noise floor" in card["noise_floor"]["line"]
    assert len(card["cells"]) == 2
    for cell in card["cells"]:
        by = {e["candidate"]: e for e in cell["entries"]}
        # closed form: 6 decode tokens in 3 chunks (K=1) or 2 chunks (K=2, K=3 as 4+2): 2x and 3x plain
        assert by["ngram-k1"]["speedup"] == pytest.approx(2.0, rel=0.15)
        assert by["ngram-k2"]["speedup"] == pytest.approx(3.0, rel=0.15)
        assert by["wide-k3"]["speedup"] == pytest.approx(3.0, rel=0.15)
        assert by["ngram-k2"]["tokens_per_decode_chunk"] == pytest.approx(3.0)
        assert all(e["blocks"] == 3 and e["effect"] == "faster" for e in cell["entries"])
        assert cell["drift"] is None and cell["noise_floor"]["value"] == pytest.approx(1.0, rel=0.15)
    rec = card["recommendation"]
    assert rec["meets_criteria"] is True and not card["criteria_declared"]
    assert rec["static"] in ("ngram-k2", "wide-k3")
    w = rec["workloads"][0]
    assert all(lv["best"] in ("ngram-k2", "wide-k3") for lv in w["levels"])
    assert w["off_above_concurrency"] is None and "pays up to the highest level" in w["off_sentence"]
    assert "has no per-batch-size K schedule" in w["schedule"]["line"]  # the engine version is unknown here
    md = (sweep_dir / "sweep.md").read_text()
    assert "## Recommendation" in md and "upper bound" in md.lower() and "## How sure" in md
    e = card["cells"][0]["entries"][0]  # the CI as [low, high], never as a half-width
    assert f"| [{e['speedup_ci_low']:.3f}, {e['speedup_ci_high']:.3f}] |" in md and "±" not in md.split("## Cells")[1]
    assert (sweep_dir / "plots" / "sweep_ratio_w.png").is_file()
    assert (sweep_dir / "plots" / "sweep_acceptance_length.png").is_file() is False  # no /metrics: no acceptance


@pytest.mark.slow
def test_sweep_exits_3_when_no_candidate_meets_the_criteria(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CriteriaFailed):
        _sweep(tmp_path, monkeypatch, '[criteria]\nprimary = ["tpot_p50"]\nmin_speedup = 10.0\n')
    card = json.loads(next((tmp_path / "runs" / "scripted-sweep").glob("sweep-*/sweep.json")).read_text())
    assert card["criteria_declared"] and card["recommendation"]["static"] is None
    assert "do not speculate" in card["recommendation"]["lines"][-1]


def test_sweep_refuses_a_budget_it_cannot_meet(tmp_path: Path) -> None:
    o, path = _options(tmp_path, budget_min=0.01)
    with pytest.raises(BadInput, match="more than --budget-min 0.01"):
        run_sweep(path, o, lambda _: None)
    assert not (tmp_path / "runs").exists()  # refused before anything started


@pytest.mark.slow
def test_sweep_resume_finishes_the_slots_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sweep_dir, _ = _sweep(tmp_path, monkeypatch)
    assert sweep_dir is not None
    lines = (sweep_dir / "cells.jsonl").read_text().splitlines()
    kept, cut = lines[:-4], lines[-4:]  # the last four slots "did not finish"
    (sweep_dir / "cells.jsonl").write_text("".join(line + "\n" for line in kept))
    status = sweep_dir / "status.json"
    status.write_text(json.dumps(json.loads(status.read_text()) | {"complete": False}))
    again, out = _sweep(tmp_path, monkeypatch, resume=sweep_dir)
    assert again == sweep_dir
    assert any(line.startswith(f"resuming {sweep_dir}: 4 of 30 slots left") for line in out)
    assert len((sweep_dir / "cells.jsonl").read_text().splitlines()) == 30
    assert json.loads(status.read_text())["complete"] is True
    assert (sweep_dir / "requests.partial.jsonl").is_file()  # the cut slots' requests kept aside
    assert {json.loads(c)["role"] for c in cut} <= {"plain", "placebo", "ngram-k1", "ngram-k2", "wide-k3"}


@pytest.mark.slow
def test_sweep_protocol_measures_the_same_sweep_again_in_a_new_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = _sweep(tmp_path, monkeypatch)
    assert first is not None
    (tmp_path / "sweep.toml").write_text("this file changed since; the replay reads the sweep folder's copies")
    again, lines = _sweep(tmp_path, monkeypatch, replay=first / "protocol.json")
    assert again is not None and again != first and again.parent == first.parent
    assert any(line == f"replaying {first / 'protocol.json'}: 30 slots in the recorded order" for line in lines)
    old, new = (json.loads((d / "protocol.json").read_text()) for d in (first, again))
    for key in ("cells", "prompts_sha256", "workloads", "candidates"):
        assert new[key] == old[key], key
    assert new["design"]["order"] == old["design"]["order"]
    assert (again / "prompts.jsonl").read_bytes() == (first / "prompts.jsonl").read_bytes()
    assert (again / "sweep.toml").read_bytes() == (first / "sweep.toml").read_bytes()
    card = json.loads((again / "sweep.json").read_text())
    for cell in card["cells"]:  # the same closed-form speedups as the first sweep's
        by = {e["candidate"]: e["speedup"] for e in cell["entries"]}
        assert by["ngram-k1"] == pytest.approx(2.0, rel=0.15) and by["ngram-k2"] == pytest.approx(3.0, rel=0.15)


def test_sweep_estimate_reads_history_folders_and_names_the_candidates_that_fit(tmp_path: Path) -> None:
    """With docs/examples/h200 as history (server start about 90 s: the median of the ten launched servers, the
    attached plain servers left out) and the plain server attached, only the three candidates start a
    server: a 4-minute budget holds the plain arms and the first two."""
    o, path = _options(tmp_path, budget_min=4.0)
    o = replace(o, attach_plain="http://127.0.0.1:9", history_dirs=(Path("docs/examples/h200"),))
    lines: list[str] = []
    with pytest.raises(BadInput, match=r"more than --budget-min 4 \(it fits ngram-k1, ngram-k2 \(3\.5 min\)\)"):
        run_sweep(path, o, lines.append)
    estimate = next(line for line in lines if "estimated wall time" in line)
    # co-resident (no GPU visible): the plain server attached, each candidate started once; 30 slots of 0.5 s
    assert "30 slots; estimated wall time 5.2 min (3 server starts of 90 s" in estimate
    assert "10 earlier server starts and 184 earlier cells under" in estimate and "docs/examples/h200" in estimate
    assert not (tmp_path / "runs").exists()
