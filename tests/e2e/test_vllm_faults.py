"""Faults that a real vLLM (CPU) server produces itself: a model name it does not serve, and a prompt
longer than its max_model_len (1024 for the demo pair). Each failed request keeps vLLM's status and
message, gets its category (loadgen/faults.py), and the server goes on serving the next request on
the same kind of connection."""

from __future__ import annotations

from loadgen.measure.faults import categories, classify
from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level
from loadgen.profile.pairfile import load_pair
from loadgen.profile.workload import Prompt
from loadgen.records.request import RequestRecord
from loadgen.serve import servers
from loadgen.stream.loadloop import run_cell


def _one(server: servers.Server, model: str, prompt: Prompt) -> RequestRecord:
    plan = CellSpec("faults", prompt.endpoint, Level(1), measured=(prompt,), role="speculative")
    [record] = run_cell(server.base_url, model, load_pair("demo-cpu").sampling, plan, lambda r: None)
    return record


def test_vllm_faults_are_categorised_and_the_server_keeps_serving(demo_spec_server: servers.Server) -> None:
    served = demo_spec_server.spec.served_model
    short = Prompt("short", "faults", "completions", "The capital of France is", None, 8)
    chat = Prompt("chat", "faults", "chat", None, ({"role": "user", "content": "Say hello."},), 8)
    long = Prompt("long", "faults", "completions", "word " * 1500, None, 8)  # about 1,500 tokens > 1,024

    wrong = [_one(demo_spec_server, "no-such-model", p) for p in (short, chat)]
    for r in wrong:
        assert r.http_status == 404 and r.error is not None and "no-such-model" in r.error, r.error
        assert classify(r.error) == "model_not_found" and r.chunk_tokens == []

    too_long = _one(demo_spec_server, served, long)
    assert too_long.http_status == 400 and too_long.error is not None, too_long.error
    assert classify(too_long.error) == "context_length", too_long.error
    assert "1024" in too_long.error  # vLLM names the limit

    assert categories(r.error for r in [*wrong, too_long]) == {"model_not_found": 2, "context_length": 1}
    fine = _one(demo_spec_server, served, short)
    assert fine.error is None and fine.http_status == 200 and fine.output_tokens == 8
