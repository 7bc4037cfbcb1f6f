"""``loadgen compare`` as a user runs it (the command line in a subprocess, real sockets), on the scripted engine
(tests/support/scripted_engine.py), either launched by loadgen or started here and attached; interrupted
mid-run by a signal once a given slot is under way, then ``--resume``\\ d; and the counts of its card, to set
beside an uninterrupted run's."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.scripted_engine import REPO, write_small_pair

#: Requests per slot of :func:`write_pair`'s pairs: 1 warmup and 2 measured, each written to requests.jsonl.
PER_SLOT = 3
SPEC = '{"method": "ngram", "prompt_lookup_min": 2, "prompt_lookup_max": 4, "num_speculative_tokens": 1}'


def env(tmp: Path) -> dict[str, str]:
    """The environment of every process here: the repository importable, a reported engine version the pair
    check knows (an attached server's ``/version``), port holds (serve/portlock.py) and a cache folder
    (util/crashlog.py) of this test's own."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "SCRIPTED_ENGINE_VERSION": "0.32.0",
        "LOADGEN_PORT_DIR": str(tmp / "holds"),
        "XDG_CACHE_HOME": str(tmp / "cache"),
    }


def write_pair(tmp: Path, port: int, placebo: str, placebo_url: str | None = None) -> Path:
    """A pair of the scripted engine at ``port`` (speculative ``port + 1``, a placebo server ``port + 2``): one
    workload at concurrency 1, 2 blocks, 2 measured requests a slot; ``placebo``: ``[design].placebo``;
    ``placebo_url``: ``[servers.placebo].url`` (an attached placebo server of its own)."""
    tail = f'[design]\nblocks = 2\nplacebo = "{placebo}"\n'
    if placebo_url:
        tail += f'[servers.placebo]\nurl = "{placebo_url}"\n'
    path = write_small_pair(tmp, "faults", port, tail)
    path.write_text(path.read_text().replace('workloads = ["w"]', f'workloads = ["{tmp / "workloads" / "w.toml"}"]'))
    return path


@contextlib.contextmanager
def engines(
    tmp: Path, ports: dict[str, int], extra: dict[str, dict[str, str]] | None = None
) -> Iterator[dict[str, str]]:
    """Scripted engines started here (not by loadgen), one per role of ``ports`` (a role whose name starts with
    ``speculative`` runs K = 1; ``extra``: more environment per role, e.g. its ``SCRIPTED_ENGINE_FAULT``); yields
    their URLs by role, and stops them on exit."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for role, port in ports.items():
            argv = [sys.executable, "-m", "tests.support.scripted_engine", "--model", "org/target"]
            argv += ["--served-model-name", "target", "--port", str(port)]
            argv += ["--speculative-config", SPEC] if role.startswith("speculative") else []
            role_env = env(tmp) | (extra or {}).get(role, {})
            with (tmp / f"engine-{role}.log").open("wb") as log:  # the engine writes to its own copy of the file
                procs.append(subprocess.Popen(argv, env=role_env, stdout=log, stderr=subprocess.STDOUT))
        for port in ports.values():
            wait_listening(port)
        yield {role: f"http://127.0.0.1:{port}" for role, port in ports.items()}
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)


def wait_listening(port: int, timeout_s: float = 20.0) -> None:
    """Until something answers on ``port`` of loopback (the engine is up)."""
    import socket

    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on port {port}")


@dataclass(frozen=True)
class Ran:
    """One ``loadgen`` command's exit code and what it printed (stdout and stderr together)."""

    code: int
    output: str


def loadgen(
    tmp: Path,
    args: list[str],
    sig: int | Callable[[], None] | None = None,
    at_slot: int = 0,
    timeout_s: float = 120.0,
    inject: str | None = None,
) -> Ran:
    """Run ``loadgen ARGS`` from ``tmp``; with ``sig`` (a signal to send, or a function to call: :func:`fill`
    fills the disk), send or call it once the slot numbered ``at_slot`` (0-based, in the run's order) has written a
    request record: the run is cut inside that slot, or right after it. With ``inject`` (``MODULE:NAME[@N]``,
    tests/support/inject.py) that function raises an unexpected exception."""
    argv = [sys.executable, "-m", *(["tests.support.inject", inject] if inject else ["loadgen"]), *args]
    proc = subprocess.Popen(
        argv,
        cwd=tmp,
        env=env(tmp),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        # Ctrl-C as in a terminal, even when the tests run as a shell's background job (SIGINT ignored there,
        # and an ignored signal stays ignored in a child)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    if sig is not None:
        end = time.monotonic() + timeout_s
        while proc.poll() is None and time.monotonic() < end:
            if _records(tmp) > PER_SLOT * at_slot:
                proc.send_signal(sig) if isinstance(sig, int) else sig()
                break
            time.sleep(0.005)
    out, _ = proc.communicate(timeout=timeout_s)
    return Ran(proc.returncode, out.decode(errors="replace"))


def fill(folder: Path) -> Path:
    """Fill the file system of ``folder`` (a small tmpfs) to the last byte with ``folder/filler``, whose removal
    makes room again; its path."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    return filler


def _records(tmp: Path) -> int:
    found = list((tmp / "runs").glob("*/*/requests.jsonl"))
    return sum(p.read_bytes().count(b"\n") for p in found)


def run_dir(tmp: Path) -> Path:
    """The one run folder under ``tmp/runs``."""
    (found,) = [p.parent for p in (tmp / "runs").glob("*/*/protocol.json")]
    return found


def counts(run: Path) -> dict[str, Any]:
    """What the card of ``run`` counts, timing aside: complete, the measured requests on disk, and per cell each
    server's requests, errors, output tokens and repetitions, and the blocks and pairs of every ratio and of
    the A/A noise floor but the per-token ones (TPOT, ITL, inter-chunk latency: a block whose chunks the
    client read in one burst on a busy machine has none, so their count follows timing, not what was kept);
    with the arms as protocol.json records them."""
    card = json.loads((run / "card.json").read_text())
    cells = []
    for c in card["cells"]:
        roles = {r: [c[r][k] for k in ("requests", "errors", "output_tokens", "repetitions")] for r in _roles(c)}
        ratios = {m: [r["blocks"], r["pairs"]] for m, r in sorted((c.get("ratios") or {}).items()) if _counted(m, r)}
        floor = {
            m: [r["blocks"], r["pairs"]]
            for m, r in sorted(((c.get("noise_floor") or {}).get("ratios") or {}).items())
            if _counted(m, r)
        }
        cells.append({"cell": [c["workload"], c["level"]], "roles": roles, "ratios": ratios, "noise_floor": floor})
    design = json.loads((run / "protocol.json").read_text())["design"]
    return {
        "complete": card["complete"],
        "measured": card["requests_on_disk"]["measured"],
        "cells": cells,
        "arms": [[a["arm"], a["server"], a["attached"]] for a in design["arms"]],
    }


def _counted(metric: str, ratio: dict[str, Any] | None) -> bool:
    return bool(ratio) and not metric.startswith(("tpot_", "itl_", "icl_"))


def _roles(cell: dict[str, Any]) -> list[str]:
    return [r for r in ("plain", "speculative") if isinstance(cell.get(r), dict)]


SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGKILL": signal.SIGKILL}
