"""Compare two cards of the same pair, for regression checks in CI pipelines (pure).

A regression is: the candidate's verdict fails where the baseline's passed, or a cell judged ``pass`` in
the baseline is judged ``fail`` in the candidate (criteria.py statuses). Every shared cell's primary
ratio (speculative / plain) is listed side by side.
"""

from __future__ import annotations

from dataclasses import dataclass

from loadgen.errors import BadInput
from loadgen.util.numbers import num
from loadgen.util.schemas import Card


@dataclass(frozen=True)
class Diff:
    """``lines``: one line per shared cell plus the verdicts; ``regressed``: exit 3; ``summary``: one line."""

    lines: tuple[str, ...]
    regressed: bool
    summary: str


def _cell_status(card: Card) -> dict[tuple[str, int], str]:
    verdict = card.get("verdict") or {}
    return {(c["workload"], c["concurrency"]): c["status"] for c in verdict.get("cells", [])}


def _primary(card: Card) -> str:
    primary = ((card.get("verdict") or {}).get("criteria") or {}).get("primary") or ["tpot_p50"]
    return str(primary[0])


def _fmt(ratio: float | None) -> str:
    return num(ratio, 3)


def diff_cards(baseline: Card, candidate: Card) -> Diff:
    """Diff ``candidate`` against ``baseline`` (card.json dicts). Raises BadInput for different pairs."""
    if baseline.get("pair") != candidate.get("pair"):
        raise BadInput(f"the cards are of different pairs ({baseline.get('pair')!r} vs {candidate.get('pair')!r}); "
                       "diff compares two runs of the same pair")
    metric = _primary(candidate)
    before, after = _cell_status(baseline), _cell_status(candidate)
    cells_a = {(c["workload"], c["level"]): c for c in baseline["cells"]}
    lines, regressions = [], []
    for cell in candidate["cells"]:
        key = (cell["workload"], cell["level"])
        old = cells_a.get(key)
        if old is None:
            lines.append(f"{key[0]} {key[1]}: only in the candidate")
            continue
        r_old = ((old.get("ratios") or {}).get(metric) or {}).get("value")
        r_new = ((cell.get("ratios") or {}).get(metric) or {}).get("value")
        s_old, s_new = before.get((key[0], cell["concurrency"])), after.get((key[0], cell["concurrency"]))
        lines.append(f"{key[0]} {key[1]}: {metric} spec/plain {_fmt(r_old)} -> {_fmt(r_new)}; "
                     f"verdict {s_old or '–'} -> {s_new or '–'}")
        if s_old == "pass" and s_new == "fail":
            regressions.append(f"{key[0]} {key[1]} went from pass to fail")
    v_old = (baseline.get("verdict") or {}).get("passed")
    v_new = (candidate.get("verdict") or {}).get("passed")
    shown = {True: "PASS", False: "FAIL", None: "not judged (no criteria declared)"}
    lines.append(f"verdict: baseline {shown[v_old]}, candidate {shown[v_new]}")
    if v_old is True and v_new is False:
        regressions.insert(0, "the candidate's verdict fails its declared criteria, the baseline's passed")
    summary = "; ".join(regressions) if regressions else "no regression"
    return Diff(tuple(lines), bool(regressions), summary)
