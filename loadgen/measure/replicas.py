"""More than one server behind one URL (pure; docs/vllm-notes.md "Topology"): a Kubernetes Service or a load
balancer round-robining over replicas answers each request, ``/metrics`` scrapes included, from one of them, so
consecutive scrapes read different processes' counters. loadgen once took that for a restart inside a cell.

Signs, read from what the server at one URL said in order (records/serverfacts.py ``Sighting``: its startup
scrapes and minimal completion, each block's two scrapes, each request's answer):

- ``process_start_time_seconds`` (the process collector of the Prometheus Python client, which vLLM's ``/metrics``
  serves outside multiprocess mode) **comes back** to a value seen before another one, or a new value is **earlier**
  than one seen before: a restart gives a process that started later, once;
- without process start times (Prometheus multiprocess mode, ``--api-server-count`` above 1),
  ``vllm:request_success_total`` **goes back and forth**: it drops, climbs back to at least its value before the
  drop, and drops again (a restart resets it once and it grows from there);
- the answers' ``system_fingerprint`` (vLLM's usage chunk: ``vllm-<version>-<hash>``, seen on 0.32.0) **differs**
  between requests. Replicas of one configuration may report the same one: only a difference is a sign.

Acceptance read from such counters mixes replicas (the before scrape from one, the after scrape from another), so it
is refused, and the fix is to measure one replica at its own URL (``--attach-<role> URL``, with ``--metrics-<role>
URL`` where its ``/metrics`` is apart).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise

from loadgen.prom.exposition import Snapshot
from loadgen.records.cell import CellEntry
from loadgen.records.request import RequestRecord
from loadgen.records.serverfacts import Sighting

#: The opening of every replica note and reason on the card (tests and readers find them by it).
REPLICAS = "more than one server answered at one URL (replicas, not a restart)"


def sighting(snap: Snapshot) -> Sighting:
    """What one ``/metrics`` scrape says of the process that answered it."""
    return Sighting(snap.total("process_start_time_seconds"), snap.total("vllm:request_success_total"))


def answered_by(records: Sequence[RequestRecord]) -> list[Sighting]:
    """The answers' ``system_fingerprint`` values in order, each one where it changed (a run's history stays
    short)."""
    out: list[Sighting] = []
    for r in records:
        if r.system_fingerprint and (not out or out[-1].fingerprint != r.system_fingerprint):
            out.append(Sighting(fingerprint=r.system_fingerprint))
    return out


def _start_sign(starts: Sequence[float]) -> str | None:
    seen: list[float] = []
    for s in starts:
        if seen and s != seen[-1] and (s in seen or s < max(seen)):
            shown = " and ".join(f"{v:.3f}" for v in sorted({*seen, s})[:3])
            return f"process_start_time_seconds alternated between {shown}"
        if not seen or s != seen[-1]:
            seen.append(s)
    return None


def _counter_sign(values: Sequence[float]) -> str | None:
    """``vllm:request_success_total`` readings that drop, recover to at least their value before the drop, and
    drop again; None otherwise."""
    drops, recovered, before = 0, False, None
    for i, (prev, cur) in enumerate(pairwise(values)):
        if cur < prev:
            drops, before = drops + 1, prev
        elif before is not None and cur >= before:
            recovered = True
        if drops >= 2 and recovered:  # the readings up to here: the same words however long the run goes on
            shown = ", ".join(f"{v:.0f}" for v in values[: i + 2])
            return f"vllm:request_success_total went back and forth without a restart ({shown})"
    return None


def replica_signs(seen: Sequence[Sighting]) -> list[str]:
    """What shows more than one server behind one URL in ``seen`` (module docstring), one phrase each naming
    the values; [] when nothing does."""
    out = []
    starts = [s.process_start_s for s in seen if s.process_start_s is not None]
    if starts and (sign := _start_sign(starts)):
        out.append(sign)
    if not starts:
        totals = [s.requests_total for s in seen if s.requests_total is not None]
        if sign := _counter_sign(totals):
            out.append(sign)
    prints = list(dict.fromkeys(s.fingerprint for s in seen if s.fingerprint))
    if len(prints) > 1:
        out.append(f"system_fingerprint differed between answers ({', '.join(prints[:3])})")
    return out


def replica_reason(signs: Sequence[str]) -> str:
    """The acceptance's ``acceptance_unmeasurable`` reason for ``signs``."""
    return f"{REPLICAS}: {'; '.join(signs)}"


def replica_note(role: str, signs: Sequence[str]) -> str:
    """The card's note (and the start-up line) for a role whose URL showed ``signs``: what differed, and the fix."""
    return (
        f"{role}: {replica_reason(signs)}; its counters mix replicas, so its acceptance is refused and its "
        f"latencies pool them; measure one replica at its own URL (--attach-{role} URL, with --metrics-{role} URL "
        f"where its /metrics is apart; [servers.{role}].url / metrics_url)"
    )


def spread(entries: Sequence[CellEntry], startup: Mapping[str, Sequence[str]]) -> list[CellEntry]:
    """``entries`` with each role's replica evidence (``startup``: role -> the signs its startup check saw,
    records/server.py ``EffectiveConfig.replicas``; the entries' own ``replica_evidence``) on every entry of that
    role: replicas seen once make every block of the server doubtful, those before the sign included."""
    found: dict[str, list[str]] = {r: list(s) for r, s in startup.items() if s}
    for e in entries:
        found.setdefault(e.role, [])
        found[e.role] += [s for s in e.replica_evidence if s not in found[e.role]]
    return [
        e.with_fields(replica_evidence=found[e.role], restart_evidence=[]) if found.get(e.role) else e for e in entries
    ]
