"""Real Prometheus and Pushgateway processes for tests (Debian packages ``prometheus`` 2.42 and
``prometheus-pushgateway`` 1.5.1), plus a static ``/metrics`` endpoint.

Everything listens on free loopback ports and runs from a caller-given work folder (config, TSDB, logs).
Typical use, e.g. pointing Prometheus at a running vLLM server::

    with prometheus_running({"vllm-spec": ["127.0.0.1:8001"]}, tmp_path) as server:
        server.wait_for_target("vllm-spec")
        reader = PromQLReader(server.url)

or the session fixtures ``prometheus_server`` / ``pushgateway`` of tests/conftest.py, adding targets with
:meth:`PrometheusServer.add_targets`. Missing binaries fail the test (CI installs them; see .ci/run).
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

PROMETHEUS = "prometheus"
PUSHGATEWAY = "prometheus-pushgateway"
INSTALL_HINT = (
    "install them with `apt-get update && apt-get install -y prometheus prometheus-pushgateway` "
    "(.ci/run does this before `make test`)"
)


def require_binary(name: str) -> str:
    """Path of executable ``name`` (``PATH``, then /usr/bin, /usr/sbin, /usr/local/bin); skips the test with
    the install hint when it is missing, so the unit run works without a Prometheus binary (``make test``
    installs both binaries first, so nothing is skipped there)."""
    found = shutil.which(name) or shutil.which(name, path="/usr/bin:/usr/sbin:/usr/local/bin")
    if not found:
        pytest.skip(f"`{name}` is not installed: these tests run a real Prometheus stack; {INSTALL_HINT}")
    return found


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago, drawn as :func:`free_port_block` draws a block."""
    return free_port_block(1)


def _kernel_port() -> int:
    """A port the kernel gave a moment ago (from its ephemeral range)."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_port_block(n: int = 4) -> int:
    """A port ``p`` with ``p .. p + n - 1`` free on loopback a moment ago (a pair's plain, speculative and
    placebo ports), below the ephemeral range where it can: there no outgoing connection of a test beside
    it takes one of the ports between this check and the server's bind (Linux draws a connection's local
    port from ``ip_local_port_range``, 32768-60999 by default)."""
    top = _ephemeral_low()
    for _ in range(200):
        base = _DRAW.randrange(_LOW, top - n) if top - n > _LOW else _kernel_port()
        if base + n >= 65535:
            continue
        try:
            for i in range(n):
                with socket.socket() as t:
                    t.bind(("127.0.0.1", base + i))
        except OSError:
            continue
        return base
    raise RuntimeError("no free block of ports")


#: The lowest port a block is drawn from (below it: well-known and registered services' ports).
_LOW = 20000
#: Draws unaffected by a test that seeds the ``random`` module (xdist workers would draw the same blocks).
_DRAW = random.SystemRandom()


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (32768 where it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str, poll_s: float = 0.1) -> None:
    """Poll ``predicate`` until it is true; fails the test after ``timeout_s`` seconds naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(poll_s)


class ManagedProcess:
    """A server process on a loopback port; ``url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self, name: str, argv: list[str], port: int, log_path: Path) -> None:
        self.name, self.argv, self.port, self.log_path = name, argv, port, log_path
        self.url = f"http://127.0.0.1:{port}"
        self._log = log_path.open("ab")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def log_tail(self, chars: int = 1500) -> str:
        """The end of the process's log."""
        return self.log_path.read_text(errors="replace")[-chars:]

    def wait_ready(self, timeout_s: float = 30.0) -> bool:
        """Poll ``/-/ready`` until 200; False if the process exited first (e.g. port taken).
        Fails the test on timeout."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/-/ready", timeout=2.0).status_code == 200:
                    return True
            time.sleep(0.05)
        self.stop()
        pytest.fail(f"{self.name} not ready at {self.url} after {timeout_s:g} s; log:\n{self.log_tail()}")

    def stop(self) -> None:
        """Terminate the process (kill after 10 s) and close its log."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()


class PrometheusServer(ManagedProcess):
    """Prometheus with a JSON (= YAML) config file it reloads on :meth:`add_targets`; ``jobs`` maps a
    job name to its ``host:port`` targets."""

    def __init__(
        self,
        binary: str,
        workdir: Path,
        port: int,
        jobs: Mapping[str, Sequence[str]],
        scrape_interval_s: float,
        honor_labels: Collection[str] = (),
    ) -> None:
        self.config_path, self.scrape_interval_s = workdir / "prometheus.json", scrape_interval_s
        self.jobs: dict[str, dict[str, object]] = {}
        for job, targets in jobs.items():
            self.jobs[job] = {"honor_labels": job in honor_labels, "static_configs": [{"targets": list(targets)}]}
        self.write_config()
        super().__init__(
            "prometheus",
            [
                binary,
                f"--config.file={self.config_path}",
                f"--storage.tsdb.path={workdir / f'tsdb-{port}'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--web.enable-lifecycle",
                "--log.level=warn",
            ],
            port,
            workdir / "prometheus.log",
        )

    def write_config(self) -> None:
        """Write the config: one scrape job per entry of ``jobs``, interval = timeout = scrape_interval_s."""
        interval = f"{round(self.scrape_interval_s * 1000)}ms"
        config = {
            "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
            "scrape_configs": [{"job_name": job, **spec} for job, spec in self.jobs.items()],
        }
        self.config_path.write_text(json.dumps(config, indent=2))

    def add_targets(self, job: str, targets: Sequence[str], honor_labels: bool = False) -> None:
        """Scrape ``targets`` (``host:port``, path ``/metrics``) as job ``job`` from now on (config rewrite +
        ``POST /-/reload``); replaces an existing job of that name. Prometheus 2.42 applies target
        changes every 5 s (scrape manager reloader), so the first scrape comes 1-6 s later; prefer
        naming every target at start."""
        self.jobs[job] = {"honor_labels": honor_labels, "static_configs": [{"targets": list(targets)}]}
        self.write_config()
        response = httpx.post(f"{self.url}/-/reload", timeout=10.0)
        if response.status_code != 200:
            pytest.fail(f"Prometheus reload failed: HTTP {response.status_code} {response.text[:300]}")

    def query(self, expr: str) -> list[dict[str, object]]:
        """Raw ``/api/v1/query`` result list of ``expr`` now (fails the test on an API error)."""
        body = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=10.0).json()
        if body.get("status") != "success":
            pytest.fail(f"PromQL {expr!r}: {body.get('error')}")
        result: list[dict[str, object]] = body["data"]["result"]
        return result

    def wait_for_target(self, job: str, timeout_s: float = 20.0) -> None:
        """Wait until every target of ``job`` was scraped successfully (``up == 1``)."""
        expected = len(self.jobs[job]["static_configs"][0]["targets"])  # type: ignore[index]
        expr = f'up{{job="{job}"}} == 1'
        wait_until(lambda: len(self.query(expr)) >= expected, timeout_s, f"Prometheus to scrape job {job!r}")


def _start(make: Callable[[int], ManagedProcess], attempts: int = 3) -> ManagedProcess:
    last: ManagedProcess | None = None
    for _ in range(attempts):
        last = make(free_port())
        if last.wait_ready():
            return last
        last.stop()
    assert last is not None
    pytest.fail(f"{last.name} exited during start-up ({last.argv}); log:\n{last.log_tail()}")


def start_prometheus(
    targets: Sequence[str] | Mapping[str, Sequence[str]],
    workdir: Path,
    scrape_interval_s: float = 1.0,
    honor_labels: Collection[str] = (),
) -> PrometheusServer:
    """Start Prometheus scraping ``targets`` (``host:port`` list: job ``targets``; or job -> list) every
    ``scrape_interval_s``, with ``honor_labels: true`` for the jobs named in ``honor_labels`` (a
    Pushgateway's job). Returns once ``/-/ready`` answers 200 (well under 1 s here); the first scrape of
    a target comes about 5 s after start (2.42's scrape manager applies targets on a 5 s tick): wait
    with :meth:`PrometheusServer.wait_for_target`. Call ``stop()`` when done."""
    prom_bin = require_binary(PROMETHEUS)
    workdir.mkdir(parents=True, exist_ok=True)
    jobs = dict(targets) if isinstance(targets, Mapping) else ({"targets": list(targets)} if targets else {})

    def make(port: int) -> PrometheusServer:
        return PrometheusServer(prom_bin, workdir, port, jobs, scrape_interval_s, honor_labels)

    server = _start(make)
    assert isinstance(server, PrometheusServer)
    return server


def start_pushgateway(workdir: Path) -> ManagedProcess:
    """Start a Pushgateway (no persistence) on a free loopback port; returns once ready."""
    gw_bin = require_binary(PUSHGATEWAY)
    workdir.mkdir(parents=True, exist_ok=True)
    return _start(
        lambda port: ManagedProcess(
            "pushgateway",
            [gw_bin, f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
            port,
            workdir / "pushgateway.log",
        )
    )


@contextlib.contextmanager
def prometheus_running(
    targets: Sequence[str] | Mapping[str, Sequence[str]],
    workdir: Path,
    scrape_interval_s: float = 1.0,
    honor_labels: Collection[str] = (),
) -> Iterator[PrometheusServer]:
    """:func:`start_prometheus` as a context manager (stopped on exit)."""
    server = start_prometheus(targets, workdir, scrape_interval_s, honor_labels)
    try:
        yield server
    finally:
        server.stop()


class StaticExporter:
    """Serves a settable Prometheus text page at ``/metrics`` on a free loopback port (a stand-in for
    a vLLM server: feed it recorded ``/metrics`` texts). ``target`` is ``127.0.0.1:<port>``."""

    def __init__(self, text: str = "") -> None:
        self._text = text.encode()
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = exporter._text if self.path.split("?")[0] == "/metrics" else b"not found\n"
                self.send_response(200 if self.path.split("?")[0] == "/metrics" else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.target = f"127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def set_text(self, text: str) -> None:
        """Serve ``text`` from the next request on."""
        self._text = text.encode()

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
