"""The command line: ``loadgen check|compare|sweep|report|diff|fleet|pairs`` (``commands.py``), ``runs``
(``runlist.py``), ``trace-capacity`` (``tracecap.py``) and the modules each command's own flags and output
live in.

May import every layer: util < records < profile < check < prom < serve < stream < measure < report < run < fleet < cli.
"""

from __future__ import annotations

from loadgen.cli.commands import _sigterm_as_interrupt, _verdict_exit, main
from loadgen.cli.runlist import runs
from loadgen.cli.tracecap import trace_capacity

main.add_command(runs)
main.add_command(trace_capacity)

__all__ = ["_sigterm_as_interrupt", "_verdict_exit", "main"]
