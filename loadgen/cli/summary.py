"""The terminal summary of a card (``loadgen compare`` and ``loadgen report``): one rich table row per cell, then the
verdict (stdout)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from loadgen.records.card import PairCard
from loadgen.records.cardcell import Distribution, Ratio, RoleStats
from loadgen.util.numbers import ms

#: The percentiles printed for each latency (docs/metrics.md): the median and the tail beside it.
SHOWN = ("p50", "p95", "p99")


def _ms(side: RoleStats | None, key: str) -> str:
    """``p50/p95/p99`` in ms of the server's distribution ``key`` ('–' for a percentile the card does not hold)."""
    dist: Distribution | None = None if side is None else getattr(side, key)
    return "/".join(ms(None if dist is None else getattr(dist, p), 1) for p in SHOWN)


def _ratio(r: Ratio | None) -> str:
    return "–" if r is None else r.text(2)


def summary_table(card: PairCard) -> Table:
    """A table of TTFT/TPOT p50/p95/p99 (ms) per server, the TPOT p50 ratio with its 95% CI and its effect
    against the A/A noise floor, the A/A placebo's TPOT ratio (the noise floor; '–' without a placebo),
    acceptance, throughput and failed requests (the card's count, as in cells.jsonl) per cell."""
    table = Table(title=f"{card.pair}: speculative vs plain ({'complete' if card.complete else 'INCOMPLETE'})")
    for col in (
        "workload",
        "load",
        "TTFT ms plain p50/p95/p99",
        "TTFT ms spec p50/p95/p99",
        "TPOT ms plain p50/p95/p99",
        "TPOT ms spec p50/p95/p99",
        "TPOT p50 spec/plain [95% CI]",
        "A/A TPOT [95% CI]",
        "acceptance",
        "tokens/s plain/spec",
        "failed plain/spec",
    ):
        table.add_column(col, justify="left" if col in ("workload", "load") else "right")
    for cell in card.cells:
        p, s = cell.plain, cell.speculative
        acc = None if s is None or s.acceptance is None else s.acceptance.acceptance_rate
        tpot = cell.ratio("tpot_p50")
        aa = cell.aa_ratio("tpot_p50")
        tps = [None if x is None else x.output_throughput_tps for x in (p, s)]
        table.add_row(
            cell.workload,
            cell.level,
            _ms(p, "ttft_s"),
            _ms(s, "ttft_s"),
            _ms(p, "tpot_s"),
            _ms(s, "tpot_s"),
            _ratio(tpot) + (f" {tpot.effect}" if tpot is not None and tpot.effect else ""),
            _ratio(aa),
            "–" if acc is None else f"{acc:.3f}",
            " / ".join("–" if t is None else f"{t:.0f}" for t in tps),
            " / ".join("–" if x is None else str(x.errors) for x in (p, s)),
        )
    return table


#: The width a console that is no terminal measures the table at, before it takes the table's own width.
UNBOUNDED = 10_000


def stdout_console(table: Table) -> Console:
    """A console on stdout: a terminal's own width; when stdout is no terminal (a log, a CI job, a pipe), the
    table's natural width (at least 80), so no column is squeezed or cut at rich's default of 80 columns
    (or ``$COLUMNS``, which a log does not have)."""
    out = Console()
    if out.is_terminal:
        return out
    return Console(width=max(80, Console(width=UNBOUNDED).measure(table).maximum))


def print_summary(card: PairCard, console: Console | None = None) -> None:
    """Print :func:`summary_table` and the verdict line (never wrapped), on ``console`` or :func:`stdout_console`."""
    table = summary_table(card)
    out = console or stdout_console(table)
    out.print(table)
    out.print(f"verdict: {card.verdict.summary}", markup=False, soft_wrap=True)
