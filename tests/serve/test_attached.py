"""Attaching to running servers: bad URLs (exit 2 at once), refused connections (within seconds), the
check of both attached servers before either is measured, the wrong-model fix, messages that name what
exists, and the attach URLs across --resume. Fake OpenAI servers on loopback (real sockets)."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.errors import BadInput, FallbackDetected, LoadgenError, ServerError
from loadgen.profile.pairfile import load_pair
from loadgen.records.cardwire import dump
from loadgen.run.arms import launch_spec
from loadgen.run.flow import execute_run, plan_measurement, resume_compare
from loadgen.run.plan import plan_cells, probe_host, protocol
from loadgen.serve import servers
from loadgen.serve.attached import attach_record, resume_urls
from loadgen.util.redact import redact_url
from tests.run.test_flow import _pair_without_exact_lengths
from tests.support.promstack import free_port

DATA = Path(__file__).parents[1] / "data"
NAME = "smollm2-135m-instruct"  # the name loadgen derives from demo-cpu's [target].model


@contextmanager
def fake_server(model: str, metrics: str) -> Iterator[tuple[str, list[str]]]:
    """An OpenAI-like server listing ``model`` and serving ``tests/data/<metrics>`` on /metrics; yields its
    URL and the paths of the POSTs it got (every POST answers 404)."""
    posts: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = {
                "/health": b"",
                "/v1/models": json.dumps({"data": [{"id": model}]}).encode(),
                "/metrics": (DATA / metrics).read_bytes(),
            }.get(self.path)
            self.send_response(404 if body is None else 200)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def do_POST(self) -> None:
            posts.append(self.path)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", posts
    finally:
        server.shutdown()
        server.server_close()


def _pair(tmp_path: Path):  # type: ignore[no-untyped-def]
    pair = load_pair("demo-cpu")
    return replace(pair, engine=replace(pair.engine, startup_timeout_s=20.0))


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://", "names no host"),
        ("http://127.0.0.1:70000", "has a port outside 1..65535"),
        ("http://127.0.0.1:8000/v 1", "holds a space or a control character"),
        ("127.0.0.1:8000", "does not start with http:// or https://"),
        ("http://[::1:8000", "is not a URL"),
    ],
)
def test_bad_attach_url_exits_2_at_once_with_one_line(url: str, problem: str) -> None:
    t0 = time.monotonic()
    result = CliRunner().invoke(main, ["compare", "demo-cpu", "--attach-speculative", url])
    assert result.exit_code == 2 and time.monotonic() - t0 < 5.0
    assert result.output.startswith("Usage: "), result.output
    assert result.output.splitlines()[-1] == (
        f"Error: Invalid value for '--attach-speculative': {url!r} {problem}; give a URL such as http://127.0.0.1:8000"
    )


def test_refused_attached_server_fails_within_seconds(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    spec = launch_spec(_pair(tmp_path), "plain", tmp_path, url)
    t0 = time.monotonic()
    with pytest.raises(ServerError) as info, servers.running(spec):
        pass
    assert time.monotonic() - t0 < 5.0  # not the 20 s start-up timeout
    assert f"connection refused at {url}" in str(info.value) and "startup_timeout_s" not in str(info.value)


def test_wrong_model_names_the_fix_and_attach_messages_name_what_exists(tmp_path: Path) -> None:
    with fake_server("some-other-model", "vllm032_plain_t0.prom") as (url, _):
        spec = launch_spec(_pair(tmp_path), "plain", tmp_path / "run", url)
        with pytest.raises(ServerError) as info, servers.running(spec):
            pass
    message = str(info.value)
    assert f"--served-model-name {NAME}" in message and "[target].model" in message
    assert url in message and str(tmp_path / "run" / "servers") in message
    assert "plain.log" not in message  # attach mode writes no server log


def test_both_attached_servers_are_checked_before_either_is_measured(tmp_path: Path) -> None:
    # the speculative server runs without speculation: found before the plain server gets any request
    pair = _pair(tmp_path)
    run_dir = tmp_path / "run"
    (run_dir / "servers").mkdir(parents=True)
    (run_dir / "metrics").mkdir()
    with (
        fake_server(NAME, "vllm032_plain_t0.prom") as (plain_url, plain_posts),
        fake_server(NAME, "vllm032_plain_t0.prom") as (spec_url, spec_posts),
    ):
        m = plan_measurement(
            pair, {"speculative": pair}, {"plain": plain_url, "speculative": spec_url}, plan_cells(pair)[:1]
        )
        with pytest.raises(FallbackDetected, match="exposes no vllm:spec_decode"):
            execute_run(run_dir, m, lambda _: None, None, None, pair.name)
    assert plain_posts == [] and spec_posts == []


def test_attach_urls_are_recorded_without_credentials() -> None:
    rec = attach_record(
        {"plain": "http://127.0.0.1:8000", "speculative": "https://user:pw@example.org:8443/v?token=t0k"}
    )
    assert {role: url.to_json() for role, url in rec.items()} == {
        "plain": {"url": "http://127.0.0.1:8000", "complete": True},
        "speculative": {"url": "https://example.org:8443/v", "complete": False},
    }
    assert "pw" not in json.dumps(dump(rec)) and "t0k" not in json.dumps(dump(rec))
    assert redact_url("http://u:pw@[::1:80/p?token=t0k") == "http://[::1:80/p"
    assert resume_urls(rec, {}, ["plain"]) == {"plain": "http://127.0.0.1:8000"}
    assert resume_urls(
        rec, {"speculative": "https://user:pw@example.org:8443/v?token=t0k"}, ["plain", "speculative"]
    ) == {"plain": "http://127.0.0.1:8000", "speculative": "https://user:pw@example.org:8443/v?token=t0k"}
    with pytest.raises(BadInput, match="give its URL again with --attach-speculative URL"):
        resume_urls(rec, {}, ["plain", "speculative"])


def test_resume_of_an_attach_run_reuses_the_recorded_urls(tmp_path: Path) -> None:
    pair = load_pair(str(_pair_without_exact_lengths(tmp_path)), workloads_dir=tmp_path / "profiles" / "workloads")
    cells = plan_cells(pair)[:1]
    run_dir = tmp_path / "run"
    (run_dir / "servers").mkdir(parents=True)
    (run_dir / "metrics").mkdir()
    prompts = [p for c in cells for p in (*c.warmup, *c.measured, *c.cooldown)]
    (run_dir / "prompts.jsonl").write_text("".join(json.dumps(p.to_json()) + "\n" for p in prompts))
    shutil.copyfile(pair.path, run_dir / "pair.toml")
    with (
        fake_server(NAME, "vllm032_plain_t0.prom") as (plain_url, _),
        fake_server("wrong-name", "vllm032_spec_t0.prom") as (spec_url, _),
    ):
        proto = protocol(pair, cells, prompts, probe_host()).to_json() | {
            "attach": dump(attach_record({"plain": plain_url, "speculative": spec_url}))
        }
        (run_dir / "protocol.json").write_text(json.dumps(proto))
        # the resumed run checks the recorded servers (here the speculative one serves the wrong name),
        # rather than launching servers of its own
        with pytest.raises(LoadgenError) as info:
            resume_compare(run_dir, log=lambda _: None)
    assert spec_url in str(info.value) and "--served-model-name" in str(info.value)


def test_a_dead_attached_server_is_pointed_to_by_its_url(tmp_path: Path) -> None:
    from loadgen.serve.attached import where_to_look

    pair = _pair(tmp_path)
    attached = launch_spec(pair, "speculative", tmp_path, "http://u:p@127.0.0.1:8001")
    assert where_to_look(attached).startswith("the attached server at http://127.0.0.1:8001 ")
    assert ".log" not in where_to_look(attached) and "u:p" not in where_to_look(attached)
    assert where_to_look(launch_spec(pair, "speculative", tmp_path)) == str(tmp_path / "servers" / "speculative.log")
