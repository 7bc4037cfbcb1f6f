"""Seeded synthetic prompt sets: short homogeneous continuations and diverse long answers.

Prompts are natural text, never random token ids: random ids make draft acceptance meaningless
(vLLM issue #52536; reference/peers.md section 3). The same seed gives the same prompts on every
machine, and both servers receive the identical list.

- ``short-homogeneous``: raw-text continuations built from a few templates that share most of their
  words (similar prompts, short outputs): the case where a draft has the best chance.
- ``long-diverse``: chat questions across varied topics and answer formats (lists, code, letters,
  explanations), long outputs.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from loadgen.pair import Workload

_SHORT_TEMPLATES = (
    "The history of {topic} began when",
    "Here is a short story about a {adjective} {animal}:",
    "In one sentence, {city} is known for",
    "The most important thing to know about {topic} is that",
    "Once upon a time, a {adjective} {animal} lived in {city}. One day,",
)
_TOPICS = (
    "the printing press", "steam engines", "the bicycle", "coffee", "the telescope", "paper money",
    "the violin", "chess", "glass", "the compass", "vaccines", "the railway", "photography", "tea",
    "the postal service", "bridges", "maps", "clocks", "the piano", "bread",
)
_ADJECTIVES = ("brave", "curious", "sleepy", "clever", "tiny", "grumpy", "kind", "lonely", "happy", "old")
_ANIMALS = ("fox", "owl", "cat", "turtle", "rabbit", "horse", "whale", "sparrow", "bear", "dog")
_CITIES = ("Paris", "Tokyo", "Cairo", "Lima", "Oslo", "Rome", "Sydney", "Toronto", "Nairobi", "Lisbon")

_LONG_FORMATS = (
    "Write a numbered list of practical tips about {subject}.",
    "Explain {subject} to a twelve-year-old, in a few paragraphs.",
    "Write a short Python function related to {subject}, then explain how it works.",
    "Write a polite letter to a neighbour about {subject}.",
    "Compare two different approaches to {subject}, with their advantages and drawbacks.",
    "Write a short poem about {subject}.",
    "Give a step-by-step plan for a beginner who wants to learn about {subject}.",
    "Summarize the main arguments for and against {subject}.",
)
_SUBJECTS = (
    "growing tomatoes on a balcony", "saving money on groceries", "learning a second language",
    "training for a first marathon", "keeping bees", "reducing screen time", "sorting a list of numbers",
    "planning a trip by train", "composting kitchen waste", "writing clear emails", "repairing a bicycle tyre",
    "baking sourdough bread", "studying for exams", "working from home", "caring for houseplants",
    "recycling electronics", "public libraries", "electric cars", "night-time photography", "board games",
)


@dataclass(frozen=True)
class Prompt:
    """One request's input. ``text`` for /v1/completions; ``messages`` for /v1/chat/completions."""

    prompt_id: str
    workload: str
    endpoint: str
    text: str | None
    messages: tuple[dict[str, str], ...] | None
    output_tokens: int

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (one line of prompts.jsonl)."""
        out = asdict(self)
        out["messages"] = list(self.messages) if self.messages is not None else None
        return out


def _short_text(rng: random.Random) -> str:
    template = rng.choice(_SHORT_TEMPLATES)
    return template.format(
        topic=rng.choice(_TOPICS), adjective=rng.choice(_ADJECTIVES),
        animal=rng.choice(_ANIMALS), city=rng.choice(_CITIES),
    )


def _long_text(rng: random.Random) -> str:
    return rng.choice(_LONG_FORMATS).format(subject=rng.choice(_SUBJECTS))


def generate(workload: Workload, count: int) -> list[Prompt]:
    """``count`` prompts for ``workload``, deterministic in ``workload.seed``.

    Returns a list of length ``count``; prompt ids are ``<workload>-<index>``.
    """
    rng = random.Random(f"{workload.kind}:{workload.seed}")
    prompts = []
    for i in range(count):
        body = _short_text(rng) if workload.kind == "short-homogeneous" else _long_text(rng)
        is_chat = workload.endpoint == "chat"
        prompts.append(
            Prompt(
                prompt_id=f"{workload.name}-{i:04d}",
                workload=workload.name,
                endpoint=workload.endpoint,
                text=None if is_chat else body,
                messages=({"role": "user", "content": body},) if is_chat else None,
                output_tokens=workload.output_tokens,
            )
        )
    return prompts


def prompts_digest(prompts: Iterable[Prompt]) -> str:
    """sha256 (hex) of the canonical JSON lines of ``prompts``: the prompt file's identity."""
    h = hashlib.sha256()
    for p in prompts:
        h.update(json.dumps(p.to_json(), sort_keys=True).encode())
        h.update(b"\n")
    return h.hexdigest()
