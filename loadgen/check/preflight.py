"""The pair check as `loadgen check` and `loadgen compare` run it: the installed engine version, every
finding printed one line each, and PairCheckError (exit 2) on a blocking one."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from loadgen.check import engine
from loadgen.check.finding import Finding
from loadgen.check.validate import check_pair
from loadgen.errors import PairCheckError
from loadgen.profile.pair import Pair, RoleServer


def run_pair_check(
    pair: Pair,
    allow_unpinned: bool,
    log: Callable[[str], None],
    again: str | None = None,
    attached: str | None = None,
    attached_roles: Iterable[str] = (),
) -> tuple[str | None, list[Finding]]:
    """Check ``pair`` for the installed engine (engine.detect_engine_version), or for ``attached``: the
    version an attached server reported on ``/version``; log the version and each finding, and return the
    version (None: unknown) and the findings. Raises PairCheckError when a blocking finding failed: naming
    the count and the command to run ``again`` when given, else the count and the checks (the logged FAIL lines
    say each one; the error does not repeat them)."""
    if attached is not None:
        version: str | None = attached
        log(f"engine version (attached server): {version}")
    else:
        version = engine.detect_engine_version(pair.engine.command, pair.engine.env)
        log(f"engine version (installed): {version or 'unknown'}")
    # a server attached from the command line is checked as one whose [servers.<role>].url is set: its launch
    # settings are not used (its chat template is asked of it: serve/attached.py check_chat)
    servers = {
        **pair.servers,
        **{r: replace(pair.servers.get(r) or RoleServer(), url="attached") for r in attached_roles},
    }
    findings = check_pair(replace(pair, servers=servers), version, allow_unpinned)
    for f in findings:
        log(f.line())
    blocking = [f for f in findings if f.blocking and not f.ok]
    if blocking and again is not None:
        raise PairCheckError(f"{len(blocking)} blocking finding(s); fix them and run `{again}` again")
    if blocking:  # the FAIL lines above name each one: the error names them, not their text again
        names = ", ".join(dict.fromkeys(f.check for f in blocking))
        raise PairCheckError(f"pair check failed: {len(blocking)} blocking finding(s) above ({names}); fix them first")
    return version, findings
