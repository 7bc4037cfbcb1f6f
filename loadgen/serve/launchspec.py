"""What starting one server takes (pure): :class:`LaunchSpec`, built by serve/servers.py from a pair's engine and
server tables (or an attach URL) and read by serve/attached.py's checks of an attached server."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["LaunchSpec"]


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

    @property
    def headers(self) -> dict[str, str]:
        """``Authorization: Bearer`` when an API key is set (never written anywhere)."""
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    @property
    def base_url(self) -> str:
        """The attach URL, else ``http://host:port``."""
        return (self.attach_url or f"http://{self.host}:{self.port}").rstrip("/")
