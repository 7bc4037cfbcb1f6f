"""The sweep's time estimate (loadgen/run/sweepplan.py): the history read from run folders (attached
servers start nothing; timings per kind of server and concurrency), the closed-form cell and phase
times, the candidates that fit a budget, and the cell model against the recorded cells of
docs/examples/h200/ (one H200, vLLM 0.24.0)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level
from loadgen.profile.pairfile import load_pair
from loadgen.profile.workload import Prompt
from loadgen.run.arms import build_arms
from loadgen.run.design import balanced_order
from loadgen.run.flow import Measurement
from loadgen.run.sweepplan import (
    DEFAULT_START_S,
    DEFAULT_TPOT_S,
    FINISH_S,
    PHASE_OVERHEAD_S,
    SLOT_OVERHEAD_S,
    History,
    Timing,
    cell_s,
    estimate_s,
    fitting,
    history,
)
from tests.support.cards import effective, full_card, launch
from tests.support.scripted_engine import PAIR, WORKLOAD

H200 = Path("docs/examples/h200")


def _prompts(n: int, output_tokens: int) -> tuple[Prompt, ...]:
    return tuple(Prompt(f"p{i}", "w", "completions", "x", None, output_tokens) for i in range(n))


def _cell(c: int, warmup: int, measured: int, cooldown: int, output_tokens: int) -> CellSpec:
    return CellSpec(
        "w",
        "completions",
        Level(c),
        0,
        _prompts(warmup, output_tokens),
        _prompts(measured, output_tokens),
        _prompts(cooldown, output_tokens),
    )


RANDOM_1B = [H200 / "h200-1b-draft", H200 / "h200-1b-selfdraft", H200 / "h200-1b-ngram"]
SWEEP = H200 / "h200-smollm2-sweep"


def test_history_of_the_h200_example_skips_the_attached_plain_server() -> None:
    hist = history(RANDOM_1B)
    assert hist.start_s == pytest.approx(88.404, abs=1e-3)  # median of 88.4, 74.1, 91.0 s; attached ~0.05 s left out
    assert len(hist.cells) == 48
    kinds = [t.kind for t in hist.cells]
    assert (kinds.count("plain"), kinds.count("draft_model"), kinds.count("ngram")) == (24, 16, 8)
    assert "3 earlier server starts and 48 earlier cells" in hist.source
    ttft, tpot = hist.timing("plain", 1)  # the six plain c=1 cells: TTFT p50 12-17 ms, TPOT p50 1.61-2.51 ms
    assert ttft == pytest.approx((13.5e-3 + 15.1e-3) / 2, rel=1e-2)
    assert tpot == pytest.approx((1.6904e-3 + 1.9893e-3) / 2, rel=1e-3)
    assert hist.timing("ngram", 64)[1] == pytest.approx((6.1109e-3 + 5.1969e-3) / 2, rel=1e-3)
    # a method the history lacks falls back on every speculative cell; c=32 is as near to 16 as to 64
    spec32 = sorted(t.tpot_s for t in hist.cells if t.kind != "plain" and t.concurrency in (16, 64))
    assert hist.timing("eagle3", 32)[1] == pytest.approx(statistics.median(spec32))


def test_history_of_the_h200_sweep_reads_k_per_candidate() -> None:
    """The SmolLM2 sweep (docs/examples/h200/h200-smollm2-sweep): three speculative servers launched (the
    plain one attached to both plain phases), each candidate's card with its K, and a draft_model cell's
    TPOT the median over the three workloads of that K's c=1 cells."""
    hist = history([SWEEP])
    starts = sorted(
        json.loads((SWEEP / c / "servers" / "speculative-effective.json").read_text())["ready_s"]
        for c in ("demo-draft-k1", "demo-draft-k2", "ngram-k4")
    )
    assert hist.start_s == pytest.approx(starts[1]) and 70 < starts[0] < starts[2] < 110
    kinds = [t.kind for t in hist.cells]  # plain-before, plain-after and the plain copy in each candidate's card
    assert (len(kinds), kinds.count("plain"), kinds.count("draft_model"), kinds.count("ngram")) == (96, 60, 24, 12)
    for k in (1, 2):
        card = json.loads((SWEEP / f"demo-draft-k{k}" / "card.json").read_text())
        c1 = [c["speculative"]["tpot_s"]["p50"] for c in card["cells"] if c["concurrency"] == 1]
        assert len(c1) == 3 and hist.timing("draft_model", 1, k)[1] == pytest.approx(statistics.median(c1))
    assert hist.timing("draft_model", 1, 2)[1] > hist.timing("draft_model", 1, 1)[1]  # a second draft pass costs


def _card(run: Path, k: int, tpot_s: float) -> None:
    card = {
        "speculative_config": {"method": "ngram", "num_speculative_tokens": k},
        "cells": [
            {
                "concurrency": 2,
                "plain": {"ttft_s": {"p50": 0.1}, "tpot_s": {"p50": 0.01}},
                "speculative": {"ttft_s": {"p50": 0.2}, "tpot_s": {"p50": tpot_s}},
            }
        ],
    }
    run.mkdir(parents=True, exist_ok=True)
    (run / "card.json").write_text(json.dumps(full_card(card)))


def test_a_cell_phase_and_sweep_in_closed_form(tmp_path: Path) -> None:
    servers = tmp_path / "runs" / "p" / "t1" / "servers"
    servers.mkdir(parents=True)
    (servers / "speculative-effective.json").write_text(json.dumps(effective(ready_s=50.0)))
    (servers / "speculative-launch.json").write_text(json.dumps(launch(attached=False)))
    (servers / "plain-effective.json").write_text(json.dumps(effective(ready_s=0.1)))
    (servers / "plain-launch.json").write_text(json.dumps(launch(attached=True)))
    _card(servers.parent, 2, 0.02)
    _card(tmp_path / "runs" / "p" / "t2", 4, 0.04)
    hist = history([tmp_path / "runs"])
    assert hist.start_s == 50.0
    assert hist.cells == (
        Timing("plain", 2, 0.1, 0.01),
        Timing("ngram", 2, 0.2, 0.02, 2),
        Timing("plain", 2, 0.1, 0.01),
        Timing("ngram", 2, 0.2, 0.04, 4),
    )
    cell = _cell(2, warmup=3, measured=8, cooldown=4, output_tokens=11)
    # rounds: warmup ceil(3/2) = 2, measured 8/2 = 4, one cooldown round = 7; a request 0.1 + 10 x 0.01 s
    assert cell_s(cell, "plain", hist) == pytest.approx(7 * 0.2)
    assert cell_s(cell, "ngram", hist, 2) == pytest.approx(7 * 0.4)
    assert cell_s(cell, "ngram", hist, 4) == pytest.approx(7 * 0.6)
    assert cell_s(cell, "ngram", hist, 3) == pytest.approx(7 * 0.5)  # no K = 3: the method's median TPOT
    assert cell_s(cell, "draft_model", hist, 2) == pytest.approx(7 * 0.5)  # no such method: any speculative
    no_cooldown = _cell(2, warmup=0, measured=8, cooldown=0, output_tokens=11)
    assert cell_s(no_cooldown, "plain", hist) == pytest.approx(4 * 0.2)
    # plain attached, a placebo as blocks on it, one launched ngram K=2 candidate, co-resident, 2 blocks
    m = _measurement(tmp_path, [cell, _block(cell, 1)], {"ngram-k2": 2}, attach_plain=True, co=True)
    slots = 2 * (1.4 + 1.4 + 2.8)  # two blocks of plain, placebo (on plain) and the candidate
    expected = (50.0 + PHASE_OVERHEAD_S) + slots + 6 * SLOT_OVERHEAD_S + 2 * FINISH_S
    assert estimate_s(m, hist) == pytest.approx(expected)
    # one server at a time: the candidate's server starts once per phase (blocks 0 and 1 are adjacent: once)
    seq = _measurement(tmp_path, [cell, _block(cell, 1)], {"ngram-k2": 2}, attach_plain=True, co=False)
    assert estimate_s(seq, hist) == pytest.approx(expected)


def _block(cell: CellSpec, b: int) -> CellSpec:
    from dataclasses import replace

    return replace(cell, repetition=b)


def _measurement(
    tmp_path: Path, cells: list[CellSpec], ks: dict[str, int], attach_plain: bool, co: bool
) -> Measurement:
    (tmp_path / "w.toml").write_text(WORKLOAD)
    pairs = {}
    for name, k in ks.items():
        path = tmp_path / f"{name}.toml"
        path.write_text(PAIR.format(name=name, k=k, python="python", repo=".") + '[design]\nplacebo = "blocks"\n')
        pairs[name] = load_pair(str(path), workloads_dir=tmp_path)
    first = next(iter(pairs.values()))
    arms = build_arms(first, pairs, {"plain": "http://127.0.0.1:9"} if attach_plain else {})
    return Measurement(arms, co, "test", cells, balanced_order(cells, [a.name for a in arms], co))


def test_no_history_keeps_the_defaults(tmp_path: Path) -> None:
    hist = history([tmp_path])
    assert hist.start_s == DEFAULT_START_S and hist.cells == () and "no earlier runs under" in hist.source
    assert hist.timing("ngram", 4) == (DEFAULT_TPOT_S, DEFAULT_TPOT_S)
    one = _cell(1, warmup=1, measured=8, cooldown=0, output_tokens=32)
    assert cell_s(one, "plain", hist) == pytest.approx(9 * 32 * DEFAULT_TPOT_S)


def test_fitting_names_the_candidates_a_budget_holds(tmp_path: Path) -> None:
    hist = History(100.0, (Timing("plain", 1, 0.0, 0.01),), "test")
    cell = _cell(1, warmup=0, measured=10, cooldown=0, output_tokens=101)  # 10 x 1 s per slot
    m = _measurement(tmp_path, [cell], {"a": 1, "b": 2}, attach_plain=True, co=True)
    slot = 10.0 + SLOT_OVERHEAD_S
    plain = 2 * slot + FINISH_S  # plain and its placebo blocks, no start (attached)
    candidate = 100.0 + PHASE_OVERHEAD_S + slot + FINISH_S
    assert fitting(m, hist, plain + candidate + 1) == (["a"], pytest.approx(plain + candidate))
    assert fitting(m, hist, plain + 2 * candidate) == (["a", "b"], pytest.approx(plain + 2 * candidate))
    assert fitting(m, hist, plain + 1) == ([], pytest.approx(plain))
    assert fitting(m, hist, plain - 1) is None


def test_the_cell_model_matches_the_recorded_h200_cells() -> None:
    """Each recorded cell's duration against the model fed with that cell's own TTFT and TPOT p50: the
    rounds (4 warmup, 32 or 128 measured, one cooldown round above c=1) and the request time."""
    ratios = []
    for pair in ("h200-1b-draft", "h200-1b-selfdraft", "h200-1b-ngram"):
        card = json.loads((H200 / pair / "card.json").read_text())
        lines = [json.loads(x) for x in (H200 / pair / "cells.jsonl").read_text().splitlines()]
        for line in lines:
            got = next(
                c for c in card["cells"] if (c["workload"], c["concurrency"]) == (line["workload"], line["concurrency"])
            )[line["role"]]
            c, out = line["concurrency"], 64 if line["workload"].startswith("short") else 256
            hist = History(0.0, (Timing("k", c, got["ttft_s"]["p50"], got["tpot_s"]["p50"]),), "")
            cell = _cell(c, 4, len(line["measured_prompt_ids"]), 4 * (c - 1), out)
            ratios.append(line["duration_s"] / cell_s(cell, "k", hist))
    assert len(ratios) == 48
    assert min(ratios) > 0.9 and max(ratios) < 1.4
    assert statistics.median(ratios) == pytest.approx(1.0, abs=0.06)
