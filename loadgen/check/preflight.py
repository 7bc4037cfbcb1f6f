"""The pair check as `loadgen check` and `loadgen compare` run it (and `loadgen sweep` for each candidate): whether
the engine command of the servers loadgen launches can start, the engine version, every finding printed one line
each, and PairCheckError (exit 2) on a blocking one."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from loadgen.check import enginestart
from loadgen.check.finding import Finding
from loadgen.check.validate import check_pair
from loadgen.errors import PairCheckError
from loadgen.profile.pair import Pair, RoleServer

#: The servers of a pair that run the engine command unless attached (a placebo server runs only beside a
#: launched plain one: with the plain server attached it is attached too, or runs as blocks on it; run/arms.py).
LAUNCHABLE = ("plain", "speculative")


def launched_roles(pair: Pair) -> list[str]:
    """The servers of ``pair`` loadgen would launch: those of :data:`LAUNCHABLE` without ``[servers.<role>].url``
    (a server attached from the command line has one set by :func:`run_pair_check`)."""
    return [r for r in LAUNCHABLE if not (pair.servers.get(r) or RoleServer()).url]


def run_pair_check(
    pair: Pair,
    allow_unpinned: bool,
    log: Callable[[str], None],
    again: str | None = None,
    attached: str | None = None,
    attached_roles: Iterable[str] = (),
) -> tuple[str | None, list[Finding]]:
    """Check ``pair``: when loadgen launches a server of it, whether ``[engine].command`` can start and the
    installed engine's version (enginestart.probe_engine; attached servers are not probed); ``attached``: the
    version an attached server reported on ``/version``, used instead. Log the version and each finding, and
    return the version (None: unknown) and the findings. Raises PairCheckError when a blocking finding failed:
    naming the count and the command to run ``again`` when given, else the count and the checks (the logged FAIL
    lines say each one; the error does not repeat them)."""
    # a server attached from the command line is checked as one whose [servers.<role>].url is set: its launch
    # settings are not used (its chat template is asked of it: serve/attached.py check_chat)
    servers = {
        **pair.servers,
        **{r: replace(pair.servers.get(r) or RoleServer(), url="attached") for r in attached_roles},
    }
    pair = replace(pair, servers=servers)
    launched = launched_roles(pair)
    start = enginestart.probe_engine(pair.engine.command, pair.engine.env) if launched else None
    if attached is not None:
        version: str | None = attached
        log(f"engine version (attached server): {version}")
    elif start is not None:
        version = start.version
        log(f"engine version (installed): {version or 'unknown'}")
    else:
        version = None
        log("engine version: unknown (every server is attached: no engine command is run here)")
    findings = check_pair(pair, version, allow_unpinned, engine_start=start)
    for f in findings:
        log(f.line())
    blocking = [f for f in findings if f.blocking and not f.ok]
    if blocking and again is not None:
        raise PairCheckError(f"{len(blocking)} blocking finding(s); fix them and run `{again}` again")
    if blocking:  # the FAIL lines above name each one: the error names them, not their text again
        names = ", ".join(dict.fromkeys(f.check for f in blocking))
        raise PairCheckError(f"pair check failed: {len(blocking)} blocking finding(s) above ({names}); fix them first")
    return version, findings


def check_pairs(
    pairs: Mapping[str, Pair],
    allow_unpinned: bool,
    log: Callable[[str], None],
    attached: str | None = None,
    attached_roles: Sequence[str] = (),
) -> tuple[str | None, dict[str, list[Finding]]]:
    """:func:`run_pair_check` of each of ``pairs`` (a sweep's candidates by name, in order; ``[name] check`` logged
    first): the engine version and each one's findings. Raises PairCheckError at the first that fails."""
    version, findings = None, {}
    for name, pair in pairs.items():
        log(f"[{name}] check")
        version, found = run_pair_check(pair, allow_unpinned, log, attached=attached, attached_roles=attached_roles)
        findings[name] = list(found)
    return version, findings
