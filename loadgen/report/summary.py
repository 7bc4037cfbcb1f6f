"""The terminal summary of a card: one rich table row per cell, then the verdict (stdout)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from loadgen.util.numbers import ms, ratio
from loadgen.util.schemas import Card

#: The percentiles printed for each latency (docs/metrics.md): the median and the tail beside it.
SHOWN = ("p50", "p95", "p99")


def _ms(dist: dict[str, Any] | None) -> str:
    """``p50/p95/p99`` in ms ('–' for a percentile the card does not hold)."""
    return "/".join(ms((dist or {}).get(p), 1) for p in SHOWN)


def _ratio(r: dict[str, Any] | None) -> str:
    return ratio(r, 2)


def summary_table(card: Card) -> Table:
    """A table of TTFT/TPOT p50/p95/p99 (ms) per server, the TPOT p50 ratio with its 95% CI and its effect
    against the A/A noise floor, the A/A placebo's TPOT ratio (the noise floor; '–' without a placebo),
    acceptance, throughput and failed requests (the card's count, as in cells.jsonl) per cell."""
    table = Table(title=f"{card['pair']}: speculative vs plain ({'complete' if card['complete'] else 'INCOMPLETE'})")
    for col in ("workload", "load", "TTFT ms plain p50/p95/p99", "TTFT ms spec p50/p95/p99",
                "TPOT ms plain p50/p95/p99", "TPOT ms spec p50/p95/p99", "TPOT p50 spec/plain [95% CI]",
                "A/A TPOT [95% CI]", "acceptance", "tokens/s plain/spec", "failed plain/spec"):
        table.add_column(col, justify="left" if col in ("workload", "load") else "right")
    for cell in card["cells"]:
        p, s = cell.get("plain") or {}, cell.get("speculative") or {}
        acc = (s.get("acceptance") or {}).get("acceptance_rate")
        tpot = (cell.get("ratios") or {}).get("tpot_p50")
        aa = ((cell.get("noise_floor") or {}).get("ratios") or {}).get("tpot_p50")
        tps = [x.get("output_throughput_tps") for x in (p, s)]
        table.add_row(
            cell["workload"], cell.get("level", str(cell["concurrency"])),
            _ms(p.get("ttft_s")), _ms(s.get("ttft_s")), _ms(p.get("tpot_s")), _ms(s.get("tpot_s")),
            _ratio(tpot) + (f" {effect}" if (effect := (tpot or {}).get("effect")) else ""),
            "–" if aa is None else _ratio(aa), "–" if acc is None else f"{acc:.3f}",
            " / ".join("–" if t is None else f"{t:.0f}" for t in tps),
            " / ".join(str(x.get("errors", "–")) for x in (p, s)),
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


def print_summary(card: Card, console: Console | None = None) -> None:
    """Print :func:`summary_table` and the verdict line (never wrapped), on ``console`` or :func:`stdout_console`."""
    table = summary_table(card)
    out = console or stdout_console(table)
    out.print(table)
    verdict = card.get("verdict")
    if verdict:
        out.print(f"verdict: {verdict['summary']}", markup=False, soft_wrap=True)
