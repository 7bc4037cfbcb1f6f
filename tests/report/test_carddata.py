"""report.build_card on small hand-written run folders: closed-form statistics, ratios, crossover,
capacity at SLO, verdict and partial cells.

The folder: workload ``w`` at closed-loop concurrency 1 and 2, 4 measured requests per server and level,
sent 1 s apart (request i at ``i`` s). Each request has 3 one-token chunks: the first at TTFT, then two more
``tpot`` apart. Plain: TTFT ``0.1 * (i + 1)`` s, TPOT 20 ms at both levels. Speculative: TTFT twice the
plain one, TPOT 10 ms at c1 and 30 ms at c2, so the TPOT p50 ratio is 0.5 at c1 and 1.5 at c2 and
crosses 1 at concurrency 1.5.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import BadInput
from loadgen.measure.judging import NOT_DECLARED
from loadgen.records.request import RequestRecord
from loadgen.report.carddata import CARD_SCHEMA, build_card
from tests.support.cards import usage

PLAIN_TPOT = {1: 0.02, 2: 0.02}
SPEC_TPOT = {1: 0.01, 2: 0.03}


def _ttft(role: str, i: int) -> float:
    return 0.1 * (i + 1) * (2 if role == "speculative" else 1)


def _record(role: str, level: int, i: int, **kw: Any) -> RequestRecord:
    tpot = (SPEC_TPOT if role == "speculative" else PLAIN_TPOT)[level]
    send = float(i)
    first = send + _ttft(role, i)
    return RequestRecord(
        f"p{i}",
        role,
        "w",
        level,
        kw.pop("phase", "measured"),
        send,
        level=f"c{level}",
        send_s=send,
        chunk_arrivals_s=[first, first + tpot, first + 2 * tpot],
        chunk_tokens=[1, 1, 1],
        requested_output_tokens=3,
        **kw,
    )


def _entry(role: str, level: int, **extra: Any) -> dict[str, Any]:
    return {
        "role": role,
        "workload": "w",
        "concurrency": level,
        "level": f"c{level}",
        "rate_rps": None,
        "repetition": 0,
        "spec_decode": None,
        "server_histograms": {},
        "gauges": {},
        "server_finished_requests": None,
        "client_sent_requests": 4,
        "foreign_traffic": False,
        "errors": 0,
        "output_length_mismatches": 0,
        "usage_mismatches": 0,
        "failure": None,
        "notes": [],
    } | extra


def write_run(
    root: Path,
    *,
    criteria: dict[str, Any] | None = None,
    slo: dict[str, Any] | None = None,
    levels: tuple[int, ...] = (1, 2),
    entries: list[dict[str, Any]] | None = None,
    records: list[RequestRecord] | None = None,
    status: dict[str, Any] | None = None,
) -> Path:
    """A run folder under ``root`` (see the module docstring); ``entries``/``records`` replace the defaults."""
    proto = {
        "pair": "t",
        "target": {"model": "t", "revision": None, "local": False},
        "draft": {"model": "d", "revision": None, "local": False},
        "speculative_config": {"method": "draft_model", "num_speculative_tokens": 3},
        "sampling": {"temperature": 0.7},
        "workloads": [{"name": "w", "kind": "short-homogeneous", "input_tokens": None, "output_tokens": 3}],
        "concurrency": list(levels),
        "stop_rule": {"min_requests": 4},
        "prompts_sha256": "abc",
        "cells": [{"workload": "w", "concurrency": c, "level": f"c{c}", "rate_rps": None} for c in levels],
        "criteria": criteria,
        "slo": slo,
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / "protocol.json").write_text(json.dumps(proto))
    (root / "status.json").write_text(json.dumps(status if status is not None else {"complete": True, "failure": None}))
    if entries is None:
        entries = [_entry(role, c) for c in levels for role in ("plain", "speculative")]
    (root / "cells.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    if records is None:
        records = [_record(role, c, i) for c in levels for role in ("plain", "speculative") for i in range(4)]
    (root / "requests.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
    (root / "servers").mkdir(exist_ok=True)
    return root


def _cell(card: dict[str, Any], level: str) -> dict[str, Any]:
    return next(c for c in card["cells"] if c["level"] == level)


SPEC = {
    "num_drafts": 100.0,
    "num_draft_tokens": 300.0,
    "num_accepted_tokens": 150.0,
    "accepted_per_position": [70.0, 50.0, 30.0],
    "reset": False,
}
FAIL_C2 = "w c=2: fail: tpot_p50 speedup 0.667 [95% CI 0.667, 0.667] is below 1 (no placebo): slower"


def test_percentiles_of_known_timelines_are_numpys_linear_ones(tmp_path: Path) -> None:
    card = build_card(write_run(tmp_path)).to_json()
    plain, spec = _cell(card, "c1")["plain"], _cell(card, "c1")["speculative"]
    # plain TTFT 0.1, 0.2, 0.3, 0.4 s: p50 0.25, p90 0.3 + 0.7 * 0.1, p99 0.3 + 0.97 * 0.1
    assert [plain["ttft_s"][k] for k in ("count", "p50", "p90", "p99")] == pytest.approx([4, 0.25, 0.37, 0.397])
    assert [spec["ttft_s"][k] for k in ("p50", "p90", "p99")] == pytest.approx([0.5, 0.74, 0.794])
    assert plain["tpot_s"]["p50"] == pytest.approx(0.02) and spec["tpot_s"]["p50"] == pytest.approx(0.01)
    assert plain["itl_s"]["count"] == 8 and plain["itl_s"]["p99"] == pytest.approx(0.02)
    # E2E = TTFT + 2 TPOT: 0.14, 0.24, 0.34, 0.44 s
    assert [plain["e2e_s"][k] for k in ("p50", "p90", "p99")] == pytest.approx([0.29, 0.41, 0.437])
    assert _cell(card, "c2")["speculative"]["tpot_s"]["p50"] == pytest.approx(0.03)


def test_window_and_throughputs_span_first_send_to_last_chunk(tmp_path: Path) -> None:
    plain = _cell(build_card(write_run(tmp_path)).to_json(), "c1")["plain"]
    # last request sent at 3 s, its last chunk at 3 + 0.4 + 0.04 s; 4 requests x 3 tokens
    assert (plain["requests"], plain["errors"], plain["output_tokens"]) == (4, 0, 12)
    assert plain["window_s"] == pytest.approx(3.44)
    assert plain["output_throughput_tps"] == pytest.approx(12 / 3.44)
    assert plain["request_throughput_rps"] == pytest.approx(4 / 3.44)
    assert plain["mean_tokens_per_chunk"] == 1.0 and plain["tpot_p50_per_repetition_s"] == [pytest.approx(0.02)]


def test_ratios_are_paired_medians_with_their_bootstrap_interval(tmp_path: Path) -> None:
    ratios = _cell(build_card(write_run(tmp_path)).to_json(), "c1")["ratios"]
    # every speculative TTFT is twice its plain one: every resample gives 2 too
    assert [ratios["ttft_p50"][k] for k in ("value", "ci_low", "ci_high")] == pytest.approx([2.0, 2.0, 2.0])
    assert ratios["ttft_p50"]["pairs"] == 4
    assert [ratios["tpot_p50"][k] for k in ("value", "ci_low", "ci_high")] == pytest.approx([0.5, 0.5, 0.5])
    # E2E medians: speculative (0.42 + 0.62) / 2 over plain (0.24 + 0.34) / 2
    assert ratios["e2e_p50"]["value"] == pytest.approx(0.52 / 0.29)
    # a run of older code (no design in its protocol): within-run intervals, and marked so
    assert ratios["ttft_p99"] == {
        "value": pytest.approx(0.794 / 0.397),
        "ci_low": None,
        "ci_high": None,
        "pairs": 0,
        "ci_method": "within-run",
        "effect": "inconclusive",  # measure/decision.py: no CI, one sample
    }
    assert {r["ci_method"] for r in ratios.values()} == {"within-run"}
    assert ratios["output_throughput"]["value"] == pytest.approx((12 / 3.82) / (12 / 3.44))
    assert ratios["itl_p50"]["value"] == pytest.approx(0.5)


def test_the_crossover_is_interpolated_where_the_tpot_ratio_crosses_one(tmp_path: Path) -> None:
    cross = build_card(write_run(tmp_path)).to_json()["crossover"]["w"]
    assert cross["metric"] == "tpot_p50" and cross["levels"] == [1, 2]
    assert cross["ratios"] == pytest.approx([0.5, 1.5])
    assert cross["crossover_concurrency"] == pytest.approx(1.5)  # 1 + (1 - 0.5) / (1.5 - 0.5)


def test_capacity_at_slo_is_the_highest_level_holding_it_with_its_goodput(tmp_path: Path) -> None:
    card = build_card(write_run(tmp_path, slo={"percentile": 50, "tpot_s": 0.025})).to_json()
    cap = card["capacity"]["w"]
    assert cap["plain"] == {
        "levels": [1, 2],
        "holds": [True, True],
        "capacity_concurrency": 2,
        "goodput_rps": pytest.approx(4 / 3.44),
    }
    assert cap["speculative"] == {
        "levels": [1, 2],
        "holds": [True, False],
        "capacity_concurrency": 1,
        "goodput_rps": pytest.approx(4 / 3.82),
    }
    assert _cell(card, "c2")["speculative"]["goodput_rps"] == 0.0  # every TPOT is 30 ms > 25 ms
    assert card["slo"] == {"percentile": 50, "ttft_s": None, "tpot_s": 0.025, "e2e_s": None}


def test_no_slo_means_no_capacity_and_no_goodput(tmp_path: Path) -> None:
    card = build_card(write_run(tmp_path)).to_json()
    assert card["capacity"] == {}
    assert _cell(card, "c1")["plain"]["goodput_rps"] is None and _cell(card, "c1")["plain"]["slo_holds"] is None


def test_declared_criteria_fail_on_the_cell_that_misses_them(tmp_path: Path) -> None:
    verdict = build_card(write_run(tmp_path, criteria={"primary": ["tpot_p50"], "declared": ["primary"]})).verdict
    assert verdict.passed is False and verdict.declared is True
    assert [c.status for c in verdict.cells] == ["pass", "fail"]
    assert verdict.lines is not None and verdict.lines[1] == FAIL_C2
    assert verdict.summary == f"FAIL: 1 failed check(s), first: {FAIL_C2}"


def test_declared_criteria_pass_when_only_the_good_level_is_in_scope(tmp_path: Path) -> None:
    criteria = {"primary": ["tpot_p50"], "concurrency": [1, 1], "declared": ["primary", "concurrency"]}
    verdict = build_card(write_run(tmp_path, criteria=criteria)).to_json()["verdict"]
    assert verdict["passed"] is True
    assert [(c["concurrency"], c["status"]) for c in verdict["cells"]] == [(1, "pass"), (2, "not-judged")]
    assert verdict["declared_keys"] == ["primary", "concurrency"]


def test_without_criteria_nothing_is_judged(tmp_path: Path) -> None:
    verdict = build_card(write_run(tmp_path)).to_json()["verdict"]
    assert verdict == {
        "declared": False,
        "passed": None,
        "summary": NOT_DECLARED,
        "criteria": None,
        "cells": [],
        "resources": [],
        "lines": [],
    }


def test_card_header_fields_come_from_the_protocol(tmp_path: Path) -> None:
    card = build_card(write_run(tmp_path)).to_json()
    assert (card["schema"], card["pair"], card["complete"], card["failure"]) == (CARD_SCHEMA, "t", True, None)
    assert card["workloads_statement"].startswith(
        "Conclusions hold for the workloads tested only: w (short-homogeneous, completions; generator "
        "short-homogeneous, seed 0; input tokens min/median/max natural (declared), output tokens 3/3/3)."
    )
    assert card["requests_on_disk"] == {"measured": 16, "partial": 0, "torn_lines": 0, "not_written": 0}
    assert card["engine_version"] == {"plain": None, "speculative": None}
    assert [(c["level"], c["complete"]) for c in card["cells"]] == [("c1", True), ("c2", True)]


def test_warmup_requests_stay_out_and_failed_ones_count_as_errors(tmp_path: Path) -> None:
    records = [_record(role, 1, i) for role in ("plain", "speculative") for i in range(4)]
    records.append(_record("plain", 1, 9, phase="warmup"))
    records[0] = _record("plain", 1, 0, error="http 500")
    card = build_card(write_run(tmp_path, levels=(1,), records=records)).to_json()
    plain = card["cells"][0]["plain"]
    assert (plain["requests"], plain["errors"], plain["ttft_s"]["count"]) == (4, 1, 3)
    assert plain["ttft_s"]["p50"] == pytest.approx(0.3)  # 0.2, 0.3, 0.4 left
    assert card["cells"][0]["ratios"]["ttft_p50"]["pairs"] == 3  # p0 failed on plain: 3 shared prompts
    assert card["requests_on_disk"]["measured"] == 8


def test_a_missing_status_file_reads_as_an_incomplete_run(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    (run / "status.json").unlink()
    card = build_card(run).to_json()
    assert card["complete"] is False and card["failure"] == "unknown"


def test_a_folder_without_protocol_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="is not a run folder \\(no protocol.json\\)"):
        build_card(tmp_path).to_json()


def test_a_cell_measured_on_one_server_only_has_no_ratios_and_is_incomplete(tmp_path: Path) -> None:
    entries = [_entry("plain", 1)]
    records = [_record("plain", 1, i) for i in range(4)]
    cell = build_card(write_run(tmp_path, levels=(1,), entries=entries, records=records)).to_json()["cells"][0]
    assert cell["complete"] is False and cell["ratios"] == {} and "speculative" not in cell
    assert cell["plain"]["requests"] == 4


def test_requests_of_a_cell_cut_short_are_kept_and_marked_partial(tmp_path: Path) -> None:
    entries = [_entry(role, 1) for role in ("plain", "speculative")] + [_entry("plain", 2)]
    records = [
        _record(role, c, i)
        for c in (1, 2)
        for role in ("plain", "speculative")
        for i in range(4)
        if not (c == 2 and role == "speculative" and i >= 2)
    ]
    card = build_card(
        write_run(
            tmp_path, entries=entries, records=records, status={"complete": False, "failure": "interrupted (SIGINT)"}
        )
    ).to_json()
    spec = _cell(card, "c2")["speculative"]
    assert spec["partial"] is True and spec["partial_requests"] == 2 and spec["requests"] == 2
    assert spec["failure"] == (
        "partial: 2 measured requests finished before the cell was cut short (interrupted "
        "(SIGINT)); they are kept, without the cell's server counters"
    )
    assert _cell(card, "c2")["complete"] is False and _cell(card, "c1")["complete"] is True
    assert card["requests_on_disk"]["partial"] == 2
    assert card["failure"] == (
        "interrupted (SIGINT); 2 of 14 measured requests on disk are from cells cut short, kept and marked partial"
    )


def test_output_length_mismatches_and_foreign_traffic_are_noted(tmp_path: Path) -> None:
    entries = [_entry("plain", 1, output_length_mismatches=2), _entry("speculative", 1, foreign_traffic=True)]
    notes = build_card(write_run(tmp_path, levels=(1,), entries=entries)).to_json()["cells"][0]["notes"]
    assert (
        "plain: 2 requests did not return their requested output length; per-token figures stay valid, "
        "summed times do not"
    ) in notes
    assert (
        "speculative: the server finished more requests than loadgen sent (foreign traffic): its counters "
        "include other clients"
    ) in notes


def test_good_acceptance_with_worse_latency_is_noted(tmp_path: Path) -> None:
    entries = [
        _entry(r, c, spec_decode=SPEC if r == "speculative" else None, server_finished_requests=4.0)
        for c in (1, 2)
        for r in ("plain", "speculative")
    ]
    card = build_card(write_run(tmp_path, entries=entries)).to_json()
    note = "acceptance good but latency worse: check draft and verification cost"
    assert _cell(card, "c2")["speculative"]["acceptance"]["acceptance_rate"] == 0.5
    assert note in _cell(card, "c2")["notes"] and note not in _cell(card, "c1")["notes"]  # TPOT ratio 1.5 vs 0.5


def test_low_acceptance_is_noted(tmp_path: Path) -> None:
    low = SPEC | {"num_accepted_tokens": 30.0, "accepted_per_position": [20.0, 7.0, 3.0]}
    entries = [
        _entry(r, 1, spec_decode=low if r == "speculative" else None, server_finished_requests=4.0)
        for r in ("plain", "speculative")
    ]
    cell = build_card(write_run(tmp_path, levels=(1,), entries=entries)).to_json()["cells"][0]
    assert cell["speculative"]["acceptance"]["acceptance_rate"] == pytest.approx(0.1)
    assert "acceptance low: check the draft's fit to the task and target" in cell["notes"]


def test_server_resources_give_the_difference(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    for role, tokens in (("plain", 1000), ("speculative", 950)):
        (run / "servers" / f"{role}-resources.json").write_text(json.dumps({"ready": usage(kv_cache_tokens=tokens)}))
    built = build_card(run)
    assert built.resources.plain is not None and built.resources.plain.kv_cache_tokens == 1000  # read by attribute
    card = built.to_json()
    assert card["resources"]["plain"] == usage(kv_cache_tokens=1000)
    assert card["resources"]["difference"]["kv_cache_tokens_lost"] == 50
    assert card["resources"]["difference"]["kv_capacity_loss"] == pytest.approx(0.05)
    assert card["resources"]["notes"] == []  # 5% is under the 10% note threshold
