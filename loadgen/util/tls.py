"""One TLS context for every HTTP client loadgen opens (``verify=tls_context()``).

httpx builds a new ``ssl.SSLContext`` for each client and each top-level ``httpx.get``, loading its CA bundle
each time: about 25 ms of CPU apiece (httpx 0.29, measured on the 2-core CI machine). A run opens one per
readiness poll, scrape and metrics query, so it builds the context once and hands it over; what it verifies is
unchanged (httpx's default: certifi's CA bundle, ``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured).
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default verifying context (``httpx.create_ssl_context()``), built on first use and shared."""
    return httpx.create_ssl_context()
