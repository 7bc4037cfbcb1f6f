"""Diagnosis on the card (pure): the lossless check, the cost decomposition, and capacity at SLO.

- **Lossless check.** Under greedy sampling speculative decoding must not change the generated tokens
  (rejection sampling keeps the target's distribution; vLLM docs, "Speculative decoding: lossless
  guarantees"). Per cell: the share of prompts whose token ids are identical on both servers and, where
  not, the position of the first difference. Outputs of different length or finish reason were ended
  differently by a stop rule and are named so. Other differences that start late are typically numerical
  nondeterminism: the target verifies K+1 tokens at once, the plain server one, and batch shapes change
  with concurrency, so floating-point ties can break differently (reduced precision makes it common).
  A lossy rejection (``rejection_sample_method`` ``fly`` or ``synthetic``, a ``VLLM_*TOLERANCE`` variable;
  profile/fields.py) changes outputs by design: the match rate is then reported, not judged.
- **Cost decomposition.** The step time of each server (steptime.py: the server's mean time per engine
  step, else the client's decode time per chunk; never the median inter-chunk latency, which bursty
  delivery drives to ~0); their ratio is the cost of drafting plus verification. The speedup it
  predicts is mean acceptance length / step-time ratio (tokens per step over time per step), next to
  the measured TPOT speedup (plain TPOT p50 / speculative TPOT p50).
- **Capacity at SLO.** A request is good when it meets every declared SLO (TTFT, TPOT, E2E, seconds);
  goodput = good requests / measurement window (docs/metrics.md). A level holds the SLOs when the declared
  percentile of each metric is within its limit; capacity is the highest tested level that holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from loadgen.measure.metrics import request_timings
from loadgen.profile.fields import lossy_reason
from loadgen.profile.pair import SLO
from loadgen.records.cardcell import Cost, LosslessCheck
from loadgen.records.request import RequestRecord

#: Predicted and measured speedups that differ by more than this fraction get an explanation.
AGREEMENT_TOLERANCE = 0.15


def lossless(
    plain: Mapping[str, Sequence[int]],
    speculative: Mapping[str, Sequence[int]],
    plain_finish: Mapping[str, str | None] | None = None,
    speculative_finish: Mapping[str, str | None] | None = None,
    *,
    lossy: str | None = None,
) -> LosslessCheck:
    """Compare generated token ids (and finish reasons, when given) per prompt id of successful requests.

    Returns the check's record (records/cardcell.py ``LosslessCheck``: ``pairs``, ``identical``,
    ``match_rate``, ``first_difference`` positions, ``stop_differences``, ``late``). ``stop_differences``
    counts the differing pairs whose outputs differ in length or finish reason: a stop rule (EOS, stop
    string, max_tokens) ended them differently. ``late`` is True when every other difference (same length
    and finish reason) starts past half of the output. ``lossy``: why the run's speculative config does
    not keep the target's distribution (:func:`lossy_rejection`); when given the record also holds
    ``lossy`` (True) and ``lossy_reason``, and the match rate is information, not a lossless judgement
    (:func:`lossless_note`).
    """
    keys = sorted(set(plain) & set(speculative))
    pf, sf = plain_finish or {}, speculative_finish or {}
    first: list[int] = []
    token_first: list[tuple[int, int]] = []
    stops = 0
    for k in keys:
        a, b = list(plain[k]), list(speculative[k])
        stop = len(a) != len(b) or pf.get(k) != sf.get(k)
        if a == b and not stop:
            continue
        n = min(len(a), len(b))
        first.append(next((i for i in range(n) if a[i] != b[i]), n))
        if stop:
            stops += 1
        else:
            token_first.append((first[-1], len(a)))
    identical = len(keys) - len(first)
    late = bool(token_first) and all(pos > length / 2 for pos, length in token_first)
    check = LosslessCheck(len(keys), identical, identical / len(keys) if keys else None, tuple(first), stops, late)
    if lossy:
        return replace(check, lossy=True, lossy_reason=lossy).keyed(*LosslessCheck.KEYS, "lossy", "lossy_reason")
    return check.keyed(*LosslessCheck.KEYS)


def lossy_rejection(speculative_config: Mapping[str, object], env: Mapping[str, str]) -> str | None:
    """Why a run's speculative config (protocol.json ``speculative_config``) with the speculative server's
    environment does not keep the target's distribution (``"rejection_sample_method = fly"``), None when
    it does; the rule is profile/fields.py's :func:`~loadgen.profile.fields.lossy_reason` (vLLM docs "FLy
    Verification (Lossy)"; docs/vllm-notes.md, "Lossy rejection")."""
    return lossy_reason(speculative_config, env)


def lossless_note(result: LosslessCheck) -> str | None:
    """One line for the card when the match rate is below 1, None otherwise. Outputs that differ in length
    or finish reason are named as such, never put down to numerical nondeterminism. A lossy run
    (``result.lossy``) always gets one line stating its match rate as information, not judged."""
    rate = result.match_rate
    if result.lossy and rate is not None:
        return (
            f"lossy rejection ({result.lossy_reason}): outputs differ from the target's by design; "
            f"match rate {100 * rate:.0f}% reported, not judged"
        )
    if rate is None or rate >= 1.0:
        return None
    first = result.first_difference
    parts = [f"lossless check: {100 * rate:.0f}% of requests identical"]
    if first:
        parts.append(f"first differences at token {min(first)}-{max(first)}")
    differing, stops = len(first), result.stop_differences
    if stops:
        parts.append(
            f"{stops} of {differing} differing requests differ in length or finish reason: a stop rule "
            "(EOS, stop string, max_tokens) ended the two outputs differently"
        )
    if differing > stops:
        parts.append(
            "the others start late: typical of numerical nondeterminism across batch shapes (K+1-token "
            "verification vs one-token decode), not of a broken draft"
            if result.late
            else "some start early: check that both servers ran the same model, dtype and sampling"
        )
    return "; ".join(parts)


def cost_decomposition(
    plain_step_s: float | None,
    spec_step_s: float | None,
    acceptance_length: float | None,
    plain_tpot_s: float | None,
    spec_tpot_s: float | None,
    tokens_per_decode_chunk: float | None,
) -> Cost:
    """Step times (s, steptime.py), their ratio, the speedup they predict and the measured TPOT speedup;
    ``agrees`` within :data:`AGREEMENT_TOLERANCE`, and ``why`` when not. The step times and the acceptance
    length are written even when None; the rest only when all five inputs are there."""
    steps = Cost(plain_step_s=plain_step_s, spec_step_s=spec_step_s, acceptance_length=acceptance_length)
    steps = steps.keyed("plain_step_s", "spec_step_s", "acceptance_length")
    if not (plain_step_s and spec_step_s and acceptance_length and plain_tpot_s and spec_tpot_s):
        return steps
    ratio = spec_step_s / plain_step_s
    predicted = acceptance_length / ratio
    measured = plain_tpot_s / spec_tpot_s
    agrees = abs(predicted / measured - 1.0) <= AGREEMENT_TOLERANCE
    reasons = []
    if not agrees and tokens_per_decode_chunk and abs(tokens_per_decode_chunk / acceptance_length - 1.0) > 0.05:
        reasons.append(
            f"the client saw {tokens_per_decode_chunk:.2f} tokens per chunk, not the server's "
            f"{acceptance_length:.2f} per step: chunks merged several steps or steps emitted none"
        )
    if not agrees:
        reasons.append(
            "TPOT p50 is the median request's, while step times and acceptance length are averages "
            "over the cell's steps: requests held up by other requests' prefills or scheduling weigh "
            "differently"
        )
    return replace(
        steps,
        step_time_ratio=ratio,
        predicted_speedup=predicted,
        measured_tpot_speedup=measured,
        agrees=agrees,
        why="; ".join(reasons) or None,
    )


def goodput(
    ttft_s: Sequence[float], tpot_s: Sequence[float | None], e2e_s: Sequence[float], window_s: float, slo: SLO
) -> float | None:
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


def capacity(loads: Sequence[float], held: Sequence[bool | None]) -> float | None:
    """The highest tested load (a level's concurrency or rate, ``loads`` ascending) whose SLOs hold; None when
    none does."""
    ok = [lv for lv, h in zip(loads, held, strict=True) if h]
    return max(ok) if ok else None


def slo_check(records: list[RequestRecord], window_s: float, slo: SLO) -> dict[str, float | bool | None]:
    """Goodput (req/s meeting every SLO, :func:`goodput`) and whether the declared percentiles hold
    (:func:`holds`), from each successful request's timings (metrics.request_timings; ``window_s``: the role's
    measured window in s): the ``goodput_rps`` and ``slo_holds`` fields of the card's role statistics."""
    timings = [
        t
        for r in records
        if r.error is None
        if (t := request_timings(r.send_s, r.chunk_arrivals_s, r.chunk_tokens)) is not None
    ]
    ttft, tpot, e2e = [t.ttft_s for t in timings], [t.tpot_s for t in timings], [t.e2e_s for t in timings]
    return {
        "goodput_rps": goodput(ttft, tpot, e2e, window_s, slo),
        "slo_holds": holds({"ttft_s": ttft, "tpot_s": [x for x in tpot if x is not None], "e2e_s": e2e}, slo),
    }
