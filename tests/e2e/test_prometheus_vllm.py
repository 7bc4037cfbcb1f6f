"""Prometheus both ways against a real vLLM CPU server: a real Prometheus scrapes the speculative server
and loadgen's own exporter; loadgen reads acceptance back through PromQL and it matches the direct
scrape; the Pushgateway holds the pushed cell."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from loadgen.profile.pairfile import load_pair
from loadgen.run.cell import RunContext, run_cell_on
from loadgen.run.observe import ObserveOptions, Observers
from loadgen.run.plan import plan_cells
from loadgen.serve import servers
from loadgen.store.rundir import JsonlAppender
from tests.support.promstack import ManagedProcess, PrometheusServer, free_port, wait_until


def _value(prometheus: PrometheusServer, expr: str) -> float | None:
    result = prometheus.query(expr)
    return float(result[0]["value"][1]) if result else None  # type: ignore[index]


def test_promql_acceptance_matches_the_direct_scrape(
    demo_spec_server: servers.Server,
    prometheus_factory: Callable[..., PrometheusServer],
    pushgateway: ManagedProcess,
    tmp_path: Path,
) -> None:
    pair = load_pair("demo-cpu")
    hostport = httpx.URL(demo_spec_server.base_url).netloc.decode()
    exporter_port = free_port()
    prometheus = prometheus_factory({"vllm": [hostport], "loadgen": [f"127.0.0.1:{exporter_port}"]})
    prometheus.wait_for_target("vllm", timeout_s=30)
    observers = Observers(
        pair.name,
        ObserveOptions(
            metrics_port=exporter_port, pushgateway=pushgateway.url, prometheus_url=prometheus.url, progress=False
        ),
        print,
    )
    for sub in ("metrics", "servers"):
        (tmp_path / sub).mkdir()
    appenders = (JsonlAppender(tmp_path / "requests.jsonl"), JsonlAppender(tmp_path / "cells.jsonl"))
    run = RunContext(pair, tmp_path, *appenders, print, observers)
    cell = next(c for c in plan_cells(pair) if c.workload == "short-homogeneous" and c.concurrency == 2)
    try:
        run_cell_on(run, "speculative", demo_spec_server, cell)
        # loadgen's exporter is scraped by the same Prometheus: its request counter reads back exactly
        prometheus.wait_for_target("loadgen", timeout_s=30)
        expr = 'sum(loadgen_requests_total{role="speculative",workload="short-homogeneous",level="c2"})'
        measured = len(cell.measured)  # demo-cpu: 4 measured requests per block at c = 2
        assert measured == 4
        wait_until(lambda: _value(prometheus, expr) == measured, 30, "Prometheus to scrape loadgen's exporter")
    finally:
        observers.close()
        run.requests.close()
        run.cells_log.close()
    entry = json.loads((tmp_path / "cells.jsonl").read_text().splitlines()[-1])
    direct = entry["spec_decode"]
    assert direct["num_drafts"] > 0
    via = entry["promql"]
    assert via["disagreements"] == [] and via["selector"] == f'instance="{hostport}"'
    for key in ("num_drafts", "num_draft_tokens", "num_accepted_tokens"):
        assert via["counters"][key] == direct[key]
    assert via["counters"]["accepted_per_position"] == direct["accepted_per_position"]
    # the Pushgateway holds the cell's series under its grouping key
    text = httpx.get(f"{pushgateway.url}/metrics", timeout=10).text
    samples = [
        s
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
        if s.name == "loadgen_acceptance_rate" and s.labels.get("level") == "c2" and s.labels.get("pair") == "demo-cpu"
    ]
    assert len(samples) == 1
    assert samples[0].value == direct["num_accepted_tokens"] / direct["num_draft_tokens"]
