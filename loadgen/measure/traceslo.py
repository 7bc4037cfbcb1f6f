"""SLO attainment and capacity over a trace replay (pure; docs/metrics.md "Trace replay").

- **Attainment** (per server, over the whole trace): the share of its measured requests that met each
  declared objective (``[slo]`` ``ttft_s``, ``tpot_s``, ``e2e_s``; a 1-token request's missing TPOT counts as
  met, as measure/diagnosis.goodput counts it), and the share that met all of them (a failed request meets
  none). **Holds**: the declared percentile of every objective is within its limit (diagnosis.holds).
- **Capacity on the trace**: the fastest replay (speed = 1 / ``time_scale``: ``time_scale`` 0.625 is 1.6x)
  among the declared time scales at which the server's SLOs hold (diagnosis.capacity over the speeds), or
  found by bisection (:func:`bisect_capacity`): the fastest and the slowest speed first, then the geometric
  midpoint of the widest open interval between a server's fastest holding and slowest failing speed, each
  replay measuring every server at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from loadgen.measure.diagnosis import capacity, holds
from loadgen.measure.metrics import request_timings
from loadgen.profile.pair import SLO
from loadgen.records.request import RequestRecord
from loadgen.records.trace import Attainment


def attainment(records: Sequence[RequestRecord], slo: SLO) -> Attainment:
    """The :class:`Attainment` of ``records`` (measured requests of one server) against ``slo``."""
    limits = slo.limits()
    met = {k: 0 for k in limits}
    every = 0
    samples: dict[str, list[float]] = {k: [] for k in ("ttft_s", "tpot_s", "e2e_s")}
    for r in records:
        t = request_timings(r.send_s, r.chunk_arrivals_s, r.chunk_tokens) if r.error is None else None
        if t is None:
            continue
        values = {"ttft_s": t.ttft_s, "tpot_s": t.tpot_s, "e2e_s": t.e2e_s}
        for k, v in values.items():
            if v is not None:
                samples[k].append(v)
        ok = {k: values[k] is None or float(values[k] or 0.0) <= lim for k, lim in limits.items()}
        for k, good in ok.items():
            met[k] += good
        every += all(ok.values())
    n = len(records)
    if not limits or n == 0:
        return Attainment(n, {}, None, None)
    return Attainment(n, {k: v / n for k, v in met.items()}, every / n, holds(samples, slo))


def trace_capacity(time_scales: Sequence[float], held: Sequence[bool | None]) -> float | None:
    """The fastest speed (1 / time_scale) among ``time_scales`` whose SLOs hold; None when none does."""
    return capacity([1.0 / s for s in time_scales], held)


Holds = Mapping[str, bool | None]


def _bounds(tested: Mapping[float, Holds], server: str) -> tuple[float | None, float | None]:
    """(fastest speed at which ``server`` held, slowest at which it failed) among ``tested``."""
    ok = [s for s, r in tested.items() if r.get(server)]
    bad = [s for s, r in tested.items() if r.get(server) is False]
    return max(ok, default=None), min(bad, default=None)


def bisect_capacity(
    measure: Callable[[float], Holds], low: float, high: float, steps: int
) -> tuple[dict[str, float | None], dict[float, Holds]]:
    """Each server's fastest speed holding its SLOs, searched in [``low``, ``high``] (speeds, > 0): ``measure``
    replays at a speed and says per server whether its SLOs held; ``high`` and ``low`` first, then up to
    ``steps`` geometric midpoints of the widest open interval (module docstring). Returns the fastest holding
    speed per server (None: none tested held; ``high``: it held at the fastest) and every speed's result.
    A server that holds at a speed above one where it failed keeps the fastest speed where it held."""
    tested: dict[float, Holds] = {}
    for speed in (high, low):
        tested[speed] = dict(measure(speed))
    servers = list(dict.fromkeys(s for r in tested.values() for s in r))
    for _ in range(steps):
        gaps = [
            (bad / ok, math.sqrt(ok * bad))
            for ok, bad in (_bounds(tested, s) for s in servers)
            if ok is not None and bad is not None and bad > ok
        ]
        if not gaps:
            break
        mid = max(gaps)[1]
        tested[mid] = dict(measure(mid))
    return {s: _bounds(tested, s)[0] for s in servers}, tested
