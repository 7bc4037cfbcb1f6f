"""The card's Markdown about how sure it is (pure): the measurement design and the A/A noise floor, each cell's
blocks and spreads, where speculation stops paying with the crossover's uncertainty (a range between
measured levels), and the blocking notes of cells that compared no speculation at all. Definitions:
docs/metrics.md, "Blocks" and "The A/A noise floor"."""

from __future__ import annotations

from collections.abc import Mapping

from loadgen.records.card import Crossover, NoiseFloor, PairCard
from loadgen.records.cardcell import CardCell
from loadgen.records.protoparts import RunDesign
from loadgen.util.numbers import num

WITHIN_RUN = (
    "CIs are within-run only: this run was measured by older code, each server in one time window, so "
    "its intervals cover the prompts of that window, not the server's own movement between windows"
)


def design_rows(design: RunDesign | None, noise_floor: NoiseFloor | None) -> list[str]:
    """The "How sure" section: the design (blocks, arms, order, co-residency, server starts) and the noise
    floor over every cell (the card's ``design`` and ``noise_floor``), or the within-run warning for a run of
    older code (no design)."""
    out = ["## How sure: measurement design and noise floor", ""]
    if design is None:
        return [*out, f"- {WITHIN_RUN}.", ""]
    arms = ", ".join(
        a.arm + (f" (on the {a.server} server)" if a.server != a.arm else "") + (" attached" if a.attached else "")
        for a in design.arms or ()
    )
    where = "co-resident (only the measured server gets load)" if design.co_resident else "one at a time"
    out += [
        f"- design: {design.blocks} blocks per arm and cell in a balanced order (run/design.py), "
        f"{design.slots} slots; arms: {arms}",
        f"- servers {where}: {design.co_resident_reason}; {design.server_starts} server starts",
        "- each ratio: geometric mean of the block ratios, 95% CI a t interval on their logs; a CI from one "
        "block alone is never given",
    ]
    floor = noise_floor or NoiseFloor(measured=False)
    if not floor.measured:
        out.append('- no A/A placebo ([design].placebo = "off"): no noise floor; an effect is judged against 1')
    for metric, f in (floor.metrics or {}).items():
        bad = f.excluding_1
        out.append(
            f"- A/A noise floor {metric} (placebo / plain): {num(f.min, 3)}-{num(f.max, 3)} over "
            f"{floor.cells} cells, widest CI ±{num(f.widest_half_width, 3)} (log half-width)"
            + (
                f"; WARNING: the A/A CI excludes 1 at {', '.join(bad)}: the design did not hold there"
                if bad
                else "; every A/A CI covers 1"
            )
        )
    return [*out, ""]


def cell_rows(cell: CardCell) -> list[str]:
    """Under a cell's table: its blocks and the TPOT spreads, and the A/A placebo's p50 ratios."""
    tpot = cell.ratio("tpot_p50")
    out = []
    if tpot is not None and tpot.ci_method == "blocks":
        out.append(
            f"- {tpot.blocks} blocks; TPOT p50 log ratio spread between blocks "
            f"{num(tpot.between_block_sd, 3)}, within a block {num(tpot.within_block_sd, 3)}"
            f" (SD); effect against the noise floor: {tpot.effect}"
        )
    aa = (cell.noise_floor.ratios if cell.noise_floor else None) or {}
    if aa:
        shown = ", ".join(f"{m} {r.text()}" for m in ("ttft_p50", "tpot_p50", "e2e_p50") if (r := aa.get(m)))
        out.append(f"- A/A placebo / plain p50 [95% CI]: {shown}")
    return out


def crossover_rows(crossover: Mapping[str, Crossover]) -> list[str]:
    """Where speculation stops paying: per workload the TPOT ratio per level with its CI and the crossover,
    as the range between the last level that is faster and the first that is slower (both clear of the
    noise floor), with the interpolated point as a guide."""
    out = [
        "## Where speculation stops paying",
        "",
        "TPOT p50 ratio (speculative / plain) [95% CI] against closed-loop concurrency; the crossover lies "
        "between the last level where speculation is faster and the first where it is slower.",
        "",
    ]
    for workload, cross in crossover.items():
        cis = cross.ratio_cis or [None] * len(cross.levels)
        shown = ", ".join(
            f"c={c}: {num(r, 3)}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci and ci[0] is not None else "")
            for c, r, ci in zip(cross.levels, cross.ratios, cis, strict=True)
        )
        span, at = cross.crossover_range, cross.crossover_concurrency
        if span:
            where = f"between concurrency {span[0]} and {span[1]}" + (f" (interpolated ≈ {at:.1f})" if at else "")
        else:
            where = (
                f"concurrency ≈ {at:.1f} (interpolated; the CIs do not bracket it)"
                if at is not None
                else "none within the tested levels"
            )
        out.append(f"- {workload}: {shown}; crossover: {where}")
    return [*out, ""]


def level_label(cell: CardCell) -> str:
    """A cell's load as the card names it: "concurrency N", or "R req/s (cap N)" for an open-loop level."""
    if cell.rate_rps is not None:
        return f"{cell.rate_rps:g} req/s (cap {cell.concurrency})"
    return f"concurrency {cell.concurrency}"


def blocking_rows(card: PairCard) -> list[str]:
    """A quoted line per blocking cell note (``BLOCKING: ...``): that cell compared no speculation at all."""
    lines = [
        f"> **BLOCKING** ({cell.workload} · {level_label(cell)}): {note.removeprefix('BLOCKING: ')}"
        for cell in card.cells
        for note in cell.notes
        if note.startswith("BLOCKING: ")
    ]
    return [*lines, ""] if lines else []
