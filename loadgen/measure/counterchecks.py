"""Checks that keep a cell's server-side counters from misleading (pure: cell entries and snapshots in,
numbers and one-line card notes out).

- A server restart inside a cell (between its two ``/metrics`` scrapes) makes every counter delta of that
  cell meaningless, even when the counters grew past their earlier values and no comparison of the two
  scrapes sees them go down. Signs: a counter went backwards (``prom.counter_delta``), the server's
  ``process_start_time_seconds`` changed (the process gauge of the Prometheus Python client's default
  registry, which vLLM's ``/metrics`` serves unless it runs several API servers in multiprocess mode), or
  the server finished fewer requests (Δ``vllm:request_success_total``, every ``finished_reason``) than
  loadgen completed between the scrapes (requests that failed on the client need not reach the server).
- vLLM's spec-decode counters obey invariants (``SpecDecodingStats.observe_draft``,
  ``vllm/v1/spec_decode/metrics.py``: n accepted tokens in a draft add 1 to positions 0..n-1): the
  per-position accepted counts sum to the accepted count and do not rise with position, and a method with
  a fixed K proposes K draft tokens per draft (``SpecDecodingProm`` docstring: draft tokens / drafts is
  the mean proposed length; lookup methods and grammar-invalidated drafts can make it smaller).
- Δ``vllm:generation_tokens_total`` counts every output token the server generated; between the scrapes
  that is what loadgen's measured and cooldown requests received (warmup requests finish before the first
  scrape).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loadgen.prom.deltas import SpecDecodeCounters, counter_delta
from loadgen.prom.exposition import Snapshot
from loadgen.prom.metricnames import OLDER_NAMES
from loadgen.stream.client import RequestRecord

PROCESS_START = "process_start_time_seconds"
GENERATION_TOKENS = "vllm:generation_tokens_total"
#: above this relative difference, the server's and the client's output token counts get a note
TOKEN_TOLERANCE = 0.01
#: above this fraction of the plain server's KV-cache tokens lost, the card notes it (declared limit or not)
KV_LOSS_NOTE = 0.10
#: methods that may propose fewer than K tokens per draft (lookup of the text: a match can be short)
ADAPTIVE_METHODS = frozenset({"ngram", "ngram_gpu", "suffix"})
_OLD = {old: new for new, olds in OLDER_NAMES.items() for old in olds}


@dataclass
class WindowTally:
    """What loadgen sent between a cell's two scrapes: measured and cooldown requests (warmup ones finish
    before the first scrape). Feed every record to :meth:`add`."""

    sent: int = 0
    failed: int = 0
    output_tokens: int = 0

    def add(self, record: RequestRecord) -> None:
        """Count ``record`` unless it is a warmup request."""
        if record.phase == "warmup":
            return
        self.sent += 1
        self.failed += record.error is not None
        self.output_tokens += record.output_tokens

    def to_json(self) -> dict[str, int]:
        """Fields for the cell entry: ``client_window_failed``, ``client_window_output_tokens`` (tokens)."""
        return {"client_window_failed": self.failed, "client_window_output_tokens": self.output_tokens}


def server_counters(before: Snapshot, after: Snapshot) -> dict[str, Any]:
    """Fields for the cell entry: ``server_generation_tokens`` (Δ``vllm:generation_tokens_total``, summed
    over ``engine``; None when absent) and ``process_start_time_s`` ([before, after] Unix seconds, None
    entries when the server does not expose ``process_start_time_seconds``)."""
    tokens = counter_delta(before, after, GENERATION_TOKENS)
    return {"server_generation_tokens": tokens.value if tokens.series else None,
            "process_start_time_s": [before.total(PROCESS_START), after.total(PROCESS_START)]}


def restart_evidence(entry: Mapping[str, Any]) -> list[str]:
    """The signs in a cell entry that the server restarted between the cell's scrapes (one phrase each,
    naming the numbers); [] when none. Fields of older entries that are missing are skipped."""
    out = []
    if (entry.get("spec_decode") or {}).get("reset"):
        out.append("spec-decode counters went backwards")
    start = entry.get("process_start_time_s") or [None, None]
    if None not in start and start[0] != start[1]:
        out.append(f"process_start_time_seconds changed {start[0]:.0f} → {start[1]:.0f}")
    finished, sent = entry.get("server_finished_requests"), entry.get("client_sent_requests")
    if finished is not None and sent is not None:
        completed = sent - (entry.get("client_window_failed", entry.get("errors")) or 0)  # older entries: errors
        if finished < completed:
            out.append(f"server finished {finished:.0f} requests, loadgen completed {completed}")
    return out


def _counters(entry: Mapping[str, Any]) -> SpecDecodeCounters | None:
    sd = entry.get("spec_decode")
    if not sd:
        return None
    return SpecDecodeCounters(sd["num_drafts"], sd["num_draft_tokens"], sd["num_accepted_tokens"],
                              tuple(sd["accepted_per_position"]), bool(sd.get("reset", False)))


def usable_counters(entries: Sequence[Mapping[str, Any]]) -> tuple[SpecDecodeCounters | None, str | None]:
    """Spec-decode counter deltas summed over a cell's repetitions, leaving out those with
    :func:`restart_evidence`. Returns (counters or None, why the acceptance is not measurable or None)."""
    kept = [(c, e) for e in entries if (c := _counters(e)) is not None]
    counters = [c for c, e in kept if not restart_evidence(e)]
    if not counters:
        why = next((restart_evidence(e) for _, e in kept), [])
        return None, ("server restarted inside the cell: " + "; ".join(why)) if why else None
    width = max(len(c.accepted_per_position) for c in counters)
    per_pos = tuple(sum(c.accepted_per_position[i] for c in counters if i < len(c.accepted_per_position))
                    for i in range(width))
    return SpecDecodeCounters(sum(c.num_drafts for c in counters), sum(c.num_draft_tokens for c in counters),
                              sum(c.num_accepted_tokens for c in counters), per_pos, False), None


def invariant_violations(c: SpecDecodeCounters, k: int | None, adaptive: bool = False) -> list[str]:
    """Violated spec-decode counter invariants of one cell's deltas, one phrase each naming the numbers.

    Checks: sum of ``accepted_per_position`` == ``num_accepted_tokens``; ``accepted_per_position`` does
    not rise with position (a draft accepted up to position i+1 is accepted up to i); ``num_draft_tokens``
    == K x ``num_drafts`` when ``k`` is given (fixed-K methods; with ``adaptive``, fewer is allowed).
    Counts are compared to within 0.5 (they are integers)."""
    out = []
    per_pos, accepted = c.accepted_per_position, c.num_accepted_tokens
    if per_pos and abs(sum(per_pos) - accepted) > 0.5:
        out.append(f"per-position accepted counts sum to {sum(per_pos):.0f}, not the accepted count {accepted:.0f}")
    rise = next((i for i in range(1, len(per_pos)) if per_pos[i] > per_pos[i - 1] + 0.5), None)
    if rise is not None:
        out.append(f"accepted at position {rise} ({per_pos[rise]:.0f}) exceeds position {rise - 1} "
                   f"({per_pos[rise - 1]:.0f})")
    if k and c.num_drafts > 0:
        expected = k * c.num_drafts
        off = c.num_draft_tokens - expected
        if off > 0.5 or (off < -0.5 and not adaptive):
            out.append(f"draft tokens {c.num_draft_tokens:.0f} ≠ K × drafts = {k} × {c.num_drafts:.0f} = "
                       f"{expected:.0f}")
    return out


def token_mismatch(entry: Mapping[str, Any]) -> str | None:
    """Δ``vllm:generation_tokens_total`` against the tokens loadgen received between the scrapes, as a
    phrase when they differ by more than :data:`TOKEN_TOLERANCE` of the client's count; None when within
    it, unknown, or the counters are already explained (foreign traffic, restart)."""
    server, client = entry.get("server_generation_tokens"), entry.get("client_window_output_tokens")
    if server is None or not client or entry.get("foreign_traffic") or restart_evidence(entry):
        return None
    if abs(server - client) <= TOKEN_TOLERANCE * client:
        return None
    return (f"server generated {server:.0f} tokens (Δvllm:generation_tokens_total), loadgen received "
            f"{client} ({100 * (server - client) / client:+.1f}%)")


def older_names(entry: Mapping[str, Any]) -> list[str]:
    """The older vLLM metric names a cell entry's gauges and server histograms were read under."""
    used = [g.get("metric") for g in (entry.get("gauges") or {}).values() if isinstance(g, Mapping)]
    used += [h.get("metric") for h in (entry.get("server_histograms") or {}).values()]
    return sorted({f"{m} (for {_OLD[m]})" for m in used if m in _OLD})


def cell_notes(entries: Mapping[str, Sequence[Mapping[str, Any]]], spec_config: Mapping[str, Any]) -> list[str]:
    """Card notes (one line each) for one cell: per role and repetition, a server restart, violated
    spec-decode invariants, a server/client token count difference, older metric names read.

    ``entries``: role -> the cell's entries (one per repetition); ``spec_config``: the protocol's
    speculative config (``num_speculative_tokens`` = K, ``method``)."""
    k = spec_config.get("num_speculative_tokens")
    adaptive = spec_config.get("method") in ADAPTIVE_METHODS
    notes = []
    for role, role_entries in entries.items():
        for e in role_entries:
            who = role + (f" rep {e.get('repetition', 0)}" if len(role_entries) > 1 else "")
            what = "acceptance" if e.get("spec_decode") else "server-side figures"
            if evidence := restart_evidence(e):
                notes.append(f"{who}: {what} not measurable, the server restarted inside the cell "
                             f"({'; '.join(evidence)})")
            elif (c := _counters(e)) is not None and (bad := invariant_violations(c, k, adaptive)):
                notes.append(f"{who}: spec-decode counters inconsistent: {'; '.join(bad)}")
            if mismatch := token_mismatch(e):
                notes.append(f"{who}: {mismatch}")
            if old := older_names(e):
                notes.append(f"{who}: read older vLLM metric names: {', '.join(old)}")
    return notes


def kv_capacity_note(difference: Mapping[str, Any]) -> str | None:
    """A note when the speculative server holds more than :data:`KV_LOSS_NOTE` fewer KV-cache tokens than
    the plain one (``resources.difference``: ``kv_cache_tokens_lost``, ``kv_capacity_loss``), whether or
    not the pair declared a limit; None otherwise."""
    loss = difference.get("kv_capacity_loss")
    if loss is None or loss <= KV_LOSS_NOTE:
        return None
    return (f"KV-cache capacity: the speculative server holds {difference.get('kv_cache_tokens_lost')} tokens "
            f"({100 * loss:.1f}%) fewer than the plain one, so fewer requests fit at once")
