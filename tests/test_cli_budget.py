"""cli/paramtypes.py: ``--budget-min`` as a click parameter type: finite minutes above 0 pass as floats, anything
else is click's usage error (exit 2) naming the value, both alone and on ``loadgen sweep``."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.cli.paramtypes import Minutes
from tests.support.clirun import exited


@pytest.mark.parametrize(("given", "minutes"), [("30", 30.0), ("0.5", 0.5), (12, 12.0), ("1e3", 1000.0)])
def test_finite_minutes_above_zero(given: object, minutes: float) -> None:
    assert Minutes().convert(given, None, None) == minutes


@pytest.mark.parametrize("given", ["0", "-5", "nan", "inf", "-inf", "soon", "", None])
def test_anything_else_is_a_usage_error(given: object) -> None:
    with pytest.raises(click.BadParameter) as info:
        Minutes().convert(given, None, None)
    assert info.value.message == (
        f"{given!r} is no budget; give the minutes the sweep may take, a number above 0 such as 30"
    )


def test_on_the_sweep_command_line() -> None:
    lines = exited(CliRunner().invoke(main, ["sweep", "demo-cpu-sweep", "--budget-min", "nan"]), 2)
    assert lines[-1] == (
        "Error: Invalid value for '--budget-min': 'nan' is no budget; give the minutes the sweep may "
        "take, a number above 0 such as 30"
    )
