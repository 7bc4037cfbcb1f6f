"""What one fleet task does on its node: the ordinary ``loadgen compare PAIR`` (or ``loadgen sweep PAIR``)
run as a subprocess in the node's loadgen folder, and the run folder packed to ship back (card, protocol,
cells, requests, server records; no model weights, which never enter a run folder).

The pair file travels as text from the driver, so every node measures the same pair file; workloads,
prompt files and models are read on the node, relative to ``workdir`` (docs/fleet/README.md), and the run's
protocol.json records their hashes. Two tasks may share a node (one GPU each), so the task gives its
servers two free ports of its node: the pair file it runs (kept in the run folder as pair.toml) has
``[engine].port`` set to the first (the speculative server takes the next) and no per-role port.

This module runs inside a Ray worker but does not import Ray: the runner (fleet/taskrun.py) wraps
:func:`run_on_node` in a Ray task.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from loadgen.records.fleettasks import TaskResult
from loadgen.serve.servers import die_with_parent
from loadgen.util import tomlwrite

#: Exit codes of ``loadgen compare`` / ``loadgen sweep`` that mean the measurement finished (3: its
#: verdict failed the declared criteria, still a finished measurement).
FINISHED_EXITS = (0, 3)


@dataclass(frozen=True)
class TaskSpec:
    """What the driver sends: the task id, ``kind`` (``compare`` | ``sweep``), the pair file's name and
    text, and the folder loadgen runs in on the node."""

    task_id: str
    kind: str
    pair: str
    pair_text: str
    workdir: str


def free_port_pair(host: str = "127.0.0.1", tries: int = 50) -> tuple[int, int]:
    """Two consecutive TCP ports free on ``host`` now (p, p + 1). Raises OSError after ``tries`` draws."""
    for _ in range(tries):
        with socket.socket() as a:
            a.bind((host, 0))
            port = a.getsockname()[1]
            if port >= 65535:
                continue
            with socket.socket() as b:
                try:
                    b.bind((host, port + 1))
                except OSError:
                    continue
            return port, port + 1
    raise OSError(f"no two consecutive free ports on {host} after {tries} tries")


def with_ports(pair_text: str) -> tuple[str, tuple[int, int] | None]:
    """The pair file with ``[engine].port`` set to a free port of this node and per-role ports removed;
    unchanged (and None) when both servers are attached (``[servers.<role>].url``) or the text is not TOML."""
    try:
        doc = tomllib.loads(pair_text)
    except tomllib.TOMLDecodeError:
        return pair_text, None  # loadgen itself reports the syntax error on the node
    servers = doc.get("servers") or {}
    if all(isinstance(servers.get(r), dict) and servers[r].get("url") for r in ("plain", "speculative")):
        return pair_text, None
    engine = doc.setdefault("engine", {})
    ports = free_port_pair(str(engine.get("host") or "127.0.0.1"))
    engine["port"] = ports[0]
    for role in servers.values():
        if isinstance(role, dict):
            role.pop("port", None)
    return tomlwrite.to_toml(doc), ports


def _pack(folder: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(folder, arcname=".")
    return buf.getvalue()


def _run_folder(runs: Path) -> Path | None:
    """The one run (or sweep) folder the command made under ``runs/<pair>/``, None when it made none."""
    made = sorted(p for p in runs.glob("*/*") if p.is_dir())
    return made[-1] if made else None


def _stream(argv: list[str], workdir: str, prefix: str) -> tuple[int, str]:
    """Run ``argv`` in ``workdir``; every output line is printed with ``prefix`` as it comes (Ray shows a
    task's prints on the driver: the fleet's live progress) and collected. The command gets SIGTERM when
    the worker dies (serve/servers.py ``die_with_parent``)."""
    lines: list[str] = []
    try:
        proc = subprocess.Popen(
            argv,
            cwd=workdir,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=die_with_parent,
        )
    except OSError as exc:  # a workdir that does not exist on this node, say
        return 2, f"loadgen: error: cannot run loadgen in {workdir!r} on this node: {exc.strerror}\n"
    assert proc.stdout is not None
    with proc:
        for raw in proc.stdout:
            line = raw.decode(errors="replace")
            lines.append(line)
            print(f"{prefix} {line}", end="", flush=True)
    return proc.returncode, "".join(lines)


def _clear_leftovers(task_id: str) -> None:
    """Remove what an earlier run of the same task left on this node (a worker killed by a cancel or a
    lost driver never reaches its clean-up)."""
    for old in Path(tempfile.gettempdir()).glob(f"loadgen-fleet-{task_id}-*"):
        with contextlib.suppress(OSError):
            shutil.rmtree(old)


def run_on_node(spec: TaskSpec) -> TaskResult:
    """Run ``loadgen <kind> PAIR`` on this node and return its outcome with the packed run folder.

    Never raises for a failing measurement (its exit code and output say why)."""
    started, t0 = datetime.now(UTC), time.monotonic()
    _clear_leftovers(spec.task_id)
    tmp = Path(tempfile.mkdtemp(prefix=f"loadgen-fleet-{spec.task_id}-"))
    try:
        pair_text, ports = with_ports(spec.pair_text)
        pair_file = tmp / f"{spec.pair}.toml"
        pair_file.write_text(pair_text)
        argv = [sys.executable, "-m", "loadgen", spec.kind, str(pair_file), "--runs-dir", str(tmp / "runs")]
        argv.append("--no-progress")  # its output is a pipe; the fleet's own progress line is the driver's
        code, output = _stream(argv, spec.workdir, f"[{spec.task_id}]")
        folder = _run_folder(tmp / "runs")
        return TaskResult(
            code,
            output,
            _pack(folder) if folder else None,
            socket.gethostname(),
            ports,
            started.isoformat(timespec="seconds"),
            datetime.now(UTC).isoformat(timespec="seconds"),
            round(time.monotonic() - t0, 3),
            str(folder) if folder else None,
        )
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)


def reason_of(code: int, output: str) -> str | None:
    """The one line that says why a task failed: the command's ``loadgen: error:`` line, else its last
    non-empty line; None for a finished measurement (exit 0 or 3)."""
    if code in FINISHED_EXITS:
        return None
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("loadgen: error:")]
    line = errors[-1] if errors else (lines[-1] if lines else "no output")
    return f"exit {code}: {line}"
