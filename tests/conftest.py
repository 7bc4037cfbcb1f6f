"""Session fixtures shared by the unit and end-to-end tests: a real Prometheus stack (tests/support/promstack.py).

Prometheus applies new targets on a 5 s tick, so the session's server is started once with every target
the unit tests need, named up front:

- job ``vllm-static``: ``vllm_static_exporter``, a settable text page (recorded vLLM ``/metrics`` files);
- job ``loadgen``: ``127.0.0.1:<loadgen_exporter_port>``, where a test serves ``loadgen.export.Exporter``;
- job ``pushgateway``: the session ``pushgateway`` (``honor_labels: true``).

For other targets (e.g. a real vLLM server) use ``prometheus_factory(targets)`` (stopped at session end)
or ``tests.support.promstack.prometheus_running``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.promstack import (
    ManagedProcess,
    PrometheusServer,
    StaticExporter,
    free_port,
    start_prometheus,
    start_pushgateway,
)

if TYPE_CHECKING:
    from xdist.remote import Producer

    from tests.support.xdistgroups import FolderGroups

DATA = Path(__file__).parent / "data"
Targets = Sequence[str] | Mapping[str, Sequence[str]]


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer | None) -> FolderGroups | None:
    """With ``--dist loadgroup``, the end-to-end and fleet folders each run in one worker, in order
    (tests/support/xdistgroups.py); other modes as pytest-xdist has them."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.support.xdistgroups import FolderGroups

    return FolderGroups(config, log)


@pytest.fixture(scope="session")
def pushgateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedProcess]:
    """A real Pushgateway (``prometheus-pushgateway`` 1.5.1); ``.url`` is its base URL."""
    gateway = start_pushgateway(tmp_path_factory.mktemp("pushgateway"))
    yield gateway
    gateway.stop()


@pytest.fixture(scope="session")
def vllm_static_exporter() -> Iterator[StaticExporter]:
    """Serves tests/data/vllm032_spec_t0.prom until a test calls ``set_text``."""
    exporter = StaticExporter((DATA / "vllm032_spec_t0.prom").read_text())
    yield exporter
    exporter.close()


@pytest.fixture(scope="session")
def loadgen_exporter_port() -> int:
    """The loopback port Prometheus scrapes as job ``loadgen`` (free when the session started)."""
    return free_port()


@pytest.fixture(scope="session")
def prometheus_server(
    tmp_path_factory: pytest.TempPathFactory,
    pushgateway: ManagedProcess,
    vllm_static_exporter: StaticExporter,
    loadgen_exporter_port: int,
) -> Iterator[PrometheusServer]:
    """A real Prometheus (``prometheus`` 2.42), 1 s scrape interval, jobs as in the module docstring."""
    jobs = {
        "vllm-static": [vllm_static_exporter.target],
        "loadgen": [f"127.0.0.1:{loadgen_exporter_port}"],
        "pushgateway": [pushgateway.url.removeprefix("http://")],
    }
    server = start_prometheus(jobs, tmp_path_factory.mktemp("prometheus"), 1.0, honor_labels={"pushgateway"})
    yield server
    server.stop()


@pytest.fixture(scope="session")
def prometheus_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[Targets], PrometheusServer]]:
    """``factory(targets)`` starts a Prometheus (1 s interval) scraping ``targets`` (``host:port`` list or
    job -> list); every server it started is stopped at the end of the session."""
    started: list[PrometheusServer] = []

    def factory(targets: Targets) -> PrometheusServer:
        server = start_prometheus(targets, tmp_path_factory.mktemp("prometheus"), 1.0)
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()
