"""fleet/fleetflags.py on hand-built fleet card parts: which two nodes are compared (same known GPU type, both
done, a CI on both sides), the 5% gap rule with values on either side of it, the exact flag records and lines
for ratios, sweep speedups and recommendations, and the engine versions named when they differ."""

from __future__ import annotations

from loadgen.fleet.fleetflags import MIN_RELATIVE_GAP, ratio_flags, sweep_flags
from loadgen.records.fleet import (
    CompareCell,
    CompareEntry,
    CompareNode,
    ComparePair,
    SweepNode,
    SweepNodeEntry,
    SweepPair,
    SweepPairCell,
)
from loadgen.records.fleetparts import CandidateSpeedup, Flag, FlagSide, FleetRatio


def _entry(
    node: str, tpot: FleetRatio | None, gpu: str | None = "H200", status: str = "done", p99: float | None = None
) -> CompareEntry:
    ratios = {"tpot_p50": tpot, "ttft_p99": None if p99 is None else FleetRatio(p99, pairs=0)}
    return CompareEntry(node, status, gpu_type=gpu, ratios=ratios)


def _pair(entries: list[CompareEntry], engines: dict[str, str | None] | None = None) -> ComparePair:
    nodes = [
        CompareNode(e.node, f"p__{e.node}", e.status, gpu_type=e.gpu_type, engine=(engines or {}).get(e.node))
        for e in entries
    ]
    return ComparePair("p", nodes=nodes, cells=[CompareCell("w", "c4", 4, nodes=entries)])


def test_two_nodes_of_one_gpu_type_whose_cis_are_apart_are_one_flag() -> None:
    pair = _pair(
        [_entry("a", FleetRatio(0.70, 0.68, 0.72, 32)), _entry("b", FleetRatio(0.95, 0.92, 0.98, 32))],
        {"a": "0.24.0", "b": "0.23.1"},
    )
    [flag] = ratio_flags([pair], ["tpot_p50", "ttft_p99"])
    sides = [FlagSide("a", 0.70, 0.68, 0.72), FlagSide("b", 0.95, 0.92, 0.98)]
    assert flag == Flag(
        "ratio",
        "p",
        "H200",
        "tpot_p50",
        sides,
        "p on H200: w c4, TPOT p50 ratio (speculative / plain), the 95% CIs do not overlap: a 0.700 "
        "(95% CI 0.680-0.720) vs b 0.950 (95% CI 0.920-0.980); their engine versions differ "
        "(a: vLLM 0.24.0, b: vLLM 0.23.1)",
        workload="w",
        level="c4",
    )
    assert list(flag.to_json()) == ["kind", "pair", "gpu_type", "workload", "level", "metric", "nodes", "line"]
    assert flag.to_json()["nodes"][0] == {
        "node": "a",
        "value": 0.70,
        "ci_low": 0.68,
        "ci_high": 0.72,
        "candidate": None,
    }
    same = _pair(pair.cells[0].nodes, {"a": "0.24.0", "b": "0.24.0"})
    assert ratio_flags([same], ["tpot_p50"])[0].line.endswith("vs b 0.950 (95% CI 0.920-0.980)")


def test_what_is_not_compared() -> None:
    far = FleetRatio(2.0, 1.9, 2.1, 32)
    entries = [
        _entry("a", FleetRatio(0.70, 0.68, 0.72, 32), p99=1.1),
        _entry("b", None, p99=2.5),  # no TPOT ratio measured; TTFT p99 differs, but it has no CI
        _entry("c", far, gpu="A100"),  # another GPU type
        _entry("d", far, gpu=None),  # unknown GPU type
        _entry("e", far, status="failed"),  # its task did not finish
        _entry("f", FleetRatio(0.72, 0.715, 0.725, 32)),
    ]  # apart from a's CI, but 2.9% above it
    assert ratio_flags([_pair(entries)], ["tpot_p50", "ttft_p99", "e2e_p50"]) == []


def test_the_gap_must_exceed_five_percent_of_the_smaller_value() -> None:
    assert MIN_RELATIVE_GAP == 0.05
    base = _entry("a", FleetRatio(1.00, 0.99, 1.01, 32))
    assert ratio_flags([_pair([base, _entry("b", FleetRatio(1.04, 1.03, 1.05, 32))])], ["tpot_p50"]) == []
    [flag] = ratio_flags([_pair([base, _entry("b", FleetRatio(1.06, 1.05, 1.07, 32))])], ["tpot_p50"])
    assert [s.value for s in flag.nodes] == [1.00, 1.06]
    touching = _entry("b", FleetRatio(1.20, 1.01, 1.30, 32))  # far value, but the CIs touch: overlap
    assert ratio_flags([_pair([base, touching])], ["tpot_p50"]) == []


def _speedups(**by_candidate: tuple[float | None, float, float]) -> list[CandidateSpeedup]:
    return [CandidateSpeedup(c, v, lo, hi) for c, (v, lo, hi) in by_candidate.items()]


def _sweep(nodes: list[SweepNode], entries: dict[str, list[CandidateSpeedup]]) -> SweepPair:
    cell = SweepPairCell(
        "w",
        "c1",
        1,
        nodes=[
            SweepNodeEntry(n.node, n.status, gpu_type=n.gpu_type, entries=entries[n.node])
            for n in nodes
            if n.node in entries
        ],
    )
    return SweepPair("s", primary_metric="ttft_p50", nodes=nodes, cells=[cell])


def _node(name: str, rec: str | None, measured: bool = True, gpu: str = "H200") -> SweepNode:
    return SweepNode(name, f"s__{name}", "done", gpu_type=gpu, measured=measured, recommendation=rec)


def test_sweeps_flag_different_recommendations_and_speedups_apart() -> None:
    nodes = [_node("a", "ngram-k2"), _node("b", None), _node("c", "eagle", measured=False)]
    entries = {
        "a": _speedups(k2=(1.40, 1.30, 1.50), k4=(1.20, 1.10, 1.28), k8=(None, 1.0, 1.1)),
        "b": _speedups(k2=(1.05, 1.00, 1.10), k4=(1.25, 1.18, 1.32), k8=(2.0, 1.9, 2.1)),
    }
    rec, speed = sweep_flags([_sweep(nodes, entries)])
    assert rec == Flag(
        "recommendation",
        "s",
        "H200",
        "recommendation",
        [FlagSide("a", candidate="ngram-k2"), FlagSide("b")],
        "s on H200: different recommendations: a recommends ngram-k2 vs b recommends no speculation",
    )
    assert (speed.kind, speed.metric, speed.workload, speed.level) == ("speedup", "speedup:ttft_p50", "w", "c1")
    assert speed.nodes == [FlagSide("a", 1.40, 1.30, 1.50, "k2"), FlagSide("b", 1.05, 1.00, 1.10, "k2")]
    assert speed.line == (
        "s on H200: w c1, speedup of k2 (TTFT p50, plain / speculative), the 95% CIs do not "
        "overlap: a 1.400 (95% CI 1.300-1.500) vs b 1.050 (95% CI 1.000-1.100)"
    )


def test_sweeps_of_other_gpu_types_or_the_same_pick_are_not_flagged() -> None:
    nodes = [_node("a", "k2"), _node("b", "k2"), _node("c", "k4", gpu="A100")]
    entries = {
        "a": _speedups(k2=(1.4, 1.3, 1.5)),
        "b": _speedups(k4=(1.0, 0.9, 1.1)),
        "c": _speedups(k2=(1.0, 0.9, 1.1)),
    }
    assert sweep_flags([_sweep(nodes, entries)]) == []  # b has no k2 entry to compare with a's
