"""The embedded demo pair on a real speculative vLLM (CPU) server: the distilled draft's acceptance on the
short workload lies inside the range the demo promises (profiles/README.md), and a declared K that
differs from the server's is caught as a fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.errors import FallbackDetected
from loadgen.measure.metrics import Acceptance
from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level
from loadgen.profile.pairfile import load_pair
from loadgen.prom.deltas import spec_decode_delta
from loadgen.prom.scrape import scrape
from loadgen.run.plan import plan_cells
from loadgen.serve import servers
from loadgen.serve.modeproof import prove_mode
from loadgen.stream.loadloop import run_cell


def test_demo_draft_acceptance_in_range(demo_spec_server: servers.Server) -> None:
    pair = load_pair("demo-cpu")
    cell = next(c for c in plan_cells(pair) if c.workload == "short-homogeneous" and c.concurrency == 2)
    _, before = scrape(demo_spec_server.base_url)
    records = run_cell(
        demo_spec_server.base_url,
        demo_spec_server.spec.served_model,
        pair.sampling,
        CellSpec(cell.workload, cell.endpoint, Level(2), measured=cell.measured, role="speculative"),
        lambda r: None,
    )
    _, after = scrape(demo_spec_server.base_url)
    assert all(r.error is None and r.output_tokens == 32 for r in records)
    counters = spec_decode_delta(before, after)
    assert counters is not None
    acc = Acceptance.of(counters)
    assert acc.acceptance_rate is not None
    assert 0.2 <= acc.acceptance_rate <= 0.95, acc
    # per-position acceptance can only fall with the position
    assert list(acc.per_position) == sorted(acc.per_position, reverse=True)


def test_wrong_k_is_a_fallback(demo_spec_server: servers.Server) -> None:
    wrong = load_pair(str(Path("tests/data/pairs/wrong-k.toml")))
    _, snap = scrape(demo_spec_server.base_url)
    assert prove_mode("speculative", snap, load_pair("demo-cpu").num_speculative_tokens).spec_positions == 2
    with pytest.raises(FallbackDetected, match="runs K=2.*num_speculative_tokens=3"):
        prove_mode("speculative", snap, wrong.num_speculative_tokens)
    with pytest.raises(FallbackDetected, match="plain server exposes vllm:spec_decode"):
        prove_mode("plain", snap, 0)
