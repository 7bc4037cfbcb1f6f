"""One exception tree for loadgen; each class carries the process exit code it maps to.

Exit codes (README.md, "Exit codes"): 0 done, 1 run failed, 2 bad input (profile, flags, pair check),
3 the verdict failed its declared criteria. The CLI prints ``str(error)`` as one line and exits with
``error.exit_code``; nothing else prints tracebacks for these.
"""

from __future__ import annotations


class LoadgenError(Exception):
    """Base class. ``str(err)`` is one line: what is wrong and how to fix it."""

    exit_code = 1


class BadInput(LoadgenError):
    """A profile, a flag or a pair is wrong (exit 2)."""

    exit_code = 2


class ProfileError(BadInput):
    """A pair or workload profile is missing, unreadable, or has a wrong/unknown key (exit 2)."""


class PairCheckError(BadInput):
    """The pair failed its pre-flight check, e.g. draft and target vocabularies differ (exit 2)."""


class RunFailed(LoadgenError):
    """The run could not complete: a server died, never became ready, or answered garbage (exit 1)."""


class RunDirUnwritable(RunFailed):
    """The run folder cannot be written: the disk is full, over quota, or read-only (exit 1). The message
    names the folder and its free space (``shutil.disk_usage``)."""


class ServerError(RunFailed):
    """A vLLM server failed to start, to answer, or to stop (exit 1)."""


class FallbackDetected(RunFailed):
    """A server is not in the mode it was launched for (unplanned fallback) (exit 1)."""


class CriteriaFailed(LoadgenError):
    """The run completed but the verdict failed the criteria declared in the pair file (exit 3)."""

    exit_code = 3
