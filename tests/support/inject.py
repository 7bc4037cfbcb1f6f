"""``python -m tests.support.inject MODULE:NAME[@N] ARGS...``: the ``loadgen ARGS`` command line with the function
``NAME`` of ``MODULE`` replaced, before loadgen's command line is imported, by one that raises
``ValueError("injected defect")`` on its N-th call (default: the first) and calls the original before that. An
exception loadgen does not expect, met where a defect would meet a user's run; ``MODULE`` is the module whose
name is looked up when the function is called."""

from __future__ import annotations

import importlib
import sys
from typing import Any

#: The message of the injected exception.
DEFECT = "injected defect"


def inject(target: str) -> None:
    """Replace the function ``target`` names (``MODULE:NAME[@N]``, module docstring)."""
    where, _, nth = target.partition("@")
    module_name, _, name = where.partition(":")
    module = importlib.import_module(module_name)
    original = getattr(module, name)
    calls = 0

    def injected(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls >= int(nth or 1):
            raise ValueError(DEFECT)
        return original(*args, **kwargs)

    setattr(module, name, injected)


if __name__ == "__main__":
    inject(sys.argv[1])
    from loadgen.cli import main

    main(args=sys.argv[2:], prog_name="loadgen")
