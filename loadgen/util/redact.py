"""Keep secrets out of everything loadgen writes: logs, launch records, the protocol and the card.

An API key reaches loadgen through ``--api-key`` or ``OPENAI_API_KEY`` and is only ever sent as an
``Authorization: Bearer`` header. Environment variables whose names look secret (``*KEY*``, ``*TOKEN*``,
``*SECRET*``, ``*PASSWORD*``: e.g. vLLM's ``VLLM_API_KEY``, ``HF_TOKEN``) and the values of secret
command-line options (``--api-key``) are replaced by ``***`` before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
SECRET_OPTIONS = ("--api-key", "--hf-token", "--ssl-keyfile-password")


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the values of secret-looking names masked."""
    return {k: MASK if _SECRET_NAME.search(k) else v for k, v in env.items()}


def redact_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with the value of every secret option masked (``--api-key X`` and ``--api-key=X``)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
        elif arg in SECRET_OPTIONS:
            out.append(arg)
            hide_next = True
        elif arg.split("=", 1)[0] in SECRET_OPTIONS and "=" in arg:
            out.append(arg.split("=", 1)[0] + "=" + MASK)
        else:
            out.append(arg)
    return out


def redact_text(text: str, secrets: Sequence[str | None]) -> str:
    """``text`` with every occurrence of each non-empty secret masked."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    return text


def redact_url(url: str) -> str:
    """``url`` without what may carry a credential: the userinfo (``user:pass@``), the query and the
    fragment (``?token=...``); scheme, host, port and path are kept."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # not even a URL (e.g. an unclosed IPv6 bracket): cut by hand
        scheme, sep, rest = url.strip().partition("://")
        rest = re.split(r"[?#]", rest if sep else scheme, maxsplit=1)[0]
        host, slash, path = rest.partition("/")
        return (scheme + sep if sep else "") + host.rpartition("@")[2] + slash + path
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))
