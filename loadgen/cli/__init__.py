"""The command line: ``loadgen check|compare|sweep|report|diff|fleet|pairs`` (``commands.py``), ``runs``
(``runlist.py``) and the modules each command's own flags and output live in.

May import every layer: util < profile < check < prom < serve < stream < measure < report < run < fleet < cli.
"""

from __future__ import annotations

from loadgen.cli.commands import _sigterm_as_interrupt, _verdict_exit, main
from loadgen.cli.runlist import runs

main.add_command(runs)

__all__ = ["_sigterm_as_interrupt", "_verdict_exit", "main"]
