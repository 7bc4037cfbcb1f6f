"""records/cellparts.py: the parts of a cells.jsonl line that prom/ and measure/ build write the keys earlier code
wrote, in its order, and read back what they write; a gauge sample's flat line; a histogram of an older line
(no ``*_above_bound``, a null bound) reads with its defaults; a wrong kind is one BadInput line."""

from __future__ import annotations

import math

import pytest

from loadgen.errors import BadInput
from loadgen.records.cellparts import (
    GaugeSample,
    GaugeSummary,
    PromqlCheck,
    ServerCounters,
    ServerHistogram,
    VerificationDepth,
)


def test_server_counters_and_depth_write_every_field_in_order() -> None:
    counters = ServerCounters(12.0, None, ("0", "1"), ("1",), (1700000000.0, None))
    assert list(counters.to_json().items()) == [
        ("server_finished_requests", 12.0),
        ("server_generation_tokens", None),
        ("server_engines", ["0", "1"]),
        ("server_reset_engines", ["1"]),
        ("process_start_time_s", [1700000000.0, None]),
    ]
    assert ServerCounters.from_json(counters.to_json(), source="cells.jsonl") == counters
    depth = VerificationDepth(3, False, "enable_adaptive_verification = true", 2.9)
    assert list(depth.to_json()) == ["k", "k_fixed", "k_variable_reason", "mean_verified_tokens_per_step"]
    assert VerificationDepth(None, True, None, None).to_json()["k"] is None


def test_a_histogram_built_writes_in_full_and_an_older_one_reads_with_defaults() -> None:
    h = ServerHistogram("vllm:e2e", 5.0, 805.0, (1.0, "+Inf"), (1.0, 5.0), False, 60.0, 60.0, 60.0, True, True, True)
    line = h.in_full().to_json()
    assert list(line)[:6] == ["metric", "count", "sum", "upper_bounds", "cumulative_counts", "reset"]
    assert line["upper_bounds"] == [1.0, "+Inf"] and line["p99_above_bound"] is True and len(line) == 12
    older = ServerHistogram.from_json({"metric": "ttft", "upper_bounds": [1, None], "count": 2}, source="old")
    assert older.upper_bounds == (1, None) and older.p50 is None and older.p50_above_bound is False
    assert older.to_json() == {"metric": "ttft", "upper_bounds": [1, None], "count": 2}  # its own keys only
    with pytest.raises(BadInput, match=r"^cells.jsonl: count: expected a number, got 'x'"):
        ServerHistogram.from_json({"count": "x"}, source="cells.jsonl")


def test_a_gauge_summary_and_sample() -> None:
    assert GaugeSummary(0.5, 0.75, 2.0, "vllm:gpu_cache_usage_perc").to_json() == {
        "mean": 0.5,
        "max": 0.75,
        "samples": 2.0,
        "metric": "vllm:gpu_cache_usage_perc",
    }
    sample = GaugeSample(3.0, {"vllm:num_requests_running": 5.0, "vllm:num_requests_waiting": None})
    assert sample.to_json() == {"t_s": 3.0, "vllm:num_requests_running": 5.0, "vllm:num_requests_waiting": None}
    assert GaugeSample.of(sample.to_json()) == sample and sample.value("vllm:num_requests_running") == 5.0
    failed = GaugeSample(4.0, error="ConnectError: refused")
    assert (
        failed.to_json() == {"t_s": 4.0, "error": "ConnectError: refused"}
        and GaugeSample.of(failed.to_json()) == failed
    )
    assert GaugeSample.of({"x": "n/a", "y": math.inf}).values == {"x": None, "y": math.inf}
    assert GaugeSample(values={"x": 1.0}).to_json() == {"x": 1.0}  # no clock: no t_s


def test_a_promql_check_writes_its_four_keys_or_only_its_error() -> None:
    keys = ("selector", "window", "counters", "disagreements")
    seen = PromqlCheck("{job='vllm'}", (100.0, 160.5), None, ()).keyed(*keys)
    assert list(seen.to_json().items()) == [
        ("selector", "{job='vllm'}"),
        ("window", [100.0, 160.5]),
        ("counters", None),
        ("disagreements", []),
    ]
    assert PromqlCheck(error="Prometheus at :9090 did not answer").to_json() == {
        "error": "Prometheus at :9090 did not answer"
    }
    line = {"selector": "s", "window": [1.0, 2.0], "counters": {"num_drafts": 3.0}, "disagreements": ["x"]}
    assert PromqlCheck.from_json(line, source="cells.jsonl").to_json() == line
