"""Open-loop arrival schedules (pure): when each request should be sent, relative to the cell start.

Inter-arrival times follow ``vllm bench serve``'s conventions (vllm/benchmarks/serve.py, 0.10-0.33):

- ``constant``: every 1/rate seconds;
- ``poisson``: exponential inter-arrival times with mean 1/rate;
- ``gamma``: gamma inter-arrival times with shape = burstiness and scale = 1 / (rate * burstiness), so
  the mean rate is ``rate`` for any burstiness; burstiness < 1 is burstier than Poisson, > 1 more
  regular, and burstiness = 1 is exactly Poisson.

The first request is sent at 0. Seeded: the same seed gives the same schedule on both servers.
"""

from __future__ import annotations

import numpy as np

ARRIVALS = ("constant", "poisson", "gamma")


def arrival_offsets(arrival: str, rate_rps: float, count: int, seed: int, burstiness: float = 1.0) -> list[float]:
    """``count`` send offsets in seconds (non-decreasing, first = 0.0) for a mean rate of ``rate_rps``.

    Raises ValueError for an unknown ``arrival``, a non-positive rate or burstiness.
    """
    if arrival not in ARRIVALS:
        raise ValueError(f"unknown arrival {arrival!r}; use one of {', '.join(ARRIVALS)}")
    if rate_rps <= 0 or burstiness <= 0:
        raise ValueError("rate_rps and burstiness must be > 0")
    if count <= 0:
        return []
    rng = np.random.default_rng(seed)
    if arrival == "constant":
        gaps = np.full(count - 1, 1.0 / rate_rps)
    elif arrival == "poisson":
        gaps = rng.exponential(1.0 / rate_rps, size=count - 1)
    else:
        gaps = rng.gamma(shape=burstiness, scale=1.0 / (rate_rps * burstiness), size=count - 1)
    return [0.0, *np.cumsum(gaps).tolist()]
