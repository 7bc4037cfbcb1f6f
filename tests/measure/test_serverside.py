"""measure/serverside.py: the server's histogram p50 beside the client's, with vLLM-like E2E buckets (bounds 1,
5, 20, 60 s and +Inf): agreement within one bucket, the top-bucket trap (a rank in +Inf reads as 60 s) reported
as above the bound and never as agreeing, and the bounds in strict JSON."""

from __future__ import annotations

import math

from loadgen.measure.serverside import agreement, bounds_of, compare, json_bounds
from loadgen.records.cellparts import ServerHistogram

BOUNDS = [1.0, 5.0, 20.0, 60.0, math.inf]


def test_bounds_read_and_written() -> None:
    assert bounds_of([1, 5.0, "+Inf"]) == (1.0, 5.0, math.inf)
    assert bounds_of([1, None]) == (1.0, math.inf) and bounds_of(None) == ()
    assert json_bounds(BOUNDS) == (1.0, 5.0, 20.0, 60.0, "+Inf")


def test_agreement_within_one_bucket() -> None:
    assert agreement(3.0, 4.5, BOUNDS, False) is True  # same bucket (1, 5]
    assert agreement(3.0, 12.0, BOUNDS, False) is True  # the neighbouring bucket
    assert agreement(0.5, 30.0, BOUNDS, False) is False  # two buckets apart
    assert agreement(None, 3.0, BOUNDS, False) is None and agreement(3.0, 3.0, [], False) is None


def test_above_the_last_bound_never_agrees() -> None:
    assert agreement(59.0, 60.0, BOUNDS, True) is False  # the client is within the finite buckets: they disagree
    assert agreement(200.0, 60.0, BOUNDS, True) is None  # both above 60 s: nothing left to compare
    assert agreement(None, 60.0, BOUNDS, True) is None and agreement(1.0, 60.0, [math.inf], True) is None


def test_a_row_of_the_server_vs_client_check() -> None:
    hist = {
        "metric": "e2e_request_latency_seconds",
        "p50": 60.0,
        "upper_bounds": [1, 5, 20, 60, "+Inf"],
        "cumulative_counts": [0, 1, 2, 3, 10],
        "count": 10,
        "sum": 2000.0,
    }
    assert compare(200.0, _h(hist)).to_json() == {
        "client_p50": 200.0,
        "server_p50": 60.0,
        "server_above_bound": True,
        "metric": "e2e_request_latency_seconds",
        "agrees": None,
        "bucket_bounds": [1.0, 5.0, 20.0, 60.0, "+Inf"],
    }  # 7 of 10 in +Inf: recomputed
    low = hist | {"p50": 4.0, "cumulative_counts": [2, 8, 9, 10, 10]}
    assert compare(3.2, _h(low)).server_above_bound is False and compare(3.2, _h(low)).agrees is True
    assert compare(3.2, _h(low | {"p50_above_bound": True})).agrees is False  # an older entry's own flag counts
    assert compare(None, _h({"metric": "ttft"})).bucket_bounds == () and compare(None, _h({})).agrees is None


def _h(line: dict[str, object]) -> ServerHistogram:
    """A cell entry's ``server_histograms`` item as read back."""
    return ServerHistogram.from_json(line, source="cells.jsonl")
