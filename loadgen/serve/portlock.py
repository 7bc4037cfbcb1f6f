"""Port holds: a launched server's port is checked before the first server of the run starts, and held
against other loadgen processes until that server answers on it (serve/servers.py binds nothing itself:
vLLM binds its port only once its engine has started, about 40 s after launch on the CPU build, and a
one-server-at-a-time run launches the speculative server only after the plain phase).

A hold is an exclusive ``flock`` on ``<dir>/port-<N>.lock`` (``<dir>``: ``$LOADGEN_PORT_DIR``, else
``loadgen-ports`` in the system temp dir, shared by every user of the machine), the holder's pid written in
it. The kernel drops the lock when the holder closes it or dies, so a crashed run leaves no stale hold. The
file descriptor is not inherited by the launched servers (Python opens it non-inheritable and ``Popen``
closes the others), so the hold ends with loadgen's release, not with the server.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from loadgen.errors import ServerError
from loadgen.serve.servers import port_in_use

ENV_DIR = "LOADGEN_PORT_DIR"


def hold_dir() -> Path:
    """The folder of the hold files (module docstring), created world-writable (sticky) when missing."""
    path = Path(os.environ.get(ENV_DIR) or Path(tempfile.gettempdir()) / "loadgen-ports")
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            path.chmod(0o1777)
    return path


@dataclass
class PortHold:
    """A held port: ``fd`` the locked hold file (-1 once released)."""

    host: str
    port: int
    fd: int

    def release(self) -> None:
        """Drop the hold (idempotent)."""
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = -1


def _holder(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError):
        return str(int(os.pread(fd, 32, 0).split()[0]))
    return "?"


def hold(host: str, port: int, role: str) -> PortHold:
    """Hold ``port`` for the ``role`` server this process will launch on ``host``. Raises ServerError (one
    line) when another loadgen process holds it (naming its pid) or something already listens there."""
    path = hold_dir() / f"port-{port}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise ServerError(
            f"cannot hold port {port}: {path}: {exc.strerror}; set ${ENV_DIR} to a folder loadgen can write"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pid = _holder(fd)
        os.close(fd)
        raise ServerError(
            f"port {port} (the {role} server's) is held by loadgen process {pid}, whose server is "
            "starting there; wait for that run, or set [engine].port (or "
            f"[servers.{role}].port) to a free port"
        ) from None
    with contextlib.suppress(OSError):
        os.fchmod(fd, 0o666)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    held = PortHold(host, port, fd)
    if port_in_use(host, port):
        held.release()
        raise ServerError(
            f"port {port} on {host} (the {role} server's) is already in use; stop what listens there "
            f"or set [engine].port (or [servers.{role}].port) to a free port"
        )
    return held


@dataclass
class PortHolds:
    """The holds of a run's launched servers, by server key; a port shared by servers started one after
    the other is held once, until the last of them answers."""

    by_port: dict[int, PortHold] = field(default_factory=dict)
    waiting: dict[int, set[str]] = field(default_factory=dict)

    def take(self, servers: Iterable[tuple[str, str, int]]) -> None:
        """Hold every (server key, host, port); on a refusal release what was taken and raise its ServerError."""
        try:
            for key, host, port in servers:
                if port not in self.by_port:
                    self.by_port[port] = hold(host, port, key)
                self.waiting.setdefault(port, set()).add(key)
        except ServerError:
            self.release_all()
            raise

    def answered(self, key: str) -> None:
        """Server ``key`` answers on its port: release it once no other server of the run waits for it."""
        for port, keys in list(self.waiting.items()):
            keys.discard(key)
            if not keys:
                self.by_port.pop(port).release()
                del self.waiting[port]

    def release_all(self) -> None:
        """Release every hold (the run is over or failed)."""
        for held in self.by_port.values():
            held.release()
        self.by_port.clear()
        self.waiting.clear()
