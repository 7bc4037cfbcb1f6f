"""How numbers are written in the card, the terminal summary, the diff and the verdict lines (pure).

A missing value is an en dash; ratios are speculative / plain with their 95% CI in brackets; memory in
GiB (2**30 bytes).
"""

from __future__ import annotations

MISSING = "–"


def num(value: float | None, digits: int = 2) -> str:
    """``value`` to ``digits`` decimals; the en dash when None."""
    return MISSING if value is None else f"{value:.{digits}f}"


def ms(seconds: float | None, digits: int = 2) -> str:
    """Seconds written as milliseconds to ``digits`` decimals."""
    return num(None if seconds is None else seconds * 1e3, digits)


def ratio(value: float | None, ci_low: float | None = None, ci_high: float | None = None, digits: int = 3) -> str:
    """A ratio's value with ``[ci_low, ci_high]`` when it has an interval (``ci_low`` given; measure/ratios.py),
    to ``digits`` decimals; the en dash when ``value`` is None."""
    if value is None:
        return MISSING
    text = f"{value:.{digits}f}"
    if ci_low is not None:
        text += f" [{ci_low:.{digits}f}, {ci_high:.{digits}f}]"
    return text


def gib(value: float | None) -> str:
    """Bytes as GiB to two decimals."""
    return MISSING if value is None else f"{value / 2**30:.2f} GiB"


def bytes_and_gib(value: float) -> str:
    """Bytes with thousands separators, then GiB: ``1,073,741,824 bytes (1.00 GiB)``."""
    return f"{value:,.0f} bytes ({gib(value)})"


def clock(seconds: float) -> str:
    """``seconds`` as a person reads a time left: ``45 s``, ``4 min 10 s``, ``1 h 05 min``."""
    s = round(max(seconds, 0.0))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
