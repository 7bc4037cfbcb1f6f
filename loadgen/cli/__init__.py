"""The command line: ``loadgen check|report|diff|fleet|pairs`` (``commands.py``), ``compare|sweep``
(``runcmds.py``, their options record: ``options.py``), ``runs`` (``runlist.py``), ``trace-capacity``
(``tracecap.py``), the click types of flag values (``paramtypes.py``), a card's terminal summary
(``summary.py``) and the modules each command's own flags
and output live in.

May import: errors, util, records, store, profile, check, prom, serve, stream, measure, report, run, fleet.
Layers, lowest first: errors, util < records < store < profile < check < prom < serve < stream < measure < report < run
< fleet < cli; check, serve and stream import none of each other (tests/test_layers.py enforces it).
"""

from __future__ import annotations

from loadgen.cli.commands import main
from loadgen.cli.handling import _sigterm_as_interrupt
from loadgen.cli.runcmds import compare, sweep, verdict_exit
from loadgen.cli.runlist import runs
from loadgen.cli.tracecap import trace_capacity

for _command in (compare, sweep, runs, trace_capacity):
    main.add_command(_command)

__all__ = ["_sigterm_as_interrupt", "main", "verdict_exit"]
