"""Topologies behind one URL, black box (``loadgen compare`` in a subprocess against scripted engines started
here, attached): a prefill/decode router whose ``/metrics`` shows the prefill instance's counters while the decode
instance streams the tokens (the user gives the decode instance's metrics URL, ``--metrics-speculative``: the run
reads the counters there, records the URL in protocol.json, and ``--resume`` reads it there again), and a Service
round-robining over two replicas (said at the start and on the card, naming what differed, never called a
restart; the acceptance refused; per-replica URLs asked for)."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.support.faultrun import engines, loadgen, run_dir, write_pair
from tests.support.promstack import free_port_block
from tests.support.proxy import disaggregated, proxy, round_robin

pytestmark = pytest.mark.slow

METRICS = {"SCRIPTED_ENGINE_METRICS": "1"}
#: An MTP head at K = 1: a method that always proposes, so counters that do not move are a fallback.
MTP = '[speculative]\nmethod = "mtp"\nnum_speculative_tokens = 1\n'


def _pair(tmp: Path, port: int) -> Path:
    tmp.mkdir()
    path = write_pair(tmp, port, "off")
    text = path.read_text()
    start, end = text.index("[speculative]"), text.index("[engine]")
    path.write_text(text[:start] + MTP + text[end:])
    return path


def _compare(tmp: Path, pair: Path, plain: str, spec: str, *more: str, sig: int | None = None) -> tuple[int, str]:
    args = ["compare", str(pair), "--allow-unpinned", "--no-progress", "--runs-dir", str(tmp / "runs")]
    ran = loadgen(tmp, [*args, "--attach-plain", plain, "--attach-speculative", spec, *more], sig, at_slot=1)
    assert "Traceback" not in ran.output, ran.output
    return ran.code, ran.output


def test_a_prefill_decode_router_is_measured_at_the_decode_instances_metrics(tmp_path: Path) -> None:
    port = free_port_block(5)
    ports = {"plain": port + 2, "speculative-decode": port + 3, "speculative-prefill": port + 4}
    with engines(tmp_path, ports, dict.fromkeys(ports, METRICS)) as urls:
        decode, prefill = urls["speculative-decode"], urls["speculative-prefill"]
        with proxy(disaggregated(decode, prefill)) as router:
            pair = _pair(tmp_path / "a", port)
            code, out = _compare(tmp_path / "a", pair, urls["plain"], router)
            # the router's /metrics is the prefill instance's: its draft counters never move
            assert code == 1 and "the speculative server's draft counters did not move" in out, out

            pair = _pair(tmp_path / "b", port)
            more = ("--metrics-speculative", decode + "/metrics")
            code, out = _compare(tmp_path / "b", pair, urls["plain"], router, *more, sig=signal.SIGINT)
            assert code != 0, out  # interrupted in its second slot
            run = run_dir(tmp_path / "b")
            recorded = json.loads((run / "protocol.json").read_text())["metrics_urls"]
            assert recorded == {"speculative": {"url": decode + "/metrics", "complete": True}}
            ran = loadgen(tmp_path / "b", ["compare", "--resume", str(run), "--no-progress"])
    assert ran.code == 0, ran.output
    assert f"[speculative] attaching to {router} (/metrics read at {decode})" in ran.output
    card = json.loads((run / "card.json").read_text())
    assert card["complete"] is True
    (cell,) = card["cells"]
    assert cell["speculative"]["acceptance"]["acceptance_rate"] == 1.0  # the decode instance's perfect draft
    assert cell["speculative"]["acceptance_unmeasurable"] is None
    assert f"- /metrics read at {decode} (apart from the API URL)" in (run / "card.md").read_text()


def _replicas(tmp: Path, multiproc: bool) -> tuple[str, int, str, dict[str, Any]]:
    """A compare whose speculative URL is a Service round-robining over two replicas (fingerprints aaaa1111 and
    bbbb2222; ``multiproc``: their /metrics without process start times); the Service's URL, the exit code, the
    output and the card."""
    port = free_port_block(5)
    ports = {"plain": port + 2, "speculative-a": port + 3, "speculative-b": port + 4}
    mode = METRICS | ({"SCRIPTED_ENGINE_MULTIPROC": "1"} if multiproc else {})
    extra = {
        "plain": METRICS,
        "speculative-a": mode | {"SCRIPTED_ENGINE_FINGERPRINT": "vllm-0.32.0-aaaa1111"},
        "speculative-b": mode | {"SCRIPTED_ENGINE_FINGERPRINT": "vllm-0.32.0-bbbb2222"},
    }
    with engines(tmp, ports, extra) as urls, proxy(round_robin(*(urls[r] for r in ports if r != "plain"))) as service:
        code, out = _compare(tmp, _pair(tmp / "p", port), urls["plain"], service)
    return service, code, out, json.loads((run_dir(tmp) / "card.json").read_text())


REPLICAS = "more than one server answered at one URL (replicas, not a restart): "


def test_replicas_behind_one_url_are_named_and_their_acceptance_refused(tmp_path: Path) -> None:
    service, code, out, card = _replicas(tmp_path, multiproc=False)
    assert code == 0, out
    [start] = [line for line in out.splitlines() if line.startswith(f"[speculative] at {service}: ")]
    assert f"speculative: {REPLICAS}process_start_time_seconds alternated between " in start
    assert "measure one replica at its own URL (--attach-speculative URL, with --metrics-speculative URL" in start
    assert card["complete"] is True
    (cell,) = card["cells"]
    assert cell["speculative"]["acceptance"] is None
    assert cell["speculative"]["acceptance_unmeasurable"].startswith(REPLICAS + "process_start_time_seconds ")
    assert cell["plain"]["acceptance_unmeasurable"] is None
    text = (run_dir(tmp_path) / "card.md").read_text()
    assert "restart" not in text.replace("not a restart", "")  # never called a restart
    assert "measure one replica at its own URL (--attach-speculative URL, with --metrics-speculative URL" in text


def test_replicas_without_process_start_times_are_told_by_their_answers(tmp_path: Path) -> None:
    """Replicas in Prometheus multiprocess mode (no process_start_time_seconds): their answers' system_fingerprint
    differs, and the card also says the process-start-time checks were unavailable."""
    _, code, out, card = _replicas(tmp_path, multiproc=True)
    assert code == 0, out
    (cell,) = card["cells"]
    why = cell["speculative"]["acceptance_unmeasurable"]
    assert why.startswith(REPLICAS) and "system_fingerprint differed between answers (vllm-0.32.0-" in why, why
    assert "aaaa1111" in why and "bbbb2222" in why
    text = (run_dir(tmp_path) / "card.md").read_text()
    assert "speculative: /metrics has no process_start_time_seconds (Prometheus multiprocess mode" in text


def test_multiprocess_metrics_say_which_checks_were_unavailable(tmp_path: Path) -> None:
    """Both servers' /metrics in Prometheus multiprocess mode (vLLM with --api-server-count above 1): the
    acceptance is measured, and each server's note names the checks that had no process start time to read."""
    port = free_port_block(4)
    ports = {"plain": port + 2, "speculative": port + 3}
    mode = METRICS | {"SCRIPTED_ENGINE_MULTIPROC": "1"}
    with engines(tmp_path, ports, dict.fromkeys(ports, mode)) as urls:
        code, out = _compare(tmp_path, _pair(tmp_path / "p", port), urls["plain"], urls["speculative"])
    assert code == 0, out
    (cell,) = json.loads((run_dir(tmp_path) / "card.json").read_text())["cells"]
    assert cell["speculative"]["acceptance"]["acceptance_rate"] == 1.0
    text = (run_dir(tmp_path) / "card.md").read_text()
    for role in ("plain", "speculative"):
        assert (
            f"{role}: /metrics has no process_start_time_seconds (Prometheus multiprocess mode, as with "
            "--api-server-count above 1): unavailable were the restart check and the replica check by process "
            "start time"
        ) in text
    assert "replicas, not a restart" not in text
