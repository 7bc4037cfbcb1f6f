"""PromQLReader against a real Prometheus scraping recorded vLLM /metrics texts (tests/data), and
cross_check (pure).

Closed form (tests/data/vllm032_spec_t0.prom -> _t1.prom, engines 0 and 1 summed): drafts 60 + 40 = 100,
draft tokens 180 + 120 = 300, accepted 90 + 60 = 150, per position (40+30, 30+20, 20+10) = (70, 50, 30).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadgen.prom import deltas
from loadgen.prom import exposition as prom
from loadgen.prom.deltas import SpecDecodeCounters
from loadgen.prom.promql import PromQLError, PromQLReader, cross_check, normalize_selector
from tests.support.promstack import PrometheusServer, StaticExporter, start_prometheus, start_pushgateway

DATA = Path(__file__).parents[1] / "data"
SEL = 'job="vllm-static"'


def text(name: str) -> str:
    return (DATA / f"vllm032_{name}.prom").read_text()


def serve_and_wait(reader: PromQLReader, exporter: StaticExporter, page: str, selector: str = SEL) -> float:
    """Serve ``page`` and return the time of the first scrape that saw it."""
    exporter.set_text(page)
    return reader.wait_for_scrape(time.time(), selector, timeout_s=20)


@pytest.fixture(scope="module")
def reader(prometheus_server: PrometheusServer) -> Iterator[PromQLReader]:
    prometheus_server.wait_for_target("vllm-static")
    with PromQLReader(prometheus_server.url, timeout_s=5) as client:
        yield client


@pytest.fixture(scope="module")
def scraped_window(reader: PromQLReader, vllm_static_exporter: StaticExporter) -> tuple[float, float]:
    """Scrape times (t0, t1) at which Prometheus saw spec_t0 and then spec_t1 (kept in its TSDB, so
    later tests that serve other pages can still query these instants)."""
    t0 = serve_and_wait(reader, vllm_static_exporter, text("spec_t0"))
    t1 = serve_and_wait(reader, vllm_static_exporter, text("spec_t1"))
    return t0, t1


def test_query_vector_and_scalar(reader: PromQLReader) -> None:
    now = time.time()
    rows = reader.query(f"vllm:spec_decode_num_drafts_total{{{SEL}}}", now)
    assert sorted(labels["engine"] for labels, _ in rows) == ["0", "1"]
    assert all(labels["job"] == "vllm-static" and labels["model_name"] == "target" for labels, _ in rows)
    assert reader.query("1 + 2", now) == [({}, 3.0)]


def test_spec_decode_delta_equals_direct_scrape_diff(reader: PromQLReader, scraped_window: tuple[float, float]) -> None:
    t0, t1 = scraped_window
    t0_snap, t1_snap = prom.parse_metrics(text("spec_t0")), prom.parse_metrics(text("spec_t1"))
    direct = deltas.spec_decode_delta(t0_snap, t1_snap)
    assert direct == SpecDecodeCounters(100.0, 300.0, 150.0, (70.0, 50.0, 30.0), False)
    exact = reader.spec_decode_delta_at_instants(t0, t1, SEL)
    assert exact == direct
    assert cross_check(direct, exact) == []
    # increase() with the window's edges on scrape times: nothing extrapolated (Prometheus 2.x).
    via_increase = reader.spec_decode_delta(t0, t1, SEL)
    assert via_increase is not None
    assert cross_check(direct, via_increase, tolerance=1e-9) == []
    assert not via_increase.reset


def test_spec_decode_delta_label_filter_and_absent_series(
    reader: PromQLReader, scraped_window: tuple[float, float]
) -> None:
    t0, t1 = scraped_window
    filtered = reader.spec_decode_delta_at_instants(t0, t1, '{job="vllm-static", model_name="target", engine="1"}')
    assert filtered == SpecDecodeCounters(40.0, 120.0, 60.0, (30.0, 20.0, 10.0), False)
    assert reader.spec_decode_delta(t0, t1, 'job="vllm-static",engine="1"') == filtered
    assert reader.spec_decode_delta(t0, t1, 'job="no-such-job"') is None
    assert reader.spec_decode_delta_at_instants(t0, t1, 'job="no-such-job"') is None


def test_unaligned_window_extrapolates_and_cross_check_says_so(
    reader: PromQLReader, scraped_window: tuple[float, float]
) -> None:
    t0, t1 = scraped_window
    direct = SpecDecodeCounters(100.0, 300.0, 150.0, (70.0, 50.0, 30.0), False)
    # Edges half a scrape interval after each scrape: the latest samples at the edges are still the
    # t0 and t1 scrapes, so the instants method stays exact.
    assert reader.spec_decode_delta_at_instants(t0 + 0.5, t1 + 0.5, SEL) == direct
    # increase() over [t0, t1 + 0.5] holds the samples at t0 and t1 and extrapolates the 0.5 s to the
    # end (promql/functions.go extrapolatedRate: gap < 1.1 x the sample interval): x (span + 0.5) / span.
    via_increase = reader.spec_decode_delta(t0, t1 + 0.5, SEL)
    assert via_increase is not None
    factor = (t1 - t0 + 0.5) / (t1 - t0)
    assert via_increase.num_drafts == pytest.approx(100.0 * factor)
    assert via_increase.accepted_per_position == pytest.approx((70.0 * factor, 50.0 * factor, 30.0 * factor))
    problems = cross_check(direct, via_increase, tolerance=0.01)
    assert len(problems) == 6 and problems[0].startswith("num_drafts: direct 100, Prometheus")
    with pytest.raises(ValueError):
        reader.spec_decode_delta(t1, t0, SEL)


def test_counter_reset_is_seen(reader: PromQLReader, vllm_static_exporter: StaticExporter) -> None:
    t1 = serve_and_wait(reader, vllm_static_exporter, text("spec_t1"))
    t2 = serve_and_wait(reader, vllm_static_exporter, text("spec_t2_engine1_restarted"))
    direct = deltas.spec_decode_delta(
        prom.parse_metrics(text("spec_t1")), prom.parse_metrics(text("spec_t2_engine1_restarted"))
    )
    assert direct is not None and direct.reset
    exact = reader.spec_decode_delta_at_instants(t1, t2, SEL)
    assert exact == direct
    via_increase = reader.spec_decode_delta(t1, t2, SEL)
    assert via_increase is not None and via_increase.reset
    assert cross_check(direct, via_increase, tolerance=1e-9) == []


def test_wait_for_scrape_times_out(reader: PromQLReader) -> None:
    with pytest.raises(PromQLError, match="did not scrape"):
        reader.wait_for_scrape(time.time() + 3600, SEL, timeout_s=0.3)


def test_window_shorter_than_a_scrape_interval(reader: PromQLReader) -> None:
    end = reader.wait_for_scrape(time.time(), SEL, timeout_s=20)
    with pytest.raises(PromQLError, match="fewer than two samples"):
        reader.spec_decode_delta(end - 0.2, end, SEL)


def test_query_errors_are_one_line(reader: PromQLReader) -> None:
    with pytest.raises(PromQLError, match="bad_data") as bad:
        reader.query("sum(", time.time())
    assert "\n" not in str(bad.value)
    with PromQLReader("http://127.0.0.1:9", timeout_s=1) as dead, pytest.raises(PromQLError, match="cannot query"):
        dead.query("up", time.time())


def test_normalize_selector() -> None:
    assert normalize_selector(' {job="a", model_name="m"} ') == 'job="a", model_name="m"'
    assert normalize_selector("") == ""
    assert normalize_selector("{}") == ""


def test_cross_check_pure() -> None:
    a = SpecDecodeCounters(100.0, 300.0, 150.0, (70.0, 50.0, 30.0), False)
    assert cross_check(a, a) == []
    assert cross_check(None, None) == []
    assert cross_check(a, None) == ["Prometheus has no spec-decode counters while the other side has"]
    b = SpecDecodeCounters(101.0, 300.0, 150.0, (70.0, 50.0, 33.0), True)
    problems = cross_check(a, b)
    assert [p.split(":")[0] for p in problems] == ["num_drafts", "accepted_per_position[2]"]
    assert "direct 100, Prometheus 101" in problems[0]
    assert cross_check(a, b, tolerance=0.1) == []
    assert cross_check(a, SpecDecodeCounters(100.0, 300.0, 150.0, (70.0, 50.0), False)) == [
        "positions: direct has 3, Prometheus 2"
    ]


def test_missing_binaries_skip_with_an_install_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("tests.support.promstack.shutil.which", lambda *args, **kwargs: None)
    with pytest.raises(
        pytest.skip.Exception,
        match=r"`prometheus` is not installed.*apt-get install -y prometheus "
        r"prometheus-pushgateway",
    ):
        start_prometheus(["127.0.0.1:1"], tmp_path)
    with pytest.raises(pytest.skip.Exception, match="`prometheus-pushgateway` is not installed"):
        start_pushgateway(tmp_path)
