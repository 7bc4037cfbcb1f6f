"""Peak output throughput of a cell (pure): output tokens per whole one-second bucket of the measurement window.

The window runs from the first measured send to the last measured completion (the last token-bearing
chunk), as for the mean output throughput (metrics.py). It is cut into one-second buckets from its start.
Only whole buckets count: the remainder after the last whole second (the trailing partial bucket, shorter
than 1 s) is left out of the peak, never folded into the bucket before it (which would turn a 1.7 s
remainder plus second into one 1.7 s bucket and dilute a busy second) and never scaled up to a rate (a
0.1 s tail with 3 tokens is not 30 tokens/s). A whole bucket's figure is the number of tokens that
arrived in it (tokens/s). Tokens are counted per chunk from its token ids (``chunk_tokens``), never one per
chunk. A window shorter than two whole buckets (< 2 s) has no peak: one bucket is only the mean again.

Peak versus mean: the peak is never below the mean over the whole buckets (their tokens / their seconds),
since a maximum is at least the average. It can be below the window's mean (all tokens / window) when the
trailing partial second carried more tokens per second than every whole second did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: bucket length (s)
BUCKET_S = 1.0
#: the fewest whole buckets a peak is taken over
MIN_BUCKETS = 2


@dataclass(frozen=True)
class Peak:
    """The peak output throughput of one window.

    Attributes:
        tps: the most tokens in one whole one-second bucket (tokens/s); None when there is no peak.
        reason: why there is no peak (one line, naming the window), None when ``tps`` is set.
        whole_buckets: whole one-second buckets in the window (0 for an empty window).
        partial_s: length of the trailing partial bucket left out (s, 0 <= partial_s < 1).
    """

    tps: float | None
    reason: str | None
    whole_buckets: int
    partial_s: float


def peak_output(
    start_s: float, end_s: float, arrivals_s: Sequence[Sequence[float]], tokens: Sequence[Sequence[int]]
) -> Peak:
    """The peak over the window ``[start_s, end_s]`` (seconds, one clock; see the module docstring).

    ``arrivals_s[r][i]`` is the arrival of request r's i-th token-bearing chunk and ``tokens[r][i]`` its
    token count; the window is theirs (a chunk a rounding error before it counts in the first bucket).
    ``tps`` is 0.0 for whole buckets without a token; None with ``reason`` "window too short for a peak
    (W s < 2 whole 1 s buckets)" when the window is shorter than :data:`MIN_BUCKETS` seconds (an empty
    window too). Raises ValueError when the two shapes differ.
    """
    if len(arrivals_s) != len(tokens) or any(len(a) != len(k) for a, k in zip(arrivals_s, tokens, strict=True)):
        raise ValueError("arrivals_s and tokens must have the same shape")
    window = max(0.0, end_s - start_s)
    whole = math.floor(window / BUCKET_S)
    partial = window - whole * BUCKET_S
    if whole < MIN_BUCKETS:
        return Peak(
            None,
            f"window too short for a peak ({window:.2f} s < {MIN_BUCKETS} whole {BUCKET_S:g} s buckets)",
            whole,
            partial,
        )
    times = np.fromiter((t for request in arrivals_s for t in request), dtype=float)
    counts = np.fromiter((k for request in tokens for k in request), dtype=float)
    index = np.floor((times - start_s) / BUCKET_S).astype(int)
    index = np.where(index < 0, 0, index)  # rounding before the start: the first bucket
    if partial == 0.0:  # a window of whole seconds: its last arrival (at end_s) closes the last bucket
        index = np.where(index >= whole, whole - 1, index)
    inside = index < whole  # the trailing partial bucket is left out
    per_bucket = np.bincount(index[inside], weights=counts[inside], minlength=whole)
    return Peak(float(per_bucket.max() / BUCKET_S), None, whole, partial)
