"""Streaming OpenAI-API client: one request in, one :class:`RequestRecord` out.

Errors (HTTP status, connection reset, timeouts, error events, malformed chunks) are recorded on the
record, never raised, so a failing request cannot lose the measurements of the others.

Timing follows docs/metrics.md: times are seconds on a monotonic clock shared by the whole cell
(``time.perf_counter`` minus the cell origin), the clock of the request's
:class:`~loadgen.stream.transport.StreamConnection`. ``send_s`` is taken right before the request is written
to the socket, and a chunk's arrival is when its bytes were read from the socket, before any parsing
(:mod:`loadgen.transport`). ``chunk_arrivals_s`` lists only token-bearing chunks; a role-only chat
chunk, the usage chunk and ``[DONE]`` are not tokens, and a stream that ends without a token-bearing
chunk is a failed request (``no-tokens``). Token counts per chunk come from ``token_ids`` (vLLM's
``return_token_ids`` request field), never from text.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from loadgen.profile.pair import Sampling
from loadgen.profile.workload import Prompt
from loadgen.stream.chunks import StreamChunk, common_tokens, interpret, load_object, parse_chunk
from loadgen.stream.http1 import TransportError
from loadgen.stream.sse import SSEDecoder
from loadgen.stream.transport import StreamConnection
from loadgen.util import strictjson


@dataclass
class RequestRecord:
    """The client-side timeline of one streamed request (one line of requests.jsonl).

    Times are seconds relative to the cell's clock origin. ``chunk_arrivals_s[i]`` is the arrival of
    the i-th token-bearing chunk and ``chunk_tokens[i]`` the number of tokens it carried. ``phase`` is
    ``warmup``, ``measured`` or ``cooldown``; only measured requests enter statistics.
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
        """JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RequestRecord:
        """Inverse of :meth:`to_json`; unknown keys are ignored (records of older runs load too). A record
        of an older run that ended with neither error nor token gets the ``no-tokens`` error it has today."""
        known = {f.name for f in fields(cls)}
        data = dict(data)
        if "phase" not in data:
            data["phase"] = "warmup" if data.get("warmup") else "measured"
        record = cls(**{k: v for k, v in data.items() if k in known})
        if record.error is None and not record.chunk_tokens:
            record.error = no_tokens_error(record)
        return record


def build_payload(prompt: Prompt, sampling: Sampling, model: str) -> dict[str, Any]:
    """The JSON body for ``prompt``: identical for both servers but for nothing.

    Fair-comparison defaults (docs/metrics.md): ``ignore_eos`` with ``min_tokens = max_tokens`` so every
    request yields exactly ``prompt.output_tokens``; ``return_token_ids`` (vLLM >= 0.10.2 extension)
    so token counts per chunk are exact; ``stream_options.include_usage`` for the final usage chunk.
    """
    body: dict[str, Any] = {
        "model": model,
        "stream": True,
        "stream_options": {"include_usage": True},
        "return_token_ids": True,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "ignore_eos": sampling.ignore_eos,
    }
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if prompt.endpoint == "chat":
        body["messages"] = list(prompt.messages or ())
        body["max_completion_tokens"] = prompt.output_tokens
    else:
        body["prompt"] = prompt.text
        body["max_tokens"] = prompt.output_tokens
    if sampling.ignore_eos:
        body["min_tokens"] = prompt.output_tokens
    return body


def endpoint_path(endpoint: str) -> str:
    """URL path of an endpoint kind (``completions`` or ``chat``)."""
    return "/v1/chat/completions" if endpoint == "chat" else "/v1/completions"


async def stream_request(
    conn: StreamConnection,
    body: dict[str, Any],
    record: RequestRecord,
    endpoint: str = "completions",
) -> RequestRecord:
    """Send ``body`` as a streaming POST on ``conn`` and fill ``record`` with its timeline.

    Times come from ``conn.clock`` (seconds on the cell's clock): ``send_s`` right before the request
    bytes were written (the call's start when it never was, e.g. connection refused), chunk arrivals
    as their bytes came off the socket, ``done_s`` when the response was read to its end. The response
    is always drained to its end, even after ``[DONE]`` or an error event, so ``conn`` stays reusable.
    Never raises for request failures: they end up in ``record.error`` (``record.http_status`` holds
    the status when one came). A transport failure after ``[DONE]`` (while draining) is not an error
    of the request: its timeline is complete, and the connection reconnects for the next one. A NaN or
    infinite number in ``body`` is never sent: ValueError (strictjson.body).
    """
    clock = conn.clock
    payload = strictjson.body(body)
    record.send_s = clock()
    reader = _Reader(record)
    try:
        response = await conn.post_stream(endpoint_path(endpoint), payload)
        record.send_s, record.http_status = response.sent_s, response.status
        if response.status != 200:
            record.error = f"HTTP {response.status}"  # kept if the error body cannot be read
            text = (await response.read()).decode("utf-8", "replace")
            record.error = f"HTTP {response.status}: {text[:300]}"
            return record
        reader.last = record.send_s
        await response.deliver(reader.feed)
        reader.close()
    except TransportError as exc:
        if conn.sent_s is not None:
            record.send_s = conn.sent_s
        if not reader.over and record.error is None:
            record.error = str(exc)
    finally:
        record.done_s = clock()
        if record.error is None and not record.chunk_tokens:
            record.error = no_tokens_error(record)
    return record


def no_tokens_error(record: RequestRecord) -> str:
    """The error line of a request that ended without error and without a token-bearing chunk (only
    ``[DONE]``, a role chunk or a usage chunk): it failed, category ``no_tokens`` (faults.py)."""
    return (f"no-tokens: HTTP {record.http_status} stream ended with no token-bearing chunk (finish_reason "
            f"{record.finish_reason}, usage completion_tokens {record.usage_completion_tokens})")


class _Reader:
    """Folds a response body, piece by piece, into a record: SSE events, then chunks (:func:`_absorb`).
    ``over`` once ``[DONE]``, an error event or a malformed chunk was seen: later pieces are ignored."""

    __slots__ = ("decoder", "last", "over", "record")

    def __init__(self, record: RequestRecord) -> None:
        self.record, self.decoder, self.over, self.last = record, SSEDecoder(), False, 0.0

    def feed(self, arrival_s: float, raw: bytes) -> None:
        """One body piece read at ``arrival_s`` (s, the cell clock)."""
        self.last = arrival_s
        if self.over:
            return
        if (data := self.decoder.lone_data(raw)) is not None and (obj := load_object(data)) is not None:
            # the common piece, one whole event: no decoding; the common chunk: no StreamChunk either
            if (common := common_tokens(obj)) is not None:
                _take_tokens(self.record, common[0], common[1], arrival_s)
            else:
                self.over = _absorb(self.record, interpret(obj), arrival_s)
            return
        for event in self.decoder.feed(raw):
            if _absorb(self.record, parse_chunk(event.data), arrival_s):
                self.over = True
                return

    def close(self) -> None:
        """The body ended: an event left without its closing blank line counts too."""
        if not self.over:
            for event in self.decoder.close():
                if _absorb(self.record, parse_chunk(event.data), self.last):
                    self.over = True
                    return


def _absorb(record: RequestRecord, chunk: StreamChunk, now: float) -> bool:
    """Fold one interpreted SSE event into ``record``; True when the stream is over (done or error)."""
    if chunk.kind == "done":
        return True
    if chunk.kind in ("error", "malformed"):
        record.error = f"{chunk.kind}: {chunk.error}"
        return True
    if chunk.text and not chunk.has_token_ids:
        record.error = ("no-token-ids: the server streamed text without token_ids, so tokens cannot be counted; "
                        "it needs the return_token_ids request field (vLLM >= 0.10.2)")
        return True
    _take_tokens(record, chunk.token_ids, chunk.finish_reason, now)
    if chunk.usage is not None:
        record.usage_prompt_tokens = chunk.usage.prompt_tokens
        record.usage_completion_tokens = chunk.usage.completion_tokens
    return False


def _take_tokens(record: RequestRecord, token_ids: Sequence[int], finish_reason: str | None, now: float) -> None:
    """A data chunk's tokens (a token-bearing chunk when ``token_ids`` is not empty) and finish reason."""
    if token_ids:
        record.chunk_arrivals_s.append(now)
        record.chunk_tokens.append(len(token_ids))
        record.token_ids.extend(token_ids)
    if finish_reason is not None:
        record.finish_reason = finish_reason


def monotonic_clock(origin: float) -> Callable[[], float]:
    """A clock returning ``time.perf_counter() - origin`` (seconds)."""
    return lambda: time.perf_counter() - origin
