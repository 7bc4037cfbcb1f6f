"""Error categories and the error budget."""

from __future__ import annotations

import pytest

from loadgen.measure.faults import categories, classify, over_budget


@pytest.mark.parametrize(
    ("error", "category"),
    [
        ("HTTP 429: too many requests", "http_429"),
        ('HTTP 400: {"error": {"message": "This model\'s maximum context length is 1024 tokens"}}', "context_length"),
        (
            "HTTP 400: The decoder prompt (length 3000) is longer than the maximum model length of 2048.",
            "context_length",
        ),
        ('HTTP 400: {"error": {"message": "temperature must be >= 0"}}', "http_4xx"),
        ('HTTP 404: {"error": {"message": "The model `nope` does not exist."}}', "model_not_found"),
        ("HTTP 404: model not found", "model_not_found"),
        ("HTTP 404: no route", "http_4xx"),
        ("HTTP 500: boom", "http_5xx"),
        ("error: engine dead", "error_event"),
        ("malformed: not JSON: '{oops'", "malformed"),
        ("no-token-ids: the server streamed text without token_ids", "no_token_ids"),
        ("ConnectError: [Errno 111] Connection refused", "connect"),
        ("ReadTimeout: no bytes for 300 s", "timeout"),
        ("RemoteProtocolError: peer closed connection without sending complete message body", "reset"),
        ("something else", "other"),
    ],
)
def test_classify(error: str, category: str) -> None:
    assert classify(error) == category


def test_counts_and_budget() -> None:
    assert categories(["HTTP 500: a", None, "HTTP 503: b", "error: x"]) == {"http_5xx": 2, "error_event": 1}
    assert over_budget(1, 8, 0.1) is True  # 12.5% > 10%
    assert over_budget(1, 10, 0.1) is False
    assert over_budget(0, 0, 0.0) is False
