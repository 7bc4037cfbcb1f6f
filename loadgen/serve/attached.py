"""Servers already running (``--attach-plain URL``, ``--attach-speculative URL``, ``[servers.<role>].url``):
URL checks, the check of both servers before either is measured, and their URLs across ``--resume``.

A bad URL is bad input (exit 2) found at once, before anything starts. An attached server is meant to be
running: one that refuses the connection fails within seconds (``connection refused at URL``), not after
the start-up timeout. :func:`preflight` checks every attached server of the run (reachable, serving the
model name loadgen requests, exposing speculative-decoding metrics as its role declares) before the first
cell, so a broken speculative server is not found after the whole plain half. The URLs are recorded in
protocol.json without credentials (:func:`loadgen.redact.redact_url`) and reused by ``--resume``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from loadgen.errors import BadInput, RunFailed, ServerError
from loadgen.prom import exposition as prom
from loadgen.prom.scrape import scrape
from loadgen.util.redact import redact_url

if TYPE_CHECKING:
    from loadgen.serve.servers import LaunchSpec

#: Seconds an attached server may refuse connections before loadgen gives up (it is meant to be running).
ATTACH_REFUSED_S = 2.0


def check_url(url: str, where: str) -> str:
    """``url`` when it is ``http(s)://host[:port][/prefix]`` with a port in 1..65535 and no space or
    control character; else BadInput (exit 2) naming ``where`` (e.g. ``--attach-plain``) and the fix."""
    if (problem := _url_problem(url)) is not None:
        raise BadInput(f"{where} {redact_url(url)!r} {problem}; give a URL such as http://127.0.0.1:8000")
    return url


def _url_problem(url: str) -> str | None:
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return "holds a space or a control character"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # an unclosed IPv6 bracket, a port out of range or not a number
        return "has a port outside 1..65535" if "port" in str(exc).lower() else "is not a URL"
    if parts.scheme not in ("http", "https"):
        return "does not start with http:// or https://"
    if not parts.hostname:
        return "names no host"
    if port is not None and not 0 < port <= 65535:
        return "has a port outside 1..65535"
    return None


def unreachable(spec: LaunchSpec, exc: Exception) -> str:
    """One line for an attached server that cannot be reached: ``connection refused at URL`` and the fix."""
    why = "connection refused" if "refused" in str(exc).lower() else f"cannot connect ({exc})"
    return (f"{spec.role} server: {why} at {redact_url(spec.base_url)}; start it there, or give its URL with "
            f"--attach-{spec.role} URL (or [servers.{spec.role}].url)")


def wrong_model(spec: LaunchSpec, ids: Sequence[Any]) -> str:
    """The error of a server that does not serve ``spec.served_model`` (it lists ``ids``), with the fix."""
    name = spec.served_model
    return (f"does not serve {name!r} (it lists {list(ids)}); loadgen requests the name it derives from "
            f"[target].model (its last path part): start the server with --served-model-name {name}, or point "
            f"[target].model at the model the server runs")


def listing_problem(spec: LaunchSpec, listing: httpx.Response) -> str | None:
    """What is wrong with a server's ``/v1/models`` answer for ``spec`` (its HTTP status, with the API-key
    hint for 401; or it does not list ``spec.served_model``, :func:`wrong_model`); None when it serves it."""
    if listing.status_code != 200:
        hint = "; give the server's key with --api-key or OPENAI_API_KEY" if listing.status_code == 401 else ""
        return f"answered /v1/models with HTTP {listing.status_code}{hint}"
    try:
        ids = [m.get("id") for m in listing.json().get("data", [])]
    except (ValueError, AttributeError):
        ids = []
    return None if spec.served_model in ids else wrong_model(spec, ids)


def where_to_look(spec: LaunchSpec) -> str:
    """Where a server's own output is: its log for a launched one; for an attached one (loadgen writes no
    log of it) its URL."""
    if spec.attach_url:
        return f"the attached server at {redact_url(spec.base_url)} (its own output; loadgen keeps no log of it)"
    return str(spec.log_path)


def preflight(specs: Iterable[LaunchSpec], prove: Callable[[str, prom.Snapshot], Any],
              log: Callable[[str], None] = print) -> None:
    """Check every attached server in ``specs`` (the others are skipped) before any is measured:
    its URL, ``/v1/models`` listing ``served_model``, and ``prove(role, snapshot of /metrics)`` (which
    raises FallbackDetected when the mode is not the declared one; skipped when ``/metrics`` is unavailable,
    which the start-up proof handles). Raises BadInput (bad URL) or ServerError (unreachable, HTTP error,
    wrong model name)."""
    for spec in specs:
        if not spec.attach_url:
            continue
        role, url = spec.role, spec.base_url
        check_url(spec.attach_url, f"--attach-{role}")
        try:
            listing = httpx.get(url + "/v1/models", timeout=httpx.Timeout(30.0, connect=5.0),
                                headers=spec.headers)
        except httpx.ConnectError as exc:
            raise ServerError(unreachable(spec, exc)) from None
        except httpx.HTTPError as exc:
            raise ServerError(f"{role} server at {redact_url(url)}: /v1/models failed ({exc})") from None
        if (problem := listing_problem(spec, listing)) is not None:
            raise ServerError(f"{role} server at {redact_url(url)} {problem}")
        try:
            snap = scrape(url, headers=spec.headers)[1]
        except RunFailed as exc:  # no /metrics: the mode is proven without it at start-up (modeproof.py)
            log(f"[{role}] checked {redact_url(url)}: serves {spec.served_model!r}; /metrics unavailable ({exc})")
            continue
        prove(role, snap)
        log(f"[{role}] checked {redact_url(url)}: serves {spec.served_model!r}, speculative decoding as declared")


def record(attach: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The attach URLs for protocol.json, without credentials: ``{role: {"url": ..., "complete": bool}}``;
    ``complete`` is False when something was stripped (then ``--resume`` asks for the URL again)."""
    return {role: {"url": redact_url(url), "complete": redact_url(url) == url.strip()} for role, url in attach.items()}


def resume_urls(recorded: Mapping[str, Any], given: Mapping[str, str], roles: Iterable[str]) -> dict[str, str]:
    """The attach URLs of a resumed run: those ``given`` on the command line, else the ``recorded`` ones
    (:func:`record`) for ``roles`` (those with cells left). Raises BadInput for a recorded URL that lost
    its credentials and was not given again."""
    out = dict(given)
    for role in roles:
        entry = recorded.get(role)
        if role in out or not isinstance(entry, dict):
            continue
        if not entry.get("complete", True):
            raise BadInput(f"this run attached to the {role} server at {entry['url']}, whose credentials were not "
                           f"saved; give its URL again with --attach-{role} URL")
        out[role] = entry["url"]
    return out
