"""Diagnosis on the card (pure): the lossless check, the cost decomposition, and capacity at SLO.

- **Lossless check.** Under greedy sampling speculative decoding must not change the generated tokens
  (rejection sampling keeps the target's distribution; vLLM docs, "Speculative decoding: lossless
  guarantees"). Per cell: the share of prompts whose token ids are identical on both servers and, where
  not, the position of the first difference. Differences that start late are typically numerical
  nondeterminism: the target verifies K+1 tokens at once, the plain server one, and batch shapes change
  with concurrency, so floating-point ties can break differently (reduced precision makes it common).
- **Cost decomposition.** The step time of each server (steptime.py: the server's mean time per engine
  step, else the client's decode time per chunk; never the median inter-chunk latency, which bursty
  delivery drives to ~0); their ratio is the cost of drafting plus verification. The speedup it
  predicts is mean acceptance length / step-time ratio (tokens per step over time per step), next to
  the measured TPOT speedup (plain TPOT p50 / speculative TPOT p50).
- **Capacity at SLO.** A request is good when it meets every declared SLO (TTFT, TPOT, E2E, seconds);
  goodput = good requests / measurement window (DESIGN.md). A level holds the SLOs when the declared
  percentile of each metric is within its limit; capacity is the highest tested level that holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

#: Predicted and measured speedups that differ by more than this fraction get an explanation.
AGREEMENT_TOLERANCE = 0.15


@dataclass(frozen=True)
class SLO:
    """Declared service-level objectives (``[slo]``): limits in seconds, judged at ``percentile``."""

    percentile: float = 99.0
    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None

    def limits(self) -> dict[str, float]:
        """``{"ttft_s": limit, ...}`` for the declared objectives only."""
        return {k: v for k, v in (("ttft_s", self.ttft_s), ("tpot_s", self.tpot_s), ("e2e_s", self.e2e_s))
                if v is not None}


def lossless(plain: Mapping[str, Sequence[int]], speculative: Mapping[str, Sequence[int]]) -> dict[str, object]:
    """Compare generated token ids per prompt id (successful requests of both servers).

    Returns ``{"pairs", "identical", "match_rate", "first_difference": [positions], "late"}``; ``late``
    is True when every difference starts past half of the output.
    """
    keys = sorted(set(plain) & set(speculative))
    first: list[int] = []
    lengths: list[int] = []
    for k in keys:
        a, b = plain[k], speculative[k]
        if list(a) != list(b):
            n = min(len(a), len(b))
            first.append(next((i for i in range(n) if a[i] != b[i]), n))
            lengths.append(max(len(a), len(b)))
    identical = len(keys) - len(first)
    late = bool(first) and all(pos > length / 2 for pos, length in zip(first, lengths, strict=True))
    return {"pairs": len(keys), "identical": identical,
            "match_rate": identical / len(keys) if keys else None, "first_difference": first, "late": late}


def lossless_note(result: Mapping[str, object]) -> str | None:
    """One line for the card when the match rate is below 1, None otherwise."""
    rate = result.get("match_rate")
    if not isinstance(rate, float) or rate >= 1.0:
        return None
    first = result.get("first_difference") or []
    where = f"first differences at token {min(first)}-{max(first)}" if isinstance(first, list) and first else ""
    why = ("they start late: typical of numerical nondeterminism across batch shapes (K+1-token verification "
           "vs one-token decode), not of a broken draft" if result.get("late") else
           "some start early: check that both servers ran the same model, dtype and sampling")
    return f"lossless check: {100 * rate:.0f}% of requests identical; {where}; {why}"


def cost_decomposition(plain_step_s: float | None, spec_step_s: float | None, acceptance_length: float | None,
                       plain_tpot_s: float | None, spec_tpot_s: float | None,
                       tokens_per_decode_chunk: float | None) -> dict[str, object]:
    """Step times (s, steptime.py), their ratio, the speedup they predict and the measured TPOT speedup;
    ``agrees`` within :data:`AGREEMENT_TOLERANCE`, and ``why`` when not."""
    out: dict[str, object] = {"plain_step_s": plain_step_s, "spec_step_s": spec_step_s,
                              "acceptance_length": acceptance_length}
    if not (plain_step_s and spec_step_s and acceptance_length and plain_tpot_s and spec_tpot_s):
        return out
    ratio = spec_step_s / plain_step_s
    predicted = acceptance_length / ratio
    measured = plain_tpot_s / spec_tpot_s
    out |= {"step_time_ratio": ratio, "predicted_speedup": predicted, "measured_tpot_speedup": measured,
            "agrees": abs(predicted / measured - 1.0) <= AGREEMENT_TOLERANCE}
    if not out["agrees"]:
        reasons = []
        if tokens_per_decode_chunk and abs(tokens_per_decode_chunk / acceptance_length - 1.0) > 0.05:
            reasons.append(f"the client saw {tokens_per_decode_chunk:.2f} tokens per chunk, not the server's "
                           f"{acceptance_length:.2f} per step: chunks merged several steps or steps emitted none")
        reasons.append("TPOT p50 is the median request's, while step times and acceptance length are averages "
                       "over the cell's steps: requests held up by other requests' prefills or scheduling weigh "
                       "differently")
        out["why"] = "; ".join(reasons)
    return out


def goodput(ttft_s: Sequence[float], tpot_s: Sequence[float | None], e2e_s: Sequence[float], window_s: float,
            slo: SLO) -> float | None:
    """Requests per second meeting every declared SLO (a 1-token request's missing TPOT counts as met),
    over ``window_s``; None without SLOs or window."""
    limits = slo.limits()
    if not limits or window_s <= 0:
        return None
    good = 0
    for t, p, e in zip(ttft_s, tpot_s, e2e_s, strict=True):
        values = {"ttft_s": t, "tpot_s": p, "e2e_s": e}
        if all(values[k] is None or float(values[k] or 0.0) <= lim for k, lim in limits.items()):
            good += 1
    return good / window_s


def holds(samples: Mapping[str, Sequence[float]], slo: SLO) -> bool | None:
    """Whether the declared percentile of every objective is within its limit (None without SLOs)."""
    limits = slo.limits()
    if not limits:
        return None
    for key, limit in limits.items():
        values = [v for v in samples.get(key, ()) if v is not None]
        if not values or float(np.percentile(values, slo.percentile)) > limit:
            return False
    return True


def capacity(levels: Sequence[float], held: Sequence[bool | None]) -> float | None:
    """The highest tested level whose SLOs hold (levels ascending); None when none does."""
    ok = [lv for lv, h in zip(levels, held, strict=True) if h]
    return max(ok) if ok else None
