"""What a CliRunner result must show for a clean exit: click's CliRunner catches every exception, so its output
never holds a traceback; an uncaught exception shows instead as ``result.exception`` (exit code 1). A clean
exit of the command line is a ``SystemExit`` with the expected code (``loadgen.cli.commands._handles_errors``
for loadgen's errors, click's own for usage errors)."""

from __future__ import annotations

from click.testing import Result


def exited(result: Result, code: int) -> list[str]:
    """The non-blank output lines of ``result``, after asserting that the command exited through SystemExit
    with ``code`` rather than through an uncaught exception."""
    assert isinstance(result.exception, SystemExit), (result.exception, result.output)
    assert result.exit_code == code and result.exception.code == code, result.output
    return [line for line in result.output.splitlines() if line.strip()]
