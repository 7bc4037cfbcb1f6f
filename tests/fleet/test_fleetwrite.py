"""The fleet card (loadgen/fleet/): a fleet folder built in tmp_path from pair cards copied from a real
H200 card (docs/examples/h200/h200-1b-draft/card.json) with chosen ratios, and sweep cards whose
recommendation comes from the sweep card's own code (report/sweeprec.py).

The fleet: pairs h200-1b-draft and h200-1b-ngram (compare) on stg-a and stg-b (H200) and stg-c (A100;
its GPU type read from its card's hardware), h200-1b-ngram failing on stg-c; the sweep demo-sweep on
stg-a and stg-b. At the draft pair's cell c4 stg-b's TPOT p50 ratio CI lies above stg-a's (a flag); at c1
they overlap, stg-c differs from both but is another GPU type, and TTFT p99 (no CI) differs: no flag.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from loadgen.errors import BadInput
from loadgen.fleet.fleetdata import build_fleet_card
from loadgen.fleet.fleetflags import disagree, disjoint
from loadgen.fleet.fleetmd import render_fleet_markdown
from loadgen.fleet.fleetwrite import fleet_summary_lines, read_fleet_card, read_fleet_dir, write_fleet_card
from loadgen.fleet.gputype import ray_accelerator_type
from loadgen.records.card import PairCard
from loadgen.records.fleet import FIX as CARD_FIX
from loadgen.records.fleet import CompareEntry, FleetCard, SweepNodeEntry
from loadgen.records.fleetparts import FleetRatio, NodeGpu, NodeHardware, NodeVerdict
from loadgen.records.fleettasks import TaskList
from loadgen.records.sweep import FIX as SWEEP_FIX
from loadgen.records.sweep import SweepCandidate, SweepCell
from loadgen.report.sweeprec import recommend

REPO = Path(__file__).resolve().parents[2]
REAL_CARD = json.loads((REPO / "docs/examples/h200/h200-1b-draft/card.json").read_text())
NODES = {
    "stg-a": {
        "id": "a1" * 28,
        "name": "stg-a",
        "address": "10.0.0.11",
        "hostname": "gpu-a",
        "gpu_type": "H200",
        "resources": {"GPU": 8.0, "CPU": 64.0},
        "labels": {"loadgen.io/node": "stg-a", "loadgen.io/gpu-type": "H200"},
    },
    "stg-b": {
        "id": "b2" * 28,
        "name": "stg-b",
        "address": "10.0.0.12",
        "hostname": "gpu-b",
        "gpu_type": "H200",
        "resources": {"GPU": 8.0, "accelerator_type:H200": 1.0},
        "labels": {"loadgen.io/node": "stg-b"},
    },
    "stg-c": {
        "id": "c3" * 28,
        "name": "stg-c",
        "address": "10.0.0.13",
        "hostname": None,
        "gpu_type": None,
        "resources": {"GPU": 4.0},
        "labels": {},
    },
}
HARDWARE = {
    "stg-a": ("Intel(R) Xeon(R) Platinum 8480+", "NVIDIA H200", "0.24.0"),
    "stg-b": ("Intel(R) Xeon(R) Platinum 8480+", "NVIDIA H200", "0.23.1"),
    "stg-c": ("AMD EPYC 7763 64-Core Processor", "NVIDIA A100-SXM4-80GB", "0.24.0"),
}
#: (pair, node) -> per cell (c1, c4): TPOT p50 ratio (value, ci_low, ci_high), TTFT p99 ratio (no CI).
TPOT = {
    ("h200-1b-draft", "stg-a"): [(0.80, 0.78, 0.82), (0.70, 0.68, 0.72)],
    ("h200-1b-draft", "stg-b"): [(0.81, 0.79, 0.83), (0.95, 0.92, 0.98)],
    ("h200-1b-draft", "stg-c"): [(1.20, 1.15, 1.25), (0.70, 0.66, 0.74)],
    ("h200-1b-ngram", "stg-a"): [(0.90, 0.85, 0.95), (0.88, 0.84, 0.92)],
    ("h200-1b-ngram", "stg-b"): [(0.92, 0.86, 0.97), (0.91, 0.87, 0.95)],
}
TTFT_P99 = {"stg-a": 1.10, "stg-b": 2.50, "stg-c": 1.30}
FAILED_REASON = "the speculative server never became ready (CUDA out of memory while loading the draft)"
#: node -> per candidate (speedup, ci_low, ci_high) at the sweep's one cell.
SWEEP = {
    "stg-a": {"ngram-k2": (1.40, 1.30, 1.50), "ngram-k4": (1.20, 1.10, 1.28)},
    "stg-b": {"ngram-k2": (1.05, 1.00, 1.10), "ngram-k4": (1.25, 1.18, 1.32)},
}


def _card(pair: str, node: str) -> dict[str, Any]:
    card: dict[str, Any] = copy.deepcopy(REAL_CARD)
    cpu, gpu, engine = HARDWARE[node]
    card["pair"], card["engine_version"] = pair, {"plain": engine, "speculative": engine}
    card["hardware"] = {
        "cpu_model": cpu,
        "cpu_cores": 64,
        "memory_bytes": 2 * 2**40,
        "gpus": [{"index": 0, "name": gpu, "memory_bytes": 150754820096}],
    }
    card["verdict"] = {
        **card["verdict"],
        "declared": True,
        "passed": node == "stg-a",
        "summary": "PASS" if node == "stg-a" else "FAIL: TPOT p50 ratio above 0.9 at c4",
    }
    card["cells"] = card["cells"][:2]
    for cell, (v, lo, hi) in zip(card["cells"], TPOT.get((pair, node), TPOT["h200-1b-draft", node]), strict=True):
        cell["ratios"]["tpot_p50"] = {"value": v, "ci_low": lo, "ci_high": hi, "pairs": 32}
        cell["ratios"]["ttft_p99"] = {"value": TTFT_P99[node], "ci_low": None, "ci_high": None, "pairs": 0}
        cell["speculative"]["acceptance"].update(acceptance_rate=v / 2, mean_acceptance_length=1 + v)
    return card


def _entry(name: str, k: int, s: tuple[float, float, float]) -> dict[str, Any]:
    return {
        "candidate": name,
        "k": k,
        "method": "ngram",
        "draft_weights": False,
        "ratio": None,
        "speedup": s[0],
        "speedup_ci_low": s[1],
        "speedup_ci_high": s[2],
        "acceptance_rate": 0.4,
        "mean_acceptance_length": 1.9,
        "per_position": None,
        "tokens_per_decode_chunk": None,
        "predicted_speedup": None,
        "step_time_ratio": None,
        "upper_bound": None,
        "criteria_status": None,
    }


def _sweep(node: str) -> dict[str, Any]:
    cells = [
        {
            "workload": "short-homogeneous-gpu",
            "level": "c4",
            "concurrency": 4,
            "rate_rps": None,
            "entries": [_entry(name, int(name[-1]), s) for name, s in SWEEP[node].items()],
            "drift": {"timing": "tpot_s", "value": 1.0, "ci_low": 0.99, "ci_high": 1.01, "pairs": 32},
            "drift_warning": None,
        }
    ]
    rows = [
        {
            "name": n,
            "speculative_config": {"method": "ngram", "num_speculative_tokens": int(n[-1])},
            "k": int(n[-1]),
            "draft_weights": False,
            "verdict_passed": None,
        }
        for n in SWEEP[node]
    ]
    return {
        "schema": "loadgen.sweep/1",
        "pair": "demo-sweep",
        "engine_version": "0.24.0",
        "primary_metric": "tpot_p50",
        "speedup_definition": "plain / speculative of the primary metric",
        "criteria_declared": False,
        "criteria": None,
        "candidates": rows,
        "cells": cells,
        "recommendation": recommend(
            [SweepCell.from_json(c, source="cells") for c in cells],
            [SweepCandidate.from_json(r, source="rows") for r in rows],
            None,
            "0.24.0",
        ).to_json(),
    }


def _task(pair: str, node: str, kind: str = "compare", status: str = "done") -> dict[str, Any]:
    tid = f"{pair}__{node}"
    failed = status == "failed"
    return {
        "id": tid,
        "pair": pair,
        "kind": kind,
        "node": NODES[node],
        "status": status,
        "reason": FAILED_REASON if failed else None,
        "exit_code": 1 if failed else 0,
        "run_dir": None if failed else f"runs/{tid}",
        "log": f"logs/{tid}.log",
        "started": "2026-12-01T10:00:00Z",
        "finished": "2026-12-01T10:20:00Z",
        "wall_s": 1200.0,
    }


def _write(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    tasks = [
        _task(p, n, status="failed" if (p, n) == ("h200-1b-ngram", "stg-c") else "done")
        for p in ("h200-1b-draft", "h200-1b-ngram")
        for n in ("stg-c", "stg-b", "stg-a")
    ]
    tasks += [_task("demo-sweep", n, kind="sweep") for n in ("stg-a", "stg-b")]
    for t in tasks:
        if t["status"] == "done" and t["kind"] == "compare":
            _write(tmp_path / t["run_dir"] / "card.json", _card(t["pair"], t["node"]["name"]))
        elif t["kind"] == "sweep":
            _write(tmp_path / t["run_dir"] / "sweep.json", _sweep(t["node"]["name"]))
            _write(tmp_path / t["run_dir"] / "plain-before" / "card.json", _card("demo-sweep", t["node"]["name"]))
    _write(tmp_path / "tasks.json", {"schema": "loadgen.fleet-tasks/1", "name": "staging", "tasks": tasks})
    return tmp_path


def _pair(card: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in card["pairs"] + card["sweeps"] if p["pair"] == name)


def test_the_card_lists_every_task_and_the_failed_one_with_its_node_and_reason(fleet: Path) -> None:
    card = read_fleet_dir(fleet).to_json()
    assert card["schema"] == "loadgen.fleet/1" and card["name"] == "staging"
    assert card["counts"] == {"tasks": 8, "done": 7, "failed": 1, "pending": 0}
    assert sorted((t["pair"], t["node"]) for t in card["tasks"] if t["kind"] == "compare") == [
        (p, n) for p in ("h200-1b-draft", "h200-1b-ngram") for n in ("stg-a", "stg-b", "stg-c")
    ]
    [failed] = [t for t in card["tasks"] if t["status"] != "done"]
    assert (failed["id"], failed["node"], failed["address"], failed["reason"], failed["exit_code"]) == (
        "h200-1b-ngram__stg-c",
        "stg-c",
        "10.0.0.13",
        FAILED_REASON,
        1,
    )
    ngram = _pair(card, "h200-1b-ngram")
    assert [(n["node"], n["status"]) for n in ngram["nodes"]] == [
        ("stg-a", "done"),
        ("stg-b", "done"),
        ("stg-c", "failed"),
    ]
    assert [[e["node"] for e in c["nodes"]] for c in ngram["cells"]] == [["stg-a", "stg-b"]] * 2
    md = (write_fleet_card(fleet)).read_text()
    assert (
        f"| h200-1b-ngram__stg-c | h200-1b-ngram | stg-c | 10.0.0.13 | A100 | failed | 1 | {FAILED_REASON} | "
        "logs/h200-1b-ngram__stg-c.log |"
    ) in md


def test_ratios_cis_and_acceptance_are_copied_through_per_node(fleet: Path) -> None:
    draft = _pair(read_fleet_dir(fleet).to_json(), "h200-1b-draft")
    assert [n["node"] for n in draft["nodes"]] == ["stg-a", "stg-b", "stg-c"]
    assert [n["verdict"]["passed"] for n in draft["nodes"]] == [True, False, False]
    assert [(c["workload"], c["level"], c["concurrency"]) for c in draft["cells"]] == [
        ("short-homogeneous-gpu", "c1", 1),
        ("short-homogeneous-gpu", "c4", 4),
    ]
    for i, cell in enumerate(draft["cells"]):
        for e in cell["nodes"]:
            v, lo, hi = TPOT["h200-1b-draft", e["node"]][i]
            assert e["ratios"]["tpot_p50"] == {"value": v, "ci_low": lo, "ci_high": hi, "pairs": 32}
            assert e["ratios"]["ttft_p99"] == {
                "value": TTFT_P99[e["node"]],
                "ci_low": None,
                "ci_high": None,
                "pairs": 0,
            }
            assert (e["acceptance_rate"], e["mean_acceptance_length"]) == (v / 2, 1 + v)
            real = REAL_CARD["cells"][i]["ratios"]
            assert e["ratios"]["ttft_p50"]["value"] == real["ttft_p50"]["value"]
            assert e["ratios"]["e2e_p50"]["ci_high"] == real["e2e_p50"]["ci_high"]


def test_a_flag_only_where_same_gpu_type_cis_do_not_overlap(fleet: Path) -> None:
    card = read_fleet_dir(fleet).to_json()
    ratio_flags = [f for f in card["flags"] if f["kind"] == "ratio"]
    assert [(f["pair"], f["gpu_type"], f["workload"], f["level"], f["metric"]) for f in ratio_flags] == [
        ("h200-1b-draft", "H200", "short-homogeneous-gpu", "c4", "tpot_p50")
    ]
    [flag] = ratio_flags
    assert flag["nodes"] == [
        {"node": "stg-a", "value": 0.70, "ci_low": 0.68, "ci_high": 0.72, "candidate": None},
        {"node": "stg-b", "value": 0.95, "ci_low": 0.92, "ci_high": 0.98, "candidate": None},
    ]
    assert flag["line"] == (
        "h200-1b-draft on H200: short-homogeneous-gpu c4, TPOT p50 ratio (speculative / plain), "
        "the 95% CIs do not overlap: stg-a 0.700 (95% CI 0.680-0.720) vs stg-b 0.950 "
        "(95% CI 0.920-0.980); their engine versions differ (stg-a: vLLM 0.24.0, "
        "stg-b: vLLM 0.23.1)"
    )
    assert disjoint(FleetRatio(0.6, 0.5, 0.7), FleetRatio(0.8, 0.7, 0.9)) is False  # touching
    assert disjoint(FleetRatio(0.6, 0.5, 0.7), FleetRatio(0.8)) is False
    assert disjoint(FleetRatio(0.6, 0.5, 0.7), None) is False
    # apart, but 3% of the smaller value: not a difference a capacity team acts on (MIN_RELATIVE_GAP = 5%)
    near, far = FleetRatio(0.97, 0.96, 0.98), FleetRatio(1.00, 0.99, 1.01)
    assert disjoint(near, far) and not disagree(near, far)
    assert disagree(near, FleetRatio(1.03, 1.02, 1.04)) and not disagree(near, None)


def test_the_sweep_shows_each_nodes_recommendation_and_flags_the_differences(fleet: Path) -> None:
    card = read_fleet_dir(fleet).to_json()
    sweep = _pair(card, "demo-sweep")
    assert [(n["node"], n["recommendation"], n["measured"]) for n in sweep["nodes"]] == [
        ("stg-a", "ngram-k2", True),
        ("stg-b", "ngram-k4", True),
    ]
    [cell] = sweep["cells"]
    assert [(e["node"], e["best"], e["speedup"], e["speedup_ci_low"], e["speedup_ci_high"]) for e in cell["nodes"]] == [
        ("stg-a", "ngram-k2", 1.40, 1.30, 1.50),
        ("stg-b", "ngram-k4", 1.25, 1.18, 1.32),
    ]
    flags = [
        (f["kind"], f["metric"], f["level"], [(s["node"], s["candidate"], s["value"]) for s in f["nodes"]])
        for f in card["flags"]
        if f["pair"] == "demo-sweep"
    ]
    assert flags == [
        ("recommendation", "recommendation", None, [("stg-a", "ngram-k2", None), ("stg-b", "ngram-k4", None)]),
        ("speedup", "speedup:tpot_p50", "c4", [("stg-a", "ngram-k2", 1.40), ("stg-b", "ngram-k2", 1.05)]),
    ]


def test_every_node_has_its_hardware_engine_version_and_gpu_type(fleet: Path) -> None:
    nodes = {n.name: n.to_json() for n in read_fleet_dir(fleet).nodes}
    assert list(nodes) == ["stg-a", "stg-b", "stg-c"]
    got = {
        k: (
            n["gpu_type"],
            n["gpu_type_source"],
            n["hardware"]["cpu_model"],
            n["hardware"]["gpus"][0]["name"],
            n["engine_versions"],
            n["address"],
            n["tasks"],
        )
        for k, n in nodes.items()
    }
    assert got == {
        "stg-a": (
            "H200",
            "label loadgen.io/gpu-type",
            *HARDWARE["stg-a"][:2],
            ["0.24.0"],
            "10.0.0.11",
            {"done": 3, "failed": 0, "pending": 0},
        ),
        "stg-b": (
            "H200",
            "Ray resource accelerator_type:<type>",
            *HARDWARE["stg-b"][:2],
            ["0.23.1", "0.24.0"],
            "10.0.0.12",
            {"done": 3, "failed": 0, "pending": 0},
        ),
        "stg-c": (
            "A100",
            "card hardware (first GPU)",
            *HARDWARE["stg-c"][:2],
            ["0.24.0"],
            "10.0.0.13",
            {"done": 1, "failed": 1, "pending": 0},
        ),
    }
    assert nodes["stg-a"]["resources"] == {"GPU": 8.0, "CPU": 64.0} and nodes["stg-b"]["id"] == "b2" * 28


def test_the_markdown_and_a_re_render_are_byte_identical(fleet: Path) -> None:
    path = write_fleet_card(fleet)
    first = (path.read_bytes(), (fleet / "fleet.json").read_bytes(), (fleet / "card.html").read_bytes())
    assert path == fleet / "fleet.md" and json.loads(first[1]) == read_fleet_dir(fleet).to_json()
    again = (
        write_fleet_card(fleet).read_bytes(),
        (fleet / "fleet.json").read_bytes(),
        (fleet / "card.html").read_bytes(),
    )
    assert again == first
    page = first[2].decode()  # the same card as a page: the same ratio in the cells table
    assert "<td>short-homogeneous-gpu</td><td>c4</td><td>0.700 [0.680, 0.720]</td><td>0.950 [0.920, 0.980]</td>" in page
    md = first[0].decode()
    assert "| short-homogeneous-gpu | c4 | 0.700 [0.680, 0.720] | 0.950 [0.920, 0.980] | 0.700 [0.660, 0.740] |" in md
    assert "| workload | level | stg-a (H200) | stg-b (H200) | stg-c (A100) |" in md
    assert "- h200-1b-draft on H200: short-homogeneous-gpu c4, TPOT p50 ratio" in md
    assert (
        "| stg-c | c3c3c3c3c3c3 | 10.0.0.13 | – | A100, from card hardware (first GPU) | NVIDIA A100-SXM4-80GB "
        "(140.40 GiB) | AMD EPYC 7763 64-Core Processor, 64 cores | 2048.00 GiB | vLLM 0.24.0 | GPU 4 | – |"
    ) in md
    assert "| stg-b | H200 | done | ngram-k4 | none declared | vLLM 0.24.0 |" in md
    assert "| stg-b | H200 | done | FAIL: TPOT p50 ratio above 0.9 at c4 | vLLM 0.23.1 |" in md


def test_a_finished_task_whose_card_is_unreadable_is_shown_failed(fleet: Path) -> None:
    (fleet / "runs/h200-1b-draft__stg-b/card.json").write_text("{torn")
    (fleet / "runs/demo-sweep__stg-a/sweep.json").unlink()
    card = read_fleet_dir(fleet).to_json()
    tasks = {t["id"]: t for t in card["tasks"]}
    assert card["counts"] == {"tasks": 8, "done": 5, "failed": 3, "pending": 0}
    assert tasks["h200-1b-draft__stg-b"]["runner_status"] == "done"
    assert tasks["h200-1b-draft__stg-b"]["reason"] == (
        "finished (exit 0) but runs/h200-1b-draft__stg-b/card.json is not readable JSON; `loadgen report` can "
        "write the card again from the run folder; see logs/h200-1b-draft__stg-b.log"
    )
    assert tasks["demo-sweep__stg-a"]["reason"] == (
        "finished (exit 0) but no runs/demo-sweep__stg-a/sweep.json came back; see logs/demo-sweep__stg-a.log"
    )
    assert card["flags"] == []  # stg-b's draft card and stg-a's sweep are gone: nothing left to disagree


def test_a_finished_task_whose_card_does_not_match_its_type_is_shown_failed_naming_the_field(fleet: Path) -> None:
    card = _card("h200-1b-draft", "stg-b")
    card["cells"][0]["ratios"]["tpot_p50"]["value"] = "abc"
    _write(fleet / "runs/h200-1b-draft__stg-b/card.json", card)
    tasks = {t.id: t for t in read_fleet_dir(fleet).tasks}
    assert tasks["h200-1b-draft__stg-b"].status == "failed"
    assert tasks["h200-1b-draft__stg-b"].reason == (
        "finished (exit 0) but runs/h200-1b-draft__stg-b/card.json: cells[0].ratios.tpot_p50.value: expected a "
        "number, got 'abc'; re-render with `loadgen report` or restore the file; see logs/h200-1b-draft__stg-b.log"
    )


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        ("not json {", "is not a readable JSON file"),
        (
            {"schema": "loadgen.fleet-tasks/0", "name": "x", "tasks": []},
            "schema: expected one of loadgen.fleet-tasks/1, got 'loadgen.fleet-tasks/0'",
        ),
        (
            {
                "schema": "loadgen.fleet-tasks/1",
                "name": "x",
                "tasks": [
                    {"id": "p__n", "pair": "p", "kind": "compare", "status": "done", "node": NODES["stg-a"]},
                    {"id": "p__n", "pair": "p", "kind": "sweep", "status": "done", "node": NODES["stg-a"]},
                ],
            },
            "tasks[1].id: expected an id no other task has, got 'p__n'",
        ),
        (
            {
                "schema": "loadgen.fleet-tasks/1",
                "name": "x",
                "tasks": [
                    {
                        "id": "p__n",
                        "pair": "p",
                        "kind": "compare",
                        "status": "done",
                        "node": NODES["stg-a"],
                        "run_dir": "runs/../../etc",
                    }
                ],
            },
            "tasks[0].run_dir: expected a folder under runs/ of the fleet folder, or null, got 'runs/../../etc'",
        ),
        (
            {
                "schema": "loadgen.fleet-tasks/1",
                "name": "x",
                "tasks": [{"id": "p__n", "pair": "p", "kind": "compare", "status": "running", "node": NODES["stg-a"]}],
            },
            "tasks[0].status: expected one of done, failed, pending, got 'running'",
        ),
        (
            {
                "schema": "loadgen.fleet-tasks/1",
                "name": "x",
                "tasks": [{"id": "p__n", "pair": "p", "kind": "compare", "status": "done", "node": {"id": "1"}}],
            },
            "tasks[0].node.name: missing (expected a non-empty string)",
        ),
        (
            {
                "schema": "loadgen.fleet-tasks/1",
                "name": "x",
                "tasks": [
                    {
                        "id": "p__n",
                        "pair": "p",
                        "kind": "compare",
                        "status": "done",
                        "node": NODES["stg-a"],
                        "wall_s": "ten",
                    }
                ],
            },
            "tasks[0].wall_s: expected a number or null, got 'ten'",
        ),
    ],
)
def test_a_malformed_tasks_json_is_one_bad_input_line(tmp_path: Path, doc: Any, problem: str) -> None:
    (tmp_path / "tasks.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    with pytest.raises(BadInput) as err:
        write_fleet_card(tmp_path)
    assert str(tmp_path / "tasks.json") in str(err.value) and problem in str(err.value)
    assert "\n" not in str(err.value) and not (tmp_path / "fleet.md").exists()


def test_a_folder_without_tasks_json_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="has no tasks.json: it is not a fleet folder"):
        write_fleet_card(tmp_path)


def test_the_terminal_summary(fleet: Path) -> None:
    lines = fleet_summary_lines(read_fleet_dir(fleet))
    assert lines[:5] == [
        "fleet staging: 8 tasks, 7 done, 1 failed, 0 pending",
        f"  failed: h200-1b-ngram__stg-c on stg-c (10.0.0.13): {FAILED_REASON}",
        "  h200-1b-draft: stg-a (H200) PASS, stg-b (H200) FAIL, stg-c (A100) FAIL",
        "  h200-1b-ngram: stg-a (H200) PASS, stg-b (H200) FAIL, stg-c (A100) failed",
        "  demo-sweep (sweep): stg-a (H200) ngram-k2, stg-b (H200) ngram-k4",
    ]
    assert lines[5] == "  3 disagreement flags:" and len(lines) == 9


@pytest.mark.parametrize(
    ("name", "ray_type"),
    [
        ("NVIDIA H200", "H200"),
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("Tesla V100-SXM2-16GB", "V100"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000"),
        ("NVIDIA GeForce RTX 5090", "GeForce-RTX-5090"),
        ("", None),
    ],
)
def test_a_card_gpu_name_becomes_rays_accelerator_type(name: str, ray_type: str | None) -> None:
    assert ray_accelerator_type(name) == ray_type


def test_a_typed_card_with_odd_parts_is_read_and_one_with_wrong_hardware_is_not() -> None:
    """A pair card that matches its type but whose hardware names a GPU without its index and memory, whose ratio
    has one CI end or no value, whose speculative role is missing and whose verdict is not judged; hardware of
    the wrong types is no card (records/usage.py ``Hardware``), one line naming the field."""
    tasks = [_task("p", "stg-a"), _task("p", "stg-b"), _task("s", "stg-a", kind="sweep")]
    junk = _card("p", "stg-a")
    junk["cells"] = junk["cells"][:1]
    junk["cells"][0]["ratios"]["tpot_p50"] = {"value": 0.8, "ci_low": 0.7, "ci_high": None, "pairs": 3}
    junk["cells"][0]["ratios"]["ttft_p50"] = {"value": None, "ci_low": None, "ci_high": None, "pairs": 0}
    junk["cells"][0]["speculative"] = None
    junk["hardware"] = {"cpu_model": 7, "cpu_cores": True, "memory_bytes": 1, "gpus": []}
    with pytest.raises(BadInput, match="card.json: hardware.cpu_model: expected a string, got 7; "):
        PairCard.from_json(junk, source="card.json")
    junk["hardware"] = {"cpu_model": None, "cpu_cores": None, "memory_bytes": 2**30, "gpus": []}
    junk["hardware"]["gpus"] = [{"index": 0, "name": "NVIDIA H200", "memory_bytes": 0}]
    junk["verdict"] = {**junk["verdict"], "passed": None, "summary": ""}
    junk["engine_version"] = {"plain": "0.24.0", "speculative": None}
    record = build_fleet_card(
        TaskList.from_json({"schema": "loadgen.fleet-tasks/1", "name": "junk", "tasks": tasks}, source="tasks.json"),
        {"p__stg-a": PairCard.from_json(junk, source="card.json"), "p__stg-b": None},
        {"s__stg-a": None},
    )
    [cell] = record.pairs[0].cells
    [entry] = cell.nodes
    assert (entry.node, entry.ratios["tpot_p50"], entry.ratios["ttft_p50"], entry.acceptance_rate) == (
        "stg-a",
        FleetRatio(0.8, None, None, 3),
        None,
        None,
    )
    a, b = record.pairs[0].nodes
    assert a.verdict == NodeVerdict(True, None, "") and a.engine == "plain 0.24.0 / speculative unknown"
    assert (b.node, b.status, b.verdict, b.engine) == ("stg-b", "failed", None, None)
    assert record.nodes[0].hardware == NodeHardware(None, None, 2.0**30, [NodeGpu("NVIDIA H200", 0.0, index=0)])
    assert (record.nodes[0].gpu_type, record.nodes[0].gpu_type_source) == ("H200", "label loadgen.io/gpu-type")
    assert record.sweeps[0].cells == [] and record.sweeps[0].nodes[0].recommendation is None
    text = render_fleet_markdown(record)
    assert "| stg-a | H200 | done | not judged | vLLM plain 0.24.0 / speculative unknown |" in text
    assert "| short-homogeneous-gpu | c1 | 0.800 | – |" in text and "NVIDIA H200 (0.00 GiB)" in text


def test_a_sweep_card_of_the_wrong_shape_shows_its_task_failed_naming_the_field(fleet: Path) -> None:
    path = fleet / "runs/demo-sweep__stg-a/sweep.json"
    doc = json.loads(path.read_text())
    doc["cells"][0]["entries"][0]["speedup"] = "fast"
    path.write_text(json.dumps(doc))
    task = {t.id: t.to_json() for t in read_fleet_dir(fleet).tasks}["demo-sweep__stg-a"]
    assert (task["status"], task["runner_status"]) == ("failed", "done")
    assert task["reason"] == (
        "finished (exit 0) but runs/demo-sweep__stg-a/sweep.json: cells[0].entries[0].speedup: expected a number "
        f"or null, got 'fast'; {SWEEP_FIX}; see logs/demo-sweep__stg-a.log"
    )


def test_fleet_json_reads_back_typed_byte_identically_and_validates_against_the_schema(fleet: Path) -> None:
    write_fleet_card(fleet)
    text = (fleet / "fleet.json").read_text()
    card = read_fleet_card(fleet / "fleet.json")
    assert json.dumps(card.to_json(), indent=2) + "\n" == text
    jsonschema.Draft202012Validator(FleetCard.json_schema()).validate(json.loads(text))
    raw = json.loads(text)
    entry = card.pairs[0].cells[0].nodes[0]
    assert isinstance(entry, CompareEntry)
    assert {m: r and r.to_json() for m, r in entry.ratios.items()} == raw["pairs"][0]["cells"][0]["nodes"][0]["ratios"]
    assert isinstance(entry.ratios["tpot_p50"], FleetRatio) and entry.ratios["ttft_p99"] == FleetRatio(1.1, pairs=0)
    assert card.nodes[0].hardware == NodeHardware(
        "Intel(R) Xeon(R) Platinum 8480+", 64, 2 * 2**40, [NodeGpu("NVIDIA H200", 150754820096, index=0)]
    )
    assert [(f.kind, [s.node for s in f.nodes]) for f in card.flags] == [
        ("ratio", ["stg-a", "stg-b"]),
        ("recommendation", ["stg-a", "stg-b"]),
        ("speedup", ["stg-a", "stg-b"]),
    ]
    best = card.sweeps[0].cells[0].nodes[0]
    assert isinstance(best, SweepNodeEntry) and best.speedup == raw["sweeps"][0]["cells"][0]["nodes"][0]["speedup"]
    assert card.counts == {"tasks": 8, "done": 7, "failed": 1, "pending": 0}


def test_a_fleet_json_that_does_not_read_is_one_line_naming_the_field(fleet: Path) -> None:
    write_fleet_card(fleet)
    doc = json.loads((fleet / "fleet.json").read_text())
    doc["sweeps"][0]["nodes"][0]["lines"] = "none"
    (fleet / "fleet.json").write_text(json.dumps(doc))
    with pytest.raises(BadInput) as caught:
        read_fleet_card(fleet / "fleet.json")
    assert str(caught.value) == (
        f"{fleet / 'fleet.json'}: sweeps[0].nodes[0].lines: expected a list of strings, got 'none'; {CARD_FIX}"
    )
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, FleetCard.json_schema())
