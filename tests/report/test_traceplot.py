"""report/traceplot.py: one figure per trace workload and arm, drawing each window's speedup (plain / arm TPOT
p50) at the window's midpoint, its 95% CI band and the mean requests in flight of both servers."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.records.trace import ArmWindow, Shares, TraceArm, TraceRow, TraceSection, TraceWindow
from loadgen.report.traceplot import render_trace_plots
from tests.support.figures import capture_figures, labels, line


def window(start: float, speedup: float | None, in_flight: tuple[float, float]) -> TraceWindow:
    def arm(mean: float) -> ArmWindow:
        return ArmWindow(0, mean, 0, None, None, None, None)

    return TraceWindow(
        start,
        start + 10.0,
        0,
        {"plain": arm(in_flight[0]), "speculative": arm(in_flight[1])},
        speedup,
        None if speedup is None else speedup - 0.1,
        None if speedup is None else speedup + 0.2,
        "blocks",
        "unknown",
    )


def section(windows: list[TraceWindow]) -> TraceSection:
    """A trace section of one workload ``chat/x`` whose arm ``speculative`` has ``windows``."""
    arm = TraceArm(None, None, None, tuple(windows), Shares({}, {}))
    row = TraceRow("chat/x", "chat/x", 1.0, 10.0, 0, 30.0, {}, {"speculative": arm}, None)
    return TraceSection((row,), {}, {})


WINDOWS = [window(0.0, 1.5, (2.0, 1.0)), window(10.0, None, (4.0, 3.5)), window(20.0, 0.9, (8.0, 9.0))]


def test_the_figure_draws_speedup_and_in_flight_at_window_midpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = capture_figures(monkeypatch)
    (path,) = render_trace_plots(section(WINDOWS), tmp_path / "plots")
    assert path == tmp_path / "plots" / "trace_chat_x_speculative.png" and path.is_file()
    top, bottom = figures[path.name].axes
    xs, ys = line(top, "speedup plain / speculative (TPOT p50)")
    assert xs == [5.0, 15.0, 25.0] and ys[::2] == [1.5, 0.9] and ys[1] != ys[1]  # an unknown window is a gap (NaN)
    band = [(x, y) for path in top.collections[0].get_paths() for x, y in path.vertices]  # one piece per NaN gap
    assert len(top.collections[0].get_paths()) == 2
    assert min(y for _, y in band) == pytest.approx(0.8) and max(y for _, y in band) == pytest.approx(1.7)
    assert {x for x, _ in band} == {5.0, 25.0}
    assert labels(bottom) == ["plain", "speculative"]
    assert line(bottom, "plain") == ([5.0, 15.0, 25.0], [2.0, 4.0, 8.0])
    assert line(bottom, "speculative") == ([5.0, 15.0, 25.0], [1.0, 3.5, 9.0])


def test_no_trace_no_figure(tmp_path: Path) -> None:
    assert render_trace_plots(None, tmp_path / "a") == [] and not (tmp_path / "a").exists()
    assert render_trace_plots(TraceSection((), {}, {}), tmp_path / "b") == []
