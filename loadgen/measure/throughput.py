"""Peak output throughput of a cell (pure): output tokens per one-second bucket of the measurement window.

The window runs from the first measured send to the last measured completion (the last token-bearing
chunk), as for the mean output throughput (metrics.py). It is cut into one-second buckets from its start;
the remainder after the last whole second joins the last bucket (1 to 2 s long), and a window shorter than
1 s is one bucket of its own length. A bucket's figure is its tokens over its length (tokens/s): a
whole-second bucket's figure is the number of tokens that arrived in it. Tokens are counted per chunk from
its token ids (``chunk_tokens``), never one per chunk. Every bucket is at least 1 s long or the whole
window, so the peak is never below the mean (tokens / window): the buckets' tokens sum to the total and
sum(rate_i * length_i) <= peak * window.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def peak_output_tps(start_s: float, end_s: float, arrivals_s: Sequence[Sequence[float]],
                    tokens: Sequence[Sequence[int]]) -> float:
    """The largest bucket figure (tokens/s) over the window ``[start_s, end_s]`` (seconds, one clock).

    ``arrivals_s[r][i]`` is the arrival of request r's i-th token-bearing chunk and ``tokens[r][i]`` its
    token count; the window is theirs (a chunk a rounding error outside it counts in the nearest bucket).
    0.0 when the window is empty or has no token. Raises ValueError when the two shapes differ.
    """
    window = end_s - start_s
    if window <= 0:
        return 0.0
    times = np.fromiter((t for request in arrivals_s for t in request), dtype=float)
    counts = np.fromiter((k for request in tokens for k in request), dtype=float)
    if times.size != counts.size or any(len(a) != len(k) for a, k in zip(arrivals_s, tokens, strict=True)):
        raise ValueError("arrivals_s and tokens must have the same shape")
    buckets = max(1, math.floor(window))
    index = np.clip(np.floor(times - start_s).astype(int), 0, buckets - 1)
    per_bucket = np.bincount(index, weights=counts, minlength=buckets)
    lengths = np.ones(buckets)
    lengths[-1] = window - (buckets - 1)
    return float((per_bucket / lengths).max()) if per_bucket.size else 0.0
