"""One decision on every surface (docs/metrics.md "The decision"), black box: ``loadgen sweep`` through click's
CliRunner against scripted servers on loopback (real sockets), each arm attached to its own server. What is
checked is what a user reads: the exit code, the pair card (card.json's effects and verdict, card.md), the
sweep card (sweep.json, sweep.md's cells table, the recommendation and the plot's star data) and protocol.json.

Each server streams ``TOKENS`` tokens, the first after ``FIRST_S``, then one chunk per step; plain takes
``STEP_S`` (50 ms) per token, so an effect is a step of tens of milliseconds against a few milliseconds of
sleep jitter on a loaded machine:

- a candidate clear of the noise floor at every level passes on every surface, and the sweep exits 0 with
  criteria declared;
- a candidate streaming at plain's speed (inside the A/A noise floor) passes nowhere, and the sweep exits 3;
- a sized sweep spends its blocks on the candidate still undecided, not on the one decided at once;
- a 1.4x effect whose per-request timing spreads strongly from prompt to prompt (the same on both servers per
  prompt) is decided faster within a declared budget: paired blocks cancel the prompts' spread.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from loadgen.cli import main
from tests.support.fakerun import attach_arms
from tests.support.scripted_server import (
    DONE,
    PromptScript,
    Step,
    completion_chunk,
    models_body,
    scripted_server,
    usage_chunk,
)

#: Timed scripted runs: ratios a vLLM server's load beside them would move (make test runs them in a round of
#: their own, after the end-to-end tests).
pytestmark = pytest.mark.timed

GETS = {"/v1/models": (200, models_body("target"))}
TOKENS = 5
FIRST_S = 0.01
STEP_S = 0.05
CRITERIA = '[criteria]\nprimary = ["tpot_p50"]\nmin_speedup = 1.2\n'
WORKLOAD = f'name = "w"\nkind = "short-homogeneous"\nendpoint = "completions"\noutput_tokens = {TOKENS}\nseed = 1\n'
HEAD = """
name = "one-decision"
[target]
model = "org/target"
revision = "0123456789abcdef0123456789abcdef01234567"
[speculative]
method = "ngram"
prompt_lookup_min = 2
prompt_lookup_max = 4
num_speculative_tokens = 1
"""
OTHER = """
[[candidates]]
name = "wide"
method = "ngram"
prompt_lookup_min = 2
prompt_lookup_max = 5
num_speculative_tokens = 3
"""
TAIL = """
[engine]
command = ["/bin/true"]  # the servers are scripted; the pair check only finds the program
startup_timeout_s = 20
[sampling]
temperature = 0.0
ignore_eos = true
[run]
workloads = ["w"]
concurrency = {levels}
output_tokens = {tokens}
[stop]
min_requests = {requests}
rounds = 1
warmup_requests = {warmup}
cooldown = false
[design]
placebo = "blocks"
co_resident = true
{design}
"""
#: The candidates' names as the sweep expands them (records/candidates.py).
NGRAM, WIDE = "ngram-k1", "wide-k3"


def _steps(step_s: float, per_chunk: int = 1) -> list[Step]:
    """Token ids 1..TOKENS: the first alone after FIRST_S, then chunks of ``per_chunk`` tokens, one per
    ``step_s``; then the usage event and [DONE]."""
    ids, chunks, at = list(range(1, TOKENS + 1)), [[1]], 1
    while at < TOKENS:
        chunks.append(ids[at : at + per_chunk])
        at += per_chunk
    out: list[Step] = [
        (FIRST_S if i == 0 else step_s, completion_chunk(" x" * len(c), c, "length" if i == len(chunks) - 1 else None))
        for i, c in enumerate(chunks)
    ]
    return [*out, (0.0, usage_chunk(5, TOKENS)), (0.0, DONE)]


def _fixed(step_s: float, per_chunk: int = 1) -> dict[str, Any]:
    """Every prompt answered alike: one chunk of ``per_chunk`` tokens per ``step_s``."""
    return {"*": (200, _steps(step_s, per_chunk))}


def _by_prompt(script: PromptScript) -> dict[str, Any]:
    return {"*": script}


def _attach(monkeypatch: pytest.MonkeyPatch, urls: Mapping[str, str]) -> None:
    """Measure each arm on the scripted server of its own server key (plain and the placebo's blocks on plain's)
    instead of launching vLLM."""
    attach_arms(monkeypatch, lambda arm: urls[arm.server])


@contextmanager
def _servers(monkeypatch: pytest.MonkeyPatch, scripts: Mapping[str, Mapping[str, Any]]) -> Iterator[None]:
    """One scripted server per server key in ``scripts`` (plain and each candidate), every arm attached."""
    with ExitStack() as stack:
        urls = {name: stack.enter_context(scripted_server(s, None, GETS)) for name, s in scripts.items()}
        _attach(monkeypatch, urls)
        yield


def _sweep(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    scripts: Mapping[str, Mapping[str, Any]],
    *,
    candidates: str = "",
    levels: str = "[1, 2]",
    requests: int = 3,
    warmup: int = 1,
    design: str = "",
    criteria: str = CRITERIA,
    budget_min: float | None = None,
) -> tuple[Result, Path]:
    """``loadgen sweep`` of the sweep file (head, ``candidates``, the rest) in ``tmp_path``; returns the
    command's result and the sweep folder."""
    (tmp_path / "profiles" / "workloads").mkdir(parents=True)
    (tmp_path / "profiles" / "workloads" / "w.toml").write_text(WORKLOAD)
    tail = TAIL.format(levels=levels, tokens=TOKENS, requests=requests, warmup=warmup, design=design)
    (tmp_path / "sweep.toml").write_text(HEAD + candidates + tail + criteria)
    monkeypatch.chdir(tmp_path)
    args = ["sweep", str(tmp_path / "sweep.toml"), "--runs-dir", str(tmp_path / "runs")]
    args += ["--budget-min", f"{budget_min:g}"] if budget_min is not None else []
    with _servers(monkeypatch, scripts):
        result = CliRunner().invoke(main, args)
    found = sorted((tmp_path / "runs" / "one-decision").glob("sweep-*"))
    assert len(found) == 1, result.output
    return result, found[0]


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _md_effects(md: str) -> dict[tuple[str, str], str]:
    """sweep.md's cells table: (level, candidate) -> its effect column."""
    lines = md.split("## Cells", 1)[1].splitlines()
    header = next(line for line in lines if line.startswith("| workload |"))
    cols = [c.strip() for c in header.strip("|").split("|")]
    out = {}
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("|"):
            break
        row = dict(zip(cols, (c.strip() for c in line.strip("|").split("|")), strict=True))
        out[(row["level"], row["candidate"])] = row["effect"]
    return out


def _entries(card: Mapping[str, Any], name: str) -> dict[str, Mapping[str, Any]]:
    """sweep.json: level -> the entry of candidate ``name`` there."""
    return {c["level"]: e for c in card["cells"] for e in c["entries"] if e["candidate"] == name}


def _blocks_per_arm(sweep_dir: Path) -> Counter[tuple[str, str]]:
    """protocol.json's design.order: (arm, level) -> the blocks measured."""
    order = _json(sweep_dir / "protocol.json")["design"]["order"]
    return Counter((arm, level) for arm, _workload, level, _block in order)


@pytest.mark.slow
def test_a_candidate_clear_of_the_floor_everywhere_gets_one_word_on_every_surface(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ngram K=1 streams two tokens a chunk (a perfect draft: 2x plain); the other family (wide, K=3) streams at
    plain's speed. Every surface says ngram-k1 is faster and the one thing to deploy, and the gate passes."""
    scripts = {"plain": _fixed(STEP_S), NGRAM: _fixed(STEP_S, 2), WIDE: _fixed(STEP_S)}
    result, sweep_dir = _sweep(tmp_path, monkeypatch, scripts, candidates=OTHER)
    card = _json(sweep_dir / "sweep.json")
    levels = ["c1", "c2"]
    mine = _entries(card, NGRAM)
    # the cell entries: 2x plain, clear of the A/A noise floor, faster at every level
    assert sorted(mine) == levels
    for level, e in mine.items():
        # 2x as scripted, give or take the sleeps' jitter; a CPU shared with other tests adds a delay to every
        # step, which weighs more on plain's (one token a step) than on the candidate's (two): up, not down
        assert 1.6 < e["speedup"] < 2.8, level
        floor = next(c["noise_floor"] for c in card["cells"] if c["level"] == level)
        assert e["speedup_ci_low"] > 1 / floor["ci_low"], level  # clear of the floor's band (as a speedup)
        assert e["effect"] == "faster" and e["criteria_status"] == "pass", level
    # the pair card: each cell's primary ratio is faster, its verdict cell passes, the verdict is PASS
    pair = _json(sweep_dir / NGRAM / "card.json")
    assert [c["ratios"]["tpot_p50"]["effect"] for c in pair["cells"]] == ["faster", "faster"]
    verdict = pair["verdict"]
    assert verdict["declared"] is True and verdict["passed"] is True and verdict["status"] == "pass"
    assert verdict["summary"].startswith("PASS: 2 of 2 cells in range meet the criteria")
    assert [(c["concurrency"], c["status"]) for c in verdict["cells"]] == [(1, "pass"), (2, "pass")]
    assert "PASS: 2 of 2 cells" in (sweep_dir / NGRAM / "card.md").read_text()
    # sweep.md's effect column
    effects = _md_effects((sweep_dir / "sweep.md").read_text())
    assert [effects[(lv, NGRAM)] for lv in levels] == ["faster", "faster"]
    # the recommendation: best at every level, the static choice, one deployable configuration of that
    # candidate (its own method, not a schedule of another), the plot's star on it at every level
    rec = card["recommendation"]
    (w,) = rec["workloads"]
    assert [(lv["level"], lv["best"]) for lv in w["levels"]] == [("c1", NGRAM), ("c2", NGRAM)]
    assert rec["static"] == NGRAM and w["static"] == NGRAM and w["why_no_static"] is None
    assert rec["meets_criteria"] is True
    config = json.dumps(card_config(card, NGRAM))
    assert w["deployable"] == f"{NGRAM}: --speculative-config '{config}'"
    assert WIDE not in w["deployable"] and rec["deployable"] == f"w: {w['deployable']}"
    assert w["schedule"]["config"] is None and w["gives_up"] == []
    assert w["deployed"] == {"c1": NGRAM, "c2": NGRAM}
    assert rec["lines"][-1] == f"recommendation: {NGRAM} (pays at every declared level of every workload)"
    assert (sweep_dir / "plots" / "sweep_ratio_w.png").is_file()
    # the gate: loadgen's own exit code
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == f"sweep card: {sweep_dir / 'sweep.md'}"
    # `loadgen runs` lists the folder complete with the same recommendation, `loadgen diff` of the sweep against
    # a copy of itself finds no regression (exit 0) and reads each candidate's cells from its card
    listed = CliRunner().invoke(main, ["runs", "--runs-dir", str(tmp_path / "runs")])
    assert listed.exit_code == 0, listed.output
    (line,) = [x for x in listed.output.splitlines() if str(sweep_dir) in x]
    assert line.startswith("complete") and f"recommendation: {NGRAM} (pays at every declared level" in line
    copy = tmp_path / "again" / sweep_dir.name
    shutil.copytree(sweep_dir, copy)
    diffed = CliRunner().invoke(main, ["diff", str(sweep_dir), str(copy)])
    assert diffed.exit_code == 0, diffed.output
    assert NGRAM in diffed.output and "regress" not in diffed.output.replace("no regression", "")


def card_config(card: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """The speculative config of candidate ``name`` on the sweep card."""
    return next(c["speculative_config"] for c in card["candidates"] if c["name"] == name)


@pytest.mark.slow
def test_a_cell_inside_the_noise_floor_is_never_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The only candidate streams at plain's speed, under the weakest bar (min_speedup 1: only the A/A noise
    floor keeps a point value above 1 from passing): no surface passes it, and the sweep exits 3."""
    from loadgen.cli.ending import SWEEP_FAILED

    scripts = {"plain": _fixed(STEP_S), NGRAM: _fixed(STEP_S)}
    criteria = '[criteria]\nprimary = ["tpot_p50"]\nmin_speedup = 1.0\n'
    result, sweep_dir = _sweep(tmp_path, monkeypatch, scripts, criteria=criteria)
    card = _json(sweep_dir / "sweep.json")
    mine = _entries(card, NGRAM)
    assert sorted(mine) == ["c1", "c2"]
    for level, e in mine.items():
        floor = next(c["noise_floor"] for c in card["cells"] if c["level"] == level)
        band = (min(1.0, 1 / floor["ci_high"]), max(1.0, 1 / floor["ci_low"]))  # the floor as speedups, holding 1
        assert e["speedup_ci_low"] <= band[1] and e["speedup_ci_high"] >= band[0], level  # the CI overlaps it
        assert e["speedup"] == pytest.approx(1.0, abs=0.15), level
        assert e["effect"] in ("not distinguishable", "inconclusive"), level
        assert e["criteria_status"] != "pass", level
    # the pair card: no effect faster, no cell passes, the verdict is not PASS
    pair = _json(sweep_dir / NGRAM / "card.json")
    effects = [c["ratios"]["tpot_p50"]["effect"] for c in pair["cells"]]
    assert len(effects) == 2 and "faster" not in effects
    verdict = pair["verdict"]
    assert verdict["declared"] is True and verdict["passed"] is False and verdict["status"] != "pass"
    assert not verdict["summary"].startswith("PASS")
    statuses = [c["status"] for c in verdict["cells"]]
    assert len(statuses) == 2 and "pass" not in statuses
    assert [next(k["status"] for k in c["checks"] if k["kind"] == "primary") for c in verdict["cells"]] == [
        {"not distinguishable": "not distinguishable", "inconclusive": "inconclusive"}[x] for x in effects
    ]
    assert "PASS" not in (sweep_dir / NGRAM / "card.md").read_text()
    md_effects = _md_effects((sweep_dir / "sweep.md").read_text())
    assert {md_effects[(lv, NGRAM)] for lv in ("c1", "c2")} <= {"not distinguishable", "inconclusive"}
    # the recommendation: no level's best, no static choice, nothing to deploy, no star
    rec = card["recommendation"]
    (w,) = rec["workloads"]
    assert [lv["best"] for lv in w["levels"]] == [None, None]
    assert rec["static"] is None and w["static"] is None and rec["meets_criteria"] is False
    assert w["deployable"] is None and rec["deployable"] is None and w["deployed"] == {}
    assert rec["lines"][-1].startswith("recommendation: do not speculate")
    # the gate: exit 3, the card's path and the criteria line last
    assert result.exit_code == 3, result.output
    assert result.output.splitlines()[-2:] == [f"sweep card: {sweep_dir / 'sweep.md'}", SWEEP_FAILED]


class _Alternating:
    """A server whose speed alternates block by block around plain's: ``per_block`` requests in a row at
    ``STEP_S * factor``, the next ``per_block`` at ``STEP_S / factor``, and so on (requests counted as they
    come; no warm-up requests). Its block ratios swing to either side of 1, so its block CI always holds 1
    and stays wide: undecided at any number of blocks."""

    def __init__(self, per_block: int, factor: float) -> None:
        self.per_block, self.factor, self.seen, self.lock = per_block, factor, 0, threading.Lock()

    def __call__(self, prompt: str) -> tuple[int, list[Step]]:
        with self.lock:
            block, self.seen = self.seen // self.per_block, self.seen + 1
        return 200, _steps(STEP_S * (self.factor if block % 2 == 0 else 1 / self.factor))


@pytest.mark.slow
def test_a_sized_sweep_spends_its_blocks_on_the_undecided_candidate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sized to ±5% with up to 9 blocks a cell, under a generous budget, at two levels: ngram-k1 (2x plain) is
    decided faster after its 3 initial blocks and gets no more; wide-k3 (alternating 1.25x slower and faster than
    plain, block by block) stays inconclusive and gets every block up to max_blocks, at each level before the
    next level's first block (co-resident servers grow cell by cell: a run cut short keeps decided cells)."""
    scripts = {"plain": _fixed(STEP_S), NGRAM: _fixed(STEP_S, 2), WIDE: _by_prompt(_Alternating(3, 1.25))}
    criteria = '[criteria]\nprimary = ["tpot_p50"]\nmin_speedup = 1.0\nci_half_width = 0.05\n'
    design = "blocks = 3\nmax_blocks = 9\nmin_block_requests = 3"
    result, sweep_dir = _sweep(
        tmp_path,
        monkeypatch,
        scripts,
        candidates=OTHER,
        levels="[1, 2]",
        warmup=0,
        design=design,
        criteria=criteria,
        budget_min=30,
    )
    assert result.exit_code == 0, result.output  # ngram-k1 pays at both levels: the gate passes
    blocks = _blocks_per_arm(sweep_dir)
    card = _json(sweep_dir / "sweep.json")
    for level in ("c1", "c2"):
        assert blocks[(WIDE, level)] == 9 and blocks[("plain", level)] == 9 and blocks[("placebo", level)] == 9
        assert blocks[(NGRAM, level)] <= 4
        assert blocks[(WIDE, level)] >= 2 * blocks[(NGRAM, level)]
        fast, slow = _entries(card, NGRAM)[level], _entries(card, WIDE)[level]
        assert fast["effect"] == "faster" and fast["blocks"] == blocks[(NGRAM, level)]
        assert slow["effect"] == "inconclusive" and slow["blocks"] == 9 and slow["half_width"] > 0.05
        assert slow["speedup_ci_low"] < 1 < slow["speedup_ci_high"]
        assert any(
            s.startswith(f"w {level} {WIDE} (±") and "after 9 blocks" in s for s in card["design"]["stopped_short"]
        )
    measured = [json.loads(x)["level"] for x in (sweep_dir / "cells.jsonl").read_text().splitlines()]  # in order
    assert measured.index("c2") == measured.count("c1") == sum(n for (_, lv), n in blocks.items() if lv == "c1")
    ratios = _entries(card, WIDE)["c1"]["ratio"]["block_ratios"]  # the script did what it says
    assert len(ratios) == 9 and all(r > 1 for r in ratios[0::2]) and all(r < 1 for r in ratios[1::2]), ratios
    status = _json(sweep_dir / "status.json")
    assert "max_blocks" in status["sizing_end"] and "w c1" in status["sizing_end"] and "w c2" in status["sizing_end"]
    # the slot counter re-planned its total as sizing added blocks (24 planned: 3 blocks x 4 arms x 2 levels), and
    # ended exact
    progress = _json(sweep_dir / "progress.json")
    slots = sum(blocks.values())
    assert slots > 24 and (progress["slots_done"], progress["slots_planned"]) == (slots, slots)
    assert (progress["sizing"], progress["current"], progress["left_s"]) == (False, None, 0.0)
    assert not any(NGRAM in s for s in card["design"]["stopped_short"])


def _base_step(prompt: str) -> float:
    """Plain's seconds per token for ``prompt``: 30-120 ms, fixed per prompt (a hash of its text)."""
    return (0.03, 0.045, 0.06, 0.08, 0.1, 0.12)[hashlib.sha256(prompt.encode()).digest()[0] % 6]


class _ColdShapes:
    """A server that runs a batch shape it has not run before slowly, as a fresh vLLM server does (compiled
    kernels and allocator pools warm per shape): the request that arrives with more requests in flight than
    ever before runs ``cold`` times slower. Each request's seconds per token: plain's per-prompt speed /
    ``speedup`` x a seeded noise of ±``noise`` for (server, prompt). Requests in flight are counted from their
    scripted durations. A one-request warm-up never reaches the level's shape: its first measured round would
    carry the cold request; the full-round warm-up takes it."""

    def __init__(self, name: str, speedup: float, cold: float = 3.0, noise: float = 0.15) -> None:
        self.name, self.speedup, self.cold, self.noise = name, speedup, cold, noise
        self.lock, self.ends, self.widest = threading.Lock(), list[float](), 0

    def __call__(self, prompt: str) -> tuple[int, list[Step]]:
        seed = hashlib.sha256(f"{self.name}/{prompt}".encode()).digest()
        step = _base_step(prompt) / self.speedup * (1 + self.noise * (seed[1] / 127.5 - 1))
        with self.lock:
            now = time.monotonic()
            self.ends = [t for t in self.ends if t > now]
            flying = len(self.ends) + 1
            if flying > self.widest:
                self.widest = flying
                step *= self.cold
            self.ends.append(now + FIRST_S + (TOKENS - 1) * step)
        return 200, _steps(step)


@pytest.mark.slow
def test_a_1_4x_effect_with_a_high_per_prompt_spread_is_decided_within_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each prompt has its own speed (30-120 ms a token: a 4x spread), the same on both servers, with ±15% noise
    of each server's own on every request, and each server runs the request that first reaches a new batch shape
    3x slower (the slow start the H200 showed at each new level). The candidate is 1.4x faster. Sized to
    ±5% within 6 blocks and a 10-minute budget, the cells are decided faster: the full-round warm-up at each
    level takes the cold round, and the paired blocks cancel the prompts' spread."""
    scripts = {"plain": _by_prompt(_ColdShapes("plain", 1.0)), NGRAM: _by_prompt(_ColdShapes(NGRAM, 1.4))}
    criteria = '[criteria]\nprimary = ["tpot_p50"]\nmin_speedup = 1.1\nci_half_width = 0.05\n'
    design = "blocks = 3\nmax_blocks = 6\nmin_block_requests = 5"
    result, sweep_dir = _sweep(
        tmp_path, monkeypatch, scripts, requests=5, design=design, criteria=criteria, budget_min=10
    )
    # the spread is there: plain's per-request TPOT varies by 2.5x or more within every cell
    records = [json.loads(line) for line in (sweep_dir / "requests.jsonl").read_text().splitlines()]
    for level in ("c1", "c2"):
        tpots = [_tpot(r) for r in records if r["role"] == "plain" and r["level"] == level and r["phase"] == "measured"]
        assert max(tpots) / min(tpots) > 2.5, level
    # the full-round warm-up: at c=2, 2 requests on each arm before its first block, where the cold request falls
    warm = [r for r in records if r["phase"] == "warmup" and r["level"] == "c2" and r["repetition"] == 0]
    assert len(warm) == 2 * 3  # a full round at c=2 on each of plain, the placebo and the candidate
    card = _json(sweep_dir / "sweep.json")
    for level, e in _entries(card, NGRAM).items():
        assert e["effect"] == "faster", (level, e["speedup_ci_low"], e["speedup_ci_high"])
        # 1.4 with ±15% noise a request; a CPU shared with other tests adds a delay to every step, more of them
        # on plain's side: up, not down
        assert 1.2 < e["speedup"] < 1.8 and e["blocks"] <= 6, level
    assert _json(sweep_dir / "status.json")["sizing_end"] == "every cell is decided"
    assert card["recommendation"]["static"] == NGRAM
    assert result.exit_code == 0, result.output


def _tpot(record: Mapping[str, Any]) -> float:
    """A request's seconds per output token after the first (measure/metrics.py)."""
    arrivals = record["chunk_arrivals_s"]
    return (arrivals[-1] - arrivals[0]) / (sum(record["chunk_tokens"]) - 1)
