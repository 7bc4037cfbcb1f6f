"""The read timeout of a stream: the longest silence (no byte) allowed while a response is awaited or
streamed, counted from the last byte received (stream/transport.py). Pure.

``[stop].read_timeout_s`` sets it. Left out, it is derived from what the profile expects of the server:
the floor :data:`READ_TIMEOUT_FLOOR_S`, raised to :data:`ITL_MULTIPLE` times the declared TPOT limit
(``[slo].tpot_s``, the expected inter-chunk latency) or :data:`TTFT_MULTIPLE` times the declared TTFT limit
(``[slo].ttft_s``, the silence before the first chunk), whichever is larger. The floor covers a decode
step, a prefill of a long prompt and queueing behind a full batch on a busy GPU many times over, while a
stalled stream holds its cell for one minute, not five.
"""

from __future__ import annotations

from loadgen.profile.pair import SLO, StopRule

READ_TIMEOUT_FLOOR_S = 60.0
ITL_MULTIPLE = 100.0
TTFT_MULTIPLE = 5.0


def read_timeout_s(stop: StopRule, slo: SLO) -> float:
    """Seconds: ``stop.read_timeout_s`` when set, else ``max(60, 100 * slo.tpot_s, 5 * slo.ttft_s)`` over
    the limits declared (module docstring)."""
    if stop.read_timeout_s is not None:
        return stop.read_timeout_s
    return max(READ_TIMEOUT_FLOOR_S, ITL_MULTIPLE * (slo.tpot_s or 0.0), TTFT_MULTIPLE * (slo.ttft_s or 0.0))
