"""fleet/fleetmd.py on a hand-built fleet card: the failed task's row, a compare pair's verdicts and ratio tables
(a CI shown only where one exists, "(partial)" for a cut-short cell, the en dash for a node without the cell),
a sweep's recommendations and best candidates, the nodes table (generic Ray resources left out) and the terminal
summary with its cap on flags."""

from __future__ import annotations

from loadgen.fleet.fleetmd import SUMMARY_FLAGS, fleet_summary_lines, render_fleet_markdown
from loadgen.records.fleet import (
    CompareCell,
    CompareEntry,
    CompareNode,
    ComparePair,
    FleetCard,
    NodeRow,
    SweepNode,
    SweepNodeEntry,
    SweepPair,
    SweepPairCell,
    TaskRow,
)
from loadgen.records.fleetparts import CandidateSpeedup, Flag, FleetRatio, NodeGpu, NodeHardware, NodeVerdict

GiB = 2**30


def _card(flags: list[Flag] | None = None) -> FleetCard:
    tasks = [
        TaskRow("p__a", "p", "compare", "a", "done", address="10.0.0.1", gpu_type="H200"),
        TaskRow("p__b", "p", "compare", "b", "failed", "done", "no card.json | came back", 0, log="logs/p__b.log"),
        TaskRow("s__a", "s", "sweep", "a", "done", address="10.0.0.1", gpu_type="H200"),
    ]
    pair = ComparePair(
        "p",
        nodes=[
            CompareNode(
                "a",
                "p__a",
                "done",
                gpu_type="H200",
                verdict=NodeVerdict(True, True, "PASS: every check"),
                engine="0.24.0",
            ),
            CompareNode("b", "p__b", "failed", reason="no card.json | came back"),
        ],
        cells=[
            CompareCell(
                "w",
                "c1",
                1,
                nodes=[
                    CompareEntry(
                        "a",
                        "done",
                        gpu_type="H200",
                        ratios={"tpot_p50": FleetRatio(0.8, 0.75, 0.85, 32), "ttft_p99": FleetRatio(1.25, pairs=0)},
                        acceptance_rate=0.5,
                        mean_acceptance_length=2.25,
                    )
                ],
            ),
            CompareCell(
                "w",
                "c4",
                4,
                nodes=[
                    CompareEntry(
                        "a",
                        "done",
                        gpu_type="H200",
                        complete=False,
                        ratios={"tpot_p50": FleetRatio(0.9), "ttft_p99": None},
                    )
                ],
            ),
        ],
    )
    sweep = SweepPair(
        "s",
        primary_metric="tpot_p50",
        nodes=[
            SweepNode(
                "a",
                "s__a",
                "done",
                gpu_type="H200",
                measured=True,
                recommendation="k2",
                criteria_declared=True,
                meets_criteria=False,
                engine="0.24.0",
            )
        ],
        cells=[
            SweepPairCell(
                "w",
                "c1",
                1,
                nodes=[
                    SweepNodeEntry(
                        "a",
                        "done",
                        "k2",
                        gpu_type="H200",
                        speedup=1.4,
                        speedup_ci_low=1.3,
                        speedup_ci_high=1.5,
                        entries=[CandidateSpeedup("k2", 1.4)],
                    )
                ],
            ),
            SweepPairCell("w", "c4", 4, nodes=[SweepNodeEntry("a", "done", None, gpu_type="H200")]),
        ],
    )
    node = NodeRow(
        "a",
        "a1" * 28,
        "10.0.0.1",
        "gpu-a",
        "H200",
        "label loadgen.io/gpu-type",
        {"GPU": 8.0, "CPU": 64, "memory": 1e12, "object_store_memory": 1e9, "node:10.0.0.1": 1.0},
        {"loadgen.io/gpu-type": "H200"},
        NodeHardware("Xeon", 64, 2 * GiB, [NodeGpu("NVIDIA H200", 141 * GiB, index=0)]),
        ["0.24.0"],
        {"done": 2, "failed": 0, "pending": 0},
    )
    return FleetCard(
        "staging",
        {"tasks": 3, "done": 2, "failed": 1, "pending": 0},
        tasks,
        [node],
        [pair],
        [sweep],
        ratio_definition="speculative / plain",
        metrics=["tpot_p50", "ttft_p99"],
        flag_rule="RULE",
        flags=flags or [],
    )


def test_the_markdown_of_a_small_fleet() -> None:
    lines = render_fleet_markdown(_card()).splitlines()
    assert lines[2] == (
        "Schema loadgen.fleet/1. 3 tasks (pair x node): 2 done, 1 failed, 0 pending. Ratios are "
        'speculative / plain. "(partial)": the task did not finish or the cell was cut short.'
    )
    assert "| p__b | p | b | – | unknown | failed | 0 | no card.json \\| came back | logs/p__b.log |" in lines
    assert "| a | H200 | done | PASS: every check | vLLM 0.24.0 |" in lines
    assert "| b | unknown | failed: no card.json \\| came back | – | – |" in lines
    i = lines.index("### TPOT p50 ratio, speculative / plain [95% CI]")
    assert lines[i + 2 : i + 6] == [
        "| workload | level | a (H200) | b (GPU type unknown) |",
        "|---|---|---|---|",
        "| w | c1 | 0.800 [0.750, 0.850] | – |",
        "| w | c4 | 0.900 (partial) | – |",
    ]
    i = lines.index("### TTFT p99 ratio, speculative / plain (no CI)")
    assert lines[i + 4 : i + 6] == ["| w | c1 | 1.250 | – |", "| w | c4 | – (partial) | – |"]
    i = lines.index("### Mean acceptance length (speculative server)")
    assert lines[i + 4] == "| w | c1 | 2.250 | – |"
    assert "| a | H200 | done | k2 | no | vLLM 0.24.0 |" in lines
    i = lines.index("### Best candidate per cell, speedup [95% CI]")
    assert lines[i + 4 : i + 6] == [
        "| w | c1 | k2 1.400 [1.300, 1.500] |",
        "| w | c4 | plain (no candidate beats it) |",
    ]
    assert lines[lines.index("## Disagreement flags") + 4] == "No disagreement between nodes of the same GPU type."
    assert lines[-1] == (
        f"| a | {'a1' * 6} | 10.0.0.1 | gpu-a | H200, from label loadgen.io/gpu-type | NVIDIA H200 "
        "(141.00 GiB) | Xeon, 64 cores | 2.00 GiB | vLLM 0.24.0 | CPU 64, GPU 8 | "
        "loadgen.io/gpu-type=H200 |"
    )


def _flag(n: int) -> Flag:
    return Flag("ratio", "p", "H200", "tpot_p50", [], f"flag {n}")


def test_the_summary_caps_the_flags_it_prints() -> None:
    assert fleet_summary_lines(_card()) == [
        "fleet staging: 3 tasks, 2 done, 1 failed, 0 pending",
        "  failed: p__b on b (address unknown): no card.json | came back",
        "  p: a (H200) PASS, b (GPU type unknown) failed",
        "  s (sweep): a (H200) k2",
        "  no disagreement between nodes of the same GPU type",
    ]
    many = fleet_summary_lines(_card([_flag(n) for n in range(SUMMARY_FLAGS + 2)]))
    assert many[4] == f"  {SUMMARY_FLAGS + 2} disagreement flags:" and many[5] == "    flag 0"
    assert many[-2:] == [f"    flag {SUMMARY_FLAGS - 1}", "    ... 2 more in fleet.md"]
    assert fleet_summary_lines(_card([_flag(7)]))[-2:] == ["  1 disagreement flag:", "    flag 7"]
    assert "- flag 7" in render_fleet_markdown(_card([_flag(7)])).splitlines()
