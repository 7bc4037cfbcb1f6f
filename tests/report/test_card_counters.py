"""The card built from a run folder (report.build_card + card.render_markdown) does not let server-side
figures mislead: a restart inside a cell leaves its acceptance not measurable with a note, a server
quantile past the last finite bucket reads ``> bound`` and never agrees, a KV-capacity loss over 10% is a
note without any declared limit.

The folder is synthetic: one cell (workload ``w``, concurrency 2), 4 measured requests per server, each
with 3 chunks of 1 token 20 ms apart after a 50 ms TTFT; speculative counters of 100 drafts, K = 3.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level
from loadgen.profile.pairfile import load_pair
from loadgen.profile.workload import Prompt
from loadgen.prom import exposition as prom
from loadgen.records.request import RequestRecord
from loadgen.report.carddata import build_card
from loadgen.run import cell as cell_module
from loadgen.run.cell import run_cell_on
from tests.support.cards import USAGE, markdown, usage
from tests.support.fakerun import attached, quiet_run
from tests.support.scripted_server import DONE, Step, completion_chunk, scripted_server, usage_chunk

SPEC = {
    "num_drafts": 100.0,
    "num_draft_tokens": 300.0,
    "num_accepted_tokens": 150.0,
    "accepted_per_position": [70.0, 50.0, 30.0],
    "reset": False,
}
E2E_BOUNDS = [1.0, 10.0, 60.0, math.inf]


def _entry(role: str, **extra: Any) -> dict[str, Any]:
    return {
        "role": role,
        "workload": "w",
        "concurrency": 2,
        "level": "c2",
        "rate_rps": None,
        "repetition": 0,
        "spec_decode": dict(SPEC) if role == "speculative" else None,
        "server_histograms": {},
        "gauges": {},
        "server_finished_requests": 4.0,
        "client_sent_requests": 4,
        "foreign_traffic": False,
        "errors": 0,
        "output_length_mismatches": 0,
        "usage_mismatches": 0,
        "failure": None,
        "notes": [],
    } | extra


def _run_dir(
    tmp_path: Path,
    spec_extra: dict[str, Any],
    plain_extra: dict[str, Any] | None = None,
    kv_tokens: tuple[int, int] | None = None,
    last_chunk_s: float = 0.09,
) -> Path:
    proto = {
        "pair": "t",
        "target": {"model": "t", "revision": None, "local": False},
        "draft": {"model": "d", "revision": None, "local": False},
        "speculative_config": {"method": "draft_model", "num_speculative_tokens": 3},
        "sampling": {"temperature": 0.7},
        "workloads": [{"name": "w", "kind": "synthetic", "input_tokens": 8, "output_tokens": 3}],
        "concurrency": [2],
        "stop_rule": {},
        "prompts_sha256": "0",
        "cells": [{"workload": "w", "concurrency": 2, "level": "c2", "rate_rps": None}],
    }
    (tmp_path / "protocol.json").write_text(json.dumps(proto))
    (tmp_path / "status.json").write_text(json.dumps({"complete": True, "failure": None}))
    entries = [_entry("plain", **(plain_extra or {})), _entry("speculative", **spec_extra)]
    (tmp_path / "cells.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    records = [
        RequestRecord(
            f"p{i}",
            role,
            "w",
            2,
            "measured",
            0.1 * i,
            level="c2",
            send_s=0.1 * i,
            chunk_arrivals_s=[0.1 * i + 0.05, 0.1 * i + 0.07, 0.1 * i + last_chunk_s],
            chunk_tokens=[1, 1, 1],
            requested_output_tokens=3,
        )
        for role in ("plain", "speculative")
        for i in range(4)
    ]
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
    (tmp_path / "servers").mkdir(exist_ok=True)
    if kv_tokens is not None:
        for role, tokens in zip(("plain", "speculative"), kv_tokens, strict=True):
            (tmp_path / "servers" / f"{role}-resources.json").write_text(
                json.dumps({"ready": USAGE, "after_load": usage(kv_cache_tokens=tokens)})
            )
    return tmp_path


def test_a_reset_cell_has_no_acceptance_and_says_why(tmp_path: Path) -> None:
    card = build_card(_run_dir(tmp_path, {"spec_decode": SPEC | {"reset": True}})).to_json()
    cell = card["cells"][0]
    assert cell["speculative"]["acceptance"] is None
    assert cell["speculative"]["acceptance_unmeasurable"] == (
        "server restarted inside the cell: spec-decode counters went backwards"
    )
    assert (
        "speculative: acceptance not measurable, the server restarted inside the cell (spec-decode counters "
        "went backwards)"
    ) in cell["notes"]
    md = markdown(card)
    assert "| w | concurrency 2 | not measurable: server restarted inside the cell" in md
    assert "| 0.500 |" not in md  # no acceptance rate computed across the restart


def test_a_restart_the_counters_miss_is_found_by_the_process_start_time(tmp_path: Path) -> None:
    # counters zeroed and grown past their earlier values: reset false, but the process is a new one
    card = build_card(_run_dir(tmp_path, {"process_start_time_s": [1795982598.0, 1795982700.0]})).to_json()
    cell = card["cells"][0]
    assert cell["speculative"]["acceptance"] is None
    assert (
        "speculative: acceptance not measurable, the server restarted inside the cell "
        "(process_start_time_seconds changed 1795982598 → 1795982700)"
    ) in cell["notes"]


def test_a_restart_is_found_by_the_server_finishing_fewer_requests(tmp_path: Path) -> None:
    card = build_card(_run_dir(tmp_path, {"server_finished_requests": 1.0})).to_json()
    cell = card["cells"][0]
    assert cell["speculative"]["acceptance"] is None
    assert any("server finished 1 requests, loadgen completed 4" in n for n in cell["notes"])


def test_an_unbroken_cell_keeps_its_acceptance(tmp_path: Path) -> None:
    card = build_card(_run_dir(tmp_path, {"process_start_time_s": [1795982598.0, 1795982598.0]})).to_json()
    acc = card["cells"][0]["speculative"]["acceptance"]
    assert (acc["acceptance_rate"], acc["mean_acceptance_length"]) == (0.5, 2.5)
    # no counter note: the only notes are the decision's (equal scripted timings, no placebo)
    assert all("not distinguishable" in n for n in card["cells"][0]["notes"]), card["cells"][0]["notes"]


#: the server saw 4 requests of 200 s: PromQL's estimate of the p50 is the top finite bound, 60 s
E2E_200 = {
    "metric": "vllm:e2e_request_latency_seconds",
    "count": 4.0,
    "sum": 800.0,
    "upper_bounds": E2E_BOUNDS,
    "cumulative_counts": [0.0, 0.0, 0.0, 4.0],
    "reset": False,
    "p50": 60.0,
    "p90": 60.0,
    "p99": 60.0,
}


def test_a_server_quantile_above_the_last_bucket_is_not_called_agreeing(tmp_path: Path) -> None:
    # the client's E2E p50 is 200 s too: once read as "agree" (60 s and 200 s in neighbouring buckets)
    card = build_card(_run_dir(tmp_path, {}, {"server_histograms": {"e2e_s": E2E_200}}, last_chunk_s=200.0)).to_json()
    row = card["cells"][0]["plain"]["server_vs_client"]["e2e_s"]
    assert row["client_p50"] == pytest.approx(200.0)
    assert row["agrees"] is None and row["server_above_bound"] is True
    assert (
        "server `vllm:e2e_request_latency_seconds` p50 > 60000.00 ms (not comparable: beyond the histogram's "
        "last finite bucket)"
    ) in markdown(card)


def test_a_server_quantile_above_the_last_bucket_disagrees_with_a_client_inside_it(tmp_path: Path) -> None:
    card = build_card(_run_dir(tmp_path, {}, {"server_histograms": {"e2e_s": E2E_200}})).to_json()  # client p50 0.09 s
    row = card["cells"][0]["plain"]["server_vs_client"]["e2e_s"]
    assert row["server_above_bound"] is True and row["agrees"] is False
    assert "server `vllm:e2e_request_latency_seconds` p50 > 60000.00 ms (DISAGREE" in markdown(card)


def test_kv_capacity_loss_over_ten_percent_is_noted_without_a_declared_limit(tmp_path: Path) -> None:
    card = build_card(_run_dir(tmp_path, {}, kv_tokens=(100000, 80000))).to_json()
    assert card["resources"]["notes"] == [
        "KV-cache capacity: the speculative server holds 20000 tokens (20.0%) "
        "fewer than the plain one, so fewer requests fit at once"
    ]
    assert "- KV-cache capacity: the speculative server holds 20000 tokens (20.0%) fewer" in markdown(card)
    small = build_card(_run_dir(tmp_path, {}, kv_tokens=(100000, 95000))).to_json()
    assert small["resources"]["notes"] == []


# --- the cell entry: what the cell records for these checks (scripted SSE server on loopback) -------------


def test_the_cell_entry_records_restart_evidence_and_token_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = Path(__file__).parents[1] / "data"
    # recorded vLLM 0.32.0 pages t0 -> t1 (10 requests finished, 500 tokens generated, 100 drafts), served by a
    # process that started anew in between: the counters alone do not show it
    pages = iter(
        prom.parse_metrics((data / f"vllm032_spec_{t}.prom").read_text() + f"process_start_time_seconds {s}\n")
        for t, s in (("t0", 1.0), ("t1", 2.0))
    )
    monkeypatch.setattr(cell_module, "scrape", lambda url, headers=None: ("", next(pages)))
    ok: list[Step] = [
        (0.0, completion_chunk(" a", [1])),
        (0.0, completion_chunk(" b", [2], finish="length")),
        (0.0, usage_chunk(2, 2)),
        (0.0, DONE),
    ]
    pair = load_pair("demo-cpu")
    pair = dataclasses.replace(pair, speculative=pair.speculative.with_fields(method="draft_model"))
    warmup = (Prompt("w0", "w", "completions", "ok", None, 2),)
    measured = tuple(Prompt(f"m{i}", "w", "completions", "ok", None, 2) for i in range(10))
    with scripted_server({"ok": (200, ok)}) as url, quiet_run(tmp_path, pair) as run:
        run_cell_on(
            run,
            "speculative",
            attached(url, "speculative", tmp_path),
            CellSpec("w", "completions", Level(2), 0, warmup, measured, (), None),
        )
    entry = json.loads((tmp_path / "cells.jsonl").read_text().splitlines()[-1])
    assert entry["spec_decode"]["reset"] is False and entry["spec_decode"]["num_drafts"] == 100.0
    assert entry["process_start_time_s"] == [1.0, 2.0]
    assert entry["restart_evidence"] == ["process_start_time_seconds changed 1 → 2"]
    # the warmup request finished before the first scrape: 10 requests of 2 tokens between the scrapes
    assert (entry["client_window_output_tokens"], entry["client_window_failed"]) == (20, 0)
    assert entry["server_generation_tokens"] == 500.0
