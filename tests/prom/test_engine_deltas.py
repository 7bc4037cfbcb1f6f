"""Counters read per ``engine`` label: one engine's reset is named and left out, the others' deltas kept;
every engine reset is a whole restart; a counter absent from a scrape is unavailable, never 0.

Fixtures as in test_exposition.py (tests/data/vllm032_*.prom): spec_t1 -> spec_t2_engine1_restarted,
engine 0 grows (drafts, draft tokens, accepted, per position) (160, 480, 240, [110, 80, 50]) ->
(190, 570, 285, [130, 95, 60]); engine 1 restarts (80, 240, 108, [54, 36, 18]) -> (10, 30, 12, [6, 4, 2]);
generation tokens engine 0 700 -> 800, engine 1 350 -> 40.
"""

from __future__ import annotations

from pathlib import Path

from loadgen.prom.deltas import EngineCounter, SpecDecodeCounters, engine_counter_delta, spec_decode_held
from loadgen.prom.exposition import Snapshot, parse_metrics

DATA = Path(__file__).parents[1] / "data"


def load(name: str) -> Snapshot:
    return parse_metrics((DATA / f"vllm032_{name}.prom").read_text())


def _spec(engines: dict[str, tuple[int, int, int, tuple[int, ...]]]) -> Snapshot:
    lines = ["# TYPE vllm:spec_decode_num_drafts counter"]
    for e, (drafts, tokens, accepted, per_pos) in engines.items():
        lines += [
            f'vllm:spec_decode_num_drafts_total{{engine="{e}"}} {drafts}',
            f'vllm:spec_decode_num_draft_tokens_total{{engine="{e}"}} {tokens}',
            f'vllm:spec_decode_num_accepted_tokens_total{{engine="{e}"}} {accepted}',
        ]
        lines += [
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="{e}",position="{p}"}} {v}'
            for p, v in enumerate(per_pos)
        ]
    return parse_metrics("\n".join(lines) + "\n")


def test_one_engine_reset_is_named_and_left_out() -> None:
    got = spec_decode_held(load("spec_t1"), load("spec_t2_engine1_restarted"))
    # engine 0 only: +30 drafts, +90 draft tokens, +45 accepted, +(20, 15, 10)
    assert got == SpecDecodeCounters(30.0, 90.0, 45.0, (20.0, 15.0, 10.0), False, ("0", "1"), ("1",))
    tokens = engine_counter_delta(load("spec_t1"), load("spec_t2_engine1_restarted"), "vllm:generation_tokens_total")
    assert tokens == EngineCounter(100.0, ("0", "1"), ("1",))  # 800 - 700; engine 1's 350 -> 40 left out


def test_engines_that_held_are_summed() -> None:
    got = spec_decode_held(load("spec_t0"), load("spec_t1"))
    assert got == SpecDecodeCounters(100.0, 300.0, 150.0, (70.0, 50.0, 30.0), False, ("0", "1"), ())
    assert engine_counter_delta(load("spec_t0"), load("spec_t1"), "vllm:generation_tokens_total") == EngineCounter(
        500.0, ("0", "1"), ()
    )


def test_every_engine_reset_is_a_whole_restart() -> None:
    before = _spec({"0": (50, 100, 40, (25, 15)), "1": (20, 40, 10, (6, 4))})
    after = _spec({"0": (5, 10, 4, (3, 1)), "1": (2, 4, 2, (1, 1))})
    # increase() over both (their after values), flagged as a reset of every engine
    assert spec_decode_held(before, after) == SpecDecodeCounters(
        7.0, 14.0, 6.0, (4.0, 2.0), True, ("0", "1"), ("0", "1")
    )
    one = parse_metrics('c_total{engine="0"} 10\n'), parse_metrics('c_total{engine="0"} 4\n')
    assert engine_counter_delta(*one, "c_total") == EngineCounter(4.0, ("0",), ("0",))


def test_a_vanished_engine_is_a_reset_of_that_engine() -> None:
    before = _spec({"0": (50, 100, 40, (25, 15)), "1": (20, 40, 10, (6, 4))})
    after = _spec({"0": (60, 120, 45, (28, 17))})
    assert spec_decode_held(before, after) == SpecDecodeCounters(10.0, 20.0, 5.0, (3.0, 2.0), False, ("0", "1"), ("1",))


def test_a_missing_counter_is_unavailable_not_zero() -> None:
    plain = load("plain_t1")
    empty = parse_metrics("")
    assert engine_counter_delta(plain, empty, "vllm:request_success_total") == EngineCounter(None)
    assert engine_counter_delta(empty, plain, "vllm:request_success_total") == EngineCounter(None)
    spec = _spec({"0": (50, 100, 40, (25, 15))})
    no_drafts = parse_metrics(
        'vllm:spec_decode_num_draft_tokens_total{engine="0"} 120\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 45\n'
    )
    assert spec_decode_held(spec, no_drafts) is None  # drafts absent after: no acceptance, no reset
    assert spec_decode_held(empty, spec) is None  # absent before: not "since the server started"


def test_series_without_an_engine_label_read_as_one_engine() -> None:
    before = parse_metrics("c_total 10\n")
    assert engine_counter_delta(before, parse_metrics("c_total 15\n"), "c_total") == EngineCounter(5.0, ("",), ())
