"""Servers already running (``--attach-plain URL``, ``--attach-speculative URL``, ``[servers.<role>].url``):
URL checks, the check of both servers before either is measured, and their URLs across ``--resume``.

A bad URL is bad input (exit 2) found at once, before anything starts. An attached server is meant to be
running: one that refuses the connection fails within seconds (``connection refused at URL``), not after
the start-up timeout. :func:`probe_attached` checks every attached server of the run (reachable, serving the
model name loadgen requests, exposing speculative-decoding metrics as its role declares) before the first
cell, so a broken speculative server is not found after the whole plain half; it also reads what the server
says of itself (:class:`AttachedFacts`: ``max_model_len`` per model from ``/v1/models``, a field of vLLM's
``ModelCard``, vllm/entrypoints/openai/protocol.py; the engine version from ``GET /version``,
``{"version": "0.24.0"}``, vllm/entrypoints/openai/api_server.py) and refuses a workload whose input plus
output tokens cannot fit (BadInput, exit 2, naming both numbers). The URLs are recorded in
protocol.json without credentials (:func:`loadgen.util.redact.redact_url`) and reused by ``--resume``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from loadgen.errors import BadInput, RunFailed, ServerError
from loadgen.prom import exposition as prom
from loadgen.prom.scrape import scrape
from loadgen.records.runparts import RecordedUrl
from loadgen.serve.launchspec import LaunchSpec
from loadgen.util.redact import redact_url
from loadgen.util.tls import tls_context

#: Seconds an attached server may refuse connections before loadgen gives up (it is meant to be running).
ATTACH_REFUSED_S = 2.0


def check_url(url: str, where: str) -> str:
    """``url`` when it is ``http(s)://host[:port][/prefix]`` with a port in 1..65535 and no space or
    control character; else BadInput (exit 2) naming ``where`` (e.g. ``--attach-plain``) and the fix."""
    if (problem := url_problem(url)) is not None:
        raise BadInput(f"{where} {redact_url(url)!r} {problem}; give a URL such as http://127.0.0.1:8000")
    return url


def url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as a server's base URL (check_url's rule), or None when nothing is."""
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
    return (
        f"{spec.role} server: {why} at {redact_url(spec.base_url)}; start it there, or give its URL with "
        f"--attach-{spec.role} URL (or [servers.{spec.role}].url)"
    )


def wrong_model(spec: LaunchSpec, ids: Sequence[Any]) -> str:
    """The error of a server that does not serve ``spec.served_model`` (it lists ``ids``), with the fix."""
    name = spec.served_model
    return (
        f"does not serve {name!r} (it lists {list(ids)}); loadgen requests the name it derives from "
        f"[target].model (its last path part): start the server with --served-model-name {name}, or point "
        f"[target].model at the model the server runs"
    )


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


@dataclass(frozen=True)
class AttachedFacts:
    """What an attached server says of itself: ``version`` (``GET /version``; None when it does not answer
    one) and ``max_model_len`` (tokens, ``/v1/models`` entry of the served model; None when not listed)."""

    version: str | None
    max_model_len: int | None


def listed_max_model_len(listing: Any, served_model: str) -> int | None:
    """``max_model_len`` (tokens) of ``served_model`` in a ``/v1/models`` JSON answer; None when absent."""
    data = listing.get("data") if isinstance(listing, dict) else None
    for m in data if isinstance(data, list) else []:
        if isinstance(m, dict) and m.get("id") == served_model:
            n = m.get("max_model_len")
            return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None
    return None


#: The fields of a ``/v1/models`` entry loadgen keeps (vLLM's ``ModelCard``, vllm/entrypoints/openai/protocol.py).
CARD_FIELDS = ("root", "owned_by", "max_model_len")


def listed_card(listing: Any, served_model: str) -> dict[str, str | int] | None:
    """The :data:`CARD_FIELDS` of ``served_model``'s entry in a ``/v1/models`` JSON answer (those it has, strings
    and integers as sent); None when the entry is absent or has none of them."""
    data = listing.get("data") if isinstance(listing, dict) else None
    for m in data if isinstance(data, list) else []:
        if isinstance(m, dict) and m.get("id") == served_model:
            found = {k: m[k] for k in CARD_FIELDS if isinstance(m.get(k), str | int) and not isinstance(m[k], bool)}
            return found or None
    return None


def engine_version(url: str, headers: Mapping[str, str]) -> str | None:
    """The engine version an attached server at ``url`` reports on ``GET /version`` (vLLM: ``{"version":
    "0.24.0"}``); None when it answers no such JSON or cannot be reached. Never raises."""
    try:
        answer = httpx.get(
            url.rstrip("/") + "/version",
            timeout=httpx.Timeout(10.0, connect=5.0),
            headers=dict(headers),
            verify=tls_context(),
        )
        version = answer.json().get("version") if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) and version.strip() else None


def check_fit(spec: LaunchSpec, max_model_len: int | None, workloads: Sequence[tuple[str, int | None, int]]) -> None:
    """Raise BadInput (exit 2) when a workload ((name, input tokens or None for natural lengths, output
    tokens)) needs more tokens (input + output) than the attached server's ``max_model_len``, naming both
    numbers; natural-length workloads and an unknown ``max_model_len`` are not judged here."""
    if max_model_len is None:
        return
    over = [(name, i, o) for name, i, o in workloads if i is not None and i + o > max_model_len]
    if over:
        name, i, o = max(over, key=lambda w: (w[1] or 0) + w[2])
        raise BadInput(
            f"workload {name!r} needs {i + o} tokens ({i} input + {o} output) but the {spec.role} "
            f"server at {redact_url(spec.base_url)} serves max_model_len {max_model_len} (/v1/models); "
            "shorten the workload or restart the server with a larger --max-model-len"
        )


def where_to_look(spec: LaunchSpec) -> str:
    """Where a server's own output is: its log for a launched one; for an attached one (loadgen writes no
    log of it) its URL."""
    if spec.attach_url:
        return f"the attached server at {redact_url(spec.base_url)} (its own output; loadgen keeps no log of it)"
    return str(spec.log_path)


def probe_attached(
    specs: Sequence[LaunchSpec],
    prove: Callable[[str, prom.Snapshot], Any],
    log: Callable[[str], None] = print,
    workloads: Sequence[tuple[str, int | None, int]] = (),
    chat: Sequence[str] = (),
) -> dict[str, AttachedFacts]:
    """Check every attached server in ``specs`` (the others are skipped) before any is measured:
    its URL, ``/v1/models`` listing ``served_model``, the ``workloads`` ((name, input tokens or None, output
    tokens)) against its ``max_model_len`` (:func:`check_fit`), and ``prove(role, snapshot of /metrics)``
    (which raises FallbackDetected when the mode is not the declared one; skipped when ``/metrics`` is
    unavailable, which the start-up proof handles); with ``chat`` workloads (their names), a minimal chat request
    (:func:`check_chat`). Returns role -> :class:`AttachedFacts`. Raises BadInput
    (bad URL, a workload that cannot fit) or ServerError (unreachable, HTTP error, wrong model name)."""
    facts: dict[str, AttachedFacts] = {}
    for spec in specs:
        if not spec.attach_url:
            continue
        role, url = spec.role, spec.base_url
        check_url(spec.attach_url, f"--attach-{role}")
        if spec.metrics_url:
            check_url(spec.metrics_url, f"--metrics-{role}")
        try:
            listing = httpx.get(
                url + "/v1/models", timeout=httpx.Timeout(30.0, connect=5.0), headers=spec.headers, verify=tls_context()
            )
        except httpx.ConnectError as exc:
            raise ServerError(unreachable(spec, exc)) from None
        except httpx.HTTPError as exc:
            raise ServerError(f"{role} server at {redact_url(url)}: /v1/models failed ({exc})") from None
        if (problem := listing_problem(spec, listing)) is not None:
            raise ServerError(f"{role} server at {redact_url(url)} {problem}")
        facts[role] = found = _facts(spec, listing)
        check_fit(spec, found.max_model_len, workloads)
        serves = (
            f"serves {spec.served_model!r} (vLLM {found.version or 'version unknown'}, max_model_len "
            f"{found.max_model_len or 'not listed'})"
        )
        at = f" (/metrics at {redact_url(spec.metrics_base)})" if spec.metrics_url else ""
        try:
            snap = scrape(spec.metrics_base, headers=spec.headers)[1]
        except RunFailed as exc:  # no /metrics: the mode is proven without it at start-up (modeproof.py)
            log(f"[{role}] checked {redact_url(url)}: {serves}; /metrics unavailable ({exc})")
            continue
        prove(role, snap)
        log(f"[{role}] checked {redact_url(url)}{at}: {serves}, speculative decoding as declared")
    for spec in specs if chat else ():  # once every server passed the checks above
        if spec.attach_url:
            check_chat(spec, chat)
    return facts


def check_chat(spec: LaunchSpec, chat: Sequence[str]) -> None:
    """Ask the attached server for one token of a minimal chat request (``/v1/chat/completions``): the server
    started by hand, not the pair file's launch settings, decides whether it has a chat template (vLLM answers
    a chat request without one with an HTTP 400). Raises ServerError naming the answer, the ``chat`` workloads
    and the fix."""
    body = {"model": spec.served_model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
    where = f"{spec.role} server at {redact_url(spec.base_url)}"
    try:
        answer = httpx.post(
            spec.base_url + "/v1/chat/completions", json=body, timeout=30.0, headers=spec.headers, verify=tls_context()
        )
    except httpx.HTTPError as exc:
        raise ServerError(f"{where}: a minimal chat request failed ({exc})") from None
    if answer.status_code != 200:
        said = " ".join(answer.text.split())[:200]
        raise ServerError(
            f"{where} refused a minimal chat request (HTTP {answer.status_code}: {said}); "
            f"the chat workload(s) {', '.join(chat)} need a chat template on that server: start it with "
            "--chat-template FILE, or use completions workloads"
        )


def _facts(spec: LaunchSpec, listing: httpx.Response) -> AttachedFacts:
    try:
        body = listing.json()
    except ValueError:
        body = None
    return AttachedFacts(engine_version(spec.base_url, spec.headers), listed_max_model_len(body, spec.served_model))


def attach_record(attach: Mapping[str, str]) -> dict[str, RecordedUrl]:
    """The attach URLs for protocol.json, without credentials: per role its records/runparts.py ``RecordedUrl``,
    ``complete`` False when something was stripped (then ``--resume`` asks for the URL again)."""
    return {role: RecordedUrl(redact_url(url), redact_url(url) == url.strip()) for role, url in attach.items()}


def resume_urls(
    recorded: Mapping[str, RecordedUrl], given: Mapping[str, str], roles: Iterable[str], flag: str = "attach"
) -> dict[str, str]:
    """The attach URLs of a resumed run (``flag`` ``metrics``: its metrics URLs, protocol.json's
    ``metrics_urls``): those ``given`` on the command line, else the ``recorded`` ones (:func:`attach_record`)
    for ``roles`` (those with cells left). Raises BadInput for a recorded URL that lost its credentials and was
    not given again."""
    out = dict(given)
    what = "attached to the {role} server" if flag == "attach" else "read the {role} server's /metrics"
    for role in roles:
        entry = recorded.get(role)
        if role in out or entry is None:
            continue
        if not entry.complete:
            raise BadInput(
                f"this run {what.format(role=role)} at {entry.url}, whose credentials were not "
                f"saved; give its URL again with --{flag}-{role} URL"
            )
        out[role] = entry.url
    return out
