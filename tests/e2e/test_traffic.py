"""Real vLLM (CPU), one n-gram speculative server: the grounded workload gives n-gram prompt lookup a clearly
higher acceptance rate than short homogeneous continuations on the same target, and a prompt file's requests
reach the server byte-identical from both roles (two recording proxies in front of the one server)."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level, Pair
from loadgen.profile.pairfile import load_pair
from loadgen.profile.workload import Prompt, Workload, generate, load_tokenizer
from loadgen.prom.deltas import spec_decode_delta
from loadgen.prom.scrape import scrape
from loadgen.records.request import RequestRecord
from loadgen.run.arms import launch_spec
from loadgen.serve import servers
from loadgen.stream.client import build_payload
from loadgen.stream.loadloop import run_cell
from tests.e2e.conftest import _require_engine

PAIR = "tests/data/pairs/ngram-traffic.toml"


@pytest.fixture(scope="module")
def ngram(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Pair, servers.Server]]:
    """The pair's speculative (n-gram) server, started once for this module."""
    _require_engine()
    pair = load_pair(PAIR)
    with servers.running(launch_spec(pair, "speculative", tmp_path_factory.mktemp("ngram"))) as server:
        yield pair, server


def _workload(pair: Pair, name: str) -> Workload:
    return next(w for w in pair.workloads if w.name == name)


def _send(
    pair: Pair, base_url: str, model: str, role: str, w: Workload, prompts: list[Prompt], concurrency: int = 1
) -> list[RequestRecord]:
    plan = CellSpec(w.name, w.endpoint, Level(concurrency), measured=tuple(prompts), role=role)
    records = run_cell(base_url, model, pair.sampling, plan, lambda r: None)
    assert all(r.error is None and r.output_tokens == r.requested_output_tokens for r in records), records
    return records


def test_grounded_prompts_raise_ngram_acceptance_over_short_continuations(ngram: tuple[Pair, servers.Server]) -> None:
    """n-gram prompt lookup drafts only where the text repeats an earlier n-gram, so the share of output
    tokens that came from accepted drafts (accepted draft tokens / output tokens) is where grounded prompts
    differ most; the acceptance rate per draft token is high for both (short continuations loop under
    ignore_eos, and loops repeat n-grams too). Measured on this machine (6 requests, 32 output tokens,
    concurrency 2): short-homogeneous 0.745 (38/51 draft tokens), 0.198 of output tokens; grounded (chat)
    0.786 (125/159), 0.651 of output tokens."""
    pair, server = ngram
    tok = load_tokenizer(pair.target.model)
    rates, shares = {}, {}
    for name in ("short-homogeneous", "grounded"):
        w = _workload(pair, name)
        _, before = scrape(server.base_url)
        records = _send(pair, server.base_url, server.spec.served_model, "speculative", w, generate(w, 6, tok), 2)
        _, after = scrape(server.base_url)
        delta = spec_decode_delta(before, after)
        assert delta is not None and delta.num_draft_tokens > 0
        rates[name] = delta.num_accepted_tokens / delta.num_draft_tokens
        shares[name] = delta.num_accepted_tokens / sum(r.output_tokens for r in records)
    print(
        f"n-gram acceptance rate: grounded {rates['grounded']:.3f}, short-homogeneous "
        f"{rates['short-homogeneous']:.3f}; accepted draft tokens per output token: grounded "
        f"{shares['grounded']:.3f}, short-homogeneous {shares['short-homogeneous']:.3f}"
    )
    assert shares["grounded"] >= 2 * shares["short-homogeneous"], shares
    assert shares["grounded"] >= shares["short-homogeneous"] + 0.2, shares
    assert rates["grounded"] >= 0.7, rates


class _Recorder(BaseHTTPRequestHandler):
    """Records each POST (path, body bytes) and forwards it to ``upstream``; the response goes back whole,
    with a Content-Length (timing is not under test here)."""

    protocol_version = "HTTP/1.1"
    upstream: ClassVar[str] = ""
    bodies: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.bodies.append((self.path, body))
        conn = http.client.HTTPConnection(self.upstream, timeout=300)
        conn.request("POST", self.path, body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.getheader("Content-Type") or "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        conn.close()

    def log_message(self, *args: object) -> None:
        pass


def _proxy(upstream: str) -> tuple[ThreadingHTTPServer, list[tuple[str, bytes]]]:
    bodies: list[tuple[str, bytes]] = []
    handler = type("Recorder", (_Recorder,), {"upstream": upstream, "bodies": bodies})
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    return proxy, bodies


def test_a_prompt_files_requests_reach_the_server_byte_identical_from_both_roles(
    ngram: tuple[Pair, servers.Server],
) -> None:
    pair, server = ngram
    tok = load_tokenizer(pair.target.model)
    upstream = server.base_url.removeprefix("http://")
    for name in ("file-completions", "file-chat"):
        w = _workload(pair, name)
        prompts = generate(w, 3, tok)
        assert prompts == generate(w, 3, tok)  # the identical list for both servers
        seen = {}
        for role in ("plain", "speculative"):
            proxy, bodies = _proxy(upstream)
            try:
                _send(pair, f"http://127.0.0.1:{proxy.server_address[1]}", server.spec.served_model, role, w, prompts)
            finally:
                proxy.shutdown()
                proxy.server_close()
            seen[role] = bodies
        # identical but for the prefix-cache salt, which names the arm (profile/cells.py CellSpec.cache_salt)
        unsalted = {
            role: [(path, {k: v for k, v in json.loads(body).items() if k != "cache_salt"}) for path, body in bodies]
            for role, bodies in seen.items()
        }
        assert unsalted["plain"] == unsalted["speculative"] and len(seen["plain"]) == 3
        for role in ("plain", "speculative"):
            assert {json.loads(body)["cache_salt"] for _, body in seen[role]} == {f"loadgen-{role}-{name}-c1-b0"}
        for (path, body), prompt in zip(seen["plain"], prompts, strict=True):
            sent = json.loads(body)
            assert sent == build_payload(prompt, pair.sampling, server.spec.served_model).to_json() | {
                "cache_salt": f"loadgen-plain-{name}-c1-b0"
            }
            assert path == ("/v1/chat/completions" if w.endpoint == "chat" else "/v1/completions")
            assert sent["min_tokens"] == prompt.output_tokens and sent["ignore_eos"] is True
