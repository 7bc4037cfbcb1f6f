"""One cell on one server: scrape ``/metrics``, replay the cell's prompts, scrape again, append the
cell's entry to ``cells.jsonl``, then write the optional files (``/metrics`` snapshots, gauges).

Nothing measured is lost: every request is appended to ``requests.jsonl`` as it finishes, and a cell that
ends badly still gets its entry (with ``failure``) before the run stops. ``/metrics`` that times out,
answers an error or garbage marks the cell (``metrics_error``) and the run goes on without its server
counters. Fallback rule (docs/metrics.md, "Acceptance"): a speculative cell whose draft counters did not move stops
the run, except for draft-free lookup methods that may legitimately find nothing to propose.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from loadgen.errors import FallbackDetected, RunFailed
from loadgen.measure.counterchecks import WindowTally, restart_evidence, server_counters
from loadgen.measure.faults import categories, over_budget
from loadgen.measure.metrics import ClientUse, MeasuredRequest, cell_stats
from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Pair
from loadgen.prom import deltas
from loadgen.prom import exposition as prom
from loadgen.prom.scrape import sample_gauges, scrape, server_histograms, summarize_gauges
from loadgen.report.rundir import JsonlAppender, write_text
from loadgen.run.observe import Observers
from loadgen.serve import servers
from loadgen.serve.attached import where_to_look
from loadgen.stream.client import RequestRecord
from loadgen.stream.runner import run_cell
from loadgen.stream.timeouts import read_timeout_s
from loadgen.util import strictjson

#: Draft-free methods that propose only where the text repeats itself: no draft in a cell is possible.
LOOKUP_METHODS = frozenset({"ngram", "ngram_gpu", "suffix"})


@dataclass
class RunContext:
    """What every step of one run writes to."""

    pair: Pair
    run_dir: Path
    requests: JsonlAppender
    cells_log: JsonlAppender
    log: Callable[[str], None]
    observers: Observers
    api_key: str | None = None


def _try_scrape(url: str, path: Path, headers: dict[str, str],
                later: list[tuple[Path, str]]) -> tuple[prom.Snapshot | None, str | None]:
    try:
        text, snap = scrape(url, headers=headers)
    except RunFailed as exc:
        return None, str(exc)
    later.append((path, text))  # written after the cell's entry (optional files come second)
    return snap, None


def _length_mismatches(records: list[RequestRecord]) -> list[RequestRecord]:
    return [r for r in records if r.error is None and r.output_tokens != r.requested_output_tokens]


def _failure(records: list[RequestRecord], pair: Pair, died: bool, role: str) -> str | None:
    errors = [r for r in records if r.error]
    if died:
        return (f"the {role} server died during this cell: {len(records) - len(errors)} of {len(records)} "
                "measured requests finished before")
    mismatched = _length_mismatches(records)
    if mismatched:
        m = mismatched[0]
        return (f"{len(mismatched)} of {len(records)} requests did not return their requested output length (e.g. "
                f"{m.prompt_id}: {m.output_tokens} of {m.requested_output_tokens} tokens); the comparison needs "
                "ignore_eos with min_tokens = max_tokens on a server that honours them")
    if over_budget(len(errors), len(records), pair.stop.max_error_rate):
        kinds = ", ".join(f"{k}: {n}" for k, n in categories(r.error for r in errors).items())
        return (f"{len(errors)} of {len(records)} requests failed ({kinds}), over the error budget "
                f"max_error_rate = {pair.stop.max_error_rate:g}; first: {errors[0].error}")
    return None


def run_cell_on(run: RunContext, role: str, server: servers.Server, cell: CellSpec) -> None:
    """Run ``cell`` on ``server`` and append its entry. Raises RunFailed when the server died or the
    cell broke its error budget with ``on_error_budget = "stop"``, FallbackDetected when the draft
    counters did not move."""
    pair, run_dir, observers = run.pair, run.run_dir, run.observers
    stem = cell.stem(role)
    before: dict[str, prom.Snapshot | None] = {}
    metrics_errors: list[str] = []
    gauges: list[dict[str, Any]] = []
    later: list[tuple[Path, str]] = []

    def scrape_before() -> None:
        before["snap"], err = _try_scrape(server.base_url, run_dir / "metrics" / f"{stem}__before.prom",
                                          server.spec.headers, later)
        metrics_errors.extend([err] if err else [])
        observers.measured_window_start(httpx.URL(server.base_url).netloc.decode())
        observers.cell_started(f"[{role}] {cell.workload} {cell.level.label}", len(cell.measured))

    async def sampler(client: httpx.AsyncClient, clock: Callable[[], float]) -> None:
        await sample_gauges(client, server.base_url, gauges.append, clock)

    sent: Counter[str] = Counter()
    window = WindowTally()

    def on_record(record: RequestRecord) -> None:
        run.requests.append(record.to_json())
        sent[record.phase] += 1
        window.add(record)
        observers.request_finished(record)

    plan = cell.on(role, pair.stop.duration_s, read_timeout_s(pair.stop, pair.slo))
    started, t0, cpu0 = datetime.now(UTC).isoformat(), time.monotonic(), time.process_time()
    records = run_cell(server.base_url, server.spec.served_model, pair.sampling, plan, on_record,
                       scrape_before, sampler, server.spec.api_key)
    duration = time.monotonic() - t0
    client = ClientUse.of(time.process_time() - cpu0, duration, [r.send_s - r.scheduled_s for r in records])
    died = not server.alive() or (any(r.error for r in records) and server.gone())
    after, err = ((None, None) if died else
                  _try_scrape(server.base_url, run_dir / "metrics" / f"{stem}__after.prom", server.spec.headers, later))
    metrics_errors.extend([err] if err else [])
    b = before.get("snap")
    counters = deltas.spec_decode_delta(b, after) if b is not None and after is not None else None
    finished = deltas.counter_delta(b, after, "vllm:request_success_total").value if b and after else None
    errors = [r.error for r in records if r.error]
    failure = _failure(records, pair, died, role)
    entry: dict[str, Any] = {
        "role": role, "workload": cell.workload, "concurrency": cell.concurrency, "level": cell.level.label,
        "rate_rps": cell.level.rate_rps, "repetition": cell.repetition, "started_utc": started, "duration_s": duration,
        "measured_prompt_ids": [p.prompt_id for p in cell.measured],
        "warmup_prompt_ids": [p.prompt_id for p in cell.warmup],
        "spec_decode": None if counters is None else asdict(counters) | {
            "accepted_per_position": list(counters.accepted_per_position)},
        "server_histograms": server_histograms(b, after) if b is not None and after is not None else {},
        "gauges": summarize_gauges(gauges), "server_finished_requests": finished,
        "client_sent_requests": sent["measured"] + sent["cooldown"],
        "foreign_traffic": finished is not None and finished > sent["measured"] + sent["cooldown"],
        **window.to_json(), **(server_counters(b, after) if b is not None and after is not None else {}),
        "errors": len(errors), "error_categories": categories(errors),
        "usage_mismatches": sum(1 for r in records if r.usage_mismatch),
        "output_length_mismatches": len(_length_mismatches(records)),
        "metrics_error": "; ".join(dict.fromkeys(metrics_errors)) or None, "failure": failure, "notes": [],
        "client": {"cpu_s": client.cpu_s, "cpu_cores": client.cores, "send_lag_s": asdict(client.send_lag)},
    }
    entry["restart_evidence"] = restart_evidence(entry)
    if (busy := client.saturation_note()) is not None:
        entry["notes"].append(busy)
    ok = len(records) - len(errors)
    flat = role == "speculative" and counters is not None and counters.num_drafts == 0 and ok > 0
    if flat and pair.method in LOOKUP_METHODS:
        entry["notes"].append(f"{pair.method} proposed no draft in this cell (no n-gram of the text repeated)")
    if entry["metrics_error"]:
        entry["notes"].append(f"server metrics unavailable for this cell ({role} server): {entry['metrics_error']}")
    measured = [MeasuredRequest(r.scheduled_s, r.send_s, r.chunk_arrivals_s, r.chunk_tokens, r.error is not None)
                for r in records]
    usable = None if entry["restart_evidence"] else counters  # a restart leaves no measurable acceptance
    entry |= observers.cell_finished(role, cell.workload, cell.concurrency, cell.level.label,
                                     cell_stats(measured, usable), usable)
    run.cells_log.append(entry)
    later.append((run_dir / "metrics" / f"{stem}__gauges.jsonl", "".join(strictjson.dumps(g) + "\n" for g in gauges)))
    for path, text in later:
        write_text(path, text)
    run.log(f"[{role}] {cell.workload} {cell.level.label} rep {cell.repetition}: {ok}/{len(records)} ok in "
            f"{duration:.1f} s" + ("" if counters is None else f", drafts {counters.num_drafts:.0f}, accepted "
                                  f"{counters.num_accepted_tokens:.0f}/{counters.num_draft_tokens:.0f}")
            + (f"; FAILED: {failure}" if failure else ""))
    if died:
        raise RunFailed(f"the {role} server died during cell {cell.workload} {cell.level.label}; the requests "
                        f"that finished are kept in {run.run_dir / 'requests.jsonl'}; see {where_to_look(server.spec)}")
    if failure and errors and pair.stop.on_error_budget == "stop" and not _length_mismatches(records):
        raise RunFailed(f"cell {cell.workload} {cell.level.label} on the {role} server: {failure}; set "
                        "[stop].max_error_rate / on_error_budget = \"continue\" to go on")
    if flat and pair.method not in LOOKUP_METHODS:
        raise FallbackDetected(f"the speculative server's draft counters did not move during cell "
                               f"{cell.workload} {cell.level.label}: no speculation happened")
