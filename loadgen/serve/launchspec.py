"""What starts one server: :class:`LaunchSpec` (its command line, environment, address, or the URL of a running
server to attach to, and where its ``/metrics`` is read), the engine command line (:func:`build_argv`) and whether
its port is taken (:func:`port_in_use`). serve/servers.py launches, attaches and stops servers from it."""

from __future__ import annotations

import json
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loadgen.profile.pair import ModelRef
from loadgen.records.speculative import SpeculativeConfig


@dataclass
class LaunchSpec:
    """Everything needed to start one server. ``argv`` is the full command line."""

    role: str  # "plain" | "speculative"
    argv: list[str]
    env: dict[str, str]
    host: str
    port: int
    served_model: str
    startup_timeout_s: float
    log_path: Path
    attach_url: str | None = None
    api_key: str | None = None
    startup_log: Path | None = None  # an attached server's startup log ([servers.<role>].log)
    metrics_url: str | None = None  # where /metrics is read, when not at the API URL (--metrics-<role>)

    @property
    def headers(self) -> dict[str, str]:
        """``Authorization: Bearer`` when an API key is set (never written anywhere)."""
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    @property
    def base_url(self) -> str:
        """The attach URL, else ``http://host:port``."""
        return (self.attach_url or f"http://{self.host}:{self.port}").rstrip("/")

    @property
    def metrics_base(self) -> str:
        """The URL whose ``/metrics`` is read: the metrics URL (``--metrics-<role>``, ``[servers.<role>].metrics_url``;
        given as the server's base URL or as its ``/metrics`` endpoint), else :attr:`base_url`."""
        if not self.metrics_url:
            return self.base_url
        url = self.metrics_url.rstrip("/")
        return url.removesuffix("/metrics") if url.endswith("/metrics") else url


def build_argv(
    command: Sequence[str],
    target: ModelRef,
    served_model: str,
    host: str,
    port: int,
    seed: int,
    extra_args: Sequence[str],
    speculative: SpeculativeConfig | None,
) -> list[str]:
    """The engine command line. The speculative config is passed as ``--speculative-config JSON``
    (vLLM >= 0.8.2; the old scattered flags were removed in 0.8.3, vLLM PR 14434; docs/vllm-notes.md).
    """
    argv = [
        *command,
        "--model",
        target.model,
        "--served-model-name",
        served_model,
        "--host",
        host,
        "--port",
        str(port),
        "--seed",
        str(seed),
    ]
    if target.revision:
        argv += ["--revision", target.revision]
    argv += list(extra_args)
    if speculative is not None:
        argv += ["--speculative-config", json.dumps(speculative.to_json(), sort_keys=True)]
    return argv


def port_in_use(host: str, port: int) -> bool:
    """True when something already listens on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0
