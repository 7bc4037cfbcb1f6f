"""measure/outcomes.py called directly (test_outcomes.py runs it end to end): how one cell's requests ended,
on hand-built request records with known endings: error categories, finish reasons, usage mismatches,
multi-token first chunks, the stop-rule differences of paired requests and the lines the card writes from them."""

from __future__ import annotations

from dataclasses import asdict

from loadgen.measure.outcomes import finish_line, lossless_inputs, side_notes, side_outcomes, stop_notes
from loadgen.records.cardcell import RoleStats
from loadgen.records.request import RequestRecord
from tests.support.cards import card_cell


def rec(
    prompt: str,
    role: str = "plain",
    chunks: tuple[int, ...] = (1, 1),
    finish: str | None = "stop",
    error: str | None = None,
    usage: int | None = None,
    rep: int = 0,
) -> RequestRecord:
    ids = list(range(sum(chunks)))
    return RequestRecord(
        prompt,
        role,
        "w",
        4,
        "measured",
        0.0,
        level="c4",
        repetition=rep,
        chunk_tokens=list(chunks),
        token_ids=ids,
        finish_reason=finish,
        usage_completion_tokens=usage,
        error=error,
    )


PLAIN = [
    rec("a", chunks=(1, 1, 1)),
    rec("b", finish="length", usage=2),
    rec("c", chunks=(), error="HTTP 500: boom"),
    rec("d", chunks=(), error="ReadTimeout: timed out"),
    rec("e", chunks=(), error="HTTP 503: busy"),
    rec("f", finish=None, usage=5),
]
SPEC = [
    rec("a", "speculative", (3, 2), "length"),
    rec("b", "speculative", (2,), "length"),
    rec("f", "speculative", (1, 4), "stop"),
    rec("g", "speculative", (4,), "stop", usage=4),
]


def test_side_outcomes_count_each_ending() -> None:
    assert asdict(side_outcomes(PLAIN)) == {
        "error_categories": {"http_5xx": 2, "timeout": 1},
        "finish_reasons": {"stop": 1, "length": 1, "none": 1},
        "usage_mismatches": 1,
        "first_chunk_multi_token_requests": 0,
        "first_chunk_max_tokens": 1,
    }
    assert asdict(side_outcomes(SPEC)) == {
        "error_categories": {},
        "finish_reasons": {"length": 2, "stop": 2},
        "usage_mismatches": 0,
        "first_chunk_multi_token_requests": 3,
        "first_chunk_max_tokens": 4,
    }
    assert asdict(side_outcomes([])) == {
        "error_categories": {},
        "finish_reasons": {},
        "usage_mismatches": 0,
        "first_chunk_multi_token_requests": 0,
        "first_chunk_max_tokens": 0,
    }


def side(records: list[RequestRecord]) -> RoleStats:
    errors = sum(1 for r in records if not r.ok)
    return RoleStats(
        requests=len(records),
        errors=errors,
        output_throughput_tps=None,
        request_throughput_rps=None,
        ttft_s=None,
        tpot_s=None,
        itl_s=None,
        e2e_s=None,
        failure=None,
        **asdict(side_outcomes(records)),
    )


def test_side_notes_name_counts_and_kinds() -> None:
    assert side_notes("plain", side(PLAIN)) == [
        "plain: 3 of 6 requests failed (http_5xx: 2, timeout: 1)",
        "plain: 1 of 6 requests' usage completion_tokens disagreed with the counted token ids (the card counts "
        "token ids)",
    ]
    assert side_notes("speculative", side(SPEC)) == [
        "speculative: 3 of 4 requests carried more than one token (up to 4) in their first token-bearing chunk: "
        "TPOT divides E2E - TTFT by output tokens - 1 although fewer tokens came after TTFT, so it reads below the "
        "per-token ITL"
    ]
    assert side_notes("plain", side(PLAIN[:1])) == []


def test_stop_notes_on_paired_requests() -> None:
    # paired: a (plain stop, 3 tokens; spec length, 5 tokens) and f (plain none) and b (plain length)
    assert stop_notes(PLAIN, SPEC) == [
        "speculative finished 1 of 3 paired requests with `length` where the plain server stopped (`stop`): a stop "
        "(EOS or stop string) did not end them",
        "speculative returned tokens past the plain server's stop in 1 request (2 tokens in all)",
    ]
    more = [rec("x", rep=1), rec("y", chunks=(1,))]
    spec_more = [
        rec("x", "speculative", (2, 1), "stop", rep=1),
        rec("y", "speculative", (2,), "stop"),
        rec("x", "speculative", (9,), "length", rep=0),
    ]  # another repetition: not paired
    assert stop_notes(more, spec_more) == [
        "speculative returned tokens past the plain server's stop in 2 requests (2 tokens in all)"
    ]
    assert stop_notes(PLAIN, []) == []


def test_lossless_inputs_keep_successful_requests_by_prompt() -> None:
    p_ids, s_ids, p_fin, s_fin = lossless_inputs(PLAIN, SPEC)
    assert p_ids == {"a": [0, 1, 2], "b": [0, 1], "f": [0, 1]} and p_fin == {"a": "stop", "b": "length", "f": None}
    assert s_ids == {"a": [0, 1, 2, 3, 4], "b": [0, 1], "f": [0, 1, 2, 3, 4], "g": [0, 1, 2, 3]}
    assert s_fin == {"a": "length", "b": "length", "f": "stop", "g": "stop"}


def test_finish_line() -> None:
    cell = {"plain": {"finish_reasons": {"stop": 1, "length": 2}}, "speculative": {"finish_reasons": {"length": 3}}}
    assert finish_line(card_cell(cell)) == "finish reasons: plain length 2, stop 1; speculative length 3"
    assert finish_line(card_cell({"plain": {"finish_reasons": {}}, "speculative": None})) is None
