"""Streaming OpenAI-API client: one request in, one :class:`~loadgen.records.request.RequestRecord` out.

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
from dataclasses import dataclass, field, replace

from loadgen.profile.pair import Sampling
from loadgen.profile.workload import Prompt
from loadgen.records.request import RequestRecord, no_tokens_error
from loadgen.records.requestbody import CompletionBody
from loadgen.stream.chunks import StreamChunk, common_tokens, interpret, load_object, parse_chunk
from loadgen.stream.http1 import TransportError
from loadgen.stream.sse import SSEDecoder
from loadgen.stream.transport import StreamConnection
from loadgen.util import strictjson


@dataclass(slots=True)
class _Timeline:
    """What a request's stream fills in while it runs (the client's accumulator); the frozen
    :class:`RequestRecord` is made from it once the request ended (:func:`stream_request`)."""

    send_s: float = 0.0
    chunk_arrivals_s: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    usage_prompt_tokens: int | None = None
    usage_completion_tokens: int | None = None
    http_status: int | None = None
    error: str | None = None
    done_s: float | None = None
    resent: str | None = None
    system_fingerprint: str | None = None


def build_payload(prompt: Prompt, sampling: Sampling, model: str) -> CompletionBody:
    """The body for ``prompt`` (records/requestbody.py): identical for both servers but for nothing.

    Fair-comparison defaults (docs/metrics.md): ``ignore_eos`` with ``min_tokens = max_tokens`` so every
    request yields exactly ``prompt.output_tokens``, except a grammar-constrained prompt's (its
    ``response_format`` / ``structured_outputs`` sent as declared, profile/structured.py): the grammar ends
    it, ``output_tokens`` caps it; ``return_token_ids`` (vLLM >= 0.10.2 extension)
    so token counts per chunk are exact; ``stream_options.include_usage`` for the final usage chunk.
    """
    chat = prompt.endpoint == "chat"
    return CompletionBody(
        model=model,
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        ignore_eos=sampling.ignore_eos and prompt.constraint is None,  # a grammar ends its output
        constraint=prompt.constraint,
        output_tokens=prompt.output_tokens,
        seed=sampling.seed,
        prompt=None if chat else prompt.text,
        messages=tuple(prompt.messages or ()) if chat else None,
        more_sampling=tuple(
            (k, getattr(sampling, k))
            for k in ("top_k", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty")
        ),
    )


def endpoint_path(endpoint: str) -> str:
    """URL path of an endpoint kind (``completions`` or ``chat``)."""
    return "/v1/chat/completions" if endpoint == "chat" else "/v1/completions"


async def stream_request(
    conn: StreamConnection,
    body: CompletionBody,
    record: RequestRecord,
    endpoint: str = "completions",
) -> RequestRecord:
    """Send ``body`` as a streaming POST on ``conn``; returns ``record`` with its timeline filled in.

    Times come from ``conn.clock`` (seconds on the cell's clock): ``send_s`` right before the request
    bytes were written (the call's start when it never was, e.g. connection refused), chunk arrivals
    as their bytes came off the socket, ``done_s`` when the response was read to its end. The response
    is always drained to its end, even after ``[DONE]`` or an error event, so ``conn`` stays reusable.
    Never raises for request failures: they end up in the record's ``error`` (``http_status`` holds
    the status when one came); a 200 whose ``Content-Type`` is given and is not an event stream (a JSON body, a
    proxy's HTML page) is ``malformed``, naming the type and the body's start (vLLM streams
    ``text/event-stream``: ``StreamingResponse(media_type="text/event-stream")`` in its OpenAI serving code).
    A transport failure after ``[DONE]`` (while draining) is not an error
    of the request: its timeline is complete, and the connection reconnects for the next one. A NaN or
    infinite number in ``body`` is never sent: ValueError (strictjson.body).
    """
    clock = conn.clock
    payload = strictjson.body(body.to_json())
    line = _Timeline(send_s=clock())
    reader = _Reader(line)
    try:
        response = await conn.post_stream(endpoint_path(endpoint), payload)
        line.send_s, line.http_status, line.resent = response.sent_s, response.status, conn.resent
        if response.status != 200:
            line.error = f"HTTP {response.status}"  # kept if the error body cannot be read
            text = (await response.read()).decode("utf-8", "replace")
            line.error = f"HTTP {response.status}: {text[:300]}"
        elif (ctype := response.headers.get("content-type", "")) and "event-stream" not in ctype.lower():
            line.error = f"malformed: HTTP 200 with Content-Type {ctype}"  # kept if the body cannot be read
            text = " ".join((await response.read()).decode("utf-8", "replace").split())
            line.error = (
                f"malformed: HTTP 200 with Content-Type {ctype}, not an event stream (text/event-stream): "
                f"{text[:160]!r}; something other than the server answers at this URL (a proxy, a gateway, "
                "a login page), or the server ignored stream: true"
            )
        else:
            reader.last = line.send_s
            await response.deliver(reader.feed)
            reader.close()
    except TransportError as exc:
        if conn.sent_s is not None:
            line.send_s = conn.sent_s
        if not reader.over and line.error is None:
            line.error = str(exc)
    finally:
        line.done_s = clock()
    done = replace(record, **{name: getattr(line, name) for name in _Timeline.__slots__})
    if done.error is None and not done.chunk_tokens:
        done = replace(done, error=no_tokens_error(done))
    return done


class _Reader:
    """Folds a response body, piece by piece, into a request's timeline: SSE events, then chunks (:func:`_absorb`).
    ``over`` once ``[DONE]``, an error event or a malformed chunk was seen: later pieces are ignored."""

    __slots__ = ("decoder", "last", "line", "over")

    def __init__(self, line: _Timeline) -> None:
        self.line, self.decoder, self.over, self.last = line, SSEDecoder(), False, 0.0

    def feed(self, arrival_s: float, raw: bytes) -> None:
        """One body piece read at ``arrival_s`` (s, the cell clock)."""
        self.last = arrival_s
        if self.over:
            return
        if (data := self.decoder.lone_data(raw)) is not None and (obj := load_object(data)) is not None:
            # the common piece, one whole event: no decoding; the common chunk: no StreamChunk either
            if (common := common_tokens(obj)) is not None:
                _take_tokens(self.line, common[0], common[1], arrival_s)
            else:
                self.over = _absorb(self.line, interpret(obj), arrival_s)
            return
        for event in self.decoder.feed(raw):
            if _absorb(self.line, parse_chunk(event.data), arrival_s):
                self.over = True
                return

    def close(self) -> None:
        """The body ended: an event left without its closing blank line counts too."""
        if not self.over:
            for event in self.decoder.close():
                if _absorb(self.line, parse_chunk(event.data), self.last):
                    self.over = True
                    return


def _absorb(line: _Timeline, chunk: StreamChunk, now: float) -> bool:
    """Fold one interpreted SSE event into ``line``; True when the stream is over (done or error)."""
    if chunk.kind == "done":
        return True
    if chunk.kind in ("error", "malformed"):
        line.error = f"{chunk.kind}: {chunk.error}"
        return True
    if chunk.text and not chunk.has_token_ids:
        line.error = (
            "no-token-ids: the server streamed text without token_ids, so tokens cannot be counted; "
            "it needs the return_token_ids request field (vLLM >= 0.10.2)"
        )
        return True
    _take_tokens(line, chunk.token_ids, chunk.finish_reason, now)
    if chunk.usage is not None:
        line.usage_prompt_tokens = chunk.usage.prompt_tokens
        line.usage_completion_tokens = chunk.usage.completion_tokens
    if chunk.fingerprint is not None:
        line.system_fingerprint = chunk.fingerprint
    return False


def _take_tokens(line: _Timeline, token_ids: Sequence[int], finish_reason: str | None, now: float) -> None:
    """A data chunk's tokens (a token-bearing chunk when ``token_ids`` is not empty) and finish reason."""
    if token_ids:
        line.chunk_arrivals_s.append(now)
        line.chunk_tokens.append(len(token_ids))
        line.token_ids.extend(token_ids)
    if finish_reason is not None:
        line.finish_reason = finish_reason


def monotonic_clock(origin: float) -> Callable[[], float]:
    """A clock returning ``time.perf_counter() - origin`` (seconds)."""
    return lambda: time.perf_counter() - origin
