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
    pair = load_pair("demo-cpu")  # 3 blocks, 2 workloads, rounds 1, min_requests 4, 1 warmup, cooldown on
    pair = replace(pair, load=replace(pair.load, concurrency=(1, 100000)))
    assert pair.planned_blocks == 3 and len(pair.workloads) == 2
    monkeypatch.setattr(plan, "generate", _never)
    monkeypatch.setattr(plan, "load_tokenizer", _never)
    # per workload and block: c1 1 + 4 + 0, c100000 1 + 100000 + 4 * 99999
    assert plan_size(pair) == (6 * (5 + 499_997), pair.load.levels()[1], 6 * 499_997)
    with pytest.raises(BadInput) as err:
        plan_cells(pair, lambda _: None)
    message = str(err.value)
    assert err.value.exit_code == 2 and "\n" not in message
    assert message.startswith(
        f"{pair.path}: the plan needs 3,000,012 prompts (3 blocks x 2 workloads; "
        "2,999,982 of them at concurrency 100000 ([run].concurrency;"
    )
    assert "over the 500,000 loadgen plans; lower that level" in message


def test_a_large_plan_says_it_takes_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    pair = load_pair("demo-cpu")
    pair = replace(pair, load=replace(pair.load, concurrency=(2, 10000)))
    lines: list[str] = []
    assert check_plan_size(pair, lines.append) == 6 * ((1 + 4 + 4) + (1 + 10000 + 39996))
    assert lines == [
        "planning 300,036 prompts (3 blocks x 2 workloads; 299,982 of them at concurrency 10000 "
        "([run].concurrency; 1 rounds of measured requests plus 4 cooldown fillers per other slot)): "
        "this takes a while (at least 18 s)"
    ]
    small: list[str] = []
    assert check_plan_size(replace(pair, load=replace(pair.load, concurrency=(1, 2))), small.append) == 6 * (5 + 9)
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
