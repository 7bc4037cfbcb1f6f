"""fleet/fleetdata.py's builder without files: typed pair cards (the real H200 card of tests/fleet/test_fleetwrite.py
with chosen ratios and hardware) and sweep cards by task id. A node's facts come from its first card, its GPU type
from the card's hardware when Ray says none, a done task without its card is failed with the reason, cells of
the nodes meet by (workload, level), a ratio keeps its CI only when it has both ends, and a sweep cell's best
candidate brings its speedup."""

from __future__ import annotations

from typing import Any

from loadgen.fleet.fleetdata import RATIO_METRICS, build_fleet_card
from loadgen.records.card import PairCard
from loadgen.records.fleetparts import CandidateSpeedup, FleetRatio, NodeGpu, NodeHardware
from loadgen.records.fleettasks import TaskList
from loadgen.records.sweep import SweepCard
from tests.fleet.test_fleetwrite import _card, _sweep, _task


def _tasks(*tasks: dict[str, Any]) -> TaskList:
    return TaskList.from_json(
        {"schema": "loadgen.fleet-tasks/1", "name": "f", "tasks": list(tasks)}, source="tasks.json"
    )


def _pair_card(pair: str, node: str, **changes: Any) -> PairCard:
    return PairCard.from_json({**_card(pair, node), **changes}, source=f"{pair}/{node}/card.json")


def test_nodes_rows_and_the_compare_pair() -> None:
    tasks = _tasks(_task("d", "stg-c"), _task("d", "stg-a"), _task("d", "stg-b"), _task("s", "stg-a", kind="sweep"))
    b = _card("d", "stg-b")
    b["engine_version"] = {"plain": "0.24.0", "speculative": "0.23.1"}
    b["cells"][0]["ratios"]["ttft_p50"] = {"value": 2, "ci_low": 1.5, "ci_high": None, "pairs": 32}
    cards = {
        "d__stg-a": _pair_card("d", "stg-a"),
        "d__stg-b": PairCard.from_json(b, source="card.json"),
        "d__stg-c": None,
        "s__stg-a": _pair_card("s", "stg-a"),
    }
    sweep = SweepCard.from_json(_sweep("stg-a"), source="sweep.json")
    card = build_fleet_card(tasks, cards, {"s__stg-a": sweep}, {"d__stg-c": "its card.json did not read"})
    assert card.counts == {"tasks": 4, "done": 3, "failed": 1, "pending": 0}
    assert [(t.id, t.status, t.runner_status, t.reason) for t in card.tasks] == [
        ("d__stg-c", "failed", "done", "its card.json did not read"),
        ("d__stg-a", "done", "done", None),
        ("d__stg-b", "done", "done", None),
        ("s__stg-a", "done", "done", None),
    ]
    a, b_row, c = card.nodes
    assert (a.name, a.tasks, a.engine_versions) == ("stg-a", {"done": 2, "failed": 0, "pending": 0}, ["0.24.0"])
    assert a.hardware == NodeHardware(
        "Intel(R) Xeon(R) Platinum 8480+", 64, float(2 * 2**40), [NodeGpu("NVIDIA H200", 150754820096.0, index=0)]
    )
    assert (b_row.engine_versions, b_row.gpu_type, b_row.gpu_type_source) == (
        ["0.23.1", "0.24.0"],
        "H200",
        "Ray resource accelerator_type:<type>",
    )
    assert (c.name, c.hardware, c.gpu_type, c.tasks["failed"]) == ("stg-c", None, None, 1)  # no card, no label
    [pair] = card.pairs
    assert [(n.node, n.status, n.engine, n.verdict and n.verdict.passed) for n in pair.nodes] == [
        ("stg-a", "done", "0.24.0", True),
        ("stg-b", "done", "plain 0.24.0 / speculative 0.23.1", False),
        ("stg-c", "failed", None, None),
    ]
    assert [(cell.level, [e.node for e in cell.nodes]) for cell in pair.cells] == [
        ("c1", ["stg-a", "stg-b"]),
        ("c4", ["stg-a", "stg-b"]),
    ]
    entry = pair.cells[0].nodes[1]
    assert list(entry.ratios) == list(RATIO_METRICS) and entry.ratios["ttft_p95"] is None  # not on the card
    assert entry.ratios["tpot_p50"] == FleetRatio(0.81, 0.79, 0.83, 32)
    assert entry.ratios["ttft_p50"] == FleetRatio(2.0, None, None, 32)  # one CI end: no CI
    assert entry.ratios["ttft_p99"] == FleetRatio(2.5, None, None, 0)
    assert (entry.acceptance_rate, entry.mean_acceptance_length) == (0.81 / 2, 1.81)
    assert card.sweeps[0].nodes[0].engine == "0.24.0"
    [flag] = card.flags  # c4: stg-b's TPOT p50 CI lies above stg-a's
    assert flag.level == "c4"
    assert flag.line.endswith(
        "their engine versions differ (stg-a: vLLM 0.24.0, stg-b: vLLM plain 0.24.0 / speculative 0.23.1)"
    )


def test_a_gpu_type_from_the_cards_hardware_and_a_done_task_without_its_card() -> None:
    tasks = _tasks(_task("d", "stg-c"), _task("s", "stg-c", kind="sweep"))
    card = build_fleet_card(tasks, {"d__stg-c": _pair_card("d", "stg-c")}, {})
    [node] = card.nodes
    assert (node.gpu_type, node.gpu_type_source) == ("A100", "card hardware (first GPU)")
    assert [(t.gpu_type, t.status) for t in card.tasks] == [("A100", "done"), ("A100", "failed")]
    assert card.tasks[1].reason == (
        "finished (exit 0) but no sweep.json came back in runs/s__stg-c; see logs/s__stg-c.log"
    )
    [sweep] = card.sweeps
    assert sweep.cells == [] and sweep.primary_metric is None and sweep.nodes[0].measured is False


def test_the_sweep_pair_per_node_and_cell() -> None:
    tasks = _tasks(_task("s", "stg-b", kind="sweep"), _task("s", "stg-a", kind="sweep"))
    docs = {f"s__{n}": SweepCard.from_json(_sweep(n), source="sweep.json") for n in ("stg-a", "stg-b")}
    card = build_fleet_card(tasks, {}, docs)
    [pair] = card.sweeps
    assert (pair.primary_metric, pair.speedup_definition) == ("tpot_p50", "plain / speculative of the primary metric")
    assert [(n.node, n.recommendation, n.criteria_declared, n.meets_criteria) for n in pair.nodes] == [
        ("stg-a", "ngram-k2", False, True),
        ("stg-b", "ngram-k4", False, True),
    ]
    assert [(w.workload, w.static) for w in pair.nodes[0].workloads] == [("short-homogeneous-gpu", "ngram-k2")]
    [cell] = pair.cells
    a, b = cell.nodes
    assert (cell.workload, cell.level, cell.concurrency, a.node, a.best, a.speedup) == (
        "short-homogeneous-gpu",
        "c4",
        4,
        "stg-a",
        "ngram-k2",
        1.40,
    )
    assert (a.speedup_ci_low, a.speedup_ci_high, b.best, b.speedup) == (1.30, 1.50, "ngram-k4", 1.25)
    assert a.entries[1] == CandidateSpeedup("ngram-k4", 1.20, 1.10, 1.28, 0.4, 1.9)
    assert [f.kind for f in card.flags] == ["recommendation", "speedup"]
