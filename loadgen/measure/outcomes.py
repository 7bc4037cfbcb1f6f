"""How the requests of one cell ended, for the card (pure): failed requests by category, finish reasons,
usage mismatches, first token-bearing chunks with several tokens, and the stop-rule differences between
the plain and the speculative server, each with its one-line card note.

- A token-bearing chunk carries >= 1 generated token, counted from ``token_ids`` (client.py); a stream
  without one is a failed request (category ``no_tokens``, faults.py).
- ``finish_reason`` is the OpenAI API's: ``length`` (max_tokens reached), ``stop`` (EOS or a stop string),
  counted per successful request (``none`` when the stream gave none).
- TPOT = (E2E - TTFT) / (output tokens - 1) (metrics.py): when the first token-bearing chunk carries k > 1
  tokens, only output tokens - k arrive after TTFT, so TPOT is below the mean per-token ITL of the request
  (the ITL samples after the first chunk sum to E2E - TTFT over output tokens - k tokens).
- With greedy sampling speculative decoding keeps the target's output (vLLM docs, "Speculative decoding:
  lossless guarantees"), its stop included: a speculative request that ends with ``length`` where the
  plain one stopped (``stop``), or that returns more tokens than the plain one did before its stop, kept
  generating past a stop (e.g. an EOS or stop string inside an accepted draft).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from loadgen.measure.faults import categories
from loadgen.profile.cells import ROLES
from loadgen.records.cardcell import CardCell, RoleStats
from loadgen.records.request import RequestRecord

Key = tuple[str, int]


@dataclass(frozen=True)
class Outcomes:
    """Outcomes of one server's measured requests of a cell (the card's role statistics' fields of these names):
    ``error_categories`` (category -> count), ``finish_reasons`` (reason -> count over successful requests),
    ``usage_mismatches`` (requests whose usage completion_tokens differs from the counted token ids, as
    cells.jsonl counts them), ``first_chunk_multi_token_requests`` and ``first_chunk_max_tokens`` (successful
    requests)."""

    error_categories: dict[str, int]
    finish_reasons: dict[str, int]
    usage_mismatches: int
    first_chunk_multi_token_requests: int
    first_chunk_max_tokens: int


def side_outcomes(records: Sequence[RequestRecord]) -> Outcomes:
    """The :class:`Outcomes` of one server's measured requests of a cell."""
    ok = [r for r in records if r.error is None and r.chunk_tokens]
    first = [r.chunk_tokens[0] for r in ok]
    return Outcomes(
        categories(r.error for r in records),
        dict(Counter(r.finish_reason or "none" for r in ok)),
        sum(1 for r in records if r.usage_mismatch),
        sum(1 for k in first if k > 1),
        max(first, default=0),
    )


def side_notes(role: str, side: RoleStats) -> list[str]:
    """Card notes of one server in a cell from its card statistics (CellStats plus :class:`Outcomes`)."""
    notes = []
    requests, errors = side.requests, side.errors
    ok = requests - errors
    if errors:
        kinds = ", ".join(f"{k}: {n}" for k, n in sorted((side.error_categories or {}).items()))
        notes.append(f"{role}: {errors} of {requests} requests failed ({kinds})")
    if side.usage_mismatches:
        notes.append(
            f"{role}: {side.usage_mismatches} of {requests} requests' usage completion_tokens disagreed "
            "with the counted token ids (the card counts token ids)"
        )
    if side.first_chunk_multi_token_requests:
        notes.append(
            f"{role}: {side.first_chunk_multi_token_requests} of {ok} requests carried more than one "
            f"token (up to {side.first_chunk_max_tokens}) in their first token-bearing chunk: TPOT "
            "divides E2E - TTFT by output tokens - 1 although fewer tokens came after TTFT, so it reads "
            "below the per-token ITL"
        )
    return notes


def _ok(records: Sequence[RequestRecord]) -> dict[Key, RequestRecord]:
    return {(r.prompt_id, r.repetition): r for r in records if r.error is None and r.chunk_tokens}


def stop_notes(plain: Sequence[RequestRecord], speculative: Sequence[RequestRecord]) -> list[str]:
    """Notes on paired successful requests (same prompt and repetition) where the speculative server
    ended with ``length`` where the plain one stopped, or returned tokens past the plain one's stop."""
    p, s = _ok(plain), _ok(speculative)
    keys = sorted(p.keys() & s.keys())
    stopped = [k for k in keys if p[k].finish_reason == "stop"]
    length = [k for k in stopped if s[k].finish_reason == "length"]
    past = [k for k in stopped if s[k].output_tokens > p[k].output_tokens]
    notes = []
    if length:
        notes.append(
            f"speculative finished {len(length)} of {len(keys)} paired requests with `length` where the "
            "plain server stopped (`stop`): a stop (EOS or stop string) did not end them"
        )
    if past:
        extra = sum(s[k].output_tokens - p[k].output_tokens for k in past)
        notes.append(
            f"speculative returned tokens past the plain server's stop in {len(past)} request"
            f"{'s' if len(past) > 1 else ''} ({extra} token{'s' if extra > 1 else ''} in all)"
        )
    return notes


def lossless_inputs(
    plain: Sequence[RequestRecord], speculative: Sequence[RequestRecord]
) -> tuple[dict[str, list[int]], dict[str, list[int]], dict[str, str | None], dict[str, str | None]]:
    """Token ids and finish reasons per prompt id of both servers' successful requests, the arguments of
    :func:`loadgen.measure.diagnosis.lossless`."""
    p = {r.prompt_id: r for r in plain if r.error is None and r.token_ids}
    s = {r.prompt_id: r for r in speculative if r.error is None and r.token_ids}
    return (
        {k: r.token_ids for k, r in p.items()},
        {k: r.token_ids for k, r in s.items()},
        {k: r.finish_reason for k, r in p.items()},
        {k: r.finish_reason for k, r in s.items()},
    )


def finish_line(cell: CardCell) -> str | None:
    """``finish reasons: plain length 2, stop 1; speculative length 3`` for card.md, None without any."""
    parts = []
    for role in ROLES:
        side = cell.role(role)
        counts = None if side is None else side.finish_reasons
        if counts:
            parts.append(f"{role} " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
    return "finish reasons: " + "; ".join(parts) if parts else None
