"""loadgen.export against closed-form synthetic requests, a real Prometheus scraping the live endpoint,
a real Pushgateway, and the Grafana dashboard's PromQL evaluated by that Prometheus.

Synthetic request i (``record``, binary fractions so float sums are exact): send at 8 i s, scheduled
1/512 s earlier, first chunk 1/8 s after the send, then one chunk every 1/32 s carrying ``tokens``
(default 1, 3, 3, 2): TTFT 0.125 s, E2E 0.125 + 3/32 = 0.21875 s, TPOT (3/32) / 8 s/token.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from loadgen.measure.metrics import MeasuredRequest, cell_stats
from loadgen.prom.deltas import SpecDecodeCounters
from loadgen.prom.promql import PromQLReader
from loadgen.records.request import RequestRecord
from loadgen.run.export import LATENCY_BUCKETS_S, Exporter, PushError
from tests.support.promstack import ManagedProcess, PrometheusServer, wait_until

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana" / "loadgen-dashboard.json"
TOKENS = [1, 3, 3, 2]  # 9 output tokens, 4 chunks


def record(
    i: int,
    role: str = "speculative",
    concurrency: int = 4,
    workload: str = "short",
    *,
    warmup: bool = False,
    error: str | None = None,
    tokens: list[int] = TOKENS,
) -> RequestRecord:
    send = 8.0 * i
    return RequestRecord(
        prompt_id=f"p{i}",
        role=role,
        workload=workload,
        concurrency=concurrency,
        phase="warmup" if warmup else "measured",
        scheduled_s=send - 1 / 512,
        send_s=send,
        chunk_arrivals_s=[] if error else [send + 0.125 + k / 32 for k in range(len(tokens))],
        chunk_tokens=[] if error else list(tokens),
        error=error,
        requested_output_tokens=sum(tokens),
    )


def value(exporter: Exporter, name: str, **labels: str) -> float | None:
    result: float | None = exporter.registry.get_sample_value(name, labels)
    return result


def cell(role: str = "speculative", c: str = "4") -> dict[str, str]:
    return {"pair": "p", "role": role, "workload": "short", "concurrency": c, "level": f"c{c}"}


def test_observe_request_closed_form() -> None:
    exp = Exporter("p")
    records = [record(0), record(1), record(2, warmup=True), record(3, error="HTTP 500: boom"), record(4, tokens=[1])]
    observed = [exp.observe_request(r) for r in records]
    assert observed == [True, True, False, True, True]
    lab = cell()
    assert value(exp, "loadgen_requests_total", **lab, outcome="ok") == 3
    assert value(exp, "loadgen_requests_total", **lab, outcome="error") == 1
    assert value(exp, "loadgen_output_tokens_total", **lab) == 9 + 9 + 1
    assert value(exp, "loadgen_token_chunks_total", **lab) == 4 + 4 + 1
    assert value(exp, "loadgen_ttft_seconds_count", **lab) == 3
    assert value(exp, "loadgen_ttft_seconds_sum", **lab) == 3 * 0.125
    assert value(exp, "loadgen_e2e_latency_seconds_sum", **lab) == 0.21875 + 0.21875 + 0.125
    assert value(exp, "loadgen_tpot_seconds_count", **lab) == 2  # the 1-token request has no TPOT
    assert value(exp, "loadgen_tpot_seconds_sum", **lab) == 2 * (3 / 32) / 8
    assert value(exp, "loadgen_inter_chunk_latency_seconds_count", **lab) == 6
    assert value(exp, "loadgen_inter_chunk_latency_seconds_sum", **lab) == 6 / 32
    assert value(exp, "loadgen_itl_seconds_count", **lab) == 16  # tokens after the first chunk
    assert value(exp, "loadgen_itl_seconds_sum", **lab) == pytest.approx(2 * 3 / 32)
    assert value(exp, "loadgen_send_lag_seconds_count", **lab) == 4  # every measured request
    assert value(exp, "loadgen_send_lag_seconds_sum", **lab) == 4 / 512
    assert value(exp, "loadgen_send_lag_seconds_bucket", **lab, le="0.001") == 0
    assert value(exp, "loadgen_send_lag_seconds_bucket", **lab, le="0.0025") == 4
    assert value(exp, "loadgen_ttft_seconds_bucket", **lab, le="0.1") == 0
    assert value(exp, "loadgen_ttft_seconds_bucket", **lab, le="0.15") == 3
    assert LATENCY_BUCKETS_S[0] == 0.001 and LATENCY_BUCKETS_S[-1] == 60.0


def test_cell_finished_sets_the_cards_numbers() -> None:
    exp = Exporter("p")
    records = [record(i) for i in range(3)]
    counters = SpecDecodeCounters(10.0, 30.0, 15.0, (8.0, 5.0, 2.0), False)
    stats = cell_stats(
        [MeasuredRequest(r.scheduled_s, r.send_s, r.chunk_arrivals_s, r.chunk_tokens, False) for r in records], counters
    )
    exp.cell_finished("speculative", "short", 4, stats)
    lab = cell()
    assert value(exp, "loadgen_acceptance_rate", **lab) == 0.5
    assert value(exp, "loadgen_mean_acceptance_length", **lab) == 2.5
    assert [value(exp, "loadgen_per_position_acceptance_rate", **lab, position=str(i)) for i in range(3)] == [
        0.8,
        0.5,
        0.2,
    ]
    assert value(exp, "loadgen_cell_spec_decode_count", **lab, counter="drafts") == 10
    assert value(exp, "loadgen_output_throughput_tokens_per_second", **lab) == 27 / 16.21875
    assert value(exp, "loadgen_cell_latency_seconds", **lab, metric="ttft", stat="p50") == 0.125
    assert value(exp, "loadgen_cell_latency_seconds", **lab, metric="tpot", stat="p99") == (3 / 32) / 8
    assert value(exp, "loadgen_cell_requests", **lab) == 3 and value(exp, "loadgen_cell_errors", **lab) == 0
    assert value(exp, "loadgen_mean_tokens_per_chunk", **lab) == 2.25
    assert value(exp, "loadgen_cell_info", **lab, loadgen_version=__import__("loadgen").__version__) == 1
    plain = cell_stats([], None)
    exp.cell_finished("plain", "short", 4, plain)
    assert value(exp, "loadgen_acceptance_rate", **cell("plain")) is None
    assert value(exp, "loadgen_cell_requests", **cell("plain")) == 0


def test_live_endpoint_scraped_by_prometheus(prometheus_server: PrometheusServer, loadgen_exporter_port: int) -> None:
    exp = Exporter("live-pair")
    exp.serve(loadgen_exporter_port)
    try:
        assert exp.url == f"http://127.0.0.1:{loadgen_exporter_port}"
        with pytest.raises(RuntimeError):
            exp.serve(loadgen_exporter_port)
        n = 7
        for i in range(n):
            exp.observe_request(record(i, role="plain", concurrency=2))
        exp.observe_request(record(99, role="plain", concurrency=2, error="ReadTimeout"))
        assert "loadgen_requests_total" in httpx.get(f"{exp.url}/metrics", timeout=5).text
        with PromQLReader(prometheus_server.url, timeout_s=5) as reader:
            t = reader.wait_for_scrape(time.time(), 'job="loadgen"', metric="up", timeout_s=20)
            sel = 'job="loadgen",pair="live-pair",role="plain",workload="short",concurrency="2",level="c2"'
            assert reader.total(f'loadgen_requests_total{{{sel},outcome="ok"}}', t) == n
            assert reader.total(f'loadgen_requests_total{{{sel},outcome="error"}}', t) == 1
            assert reader.total(f"loadgen_output_tokens_total{{{sel}}}", t) == 9 * n
            p50 = reader.total(f"histogram_quantile(0.5, sum by (le) (loadgen_ttft_seconds_bucket{{{sel}}}))", t)
            assert p50 is not None and 0.1 < p50 <= 0.15  # bucket interpolation; the exact p50 is 0.125
    finally:
        exp.close()
    assert exp.url is None


def test_push_groups_by_cell(pushgateway: ManagedProcess, prometheus_server: PrometheusServer) -> None:
    exp = Exporter("push/pair")
    for i in range(3):
        exp.observe_request(record(i, role="speculative", concurrency=8))
    exp.observe_request(record(5, role="plain", concurrency=8))
    exp.cell_finished(
        "speculative", "short", 8, cell_stats([], SpecDecodeCounters(4.0, 12.0, 6.0, (3.0, 2.0, 1.0), False))
    )
    exp.push(pushgateway.url, "speculative", "short", 8)
    exp.push(pushgateway.url.removeprefix("http://"), "plain", "short", 8, level_label="c8")
    pushed_at = time.time()

    families = {f.name: f for f in text_string_to_metric_families(httpx.get(f"{pushgateway.url}/metrics").text)}
    ours = [s for s in families["loadgen_requests"].samples if s.labels.get("pair") == "push/pair"]
    got = {
        (s.labels["job"], s.labels["role"], s.labels["workload"], s.labels["concurrency"], s.labels["outcome"]): s.value
        for s in ours
        if s.name == "loadgen_requests_total"
    }
    assert got == {("loadgen", "speculative", "short", "8", "ok"): 3.0, ("loadgen", "plain", "short", "8", "ok"): 1.0}
    acc = [s for s in families["loadgen_acceptance_rate"].samples if s.labels.get("pair") == "push/pair"]
    assert [(s.labels["role"], s.value) for s in acc] == [("speculative", 0.5)]

    groups = httpx.get(f"{pushgateway.url}/api/v1/metrics").json()["data"]
    keys = [g["labels"] for g in groups if g["labels"].get("pair") == "push/pair"]
    assert sorted(keys, key=lambda k: k["role"]) == [
        {"job": "loadgen", "pair": "push/pair", "role": role, "workload": "short", "concurrency": "8", "level": "c8"}
        for role in ("plain", "speculative")
    ]
    # Each group holds only its own cell's series.
    spec_group = next(
        g for g in groups if g["labels"].get("pair") == "push/pair" and g["labels"]["role"] == "speculative"
    )
    roles = {
        m["labels"]["role"]
        for fam in spec_group.values()
        if isinstance(fam, dict) and "metrics" in fam
        for m in fam["metrics"]
    }
    assert roles == {"speculative"}

    # Prometheus scraping the gateway with honor_labels keeps job="loadgen" and the grouping labels.
    with PromQLReader(prometheus_server.url, timeout_s=5) as reader:
        t = reader.wait_for_scrape(pushed_at, 'job="pushgateway"', metric="up", timeout_s=20)
        rows = reader.query('loadgen_requests_total{job="loadgen",pair="push/pair"}', t)
        assert sorted((r["role"], v) for r, v in rows) == [("plain", 1.0), ("speculative", 3.0)]


def test_push_failure_is_a_one_line_push_error(prometheus_server: PrometheusServer) -> None:
    exp = Exporter("p")
    exp.observe_request(record(0))
    with pytest.raises(PushError, match=r"push to http://127\.0\.0\.1:9 failed") as refused:
        exp.push("http://127.0.0.1:9", "speculative", "short", 4, timeout_s=2)
    assert "\n" not in str(refused.value)
    with pytest.raises(PushError, match="HTTP 4"):  # Prometheus is not a Pushgateway: 404/405
        exp.push(prometheus_server.url, "speculative", "short", 4, timeout_s=5)


def _dashboard_exprs(dashboard: dict[str, object]) -> list[str]:
    exprs: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, val in node.items():
                if key == "expr" and isinstance(val, str):
                    exprs.append(val)
                elif key == "query" and isinstance(val, dict) and isinstance(val.get("query"), str):
                    m = re.fullmatch(r"label_values\((.+),\s*\w+\)", val["query"])
                    exprs.append(m.group(1) if m else val["query"])
                else:
                    walk(val)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(dashboard)
    return exprs


def test_grafana_dashboard_is_valid_and_its_promql_parses(prometheus_server: PrometheusServer) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    assert all(p["datasource"]["uid"] == "${datasource}" for p in panels)
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
    exprs = _dashboard_exprs(dashboard)
    text = "\n".join(exprs)
    for needed in (
        "loadgen_ttft_seconds_bucket",
        "loadgen_itl_seconds_bucket",
        "loadgen_inter_chunk_latency_seconds",
        "vllm:spec_decode_num_accepted_tokens_per_pos_total",
        "1 + sum by (job) (rate(vllm:spec_decode_num_accepted_tokens_total",
    ):
        assert needed in text
    with PromQLReader(prometheus_server.url, timeout_s=5) as reader:
        for expr in exprs:
            concrete = re.sub(r"\$__rate_interval", "1m", expr)
            concrete = re.sub(r"\$\w+", ".*", concrete)
            reader.query(concrete, time.time())  # raises PromQLError on a parse or execution error


def test_wait_until_fails_with_a_message() -> None:
    with pytest.raises(pytest.fail.Exception, match="timed out after 0.1 s waiting for nothing"):
        wait_until(lambda: False, 0.1, "nothing")
