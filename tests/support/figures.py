"""The figures a plotting function saved, read back as matplotlib objects: every loadgen figure is a private
``matplotlib.figure.Figure`` written with ``Figure.savefig`` (report/plots.py, sweepplots.py, traceplot.py,
contextplot.py), so recording ``savefig``'s figure lets a test assert the data drawn, not only that a PNG exists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D


def capture_figures(monkeypatch: pytest.MonkeyPatch) -> dict[str, Figure]:
    """From now on in the test, file name -> the Figure saved under it (the PNG is still written)."""
    saved: dict[str, Figure] = {}
    original = Figure.savefig

    def savefig(self: Figure, fname: Any, *args: Any, **kwargs: Any) -> None:
        saved[Path(fname).name] = self
        original(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return saved


def line(ax: Axes, label: str) -> tuple[list[float], list[float]]:
    """(x, y) of the one line labelled ``label`` on ``ax``."""
    (found,) = [x for x in ax.get_lines() if x.get_label() == label]
    return xy(found)


def xy(found: Line2D) -> tuple[list[float], list[float]]:
    return (np.asarray(found.get_xdata(), dtype=float).tolist(), np.asarray(found.get_ydata(), dtype=float).tolist())


def labels(ax: Axes) -> list[str]:
    """The labels of the lines on ``ax`` that have one (matplotlib names unlabelled ones ``_child<n>``)."""
    return [str(x.get_label()) for x in ax.get_lines() if not str(x.get_label()).startswith("_")]
