"""prom/scrape.py and prom/metricnames.py: one scrape of a scripted server and each way it can fail (one line
each), gauges sampled over real HTTP, and the gauges and per-cell histogram deltas of the recorded vLLM 0.32
``/metrics`` pages (tests/data/vllm032_spec_t0/t1.prom: two engines), against hand-computed values."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import httpx
import pytest

from loadgen.errors import RunFailed
from loadgen.prom.exposition import parse_metrics
from loadgen.prom.metricnames import all_names, candidates, resolve
from loadgen.prom.scrape import read_gauges, sample_gauges, scrape, server_histograms, summarize_gauges
from loadgen.records.cellparts import GaugeSample
from tests.support.promstack import free_port
from tests.support.scripted_server import scripted_server

DATA = Path(__file__).resolve().parents[1] / "data"
T0, T1 = ((DATA / f"vllm032_spec_t{i}.prom").read_text() for i in (0, 1))


def test_one_scrape_returns_the_text_and_its_parse() -> None:
    with scripted_server({}, gets={"/metrics": (200, T1.encode())}) as url:
        text, snap = scrape(url)
    assert text == T1 and snap.total("vllm:num_requests_running") == 5.0


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (404, "HTTP 404 Not Found: the server has no /metrics endpoint (not a vLLM server, or a proxy that hides it)"),
        (401, "HTTP 401 Unauthorized: the server refuses the scrape (an auth proxy?)"),
        (503, "HTTP 503 Service Unavailable: its metrics exporter failed"),
        (302, "HTTP 302 Found: not Prometheus text"),
    ],
)
def test_a_status_other_than_200_is_named(status: int, says: str) -> None:
    with scripted_server({}, gets={"/metrics": (status, b"")}) as url, pytest.raises(RunFailed) as info:
        scrape(url)
    assert str(info.value) == f"{url}/metrics answered {says}"


def test_garbage_and_nothing_listening() -> None:
    with (
        scripted_server({}, gets={"/metrics": (200, b"<html>hello</html>\n")}) as url,
        pytest.raises(RunFailed, match=f"^{url}/metrics is not Prometheus text \\("),
    ):
        scrape(url)
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(RunFailed, match=f"^cannot reach {url}/metrics \\(ConnectError: .*\\); is the server alive\\?$"):
        scrape(url)


def test_gauges_sampled_over_http_and_summarised() -> None:
    samples: list[GaugeSample] = []
    ticks = itertools.count()

    async def run(url: str) -> None:
        async with httpx.AsyncClient() as client:
            task = asyncio.create_task(sample_gauges(client, url, samples.append, lambda: float(next(ticks)), 0.02))
            while len(samples) < 3:
                await asyncio.sleep(0.01)
            task.cancel()

    with scripted_server({}, gets={"/metrics": (200, T1.encode())}) as url:
        asyncio.run(run(url))
    assert [s.to_json() for s in samples[:3]] == [
        {
            "t_s": float(i),
            "vllm:kv_cache_usage_perc": 0.025,
            "vllm:num_requests_running": 5.0,
            "vllm:num_requests_waiting": 0.0,
        }
        for i in range(3)
    ]
    with scripted_server({}, gets={"/metrics": (200, b"{not prometheus")}) as url:
        samples.clear()
        asyncio.run(run(url))
    first = samples[0].to_json()
    assert first["error"].startswith("PromParseError: ") and set(first) == {"t_s", "error"}


def test_summaries_of_gauge_samples_under_either_name() -> None:
    samples = [
        {"vllm:kv_cache_usage_perc": 0.5, "vllm:num_requests_running": 2.0},
        {"error": "x"},
        {"vllm:kv_cache_usage_perc": 0.25, "vllm:num_requests_running": None},
        {"vllm:gpu_cache_usage_perc": 0.9},
    ]
    got = {k: g.to_json() for k, g in summarize_gauges([GaugeSample.of(s) for s in samples]).items()}
    assert got["vllm:kv_cache_usage_perc"] == {
        "mean": 0.375,
        "max": 0.5,
        "samples": 2.0,
        "metric": "vllm:kv_cache_usage_perc",
    }
    assert got["vllm:num_requests_running"] == {
        "mean": 2.0,
        "max": 2.0,
        "samples": 1.0,
        "metric": "vllm:num_requests_running",
    }
    assert got["vllm:num_requests_waiting"] == {
        "mean": None,
        "max": None,
        "samples": 0.0,
        "metric": "vllm:num_requests_waiting",
    }
    old = summarize_gauges([GaugeSample(values={"vllm:gpu_cache_usage_perc": v}) for v in (0.9, 0.7)])
    assert old["vllm:kv_cache_usage_perc"].to_json() == {
        "mean": pytest.approx(0.8),
        "max": 0.9,
        "samples": 2.0,
        "metric": "vllm:gpu_cache_usage_perc",
    }


def test_gauges_and_histogram_deltas_of_the_recorded_pages() -> None:
    before, after = parse_metrics(T0), parse_metrics(T1)
    assert read_gauges(after) == {
        "vllm:kv_cache_usage_perc": 0.025,
        "vllm:num_requests_running": 5.0,
        "vllm:num_requests_waiting": 0.0,
    }  # summed over engines 0 and 1
    ttft = server_histograms(before, after)["ttft_s"].to_json()
    # count (8 + 5) - (2 + 1) = 10, sum (4.49 + 2.2) - (0.1 + 0.3) = 6.29; p50: rank 5 in (0.25, 0.5] holding
    # ranks 5-7, linear: 0.25 + (5 - 4) / (7 - 4) x 0.25
    assert (ttft["metric"], ttft["count"], ttft["sum"]) == (
        "vllm:time_to_first_token_seconds",
        10.0,
        pytest.approx(6.29),
    )
    assert ttft["p50"] == pytest.approx(0.25 + 0.25 / 3) and ttft["p50_above_bound"] is False
    assert ttft["upper_bounds"][-1] == "+Inf" and ttft["cumulative_counts"][-1] == 10.0 and ttft["reset"] is False
    assert server_histograms(after, after) == {}  # no observations in between


def test_older_metric_names() -> None:
    assert candidates("vllm:kv_cache_usage_perc") == ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
    assert candidates("vllm:prefix_cache_hits_total") == (
        "vllm:prefix_cache_hits_total",
        "vllm:gpu_prefix_cache_hits_total",
    )
    assert candidates("vllm:num_requests_running") == ("vllm:num_requests_running",)
    assert all_names(("vllm:inter_token_latency_seconds", "x")) == (
        "vllm:inter_token_latency_seconds",
        "vllm:time_per_output_token_seconds",
        "x",
    )
    old = parse_metrics('vllm:gpu_cache_usage_perc{engine="0"} 0.5\nvllm:gpu_prefix_cache_hits_total 3\n')
    assert resolve(old, "vllm:kv_cache_usage_perc") == "vllm:gpu_cache_usage_perc"
    assert resolve(old, "vllm:prefix_cache_hits") == "vllm:gpu_prefix_cache_hits"
    assert read_gauges(old)["vllm:gpu_cache_usage_perc"] == 0.5 and resolve(old, "vllm:num_requests_running") is None
    both = parse_metrics("vllm:gpu_cache_usage_perc 0.5\nvllm:kv_cache_usage_perc 0.25\n")
    assert resolve(both, "vllm:kv_cache_usage_perc") == "vllm:kv_cache_usage_perc"  # the current name wins
