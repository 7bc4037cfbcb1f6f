"""Lossy rejection before launch (pure): a speculative config whose acceptance does not keep the target's
output distribution, and a ``min_lossless_match`` criterion that cannot be judged under it.

Which values are lossy is :data:`loadgen.profile.fields.LOSSY_REJECTION` (``rejection_sample_method``
``synthetic`` 0.19+, ``fly`` 0.33+; vLLM docs "FLy Verification (Lossy)",
docs/features/speculative_decoding/fly.md) and :data:`~loadgen.profile.fields.TOLERANCE_ENV` (a
``VLLM_*TOLERANCE`` variable such as ``VLLM_EARS_TOLERANCE``); docs/vllm-notes.md, "Lossy rejection" (read
from the docs and wheels, not verified on a running engine).
"""

from __future__ import annotations

from collections.abc import Mapping

from loadgen.check.finding import Finding
from loadgen.profile.fields import lossy_reason
from loadgen.records.criteria import Criteria
from loadgen.records.speculative import SpeculativeConfig


def lossy_findings(spec: SpeculativeConfig, env: Mapping[str, str], criteria: Criteria | None) -> list[Finding]:
    """For ``spec`` (``[speculative]``) run with ``env`` (``[engine].env`` merged with
    ``[servers.speculative].env``): a warning when its rejection is lossy (``data``: ``{"lossy": reason}``), and a
    blocking finding when ``criteria`` also declares ``min_lossless_match``. Empty when lossless."""
    reason = lossy_reason(spec.to_json(), env)
    if reason is None:
        return []
    out = [
        Finding(
            "lossy rejection",
            False,
            False,
            f"{reason} does not keep the target's distribution: the "
            "speculative server's outputs will differ from the target's by design, and the card reports the "
            "greedy match rate as information, not judged; for a lossless comparison use "
            'rejection_sample_method = "standard" (or "block") without a tolerance',
            {"lossy": reason},
        )
    ]
    limit = criteria.min_lossless_match if criteria is not None else None
    if limit is not None:
        out.append(
            Finding(
                "criteria.min_lossless_match",
                False,
                True,
                f"[criteria].min_lossless_match = {limit:g} "
                f"cannot be judged with a lossy rejection ({reason}): outputs differ from the target's by "
                "design; remove min_lossless_match or use a lossless rejection_sample_method (standard, "
                "block)",
                {"lossy": reason, "min_lossless_match": limit},
            )
        )
    return out
