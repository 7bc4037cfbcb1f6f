"""A whole compare run in attach mode against two scripted servers on loopback (real sockets) whose
``/metrics`` answers 500 from the first scrape: the run measures anyway, marks the server-side figures
unavailable with the reason and proves the mode from the tokens per chunk of the minimal completion. The
pair file has no ``[criteria]``, so nothing is judged and ``compare`` exits 0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.cli import verdict_exit
from loadgen.errors import CriteriaFailed, FallbackDetected
from loadgen.profile.pairfile import load_pair
from loadgen.run.flow import run_compare
from tests.support.scripted_server import DONE, completion_chunk, models_body, scripted_server, usage_chunk

PAIR = """
name = "scripted"
[target]
model = "org/target"
revision = "0123456789abcdef0123456789abcdef01234567"
[speculative]
method = "ngram"
prompt_lookup_min = 2
prompt_lookup_max = 4
num_speculative_tokens = 3
[engine]
command = ["/bin/true"]  # the servers are scripted; the pair check only finds the program
startup_timeout_s = 20
[sampling]
temperature = 0.0
ignore_eos = true
[run]
workloads = ["w"]
concurrency = [1]
output_tokens = 4
[stop]
min_requests = 4
rounds = 1
warmup_requests = 1
"""
WORKLOAD = """name = "w"
kind = "short-homogeneous"
endpoint = "completions"
output_tokens = 4
seed = 1
"""
GETS = {"/v1/models": (200, models_body("target")), "/metrics": (500, b"exporter failed")}


def _stream(chunks: list[list[int]]) -> list[tuple[float, bytes]]:
    steps = [
        (0.001, completion_chunk(" x" * len(ids), ids, "length" if i == len(chunks) - 1 else None))
        for i, ids in enumerate(chunks)
    ]
    return [*steps, (0.0, usage_chunk(5, sum(len(c) for c in chunks))), (0.0, DONE)]


PLAIN = {"*": (200, _stream([[1], [2], [3], [4]]))}
SPEC = {"*": (200, _stream([[1], [2, 3, 4]]))}


def _pair(tmp_path: Path, criteria: str = "") -> Any:
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "w.toml").write_text(WORKLOAD)
    (tmp_path / "pair.toml").write_text(PAIR + criteria)
    return load_pair(str(tmp_path / "pair.toml"), workloads_dir=tmp_path / "workloads")


def _run(tmp_path: Path, plain: dict[str, Any], spec: dict[str, Any], criteria: str = "") -> Path:
    pair = _pair(tmp_path, criteria)
    with scripted_server(plain, None, GETS) as p_url, scripted_server(spec, None, GETS) as s_url:
        return run_compare(pair, tmp_path / "runs", log=lambda _: None, attach={"plain": p_url, "speculative": s_url})


@pytest.mark.slow
def test_metrics_unavailable_from_the_start_still_measures(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, PLAIN, SPEC)
    card = json.loads((run_dir / "card.json").read_text())
    assert card["complete"] is True and card["failure"] is None
    cell = card["cells"][0]
    assert cell["plain"]["tpot_s"]["p50"] is not None and cell["speculative"]["ttft_s"]["p50"] is not None
    assert cell["speculative"]["acceptance"] is None
    assert any("server metrics unavailable for this cell" in n and "500" in n for n in cell["notes"])
    spec = card["servers"]["speculative"]["effective"]
    assert spec["spec_decode_metrics"] is None and "500" in spec["metrics_unavailable"]
    assert spec["mode_proof"] == "weaker"
    assert spec["mode_evidence"] == ["minimal completion tokens per chunk [1, 3] (more than 1: speculation)"]
    plain = card["servers"]["plain"]["effective"]
    assert plain["mode_evidence"] == ["minimal completion tokens per chunk [1, 1, 1, 1]"]
    md = (run_dir / "card.md").read_text()
    assert md.count("- /metrics unavailable (") == 2
    assert "mode proven without /metrics (a weaker proof than the spec-decode series)" in md
    # no [criteria]: not judged, and compare's exit is 0
    assert card["verdict"]["declared"] is False and card["verdict"]["summary"] == "no criteria declared: not judged"
    assert "**no criteria declared: not judged**" in md and "Declared:" not in md
    verdict_exit(run_dir)


def test_a_plain_server_sending_several_tokens_per_chunk_is_a_fallback(tmp_path: Path) -> None:
    with pytest.raises(FallbackDetected, match=r"plain server sent 3 tokens in one chunk .*\[1, 3\]"):
        _run(tmp_path, SPEC, SPEC)


@pytest.mark.slow
def test_declared_criteria_are_still_judged(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, PLAIN, SPEC, '[criteria]\nprimary = ["e2e_p50"]\nmin_speedup = 1000.0\n')
    card = json.loads((run_dir / "card.json").read_text())
    assert card["verdict"]["declared"] is True and card["verdict"]["passed"] is False
    assert card["verdict"]["declared_keys"] == ["primary", "min_speedup"]
    md = (run_dir / "card.md").read_text()
    assert 'Declared: primary = ["e2e_p50"], min_speedup = 1000.0; defaults: use_confidence_interval = true' in md
    with pytest.raises(CriteriaFailed):
        verdict_exit(run_dir)
