"""Attached servers and chat workloads: the servers started by hand serve the requests, so the pair file's launch
settings (no ``--chat-template``) are not judged; each attached server is asked one minimal chat request
instead, and one that refuses it (vLLM: HTTP 400 without a chat template) stops the run before anything is
measured, naming the answer and the fix. Fake OpenAI servers on loopback (real sockets)."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from loadgen.check import enginestart
from loadgen.check.preflight import run_pair_check
from loadgen.errors import PairCheckError, ServerError
from loadgen.serve import servers
from loadgen.serve.attached import check_chat
from tests.check.test_validate import VOCAB, make_pair
from tests.support.tokfactory import write_model

REFUSAL = {"object": "error", "message": "As of transformers v4.44, default chat template is no longer allowed"}


@contextmanager
def chat_server(status: int) -> Iterator[tuple[str, list[dict[str, object]]]]:
    """A server answering every chat request with ``status`` (200: one token; else vLLM's refusal); yields its
    URL and the bodies it got."""
    bodies: list[dict[str, object]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            ok = {"choices": [{"message": {"role": "assistant", "content": "Hello"}, "finish_reason": "length"}]}
            body = json.dumps(ok if status == 200 else REFUSAL).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()


def _spec(url: str) -> servers.LaunchSpec:
    return servers.LaunchSpec("plain", [], {}, "127.0.0.1", 0, "target", 5.0, Path("log"), attach_url=url)


def test_an_attached_server_that_refuses_a_chat_request_is_named_with_the_fix() -> None:
    with chat_server(400) as (url, bodies), pytest.raises(ServerError) as info:
        check_chat(_spec(url), ["chat-wl"])
    assert bodies == [{"model": "target", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}]
    assert str(info.value) == (
        f"plain server at {url} refused a minimal chat request (HTTP 400: {json.dumps(REFUSAL)}); the chat "
        "workload(s) chat-wl need a chat template on that server: start it with --chat-template FILE, or use "
        "completions workloads"
    )
    with chat_server(200) as (url, _):
        check_chat(_spec(url), ["chat-wl"])  # a server with a template answers: nothing to say


def test_the_pair_check_does_not_judge_the_launch_settings_of_attached_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(enginestart, "probe_engine", lambda command, env: enginestart.EngineStart("0.32.0"))
    target = write_model(tmp_path / "t", VOCAB)  # a tokenizer without a chat template; demo-cpu has a chat workload
    pair = make_pair(target, None, method="ngram", prompt_lookup_min=2, prompt_lookup_max=4)
    pair = dataclasses.replace(pair, engine=dataclasses.replace(pair.engine, args=("--max-model-len", "1024")))
    with pytest.raises(PairCheckError, match=r"\(chat template\)"):  # launched: the launch settings are judged
        run_pair_check(pair, False, lambda _: None)
    _, findings = run_pair_check(pair, False, lambda _: None, attached_roles=["plain", "speculative"])
    assert not [f for f in findings if f.check == "chat template" and not f.ok]
