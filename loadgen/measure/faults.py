"""Error categories of failed requests and the per-cell error budget (pure).

Every failed request keeps its one-line ``error`` (client.py, transport.py); its category is derived
from that line so the card can count errors per cell by kind, and the pair's error budget
(``[stop].max_error_rate``, ``[stop].on_error_budget``) decides whether the run goes on.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

CATEGORIES = (
    "http_429",
    "model_not_found",
    "context_length",
    "http_4xx",
    "http_5xx",
    "connect",
    "timeout",
    "reset",
    "error_event",
    "malformed",
    "no_token_ids",
    "no_tokens",
    "other",
)
_HTTP = re.compile(r"^HTTP (\d{3})")
#: vLLM's answers (vllm/entrypoints/openai serving code; seen on 0.32 in tests/e2e/test_vllm_faults.py): a model
#: name it does not serve is a 404 "The model `x` does not exist."; a prompt (plus max_tokens) over max_model_len
#: is a 400 "This model's maximum context length is N tokens. ..." or, from the engine's input checks, "... is
#: longer than the maximum model length of N".
_CONTEXT = ("maximum context length", "maximum model length")


def classify(error: str) -> str:
    """The category of one request's error line (see :data:`CATEGORIES`)."""
    low = error.lower()
    match = _HTTP.match(error)
    if match:
        code = int(match.group(1))
        if code == 429:
            return "http_429"
        if code == 404 and "model" in low and ("does not exist" in low or "not found" in low):
            return "model_not_found"
        if code == 400 and any(phrase in low for phrase in _CONTEXT):
            return "context_length"
        return "http_4xx" if code < 500 else "http_5xx"
    if low.startswith("error:"):
        return "error_event"
    if low.startswith("malformed:"):
        return "malformed"
    if low.startswith("no-token-ids"):
        return "no_token_ids"
    if low.startswith("no-tokens"):
        return "no_tokens"
    if "timeout" in low or "timed out" in low:
        return "timeout"
    if "refused" in low or low.startswith("connecterror") or "cannot connect" in low:
        return "connect"
    if any(word in low for word in ("reset", "closed", "incomplete", "protocol", "eof", "connection lost")):
        return "reset"
    if "connect" in low:
        return "connect"
    return "other"


def categories(errors: Iterable[str | None]) -> dict[str, int]:
    """Counts per category of the non-None ``errors``."""
    return dict(Counter(classify(e) for e in errors if e))


def over_budget(errors: int, requests: int, max_error_rate: float) -> bool:
    """True when the share of failed requests exceeds ``max_error_rate`` (0..1)."""
    return requests > 0 and errors / requests > max_error_rate
