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
- Counters are read per ``engine`` label (``prom.engine_counter_delta``, ``prom.spec_decode_held``): one
  engine whose counters went backwards is named and left out, the others' deltas are kept; every engine
  reset is a restart. A counter absent from a scrape is unavailable evidence, never 0.
- K is fixed only where the declared speculative config fixes it (:func:`k_variable`): with
  ``enable_adaptive_verification`` (vLLM 0.28+, ``profile/fields.py``), a ``num_speculative_tokens_per_batch_size``
  schedule (0.24+), a lookup method or a user proposer class, fewer than K draft tokens per draft is the
  engine working as designed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from loadgen.measure.counterfaults import said, untrusted
from loadgen.measure.replicas import REPLICAS, replica_note
from loadgen.profile.pair import LOOKUP_METHODS
from loadgen.prom.deltas import SpecDecodeCounters, engine_counter_delta
from loadgen.prom.exposition import Snapshot
from loadgen.prom.metricnames import OLDER_NAMES
from loadgen.records.card import ResourceDifference
from loadgen.records.cell import CellEntry
from loadgen.records.cellparts import ServerCounters, VerificationDepth
from loadgen.records.request import RequestRecord
from loadgen.records.speculative import SpeculativeConfig

PROCESS_START = "process_start_time_seconds"
GENERATION_TOKENS = "vllm:generation_tokens_total"
REQUEST_SUCCESS = "vllm:request_success_total"
#: above this relative difference, the server's and the client's output token counts get a note
TOKEN_TOLERANCE = 0.01
#: above this fraction of the plain server's KV-cache tokens lost, the card notes it (declared limit or not)
KV_LOSS_NOTE = 0.10
#: a user's proposer class (vLLM 0.22+): nothing holds its drafts at K
SELF_DECLARED_METHODS = frozenset({"custom_class"})
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


def server_counters(before: Snapshot, after: Snapshot) -> ServerCounters:
    """Fields for the cell entry (its ``to_json``), each counter read per ``engine`` (``prom.engine_counter_delta``):
    ``server_finished_requests`` (Δ``vllm:request_success_total``, every ``finished_reason``, requests),
    ``server_generation_tokens`` (Δ``vllm:generation_tokens_total``, tokens), each summed over the engines
    whose counters held and None when the counter is absent from either scrape; ``server_engines`` and
    ``server_reset_engines`` (engine labels seen, and those whose counters went down or vanished);
    ``process_start_time_s`` ([before, after] Unix seconds, None entries when the server does not expose
    ``process_start_time_seconds``)."""
    finished = engine_counter_delta(before, after, REQUEST_SUCCESS)
    tokens = engine_counter_delta(before, after, GENERATION_TOKENS)
    engines = list(dict.fromkeys((*finished.engines, *tokens.engines)))
    return ServerCounters(
        finished.value,
        tokens.value,
        tuple(engines),
        tuple(e for e in engines if e in {*finished.reset_engines, *tokens.reset_engines}),
        (before.total(PROCESS_START), after.total(PROCESS_START)),
    )


def _names(engines: Sequence[str]) -> str:
    return ", ".join(e or "(unlabelled)" for e in engines)


def _held(entry: CellEntry, reset: Sequence[str]) -> list[str]:
    seen = [*(entry.spec_decode.engines if entry.spec_decode else ()), *entry.server_engines]
    return [e for e in dict.fromkeys(seen) if e not in reset]


def partial_resets(entry: CellEntry) -> list[str]:
    """The engines whose counters went backwards inside the cell while others held (their deltas are left
    out of the entry's counts; a reset of every engine is :func:`restart_evidence` instead)."""
    sd = entry.spec_decode
    found = [] if sd is None or sd.reset else list(sd.reset_engines)
    engines, reset = entry.server_engines, entry.server_reset_engines
    if not set(engines) <= set(reset):
        found += reset
    return list(dict.fromkeys(found))


def restart_evidence(entry: CellEntry) -> list[str]:
    """The signs in a cell entry that the server restarted between the cell's scrapes (one phrase each,
    naming the numbers); [] when none. Fields of older entries that are missing are skipped, and so is
    the finished-requests comparison when one engine reset (its requests are not counted)."""
    out = []
    sd = entry.spec_decode
    if sd is not None and sd.reset:
        many = len(sd.engines) > 1
        out.append("spec-decode counters went backwards" + (f" on every engine ({_names(sd.engines)})" if many else ""))
    start = entry.process_start_time_s or [None, None]
    if None not in start and start[0] != start[1]:
        out.append(f"process_start_time_seconds changed {start[0]:.0f} → {start[1]:.0f}")
    engines, reset = entry.server_engines, entry.server_reset_engines
    if engines and set(engines) <= set(reset):
        out.append(f"request and token counters went backwards on every engine ({_names(engines)})")
    finished, sent, failed = entry.server_finished_requests, entry.client_sent_requests, entry.client_window_failed
    if finished is not None and sent is not None and not reset:
        completed = sent - ((entry.errors if failed is None else failed) or 0)  # older entries: errors
        if finished < completed:
            out.append(f"server finished {finished:.0f} requests, loadgen completed {completed}")
    return out


def _counters(entry: CellEntry) -> SpecDecodeCounters | None:
    sd = entry.spec_decode
    if sd is None:
        return None
    return SpecDecodeCounters(
        sd.value("num_drafts"),
        sd.value("num_draft_tokens"),
        sd.value("num_accepted_tokens"),
        tuple(float(v or 0) for v in sd.accepted_per_position),
        sd.reset,
        sd.engines,
        sd.reset_engines,
    )


def usable_counters(entries: Sequence[CellEntry]) -> tuple[SpecDecodeCounters | None, str | None]:
    """Spec-decode counter deltas summed over a cell's repetitions, leaving out those with
    :func:`restart_evidence`; none when any repetition's counters were read from more than one server at one URL
    (``replica_evidence``, measure/replicas.py) or cannot be trusted (NaN, Inf, negative, or backwards without a
    restart: measure/counterfaults.py ``untrusted``). Returns (counters or None, why the
    acceptance is not measurable or None)."""
    if signs := list(dict.fromkeys(s for e in entries for s in e.replica_evidence)):
        return None, f"{REPLICAS}: {'; '.join(signs)}"  # measure/replicas.py
    if faults := [f for e in entries if e.spec_decode for f in untrusted(e)]:  # measure/counterfaults.py
        return None, "the server's counters cannot be trusted: " + said(list(dict.fromkeys(faults)))
    kept = [(c, e) for e in entries if (c := _counters(e)) is not None]
    counters = [c for c, e in kept if not restart_evidence(e)]
    if not counters:
        why = next((restart_evidence(e) for _, e in kept), [])
        return None, ("server restarted inside the cell: " + "; ".join(why)) if why else None
    width = max(len(c.accepted_per_position) for c in counters)
    per_pos = tuple(
        sum(c.accepted_per_position[i] for c in counters if i < len(c.accepted_per_position)) for i in range(width)
    )
    engines = tuple(dict.fromkeys(e for c in counters for e in c.engines))
    reset = tuple(dict.fromkeys(e for c in counters for e in c.reset_engines))
    return SpecDecodeCounters(
        sum(c.num_drafts for c in counters),
        sum(c.num_draft_tokens for c in counters),
        sum(c.num_accepted_tokens for c in counters),
        per_pos,
        False,
        engines,
        reset,
    ), None


def k_variable(spec_config: SpeculativeConfig) -> str | None:
    """Why the declared speculative config does not hold every draft at K tokens (a phrase), or None when
    K is fixed: ``enable_adaptive_verification`` on (vLLM 0.28+), a ``num_speculative_tokens_per_batch_size``
    schedule (0.24+; K follows the batch, which moves within a cell), a lookup method
    (:data:`~loadgen.profile.pair.LOOKUP_METHODS`: a match in the text can be shorter than K) or a user proposer class
    (:data:`SELF_DECLARED_METHODS`). Key ranges: ``profile/fields.py``."""
    method = spec_config.method
    if spec_config.enable_adaptive_verification:
        return "enable_adaptive_verification = true"
    if spec_config.num_speculative_tokens_per_batch_size:
        return "num_speculative_tokens_per_batch_size sets K per batch size"
    if method in LOOKUP_METHODS:
        return f"{method} proposes only the matches it finds"
    if method in SELF_DECLARED_METHODS:
        return f"{method}: the proposer decides its draft lengths"
    return None


def verification_depth(
    c: SpecDecodeCounters | None, spec_config: SpeculativeConfig, also: str | None = None
) -> VerificationDepth:
    """Fields beside K in a cell's counter data (its ``to_json``): ``k`` (declared ``num_speculative_tokens``, None when
    absent), ``k_fixed`` (whether the invariant draft tokens = K x drafts applies, :func:`k_variable`),
    ``k_variable_reason`` (its phrase or None) and ``mean_verified_tokens_per_step`` = Δdraft tokens /
    Δdrafts (draft tokens the target verified per verify step, 0..K; None without drafts; the
    ``SpecDecodingProm`` docstring, ``vllm/v1/spec_decode/metrics.py``: the mean proposed length). ``also``: a
    reason of the cell's own that K is not held (a grammar-constrained workload, run/cellentry.py)."""
    k, why = spec_config.num_speculative_tokens, k_variable(spec_config) or also
    mean = c.num_draft_tokens / c.num_drafts if c is not None and c.num_drafts > 0 else None
    return VerificationDepth(None if k is None else int(k), why is None, why, mean)


def depth_note(
    role: str, c: SpecDecodeCounters | None, spec_config: SpeculativeConfig, also: str | None = None
) -> str | None:
    """ "<role>: mean verified tokens per step X of K = k (why: ...)" where K is not fixed (``also``: the cell's
    own reason, verification_depth) and drafts were made; None otherwise (with a fixed K the invariant says X = K).
    For the card (report/carddata.py)."""
    depth = verification_depth(c, spec_config, also)
    if depth.k_fixed or depth.mean_verified_tokens_per_step is None or depth.k is None:
        return None
    return (
        f"{role}: mean verified tokens per step {depth.mean_verified_tokens_per_step:.2f} of K = "
        f"{depth.k} ({depth.k_variable_reason}: fewer than K per step is by design)"
    )


def invariant_violations(c: SpecDecodeCounters, k: int | None, adaptive: bool = False) -> list[str]:
    """Violated spec-decode counter invariants of one cell's deltas, one phrase each naming the numbers.

    Checks: sum of ``accepted_per_position`` == ``num_accepted_tokens``; ``accepted_per_position`` does
    not rise with position (a draft accepted up to position i+1 is accepted up to i); ``num_draft_tokens``
    == K x ``num_drafts`` when ``k`` is given and fixed; with ``adaptive`` (:func:`k_variable` of the
    declared config) at most K x ``num_drafts``.
    Counts are compared to within 0.5 (they are integers)."""
    out = []
    per_pos, accepted = c.accepted_per_position, c.num_accepted_tokens
    if per_pos and abs(sum(per_pos) - accepted) > 0.5:
        out.append(f"per-position accepted counts sum to {sum(per_pos):.0f}, not the accepted count {accepted:.0f}")
    rise = next((i for i in range(1, len(per_pos)) if per_pos[i] > per_pos[i - 1] + 0.5), None)
    if rise is not None:
        out.append(
            f"accepted at position {rise} ({per_pos[rise]:.0f}) exceeds position {rise - 1} ({per_pos[rise - 1]:.0f})"
        )
    if k and c.num_drafts > 0:
        expected = k * c.num_drafts
        off = c.num_draft_tokens - expected
        if off > 0.5 or (off < -0.5 and not adaptive):
            out.append(
                f"draft tokens {c.num_draft_tokens:.0f} ≠ K × drafts = {k} × {c.num_drafts:.0f} = {expected:.0f}"
            )
    return out


def token_mismatch(entry: CellEntry) -> str | None:
    """Δ``vllm:generation_tokens_total`` against the tokens loadgen received between the scrapes, as a
    phrase when they differ by more than :data:`TOKEN_TOLERANCE` of the client's count; None when within
    it, unknown, or the counters are already explained (foreign traffic, restart, one engine reset)."""
    server, client = entry.server_generation_tokens, entry.client_window_output_tokens
    if server is None or not client or entry.foreign_traffic or restart_evidence(entry):
        return None
    if entry.server_reset_engines:  # the reset engine's tokens are not in the server's count
        return None
    if abs(server - client) <= TOKEN_TOLERANCE * client:
        return None
    return (
        f"server generated {server:.0f} tokens (Δvllm:generation_tokens_total), loadgen received "
        f"{client} ({100 * (server - client) / client:+.1f}%)"
    )


def older_names(entry: CellEntry) -> list[str]:
    """The older vLLM metric names a cell entry's gauges and server histograms were read under."""
    used = [g.metric for g in (entry.gauges or {}).values()]
    used += [h.metric for h in entry.server_histograms.values()]
    return sorted({f"{m} (for {_OLD[m]})" for m in used if m in _OLD})


def cell_notes(entries: Mapping[str, Sequence[CellEntry]], spec_config: SpeculativeConfig) -> list[str]:
    """Card notes (one line each) for one cell: per role, replicas behind its URL (measure/replicas.py; then
    nothing else of that role); per role and repetition, a server restart, violated
    spec-decode invariants, an engine reset, a server/client token count difference, older metric names
    read; per speculative role, the mean verified tokens per step beside K where K is not fixed.

    ``entries``: role -> the cell's entries (one per repetition); ``spec_config``: the protocol's
    speculative config (``num_speculative_tokens`` = K, ``method``, the keys of :func:`k_variable`)."""
    k = spec_config.num_speculative_tokens
    notes = []
    for role, role_entries in entries.items():
        also = next((r for e in role_entries if e.spec_decode and (r := e.spec_decode.k_variable_reason)), None)
        adaptive = (k_variable(spec_config) or also) is not None
        if signs := list(dict.fromkeys(s for e in role_entries for s in e.replica_evidence)):
            notes.append(replica_note(role, signs))  # one note: every block of that server is doubtful
            continue
        for e in role_entries:
            who = role + (f" rep {e.repetition}" if len(role_entries) > 1 else "")
            what = "acceptance" if e.spec_decode else "server-side figures"
            if faults := untrusted(e):
                notes.append(
                    f"{who}: {what} not measurable, the server's counters cannot be trusted ({'; '.join(faults)})"
                )
                continue
            if evidence := restart_evidence(e):
                notes.append(
                    f"{who}: {what} not measurable, the server restarted inside the cell ({'; '.join(evidence)})"
                )
            elif (c := _counters(e)) is not None and (bad := invariant_violations(c, k, adaptive)):
                notes.append(f"{who}: spec-decode counters inconsistent: {'; '.join(bad)}")
            if not evidence and (engines := partial_resets(e)):
                notes.append(
                    f"{who}: counters of engine {_names(engines)} went backwards inside the cell (reset), "
                    f"left out: {what} from engine {_names(_held(e, engines))} whose counters held"
                )
            if mismatch := token_mismatch(e):
                notes.append(f"{who}: {mismatch}")
            if old := older_names(e):
                notes.append(f"{who}: read older vLLM metric names: {', '.join(old)}")
        if role != "plain" and (depth := depth_note(role, usable_counters(role_entries)[0], spec_config, also)):
            notes.append(depth)
    return notes


def kv_capacity_note(difference: ResourceDifference) -> str | None:
    """A note when the speculative server holds more than :data:`KV_LOSS_NOTE` fewer KV-cache tokens than
    the plain one (``resources.difference``: ``kv_cache_tokens_lost``, ``kv_capacity_loss``), whether or
    not the pair declared a limit; None otherwise."""
    loss = difference.kv_capacity_loss
    if loss is None or loss <= KV_LOSS_NOTE:
        return None
    return (
        f"KV-cache capacity: the speculative server holds {difference.kv_cache_tokens_lost} tokens "
        f"({100 * loss:.1f}%) fewer than the plain one, so fewer requests fit at once"
    )
