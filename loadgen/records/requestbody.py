"""The JSON body loadgen sends to an OpenAI-compatible server for one prompt (stream/client.py builds it,
stream/loadloop.py salts it per cell): :class:`CompletionBody`, the one shape of both endpoints' requests.

vLLM's request fields (``vllm/entrypoints/openai/protocol.py``): ``stream`` with ``stream_options.include_usage``
for the final usage chunk, ``return_token_ids`` (vLLM >= 0.10.2) for exact token counts per chunk,
``ignore_eos`` with ``min_tokens`` for a fixed output length (not sent with a grammar, which ends the output:
profile/structured.py), ``cache_salt`` (vLLM >= 0.9) to keep one cell's prefix cache apart from another's, and
``response_format`` / ``structured_outputs`` where the workload declares one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CompletionBody:
    """One request's body. ``messages`` (chat) or ``prompt`` (completions) carries the input; ``output_tokens``
    becomes ``max_completion_tokens`` (chat) or ``max_tokens`` (completions), and ``min_tokens`` as well when
    ``ignore_eos``; ``seed`` and ``cache_salt`` are sent when set."""

    model: str
    temperature: float
    top_p: float
    ignore_eos: bool
    output_tokens: int
    seed: int | None = None
    prompt: str | None = None
    messages: tuple[Mapping[str, str], ...] | None = None
    cache_salt: str | None = None
    #: The other sampling fields, sent on every request (profile/pair.py ``Sampling``: ``top_k``, ``min_p``,
    #: ``repetition_penalty``, ``presence_penalty``, ``frequency_penalty``), in that order.
    more_sampling: tuple[tuple[str, float], ...] = ()
    #: The request's grammar field as JSON text (``{"structured_outputs": ...}`` or ``{"response_format": ...}``,
    #: profile/structured.py), sent as declared; None: unconstrained.
    constraint: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON object as sent (keys in this order: model, stream, stream_options, return_token_ids, sampling,
        seed, the input and its length, min_tokens, cache_salt, the grammar field)."""
        body: dict[str, Any] = {
            "model": self.model,
            "stream": True,
            "stream_options": {"include_usage": True},
            "return_token_ids": True,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "ignore_eos": self.ignore_eos,
            **dict(self.more_sampling),
        }
        if self.seed is not None:
            body["seed"] = self.seed
        if self.messages is not None:
            body["messages"] = [dict(m) for m in self.messages]
            body["max_completion_tokens"] = self.output_tokens
        else:
            body["prompt"] = self.prompt
            body["max_tokens"] = self.output_tokens
        if self.ignore_eos:
            body["min_tokens"] = self.output_tokens
        if self.cache_salt is not None:
            body["cache_salt"] = self.cache_salt
        if self.constraint is not None:
            body.update(json.loads(self.constraint))
        return body
