"""Input-grounded prompts (pure): each prompt carries a passage and asks for an answer that reuses its
text (quote it, edit it, reformat it as a list or JSON, summarise it in its own words), the traffic of
summaries, edits, code changes and retrieval answers.

This is where n-gram and suffix speculation can pay: their proposals are copies of earlier tokens of the
sequence (vLLM docs, "Speculative decoding": n-gram prompt lookup; suffix decoding), so their acceptance
rises when the output repeats the input. Passages are seeded natural sentences (records of shipments,
meetings and measurements with names, places and numbers), never random token ids.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from tokenizers import Tokenizer

_NAMES = ("Ada", "Bruno", "Chen", "Dalia", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Julia", "Kofi", "Lena")
_PLACES = ("Lisbon", "Oslo", "Nairobi", "Lima", "Osaka", "Porto", "Quebec", "Riga", "Seville", "Tunis")
_GOODS = ("tea", "copper wire", "olive oil", "paper", "bicycle parts", "wool", "coffee beans", "glass jars")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_SENTENCES = (
    "On {day}, {name} shipped {n} crates of {good} from {place} to {place2}.",
    "The warehouse in {place} reported {n} units of {good} in stock at the end of {day}.",
    "{name} met {name2} in {place} on {day} to agree the price of {good}.",
    "The train from {place} to {place2} left at {h}:{m:02d} with {n} passengers on board.",
    "{name} measured {n} millimetres of rain in {place} between {day} and the weekend.",
    "A delay of {h} hours held {n} boxes of {good} at the port of {place}.",
    "The committee in {place2} asked {name} to review the {good} contract before {day}.",
)
#: The tasks: each answer reuses the passage's words (quote, edit, reformat) or its facts (summary).
TASKS = (
    "Repeat the passage above exactly, word for word.",
    "Rewrite the passage above as a bulleted list, one sentence per bullet, keeping every word.",
    "Copy the passage above, replacing every day of the week with the word DAY.",
    "Rewrite the passage above as a JSON list of strings, one sentence per string.",
    "Quote every sentence of the passage above that mentions a number, in order.",
    "Summarise the passage above, reusing its own words and names.",
)


def sentence(rng: random.Random) -> str:
    """One seeded passage sentence."""
    return rng.choice(_SENTENCES).format(
        day=rng.choice(_DAYS),
        name=rng.choice(_NAMES),
        name2=rng.choice(_NAMES),
        place=rng.choice(_PLACES),
        place2=rng.choice(_PLACES),
        good=rng.choice(_GOODS),
        n=rng.randint(2, 990),
        h=rng.randint(1, 12),
        m=rng.randint(0, 59),
    )


def compose(passage: str, task: str) -> str:
    """The prompt text around ``passage`` and ``task``."""
    return f"Passage:\n{passage}\n\nTask: {task}\nAnswer:\n"


def reference_answer(passage: str, task: str) -> str:
    """What a faithful answer to ``task`` looks like (used by tests to measure the overlap with the
    prompt): the passage itself, reformatted or edited, sentence by sentence."""
    parts = [s.strip() + "." for s in passage.split(".") if s.strip()]
    if "bulleted" in task:
        return "\n".join(f"- {s}" for s in parts)
    if "JSON" in task:
        return "[" + ", ".join(f'"{s}"' for s in parts) + "]"
    if "DAY" in task:
        for day in _DAYS:
            passage = passage.replace(day, "DAY")
        return passage
    if "number" in task:
        return " ".join(s for s in parts if any(c.isdigit() for c in s))
    return passage


def grounded_prompt(rng: random.Random, tokens: int | None, tokenizer: Tokenizer | None) -> tuple[str, str, str]:
    """(prompt text, passage, task), seeded by ``rng``.

    With ``tokens`` (and the target's ``tokenizer``), the prompt encodes to exactly ``tokens`` tokens
    (special tokens included, as the server counts them): the passage grows by whole sentences, then is
    cut at a token boundary. Without, the passage has five sentences. Raises ValueError when ``tokens`` is
    too small to hold the task or no cut gives the exact length.
    """
    task = rng.choice(TASKS)
    if tokens is None or tokenizer is None:
        passage = " ".join(sentence(rng) for _ in range(5))
        return compose(passage, task), passage, task

    def count(p: str) -> int:
        return len(tokenizer.encode(compose(p, task)).ids)

    base = count("")
    if base + 4 > tokens:
        raise ValueError(f"{tokens} input tokens cannot hold a passage and the task ({base} tokens)")
    for _ in range(8):  # a cut can land between two merged tokens and skip the count; then a new passage
        passage = _grow(rng, tokens, count, tokenizer)
        offsets = [end for (_, end) in tokenizer.encode(passage, add_special_tokens=False).offsets]
        k = min(len(offsets), max(1, tokens - base))
        for _ in range(12):  # walk the cut towards the exact count
            diff = tokens - count(passage[: offsets[k - 1]])
            if diff == 0:
                break
            k = min(len(offsets), max(1, k + diff))
        for k2 in sorted(range(max(1, k - 4), min(len(offsets), k + 4) + 1), key=lambda j: abs(j - k)):
            if count(passage[: offsets[k2 - 1]]) == tokens:
                cut = passage[: offsets[k2 - 1]]
                return compose(cut, task), cut, task
    raise ValueError(f"cannot cut a grounded prompt to exactly {tokens} tokens")


def _grow(rng: random.Random, tokens: int, count: Callable[[str], int], tokenizer: Tokenizer) -> str:
    """The passage of whole sentences whose prompt first reaches ``tokens`` tokens (``count``): sentences are
    appended until it does. Counting every prefix exactly encodes the whole prompt each time, quadratic in its
    length (89 s for the 13,132 prompts of a five-level grounded sweep to 12 blocks); so each new sentence's
    own tokens are added to an estimate, and the prompt is counted exactly only within ``slack`` of the target.
    The result is checked against the exact rule (the prefix without its last sentence is still short); should
    the estimate have run past it, the passage is built again from the same random state, counting every prefix.
    """
    state = rng.getstate()
    slack = max(8, tokens // 16)
    parts = [sentence(rng)]
    estimate, short = count(parts[0]), 0  # short: how many sentences the last prefix counted short held
    while True:
        if estimate >= tokens - slack:
            exact = count(" ".join(parts))
            if exact >= tokens:
                break
            estimate, short = exact, len(parts)
        parts.append(sentence(rng))
        estimate += len(tokenizer.encode(" " + parts[-1], add_special_tokens=False).ids)
    n = len(parts)
    if n == 1 or short == n - 1 or count(" ".join(parts[:-1])) < tokens:
        return " ".join(parts)
    rng.setstate(state)
    passage = sentence(rng)
    while count(passage) < tokens:
        passage = f"{passage} {sentence(rng)}"
    return passage
