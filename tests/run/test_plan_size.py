"""The plan's size is counted from the pair alone before any prompt is generated: a plan over
``PLAN_REFUSE`` prompts is refused in one line (exit 2) naming the count and the level responsible, one over
``PLAN_SLOW`` is announced, and the count is exactly what planning then generates."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import BadInput
from loadgen.profile.pairfile import load_pair
from loadgen.run import plan
from loadgen.run.plan import check_plan_size, plan_cells, plan_size
from tests.run.test_plan_traffic import _pair


def _never(*_: Any) -> Any:
    raise AssertionError("nothing may be generated or loaded before the size check")


def test_a_huge_level_is_refused_in_one_line_before_anything_is_generated(monkeypatch: pytest.MonkeyPatch) -> None:
    pair = load_pair(
        "demo-cpu"
    )  # 4 planned blocks (sized), 2 workloads, rounds 1, min_requests 4, 1 warmup, cooldown on
    pair = replace(pair, load=replace(pair.load, concurrency=(1, 100000)))
    assert pair.planned_blocks == 4 and len(pair.workloads) == 2
    monkeypatch.setattr(plan, "generate", _never)
    monkeypatch.setattr(plan, "load_tokenizer", _never)
    # per workload: c1 1 + 4 + 0 a block; c100000 1 + 100000 + 4 * 99999 a block, its first block warming a full
    # round (100000 instead of 1)
    c1, big = 4 * 5, 4 * 499_997 + 99_999
    assert plan_size(pair) == (2 * (c1 + big), pair.load.levels()[1], 2 * big)
    with pytest.raises(BadInput) as err:
        plan_cells(pair, lambda _: None)
    message = str(err.value)
    assert err.value.exit_code == 2 and "\n" not in message
    assert message.startswith(
        f"{pair.path}: the plan needs 4,200,014 prompts (4 blocks x 2 workloads; "
        "4,199,974 of them at concurrency 100000 ([run].concurrency;"
    )
    assert "over the 500,000 loadgen plans; lower that level" in message


def test_a_large_plan_says_it_takes_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    pair = load_pair("demo-cpu")
    pair = replace(pair, load=replace(pair.load, concurrency=(2, 10000)))
    lines: list[str] = []
    # 4 blocks a workload; the first block of each level warms a full round (2 and 10000 instead of 1)
    assert check_plan_size(pair, lines.append) == 2 * (4 * ((1 + 4 + 4) + (1 + 10000 + 39996)) + 1 + 9999)
    assert lines == [
        "planning 420,048 prompts (4 blocks x 2 workloads; 419,974 of them at concurrency 10000 "
        "([run].concurrency; 1 rounds of measured requests plus 4 cooldown fillers per other slot)): "
        "this takes a while (at least 25 s)"
    ]
    small: list[str] = []
    assert check_plan_size(replace(pair, load=replace(pair.load, concurrency=(1, 2))), small.append) == 2 * (
        4 * (5 + 9) + 1
    )
    assert small == []


def test_the_count_is_what_planning_generates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _pair(tmp_path)  # a prompt file (shared measured sample) and a grounded workload
    monkeypatch.chdir(tmp_path)  # where _pair wrote its workloads (profiles/workloads)
    pair = load_pair(str(path))
    pair = replace(pair, load=replace(pair.load, concurrency=(1, 3), rates_rps=(2.0,)))
    asked: list[int] = []
    real = plan.generate

    def counting(workload: Any, n: int, tokenizer: Any) -> Any:
        asked.append(n)
        return real(workload, n, tokenizer)

    monkeypatch.setattr(plan, "generate", counting)
    plan_cells(pair, lambda _: None)
    assert sum(asked) == plan_size(pair)[0] > 0
