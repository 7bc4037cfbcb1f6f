"""The minimal completion that ends a server's readiness check, retried while the server starts.

vLLM's ``/health`` and ``/v1/models`` can answer before completions do (a server that is still loading,
or a proxy in front of it answering 404/500 for a while), so one failed completion is no verdict: it is
retried with a short back-off until the start-up deadline, and measuring starts only once a completion
returned at least one token. The request is streamed with ``return_token_ids`` (vLLM >= 0.10.2) so the
tokens of each chunk are counted: at temperature 0 a plain server sends exactly one token per chunk,
a speculative one can send more (accepted draft tokens arrive with the verified one), which is evidence
of the mode when ``/metrics`` is unavailable (modeproof.py).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from loadgen.records.server import CompletionText, MinimalRequest, MinimalResponse

#: Back-off between failed minimal completions: starts here, doubles, capped at BACKOFF_MAX_S (seconds).
BACKOFF_S, BACKOFF_MAX_S = 0.25, 2.0


def minimal_body(model: str, prompt: str = "Hello", max_tokens: int = 16) -> MinimalRequest:
    """The minimal request: greedy (temperature 0), streamed, with token ids and the usage chunk."""
    return MinimalRequest(model, prompt, max_tokens, 0.0, True, {"include_usage": True}, True)


@dataclass(frozen=True)
class StreamError:
    """A stream that ended in an error: the event's ``error`` as sent, or what was wrong with a line."""

    error: object


def read_stream(lines: list[str]) -> MinimalResponse | StreamError:
    """Fold the SSE ``lines`` of a streamed completion into a :class:`MinimalResponse` (pure): its text, the
    ``usage`` chunk and the tokens per content chunk. A chunk's tokens are ``len(token_ids)`` when the server
    sends them, else 1 per chunk with text (then ``chunk_tokens_exact`` is False). An error event, a line that
    is not JSON or not an object is a :class:`StreamError`."""
    text, usage, tokens, exact, printed = [], None, [], True, None
    for line in lines:
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        try:
            event = json.loads(line[5:])
        except ValueError:
            return StreamError(f"not JSON: {line[:80]!r}")
        if not isinstance(event, dict):
            return StreamError(f"not an object: {line[:80]!r}")
        if event.get("error"):
            return StreamError(event["error"])
        usage = event["usage"] if isinstance(event.get("usage"), dict) and event["usage"] else usage
        printed = event["system_fingerprint"] if isinstance(event.get("system_fingerprint"), str) else printed
        for choice in event.get("choices") or []:
            ids = choice.get("token_ids")
            if ids:
                tokens.append(len(ids))
            elif choice.get("text"):
                tokens.append(1)
                exact = False
            text.append(choice.get("text") or "")
    return MinimalResponse((CompletionText("".join(text)),), usage, tuple(tokens), exact, system_fingerprint=printed)


#: The longest single wait (connect or read, s) of one minimal completion, within the start-up limit.
MAX_WAIT_S = 120.0


def minimal_completion(
    http: httpx.Client,
    base_url: str,
    body: MinimalRequest,
    deadline: float,
    alive: Callable[[], bool],
    fail: Callable[[str], Exception],
) -> MinimalResponse:
    """POST ``body`` to ``base_url``/v1/completions until one answer streams at least one token; returns
    it (:func:`read_stream`'s record with its ``attempts``). Between failures (HTTP error status, transport
    error, error event, zero tokens) wait :data:`BACKOFF_S`, doubling up to :data:`BACKOFF_MAX_S`.

    Raises ``fail(what)`` when the process exits or ``deadline`` (time.monotonic) passes, naming the
    last failure."""
    wait, attempts, last = BACKOFF_S, 0, "no answer"
    while True:
        attempts += 1
        # each wait (connect, a read) is bounded by what is left of the start-up limit, so a stream that
        # stalls cannot hold the start-up past it
        limit = httpx.Timeout(max(1.0, min(MAX_WAIT_S, deadline - time.monotonic())))
        try:
            with http.stream("POST", base_url + "/v1/completions", json=body.to_json(), timeout=limit) as response:
                if response.status_code == 200:
                    result = read_stream(list(response.iter_lines()))
                    if isinstance(result, StreamError):
                        last = f"an error event: {str(result.error)[:200]}"
                    elif result.tokens > 0:
                        return dataclasses.replace(result, attempts=attempts)
                    else:
                        last = "a completion with no tokens"
                else:
                    last = f"HTTP {response.status_code}: {response.read().decode(errors='replace')[:200]}"
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}: {exc}"
        if not alive():
            raise fail(f"exited before its minimal completion succeeded (last answer: {last})")
        if time.monotonic() + wait > deadline:
            raise fail(
                f"gave no complete minimal completion in {attempts} tries within the start-up limit; "
                f"last: {last} (raise [engine].startup_timeout_s if it is just slow)"
            )
        time.sleep(wait)
        wait = min(2 * wait, BACKOFF_MAX_S)
