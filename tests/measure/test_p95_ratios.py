"""A cell's ratios carry the TTFT and E2E latency p95 ratios beside the p50 and p99 ones (measure/cellratios.py),
from the two arms' own p95 (numpy linear interpolation)."""

from __future__ import annotations

import pytest

from loadgen.measure.cellratios import METRICS, blocked_ratios
from loadgen.records.request import RequestRecord


def _records(role: str, ttfts: list[float], block: int) -> list[RequestRecord]:
    """Requests sent at 0 whose first token arrives after ``ttft`` s and the next two 10 ms apart each."""
    return [
        RequestRecord(
            f"p{i}",
            role,
            "w",
            1,
            "measured",
            0.0,
            level="c1",
            repetition=block,
            send_s=0.0,
            chunk_arrivals_s=[t, t + 0.01, t + 0.02],
            chunk_tokens=[1, 1, 1],
            requested_output_tokens=3,
        )
        for i, t in enumerate(ttfts)
    ]


def test_the_p95_ratios_are_each_arms_p95_over_the_plain_one() -> None:
    plain = [t / 100 for t in range(1, 21)]  # 0.01 .. 0.20 s: p95 = 0.01 + 0.95 * 0.19 = 0.1905 s
    spec = [2 * t for t in plain]  # every TTFT twice the plain one: every ratio 2
    assert METRICS.index("ttft_p50") < METRICS.index("ttft_p95") < METRICS.index("ttft_p99")
    out = blocked_ratios(
        [*_records("plain", plain, 0), *_records("plain", plain, 1)],
        [*_records("speculative", spec, 0), *_records("speculative", spec, 1)],
    )
    assert out["ttft_p95"].value == pytest.approx(2.0)
    assert out["e2e_p95"].value == pytest.approx((2 * 0.1905 + 0.02) / (0.1905 + 0.02))
    assert out["ttft_p95"].blocks == 2
