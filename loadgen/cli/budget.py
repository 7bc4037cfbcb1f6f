"""``loadgen sweep --budget-min M``: the wall-time budget, minutes, as a click parameter type.

A budget is a finite number of minutes above 0: ``-5``, ``0``, ``nan`` or ``inf`` were taken as given and gave a
refusal that could not be met ("needs about 5.8 min, more than --budget-min nan") or no bound at all.
"""

from __future__ import annotations

import math
from typing import Any

import click


class Minutes(click.ParamType[float, Any]):
    """Minutes > 0 and finite -> float; click's usage error (exit 2) naming the value otherwise."""

    name = "FLOAT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        """The minutes as a float."""
        try:
            minutes = float(value)
        except (TypeError, ValueError):
            minutes = math.nan
        if not (math.isfinite(minutes) and minutes > 0):
            self.fail(f"{value!r} is no budget; give the minutes the sweep may take, a number above 0 such as 30",
                      param, ctx)
        return minutes
