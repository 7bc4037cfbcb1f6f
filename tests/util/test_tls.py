"""The shared TLS context (loadgen/util/tls.py): built once, and verifying as httpx's default does."""

from __future__ import annotations

import ssl

from loadgen.util.tls import tls_context


def test_every_client_gets_the_one_context_and_it_verifies_certificates_and_host_names() -> None:
    context = tls_context()
    assert tls_context() is context
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname is True
    assert context.cert_store_stats()["x509_ca"] > 0  # a CA bundle is loaded
