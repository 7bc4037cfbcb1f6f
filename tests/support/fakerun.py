"""A run folder and the compare flow's cell loop against the scripted SSE server (real loopback sockets):
the flow's own status and card writing, with the server launch replaced by an attach to the scripted
server (which has no /metrics, so cells carry no server counters)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level, Pair, Sampling
from loadgen.profile.pairfile import load_pair
from loadgen.profile.workload import Prompt
from loadgen.records.request import RequestRecord
from loadgen.run import bench, execute, flow
from loadgen.run.arms import Arm, build_arms
from loadgen.run.cell import RunContext
from loadgen.run.observe import ObserveOptions, Observers
from loadgen.run.plan import probe_host, protocol
from loadgen.serve import servers
from loadgen.store.rundir import JsonlAppender, read_jsonl
from loadgen.stream.client import build_payload, monotonic_clock, stream_request
from loadgen.stream.transport import StreamConnection
from tests.support.scripted_server import DONE, Script, completion_chunk, scripted_server, usage_chunk


@contextlib.contextmanager
def quiet_run(folder: Path, pair: Pair) -> Iterator[RunContext]:
    """A run context writing into ``folder`` (``metrics/`` and ``servers/`` made), with no log and no
    sinks; its appenders and observers are closed on exit."""
    for sub in ("metrics", "servers"):
        (folder / sub).mkdir()
    run = RunContext(
        pair,
        folder,
        JsonlAppender(folder / "requests.jsonl"),
        JsonlAppender(folder / "cells.jsonl"),
        lambda _: None,
        Observers(pair.name, ObserveOptions(progress=False), lambda _: None),
    )
    try:
        yield run
    finally:
        run.observers.close()
        run.requests.close()
        run.cells_log.close()


def attached(url: str, role: str, folder: Path) -> servers.Server:
    """The scripted server at ``url`` attached in ``role``, serving model ``m``."""
    return servers.attach(servers.LaunchSpec(role, [], {}, "127.0.0.1", 0, "m", 5.0, folder / "log", attach_url=url))


def fetch_one(scripts: dict[str, Script], prompt: str, output_tokens: int) -> RequestRecord:
    """One completions request for ``prompt`` (a key of ``scripts``) through the real client and transport."""

    async def go() -> RequestRecord:
        with scripted_server(scripts) as url:
            p = Prompt("p0", "w", "completions", prompt, None, output_tokens)
            rec = RequestRecord("p0", "plain", "w", 1, "measured", 0.0, requested_output_tokens=output_tokens)
            conn = StreamConnection(url, monotonic_clock(0.0), connect_timeout_s=5.0, read_timeout_s=5.0)
            try:
                return await stream_request(conn, build_payload(p, Sampling(), "m"), rec)
            finally:
                conn.close()

    return asyncio.run(go())


def stream(step_s: float) -> tuple[int, list[tuple[float, bytes | None]]]:
    """Two tokens over ``2 * step_s`` seconds, with usage."""
    return 200, [
        (step_s, completion_chunk(" a", [1])),
        (step_s, completion_chunk(" b", [2], finish="length")),
        (0.0, usage_chunk(2, 2)),
        (0.0, DONE),
    ]


def cell(concurrency: int, measured: int, prefix: str) -> CellSpec:
    """A closed-loop cell of the demo pair's first workload, ``measured`` prompts of 2 output tokens."""
    prompts = tuple(
        Prompt(f"{prefix}{i}", "short-homogeneous", "completions", f"{prefix}{i}", None, 2) for i in range(measured + 1)
    )
    return CellSpec("short-homogeneous", "completions", Level(concurrency), 0, prompts[:1], prompts[1:], (), None)


def run_folder(root: Path, cells: list[CellSpec]) -> tuple[Pair, Path]:
    """A run folder of the demo pair holding only ``cells`` (protocol.json, prompts.jsonl)."""
    pair = load_pair("demo-cpu")
    run_dir = root / "run"
    for sub in ("servers", "metrics"):
        (run_dir / sub).mkdir(parents=True)
    prompts = [p for c in cells for p in (*c.warmup, *c.measured, *c.cooldown)]
    (run_dir / "prompts.jsonl").write_text("".join(json.dumps(p.to_json()) + "\n" for p in prompts))
    proto = protocol(pair, cells, prompts, probe_host()).to_json()
    (run_dir / "protocol.json").write_text(json.dumps(proto, default=str))
    shutil.copyfile(pair.path, run_dir / "pair.toml")
    return pair, run_dir


def attach_roles(monkeypatch: pytest.MonkeyPatch, url: str | Callable[[Arm], str]) -> None:
    """Make the flow measure every arm on the scripted server at ``url`` (or ``url(arm)``: one per arm),
    attached as it is: no readiness check, no start-up proof and no preflight (the scripted server answers
    completions only)."""
    url_of = url if callable(url) else (lambda _arm: url)

    def open_bare(self: bench.Bench, arm: Arm) -> servers.Server:
        return servers.attach(
            servers.LaunchSpec(
                arm.server,
                [],
                {},
                "127.0.0.1",
                0,
                "m",
                5.0,
                self.run_dir / "servers" / f"{arm.server}.log",
                attach_url=url_of(arm),
            )
        )

    monkeypatch.setattr(bench.Bench, "open", open_bare)
    monkeypatch.setattr(bench.Bench, "open_together", lambda self, arms: [open_bare(self, a) for a in arms] and None)


def attach_arms(monkeypatch: pytest.MonkeyPatch, url_of: Callable[[Arm], str]) -> None:
    """:func:`attach_roles` with one scripted server per arm (``url_of(arm)``), and no port held for a launch."""
    attach_roles(monkeypatch, url_of)
    monkeypatch.setattr(execute.Session, "hold_ports", lambda self, slots: None)
    monkeypatch.setattr(execute.Session, "hold_ports", lambda self, slots: None)


def execute_roles(
    pair: Pair, run_dir: Path, todo: dict[str, list[CellSpec]], log: Callable[[str], None] = lambda _: None
) -> None:
    """Run ``todo`` (role -> cells, in that order) into ``run_dir`` through the flow's executor, with the
    arms the roles name and no placebo."""
    from loadgen.run.design import Slot

    arm_list = [a for a in build_arms(pair, {"speculative": pair}, {}) if a.name in todo]
    m = flow.Measurement(
        arm_list,
        False,
        "test",
        [c for cs in todo.values() for c in cs],
        [Slot(role, c) for role, cs in todo.items() for c in cs],
    )
    flow.execute_run(run_dir, m, log, None, None, pair.name)


def measured_on_disk(run_dir: Path, level: str | None = None) -> int:
    """Measured request records in requests.jsonl (of ``level`` when given)."""
    return sum(
        1
        for r in read_jsonl(run_dir / "requests.jsonl")
        if r["phase"] == "measured" and (level is None or r["level"] == level)
    )


def when_measured(run_dir: Path, level: str, n: int, action: Callable[[], None], timeout_s: float = 20.0) -> None:
    """Poll requests.jsonl (from a thread) and call ``action`` once ``n`` measured records of ``level``
    are on disk."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, json.JSONDecodeError, KeyError):
            if measured_on_disk(run_dir, level) >= n:
                action()
                return
        time.sleep(0.005)


@contextlib.contextmanager
def small_tmpfs(root: Path, size_kib: int, name: str | None = None) -> Iterator[Path]:
    """A tmpfs of ``size_kib`` KiB mounted under ``root`` as ``name`` (default: a name of its own; needs root and
    mount(8); skips without them)."""
    mnt = root / (name or f"tmpfs-{uuid.uuid4().hex[:8]}")
    mnt.mkdir()
    if (
        shutil.which("mount") is None
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(mnt)], capture_output=True
        ).returncode
    ):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def remount(mnt: Path, mode: str) -> None:
    """Remount the tmpfs at ``mnt`` read-only (``ro``) or read-write (``rw``)."""
    subprocess.run(["mount", "-o", f"remount,{mode}", str(mnt)], check=True, capture_output=True)


def request_line(role: str, level: str, i: int, block: int = 0) -> dict[str, Any]:
    """A measured requests.jsonl line (records/request.py ``RequestRecord``) of one short-homogeneous token: the
    ``i``-th request of ``role`` in block ``block`` of closed-loop level ``level`` ("c<N>")."""
    return {
        "prompt_id": f"{level}-{block}-{i}",
        "role": role,
        "workload": "short-homogeneous",
        "concurrency": int(level[1:]),
        "level": level,
        "phase": "measured",
        "scheduled_s": 0.0,
        "repetition": block,
        "chunk_arrivals_s": [0.1],
        "chunk_tokens": [1],
    }


def cell_line(role: str, level: str, block: int = 0, failure: str | None = None) -> dict[str, Any]:
    """The fields of a cells.jsonl line (records/cell.py ``CellEntry``) that --resume reads: which slot, and
    whether it failed."""
    return {
        "role": role,
        "workload": "short-homogeneous",
        "concurrency": int(level[1:]),
        "level": level,
        "repetition": block,
        "failure": failure,
    }
