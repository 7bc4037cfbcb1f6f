"""The wall time a sweep will take, estimated before it starts (``loadgen sweep`` prints it, refuses a
``--budget-min`` it cannot meet and then names the candidates that would fit).

Estimate = every server start the slot order makes (run/design.py: one per launched server when they are
co-resident, else one per phase; an attached server starts nothing), each with :data:`PHASE_OVERHEAD_S`;
every slot's cell on its arm's kind of server plus :data:`SLOT_OVERHEAD_S`; and :data:`FINISH_S` per
candidate card and for the sweep card. The history (:func:`history`) comes from earlier run folders under
the runs folder and any ``--history`` folders:

- a start is the median ``ready_s`` of the servers they launched (``servers/<role>-effective.json``;
  servers they attached, ``"attached": true`` in ``<role>-launch.json``, started nothing), else
  :data:`DEFAULT_START_S`;
- a request takes TTFT + (output tokens - 1) x TPOT (the card's definition of TPOT, docs/metrics.md), with
  the median TTFT p50 and TPOT p50 of earlier cards' cells served the same way (the plain server, or a
  speculative server of the same method and K, else of the same method, else of any method, else the plain
  server's) at the nearest concurrency (by ratio); without any, TTFT = TPOT = :data:`DEFAULT_TPOT_S`;
- a closed-loop cell runs its warmup as a closed loop of its own (``stream/loadloop.py``), then its measured
  requests in rounds of ``concurrency``, then, with cooldown fillers, one more round (a slot that frees
  while measured requests are in flight sends a filler, which runs its full length); an open-loop cell
  sends its warmup one by one and its measured requests over ``n / rate`` seconds (at least one request).

Checked against the 48 cells of docs/examples/h200/ (one H200, vLLM 0.24.0): fed with each cell's own TTFT
and TPOT p50, the cell model gives its ``duration_s`` within 0.91-1.15x in 47 cells and 1.38x in one, median
1.02x (tests/run/test_sweepplan.py). What it cannot know is how the servers of a new sweep compare with
the history's: K or a draft unlike any measured before (a K = 4 draft's TPOT stands in for K = 1).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from loadgen.errors import BadInput
from loadgen.profile.cells import CellSpec
from loadgen.records.cardwire import Wire
from loadgen.records.runparts import LaunchFile
from loadgen.records.serverparts import EffectiveFile
from loadgen.records.speculative import SpeculativeConfig
from loadgen.run.design import Slot, balanced_order, server_starts
from loadgen.store.files import read_card
from loadgen.store.serverfiles import read_part

if TYPE_CHECKING:
    from loadgen.run.flow import Measurement

_R = TypeVar("_R", bound=Wire)
DEFAULT_START_S = 60.0
DEFAULT_TPOT_S = 0.05
#: Seconds per phase besides its server start and cells: the folder, plain-before's records copied into a
#: candidate's folder, the attach check and minimal request, stopping the server and its teardown check, the
#: pair card and its plots. Measured: 1.3-2.6 s per phase of a 2-cell sweep on the 2-core CPU machine (phase
#: time less ready_s and the cells' duration_s), and 1-2 s from a compare's last cell to the next compare's
#: start on the H200 (docs/examples/h200/logs: server stop, card, plots), plus about 1 s to attach.
PHASE_OVERHEAD_S = 4.0
#: Seconds per slot besides its requests: the /metrics scrapes before and after, the gauge sampler's last
#: round and the cell's lines on disk (0.2-0.4 s per cell on the 2-core CPU machine).
SLOT_OVERHEAD_S = 0.5
#: Seconds for the sweep card and its plots after the last phase (about 1 s on the 2-core CPU machine).
FINISH_S = 2.0
PLAIN = "plain"


@dataclass(frozen=True)
class Timing:
    """One earlier cell on one server: ``kind`` (``plain`` or the speculative method), its concurrency,
    its TTFT p50 and TPOT p50 in seconds, and K (None for plain)."""

    kind: str
    concurrency: float
    ttft_s: float
    tpot_s: float
    k: int | None = None


@dataclass(frozen=True)
class History:
    """What earlier runs measured: the start time (s), their cells' timings, and where they came from."""

    start_s: float
    cells: tuple[Timing, ...]
    source: str

    def timing(self, kind: str, concurrency: float, k: int | None = None) -> tuple[float, float]:
        """(TTFT, TPOT) in seconds for a server of ``kind`` (with K = ``k``) at ``concurrency``: the medians of
        the earlier cells of that kind and K (else of that kind; a speculative kind then falls back on any
        speculative method, then on plain) at the concurrency nearest by ratio; (DEFAULT_TPOT_S,
        DEFAULT_TPOT_S) without any."""
        pools = [[t for t in self.cells if t.kind == kind and t.k == k], [t for t in self.cells if t.kind == kind]]
        if kind != PLAIN:
            pools += [[t for t in self.cells if t.kind != PLAIN], [t for t in self.cells if t.kind == PLAIN]]
        pool = next((p for p in pools if p), [])
        if not pool:
            return DEFAULT_TPOT_S, DEFAULT_TPOT_S
        gap = min(abs(math.log(t.concurrency / concurrency)) for t in pool)
        near = [t for t in pool if abs(math.log(t.concurrency / concurrency)) <= gap + 1e-9]
        return statistics.median(t.ttft_s for t in near), statistics.median(t.tpot_s for t in near)

    @property
    def plain_tpot_s(self) -> float:
        """The median plain TPOT p50 over every concurrency (s), for the printed line."""
        plain = [t.tpot_s for t in self.cells if t.kind == PLAIN]
        return statistics.median(plain) if plain else DEFAULT_TPOT_S


def _read(folder: Path, server: str, part: str, record: type[_R]) -> _R | None:
    """``servers/<server>-<part>.json`` of ``folder`` as ``record``; None when it is missing or does not read."""
    try:
        return read_part(folder, server, part, record)
    except (OSError, BadInput):
        return None


def _launched_start(effective: Path) -> float | None:
    """The ``ready_s`` of a server a run launched (None: attached, or unreadable)."""
    role = effective.name.removesuffix("-effective.json")
    folder = effective.parent.parent
    launch = _read(folder, role, "launch", LaunchFile)
    if launch is not None and launch.attached:
        return None
    found = _read(folder, role, "effective", EffectiveFile)
    ready = None if found is None else found.ready_s
    return float(ready) if ready is not None and ready > 0 else None


def _card_timings(path: Path) -> list[Timing]:
    """The (kind, concurrency, TTFT p50, TPOT p50, K) of every cell and server of the card at ``path``; none
    when it is unreadable or does not match its type (store/files.py read_card)."""
    try:
        card = read_card(path)
    except (BadInput, OSError):
        return []
    config = card.speculative_config or SpeculativeConfig()
    method, k = config.method or "speculative", config.num_speculative_tokens
    found = []
    for cell in card.cells:
        for role, kind, kk in ((PLAIN, PLAIN, None), ("speculative", method, k)):
            stats = cell.role(role)
            ttft = None if stats is None or stats.ttft_s is None else stats.ttft_s.p50
            tpot = None if stats is None or stats.tpot_s is None else stats.tpot_s.p50
            if ttft and tpot:
                found.append(Timing(kind, float(cell.concurrency), ttft, tpot, kk))
    return found


def history(roots: Iterable[Path], limit: int = 200) -> History:
    """The start times and cell timings of the runs under each of ``roots`` (at most ``limit`` of each
    kind of file per root, the last by path: run folders are named by UTC time); defaults when none."""
    roots = list(roots)
    starts: list[float] = []
    cells: list[Timing] = []
    for root in roots:
        for path in sorted(root.glob("**/servers/*-effective.json"))[-limit:]:
            if (ready := _launched_start(path)) is not None:
                starts.append(ready)
        for path in sorted(root.glob("**/card.json"))[-limit:]:
            cells += _card_timings(path)
    where = ", ".join(str(r) for r in roots)
    if starts or cells:
        source = f"{len(starts)} earlier server starts and {len(cells)} earlier cells under {where}"
    else:
        source = f"no earlier runs under {where}: default {DEFAULT_START_S:.0f} s per start"
    return History(statistics.median(starts) if starts else DEFAULT_START_S, tuple(cells), source)


def cell_s(cell: CellSpec, kind: str, hist: History, k: int | None = None) -> float:
    """The estimated seconds of ``cell`` on a server of ``kind`` with K = ``k`` (module docstring)."""
    ttft, tpot = hist.timing(kind, cell.concurrency, k)
    longest = max((p.output_tokens for p in (*cell.warmup, *cell.measured)), default=1)
    one = ttft + (longest - 1) * tpot
    if cell.level.rate_rps is not None:
        return len(cell.warmup) * one + max(len(cell.measured) / cell.level.rate_rps, one)
    c = cell.concurrency
    rounds = math.ceil(len(cell.warmup) / c) + math.ceil(len(cell.measured) / c) + (1 if cell.cooldown else 0)
    return rounds * one


def arm_kinds(m: Measurement) -> dict[str, tuple[str, int | None]]:
    """Each arm's kind of server for the history: ``(plain, None)`` for plain and placebo, ``(method, K)``
    for a speculative arm."""
    return {
        a.name: ((a.pair.method, a.pair.num_speculative_tokens) if a.speculative else (PLAIN, None)) for a in m.arms
    }


def slots_s(slots: Sequence[Slot], kinds: Mapping[str, tuple[str, int | None]], hist: History) -> float:
    """The estimated seconds of measuring ``slots``: each one's cell on its arm's kind of server, plus
    :data:`SLOT_OVERHEAD_S`."""
    return sum(cell_s(s.cell, kinds[s.arm][0], hist, kinds[s.arm][1]) + SLOT_OVERHEAD_S for s in slots)


def estimate_s(m: Measurement, hist: History, slots: Sequence[Slot] | None = None) -> float:
    """The estimated wall time in seconds of measuring ``slots`` (default ``m.slots``) with ``m``'s arms: every
    server start the order makes (run/design.py) at the history's start time plus :data:`PHASE_OVERHEAD_S`,
    the slots, and :data:`FINISH_S` per candidate card and for the sweep card."""
    slots = m.slots if slots is None else slots
    spec = sum(1 for a in m.arms if a.speculative)
    return (
        starts_of(m, slots) * (hist.start_s + PHASE_OVERHEAD_S)
        + slots_s(slots, arm_kinds(m), hist)
        + FINISH_S * (1 + spec)
    )


def starts_of(m: Measurement, slots: Sequence[Slot]) -> int:
    """The server starts measuring ``slots`` makes with ``m``'s arms (attached servers start nothing)."""
    by_name = {a.name: a for a in m.arms}
    attached = frozenset(a.server for a in m.arms if a.attach_url is not None)
    return server_starts(slots, lambda arm: by_name[arm].server, m.co_resident, attached)


def fitting(m: Measurement, hist: History, budget_s: float) -> tuple[list[str], float] | None:
    """The candidates that fit ``budget_s`` seconds beside the plain arms, taken in order and skipping any
    that would overrun it, and their estimate in seconds; None when the plain arms alone do not fit."""
    keep = [a for a in m.arms if not a.speculative]

    def cost(arms: Sequence[Any]) -> float:
        names = [a.name for a in arms]
        sub = replace(m, arms=list(arms), slots=[s for s in m.slots if s.arm in names])
        return estimate_s(sub, hist)

    if cost(keep) > budget_s:
        return None
    for a in m.arms:
        if a.speculative and cost([*keep, a]) <= budget_s:
            keep.append(a)
    return [a.name for a in keep if a.speculative], cost(keep)


def announce(m: Measurement, roots: Sequence[Path], budget_min: float | None, log: Callable[[str], None]) -> None:
    """Print the estimate (with ``[criteria].ci_half_width``: also the longest, every cell grown to
    ``[design].max_blocks``); raise BadInput (exit 2) when the shortest exceeds ``budget_min``, naming the
    candidates that would fit."""
    hist = history(roots)
    est = estimate_s(m, hist)
    spec = [a.name for a in m.arms if a.speculative]
    most = ""
    if m.bar is not None:
        full = balanced_order(m.planned, [a.name for a in m.arms], m.co_resident)
        most = (
            f"; up to {estimate_s(m, hist, full) / 60:.1f} min if every cell stays undecided to "
            f"{max(c.repetition for c in m.planned) + 1} blocks (±{m.bar.precision:g}, min_speedup "
            f"{m.bar.min_speedup:g}; a decided candidate stops early)"
            + (f" (the budget stops it at {budget_min:g} min)" if budget_min is not None else "")
        )
    log(
        f"sweep: {len(spec)} candidates, {len(m.slots)} slots; estimated wall time {est / 60:.1f} min "
        f"({starts_of(m, m.slots)} server starts of {hist.start_s:.0f} s; {hist.source}; plain TPOT "
        f"{1000 * hist.plain_tpot_s:.1f} ms){most}"
    )
    if budget_min is None or est <= 60 * budget_min:
        return
    fit = fitting(m, hist, 60 * budget_min)
    if fit is None:
        hint = "not even the plain arms fit it"
    elif not fit[0]:
        hint = "no candidate fits it beside the plain arms"
    else:
        hint = f"it fits {', '.join(fit[0])} ({fit[1] / 60:.1f} min)"
    raise BadInput(
        f"the sweep needs about {est / 60:.1f} min, more than --budget-min {budget_min:g} ({hint}); "
        "raise the budget, or drop candidates, levels, blocks or requests from the pair file"
    )
