"""The block state (records/blockstate.py) against the committed runs under docs/ that carry it (the 7B sweep on an
H200): every ``cells.jsonl`` line's ``state`` reads as a :class:`BlockState`, writes back the same bytes, and holds
what measure/blockstate.py put there (the decode batch concurrency x (1 + K), ``eager`` above the capture
ceiling, the engine's step time and queue from the line's own histograms and gauges); a part built in code writes
only what it holds unless ``in_full``; a wrong type is one BadInput line naming the block and the field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import BadInput
from loadgen.measure.blockstate import pair_flags
from loadgen.records.blockstate import BlockState, EngineState, GpuState, Graphs, HostState
from loadgen.records.cell import CellEntry

DOCS = Path(__file__).resolve().parents[2] / "docs"
SWEEP = DOCS / "examples" / "h200" / "h200-7b-sweep"
GROUNDED = DOCS / "examples" / "h100" / "h200-7b-grounded-decide"
RUNS = [
    SWEEP / "distilled-k2" / "cells.jsonl",
    SWEEP / "smollm2-k4" / "cells.jsonl",
    SWEEP / "cells.jsonl",
    GROUNDED / "ngram-k4" / "cells.jsonl",
    GROUNDED / "cells.jsonl",
]
#: K of each speculative role (protocol.json num_speculative_tokens; sweep.json candidates[].k).
K = {"distilled-k2": 2, "smollm2-k4": 4, "ngram-k4": 4}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _k(path: Path, role: str) -> int:
    if role in ("plain", "placebo"):
        return 0
    if role == "speculative":
        protocol = json.loads((path.parent / "protocol.json").read_text())
        return int(protocol["speculative_config"]["num_speculative_tokens"])
    return K[role]


def test_the_committed_runs_carry_a_state_on_every_line() -> None:
    found = [(p.parent.name, len(lines), sum("state" in x for x in lines)) for p in RUNS if (lines := _lines(p))]
    assert found == [
        ("distilled-k2", 90, 90),
        ("smollm2-k4", 90, 90),
        ("h200-7b-sweep", 120, 120),
        ("ngram-k4", 36, 36),
        ("h200-7b-grounded-decide", 36, 36),
    ]
    assert sorted(p for p in DOCS.rglob("cells.jsonl") if '"state"' in p.read_text()) == sorted(RUNS)


@pytest.mark.parametrize("path", RUNS, ids=[str(p.relative_to(DOCS)) for p in RUNS])
def test_each_state_reads_writes_back_and_holds_the_batch_the_ceiling_and_the_engine(path: Path) -> None:
    for n, line in enumerate(_lines(path), 1):
        state = BlockState.from_json(line["state"], source=f"cells.jsonl line {n}")
        assert json.dumps(state.to_json()) == json.dumps(line["state"])  # same keys, order and values
        assert state == CellEntry.from_json(line, source=f"cells.jsonl line {n}").state
        assert state.graphs is not None and state.engine is not None and state.host is not None
        # measure/blockstate.py: batch tokens = concurrency x (1 + K); eager when above a known ceiling
        assert state.graphs.batch_tokens == line["concurrency"] * (1 + _k(path, line["role"]))
        graphs = state.graphs
        assert graphs.eager == (graphs.ceiling is not None and graphs.batch_tokens > graphs.ceiling)
        assert (state.graphs.ceiling is None) == (line["role"] in ("plain", "placebo"))
        icl = line["server_histograms"].get("icl_s") or {}  # the engine's step time: the histogram's sum / count
        if path.is_relative_to(SWEEP):  # written before the step time was read from sum / count: none then
            assert state.engine.step_time_s is None
        else:
            assert state.engine.step_time_s == pytest.approx(icl["sum"] / icl["count"], rel=1e-12)
        assert state.engine.waiting_max == line["gauges"]["vllm:num_requests_waiting"]["max"]
        assert [g.index for g in state.gpu] == [0] and "gpu_idle" not in state.gpu[0].throttle_reasons
        assert state.host.cpu_steal_share is not None and 0.0 <= state.host.cpu_steal_share <= 1.0


def test_the_largest_speculative_batch_sits_on_the_ceiling_and_stays_graphed() -> None:
    states = [(x, BlockState.from_json(x["state"], source="cells.jsonl")) for x in _lines(RUNS[1])]
    top = max(s.graphs.batch_tokens for _, s in states if s.graphs is not None)
    assert top == 128 * 5 == 640  # c128 with K=4
    assert all(s.graphs is not None and not s.graphs.eager for _, s in states)
    assert pair_flags(states[0][1], states[0][1], ("a", "b")) == []


def test_a_part_built_in_code_writes_what_it_holds_and_in_full_writes_every_field() -> None:
    graphs = Graphs(batch_tokens=20, ceiling=16, eager=True)
    assert graphs.to_json() == {"batch_tokens": 20, "ceiling": 16, "eager": True}
    assert Graphs().to_json() == {} and Graphs().in_full().to_json() == {
        "batch_tokens": 0,
        "ceiling": None,
        "eager": False,
    }
    assert HostState(loadavg_1m=0.5).to_json() == {"loadavg_1m": 0.5}
    assert list(EngineState().in_full().to_json()) == [
        "prefix_cache_hit_share",
        "preemptions",
        "step_time_s",
        "waiting_max",
    ]
    gpu = GpuState(index=1, throttle_reasons=("hw_slowdown",))
    assert gpu.to_json() == {"index": 1, "throttle_reasons": ["hw_slowdown"]}
    state = BlockState(gpu=(gpu,), graphs=Graphs(batch_tokens=8))
    assert state.to_json() == {
        "gpu": [{"index": 1, "throttle_reasons": ["hw_slowdown"]}],
        "graphs": {"batch_tokens": 8},
    }
    assert BlockState.from_json(state.to_json(), source="x") == state


def test_a_line_of_older_code_without_a_part_reads_with_the_defaults() -> None:
    state = BlockState.from_json({"gpu": []}, source="cells.jsonl line 1")
    assert state == BlockState() and (state.host, state.engine, state.graphs) == (None, None, None)
    assert state.to_json() == {"gpu": []}  # the key read stays, though it holds the default
    assert BlockState.from_json({}, source="x").to_json() == {}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s["gpu"][0].update(index="0"), r"gpu\[0\].index: expected an integer, got '0'"),
        (
            lambda s: s["gpu"][0].update(throttle_reasons="none"),
            r"gpu\[0\].throttle_reasons: expected a list, got 'none'",
        ),
        (
            lambda s: s["gpu"][0].update(throttle_reasons=[1]),
            r"gpu\[0\].throttle_reasons\[0\]: expected a string, got 1",
        ),
        (lambda s: s.update(gpu={}), r"gpu: expected a list, got \{\}"),
        (lambda s: s["host"].update(loadavg_1m="high"), r"host.loadavg_1m: expected a number, got 'high'"),
        (lambda s: s.update(engine=[]), r"engine: expected an object, got \[\]"),
        (lambda s: s["graphs"].update(batch_tokens=1.5), r"graphs.batch_tokens: expected an integer, got 1.5"),
    ],
)
def test_a_state_that_does_not_read_is_one_line_naming_the_line_and_the_field(edit: Any, message: str) -> None:
    line = _lines(RUNS[0])[3]
    line["state"] = copy.deepcopy(line["state"])
    edit(line["state"])
    with pytest.raises(BadInput, match="^cells.jsonl line 4: state." + message) as caught:
        CellEntry.from_json(line, source="cells.jsonl line 4")
    assert "\n" not in str(caught.value)
