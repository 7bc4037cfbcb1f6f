"""The client-side timeline of one streamed request: :class:`RequestRecord`, one line of ``requests.jsonl``.

Written by the streaming client (stream/client.py) when a request ends, read by measure/ (statistics,
ratios, outcomes), report/ (the card, plots) and run/ (the cell's entry, sizing, the live exporter). Times
follow docs/metrics.md: seconds on the cell's monotonic clock (``time.perf_counter`` minus the cell origin).
Token counts per chunk come from ``token_ids`` (vLLM's ``return_token_ids`` request field), never from text.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Self

from loadgen.records.cardwire import Whole, read_fields
from loadgen.records.wire import BOOL, Where, obj
from loadgen.records.wire import field as read


class CellKeyed:
    """The :attr:`key` of a record of one cell (a request's here, a cells.jsonl line's in records/cell.py, a
    protocol.json cell's in records/protocol.py), from the fields the record declares."""

    workload: str
    level: str
    concurrency: int

    @property
    def key(self) -> tuple[str, str]:
        """The cell's (workload, level label); ``c<concurrency>`` for a record written before levels had labels
        (as profile/cells.py ``CellKey.named``)."""
        return self.workload, self.level or f"c{int(self.concurrency or 0)}"


@dataclass(frozen=True)
class RequestRecord(Whole, CellKeyed):
    """The client-side timeline of one streamed request (one line of requests.jsonl).

    Times are seconds relative to the cell's clock origin. ``chunk_arrivals_s[i]`` is the arrival of
    the i-th token-bearing chunk and ``chunk_tokens[i]`` the number of tokens it carried. ``phase`` is
    ``warmup``, ``measured`` or ``cooldown``; only measured requests enter statistics. ``error`` is None for a
    request that streamed to its end; ``http_status`` the status when one came.
    """

    prompt_id: str
    role: str
    workload: str
    concurrency: int
    phase: str
    scheduled_s: float
    arrival_s: float | None = None
    level: str = ""
    repetition: int = 0
    send_s: float = 0.0
    chunk_arrivals_s: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    usage_prompt_tokens: int | None = None
    usage_completion_tokens: int | None = None
    requested_output_tokens: int = 0
    http_status: int | None = None
    error: str | None = None
    done_s: float | None = None
    #: Why the request was sent a second time, on a new connection (None: sent once): a reused keep-alive
    #: connection the server had closed or reset before any response byte (stream/transport.py). Written only
    #: when set, so lines of older code read back as they were.
    resent: str | None = None
    #: The answer's ``system_fingerprint`` (vLLM: on the usage chunk, ``vllm-<version>-<hash>``), written only
    #: when the server sent one: answers that differ show replicas behind one URL (measure/replicas.py).
    system_fingerprint: str | None = None

    @property
    def warmup(self) -> bool:
        """True for requests excluded from statistics (warmup and cooldown)."""
        return self.phase != "measured"

    @property
    def output_tokens(self) -> int:
        """Generated tokens counted from the chunks' token ids."""
        return sum(self.chunk_tokens)

    @property
    def ok(self) -> bool:
        """True when the stream finished without error and carried at least one token."""
        return self.error is None and bool(self.chunk_tokens)

    @property
    def usage_mismatch(self) -> bool:
        """True when the final usage's completion_tokens disagrees with the counted token ids."""
        return self.usage_completion_tokens is not None and self.usage_completion_tokens != self.output_tokens

    def to_json(self) -> dict[str, Any]:
        """The requests.jsonl line: every field, in the dataclass's order (``resent`` and ``system_fingerprint``
        only when set)."""
        out = super().to_json()
        for key in ("resent", "system_fingerprint"):
            if out[key] is None:
                del out[key]
        return out

    @classmethod
    def from_json(cls, data: object, *, source: str) -> Self:
        """Inverse of :meth:`to_json`, checked: a missing required field or a value of the wrong kind raises
        BadInput (exit 2) naming ``source`` (the file and line) and the field. Unknown keys are ignored and
        a record of older code without ``phase`` takes it from its ``warmup`` flag, so older runs load too. A
        record of an older run that ended with neither error nor token gets the ``no-tokens`` error it has
        today."""
        where = Where(source)
        d = obj(data, where)
        if "phase" not in d:
            d = {**d, "phase": "warmup" if d.get("warmup") else "measured"}
        read(d, "warmup", BOOL, where, None)
        record = cls(**read_fields(cls, d, where))  # no keys kept: written whole, in the dataclass's order
        if record.error is None and not record.chunk_tokens:
            record = replace(record, error=no_tokens_error(record))
        return record


def no_tokens_error(record: RequestRecord) -> str:
    """The error line of a request that ended without error and without a token-bearing chunk (only
    ``[DONE]``, a role chunk or a usage chunk): it failed, category ``no_tokens`` (measure/faults.py)."""
    return (
        f"no-tokens: HTTP {record.http_status} stream ended with no token-bearing chunk (finish_reason "
        f"{record.finish_reason}, usage completion_tokens {record.usage_completion_tokens})"
    )
