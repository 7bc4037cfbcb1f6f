"""Counters that cannot be trusted (pure: snapshots and cell entries in, one phrase per fault out).

A Prometheus counter only goes up from 0 (the exposition format's counter type: "a cumulative metric that
represents a single monotonically increasing counter whose value can only increase or be reset to zero on
restart", https://prometheus.io/docs/concepts/metric_types/#counter). A server whose ``/metrics`` counter reads
``NaN``, ``+Inf``/``-Inf`` or a negative number, or whose counters went backwards while its process did not
restart (``process_start_time_seconds`` unchanged, docs/metrics.md "Counter deltas, resets and restart
evidence"), gives deltas that mean nothing: such a cell is **flagged** (``cells.jsonl`` ``counter_faults``, a
card note) and its acceptance is **refused** (not measurable, with the reason), while its requests and the
client's figures are kept as measured.
"""

from __future__ import annotations

import math
from typing import Any

from loadgen.prom.exposition import Snapshot
from loadgen.records.cell import CellEntry

#: The cell entry's counter fields (counted things: finite and >= 0 wherever they are numbers).
COUNTER_FIELDS = ("server_finished_requests", "server_generation_tokens")
SPEC_FIELDS = ("num_drafts", "num_draft_tokens", "num_accepted_tokens")


def _is_counter(snap: Snapshot, name: str) -> bool:
    family = name.removesuffix("_total")
    return snap.types.get(family) == "counter" or (name.startswith("vllm:") and name.endswith("_total"))


def _reads(value: float) -> str | None:
    """How a counter's value is wrong (``NaN``, ``+Inf``, ``-Inf``, ``negative (-3)``), None when it is not."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return f"a negative number ({value:g})" if value < 0 else None


def bad_samples(before: Snapshot, after: Snapshot) -> list[str]:
    """Every vLLM counter sample of the two scrapes (a ``counter`` family, or a ``vllm:..._total`` sample)
    whose value is not a finite number >= 0, one phrase per way of being wrong naming the samples, their engine
    and the scrapes: ``vllm:spec_decode_num_drafts_total (engine 0) read NaN after the cell``. [] when every
    counter is sound."""
    wrong: dict[str, tuple[dict[str, None], dict[str, None]]] = {}
    for when, snap in (("before", before), ("after", after)):
        for smp in snap.samples:
            if (
                not smp.name.startswith("vllm:")
                or not _is_counter(snap, smp.name)
                or (how := _reads(smp.value)) is None
            ):
                continue
            engine = f" (engine {smp.labels['engine']})" if "engine" in smp.labels else ""
            names, whens = wrong.setdefault(how, ({}, {}))
            names[smp.name + engine] = whens[when] = None
    return [f"{', '.join(names)} read {how} {' and '.join(whens)} the cell" for how, (names, whens) in wrong.items()]


def _how(value: Any) -> str | None:
    if value is None:
        return "NaN or Inf (written as null)"
    return _reads(float(value)) if isinstance(value, int | float) else None


def _entry_values(entry: CellEntry) -> list[str]:
    """Counter deltas of the entry that are not finite numbers >= 0 (a line whose scrapes were not checked, or
    written by older code), grouped by how they are wrong: the spec-decode deltas and, where the scrapes had
    them, the server's request and token deltas."""
    sd = entry.spec_decode
    values = [] if sd is None else [(f"Δ{k}", getattr(sd, k)) for k in SPEC_FIELDS]
    values += [(f"Δaccepted[{i}]", v) for i, v in enumerate(() if sd is None else sd.accepted_per_position)]
    values += [(k, v) for k in COUNTER_FIELDS if (v := getattr(entry, k)) is not None]
    wrong: dict[str, list[str]] = {}
    for name, value in values:
        if (how := _how(value)) is not None:
            wrong.setdefault(how, []).append(name)
    return [f"{', '.join(names)} read {how}" for how, names in wrong.items()]


def said(faults: list[str], most: int = 3) -> str:
    """``faults`` as one phrase: the first ``most`` and how many more."""
    more = len(faults) - most
    return "; ".join(faults[:most]) + (f"; and {more} more" if more > 0 else "")


def backwards_without_restart(entry: CellEntry) -> str | None:
    """A phrase when the spec-decode counters went backwards on every engine while
    ``process_start_time_seconds`` read the same before and after the cell (no restart explains it), else
    None (also when the server does not expose the start time: a restart is then the reading,
    counterchecks.restart_evidence)."""
    start = entry.process_start_time_s or [None, None]
    if entry.spec_decode is None or not entry.spec_decode.reset or None in start or start[0] != start[1]:
        return None
    return f"spec-decode counters went backwards while process_start_time_seconds held at {start[0]:.0f} (no restart)"


def untrusted(entry: CellEntry) -> list[str]:
    """Why the counters of ``entry`` cannot be trusted, one phrase each ([] when they can): the faulty samples
    recorded when the cell was measured (``counter_faults``; without them, counter values in the entry that are
    not finite numbers >= 0), and counters that went backwards without a restart."""
    out = list(entry.counter_faults) or _entry_values(entry)  # the deltas of a faulty sample say it again
    if (back := backwards_without_restart(entry)) is not None:
        out.append(back)
    return list(dict.fromkeys(out))
