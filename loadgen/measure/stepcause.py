"""The abnormal step (pure; docs/metrics.md "Causes named on the card"): a cell whose measured step-time ratio
(speculative / plain step time, the cost decomposition's inputs, measure/steptime.py) is more than
:data:`ABNORMAL` x what the method, K and the draft's size predict (:func:`expected_step_ratio`), with the
speculative server's startup-log lines that explain it, quoted, or the statement that none was found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from loadgen.profile.pair import LOOKUP_METHODS
from loadgen.records.cardcell import Cost
from loadgen.records.cell import CellEntry
from loadgen.records.serverfacts import ServerView
from loadgen.records.speculative import SpeculativeConfig

#: A head's draft step in plain steps (expected_step_ratio), and how far above the expected ratio is abnormal.
HEAD_COST, ABNORMAL = 0.5, 2.0
#: The least a draft model's step costs in target steps, whatever its size (expected_step_ratio).
DRAFT_FLOOR = 0.1


def expected_step_ratio(method: str | None, k: int, draft_cost: float | None = None) -> float:
    """The most a speculative step should cost in plain steps, 1 + K x r: the target verifies K + 1 tokens in
    about one plain step while decode is memory-bound (vLLM docs, "Speculative Decoding"), and each of K draft
    steps costs r plain steps: r = 0 for a lookup proposer (no model), :data:`HEAD_COST` for a head (EAGLE, MTP:
    one or a few layers); for ``draft_model`` the draft's weight bytes over the target's (``draft_cost``: a
    memory-bound step reads every weight once), at least :data:`DRAFT_FLOOR` (a small draft's step is bound by
    kernel launches, not by its bytes), and 1 when the sizes are not known (a ceiling: a draft as costly as its
    target)."""
    if method in LOOKUP_METHODS:
        r = 0.0
    elif method == "draft_model":
        r = 1.0 if draft_cost is None else min(1.0, max(draft_cost, DRAFT_FLOOR))
    else:
        r = HEAD_COST
    return 1.0 + k * r


def draft_cost(draft_bytes: int | None, target_bytes: int | None) -> float | None:
    """The draft's step cost in target steps from their weight bytes (check/hashes.py ``weight_bytes``), None
    when either is unknown (a hub model, a folder without weight files)."""
    return draft_bytes / target_bytes if draft_bytes and target_bytes else None


def _explaining_lines(spec: ServerView, plain: ServerView, spec_lines: Sequence[CellEntry]) -> list[str]:
    """The speculative server's startup-log facts that slow its step and the plain server's lack: its engine-path
    messages (V1 model-runner fallback, async scheduling off, quoted), eager mode, a decode batch above the
    CUDA-graph capture ceiling."""
    out = [f'"{r}"' for r in spec.fallback_reasons if r not in plain.fallback_reasons]
    if spec.facts.enforce_eager and not plain.facts.enforce_eager:
        out.append(f"enforce_eager=True ({spec.facts.source.get('enforce_eager')}): every step runs eager")
    graphs = next(
        (g for e in spec_lines if e.state is not None and (g := e.state.graphs) is not None and g.eager),
        None,
    )
    if graphs:
        out.append(
            f"decode batch {graphs.batch_tokens} tokens above max_cudagraph_capture_size "
            f"{graphs.ceiling}: those steps run eager"
        )
    return out


def abnormal_step_note(
    cost: Cost | None,
    spec_config: SpeculativeConfig,
    servers: Mapping[str, ServerView],
    spec_lines: Sequence[CellEntry],
    cost_of_draft: float | None = None,
) -> str | None:
    """The card's note when the measured step-time ratio (``cost``: the cell's cost decomposition, speculative /
    plain step time, steptime.py) is more than :data:`ABNORMAL` x :func:`expected_step_ratio` (with
    ``cost_of_draft``, :func:`draft_cost`, for a draft model): what was expected, and the startup-log lines that
    explain it (quoted) or that none was found (or that the log was not read, for a server whose effective
    record has no startup-log facts)."""
    k = int(spec_config.num_speculative_tokens or 0)
    plain_s, spec_s = (cost.plain_step_s, cost.spec_step_s) if cost is not None else (None, None)
    step_ratio = spec_s / plain_s if plain_s and spec_s else None
    if step_ratio is None or k <= 0:
        return None
    expected = expected_step_ratio(spec_config.method, k, cost_of_draft)
    if step_ratio <= ABNORMAL * expected:
        return None
    spec, plain = servers.get("speculative", ServerView()), servers.get("plain", ServerView())
    lines = _explaining_lines(spec, plain, spec_lines)
    read = spec.log_read
    said = (
        "the speculative server's startup log says: " + "; ".join(lines)
        if lines
        else "no line of the speculative server's startup log explains it (looked for: V1 model-runner fallback, "
        "async scheduling off, eager mode, CUDA-graph capture-size ceiling)"
        if read
        else "its startup log was not read (an attached server: give its log), so the cause is not named"
    )
    return (
        f"abnormal step: the speculative step costs {step_ratio:.2f} plain steps, more than {ABNORMAL:g}x the "
        f"{expected:.2f} that method {spec_config.method} at K = {k} predicts (1 + K x draft cost"
        + (f", the draft {cost_of_draft:.3f} of the target's weight bytes" if cost_of_draft is not None else "")
        + f"); {said}"
    )
