"""Attaching to running servers, with the same proofs: a plain server in the speculative role is an
unplanned fallback (exit 1), found before either server is measured, and an attached server is left running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from loadgen.profile.pairfile import load_pair
from loadgen.run.arms import launch_spec
from loadgen.serve import servers
from tests.e2e.conftest import ROOT, _require_engine


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Server]:
    """The selfdraft pair's plain server on its own port (8360), started by the test, not by loadgen."""
    _require_engine()
    tmp = tmp_path_factory.mktemp("plain")
    pair_file = tmp / "plain-8360.toml"
    pair_file.write_text(Path("tests/data/pairs/selfdraft.toml").read_text().replace("port = 8330", "port = 8360"))
    spec = launch_spec(load_pair(str(pair_file)), "plain", tmp)
    assert "--port 8360" in " ".join(spec.argv)
    with servers.running(spec) as server:
        yield server


def test_plain_server_in_the_speculative_role_is_a_fallback(plain_server: servers.Server, tmp_path: Path) -> None:
    url = plain_server.base_url
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadgen",
            "compare",
            "tests/data/pairs/selfdraft.toml",
            "--runs-dir",
            str(tmp_path),
            "--attach-plain",
            url,
            "--attach-speculative",
            url,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 1 and "Traceback" not in proc.stderr
    assert "speculative server exposes no vllm:spec_decode_* metrics" in errors[0]
    run_dir = next((tmp_path / "selfdraft").iterdir())
    # both attached servers were checked before either was measured: the speculative proof failed first
    assert f"[plain] checked {url}" in proc.stdout and "[plain] attaching" not in proc.stdout
    cells_log = run_dir / "cells.jsonl"
    assert not cells_log.exists() or not cells_log.read_text().strip()
    protocol = json.loads((run_dir / "protocol.json").read_text())
    assert protocol["attach"]["speculative"] == {"url": url, "complete": True}
    # refused before its first request: the plan kept, refused.json instead of a status and a card
    refusal = json.loads((run_dir / "refused.json").read_text())
    assert refusal["exit_code"] == 1 and "exposes no vllm:spec_decode_* metrics" in refusal["reason"]
    assert not (run_dir / "card.md").exists() and not (run_dir / "status.json").exists()
    # attached servers are not ours to stop
    assert plain_server.alive()
    assert plain_server.fetch("/health").status_code == 200


def _first_record_of(requests: Path, role: str, deadline_s: float) -> bool:
    """Poll the run folder's requests.jsonl (appended as each request ends) for ``role``'s first record."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if requests.exists() and f'"role": "{role}"' in requests.read_text():
            return True
        time.sleep(0.02)
    return False


def test_speculative_server_killed_mid_cell(plain_server: servers.Server, tmp_path: Path) -> None:
    """The speculative server dies in the middle of a cell: exit 1, the plain results and the partial
    speculative cell are on disk, and the card says what happened.

    The kill is tied to the run, not to a delay: the server's pid (its process group, loadgen starts it in
    its own session) is taken when it is ready, and it is killed as soon as the first speculative request
    (the first cell's warmup) is on disk, while that cell's measured requests (about 2 s each) are running.
    """
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "loadgen",
            "compare",
            "tests/data/pairs/selfdraft.toml",
            "--runs-dir",
            str(tmp_path),
            "--attach-plain",
            plain_server.base_url,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    lines: list[str] = []
    run_dir: Path | None = None
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("run folder: "):
            run_dir = Path(line.removeprefix("run folder: ").strip())
        if line.startswith("[speculative] ready"):
            assert run_dir is not None, "".join(lines)
            children = psutil.Process(proc.pid).children()
            assert len(children) == 1, children  # the speculative server, the only child loadgen started
            assert _first_record_of(run_dir / "requests.jsonl", "speculative", 120), "no speculative request ended"
            os.killpg(children[0].pid, signal.SIGKILL)
            break
    rest, _ = proc.communicate(timeout=300)
    output = "".join(lines) + rest
    assert proc.returncode == 1, output[-2000:]
    assert "the speculative server died during cell short-homogeneous c1" in output
    assert run_dir is not None
    cells = [json.loads(line) for line in (run_dir / "cells.jsonl").read_text().splitlines()]
    # the first cell's first block, arms in the balanced order: plain, the placebo (blocks on the attached
    # plain server), then the speculative one, which died
    assert [c["role"] for c in cells] == ["plain", "placebo", "speculative"]
    dead = cells[-1]
    assert dead["failure"].startswith("the speculative server died during this cell")
    card = json.loads((run_dir / "card.json").read_text())
    assert card["complete"] is False and "died" in card["failure"]
    first = card["cells"][0]
    assert first["complete"] is False and "died" in first["speculative"]["failure"]
    assert first["plain"]["requests"] == 3 and all("plain" not in c for c in card["cells"][1:])
    card_md = (run_dir / "card.md").read_text()
    assert "INCOMPLETE" in card_md and "speculative cell FAILED" in card_md
    assert plain_server.alive()
