"""The workloads of a pair (profile I/O: the workload files, prompt files and the target's tokenizer).

Each name in ``[run].workloads`` loads as one workload or, with a list ``input_tokens``, one variant per
length (``<name>@<tokens>``: the context-length axis). The pair's overrides (``[run].output_tokens``,
``[run].input_tokens``) apply to every one. The serving context is ``--max-model-len`` of
``[engine].args`` (vLLM's engine argument, read by util/argv.py's rules; None when not given): a synthetic
workload whose input plus output exceeds it raises ProfileError, and a ``file`` workload's lines are checked
against it with the target's tokenizer (promptfile.fit_lengths); a ``trace`` workload's too
(trace.trace_requests).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tokenizers import Tokenizer

from loadgen.errors import ProfileError
from loadgen.profile.trace import MOONCAKE_BLOCK_TOKENS, Replay, TraceRequest, read_trace, trace_requests
from loadgen.profile.workload import Workload, load_tokenizer, load_workloads, resolve_file
from loadgen.util.argv import flag_value, vllm_int


def serving_context(args: tuple[str, ...] | list[str]) -> int | None:
    """``--max-model-len`` of the engine arguments, in tokens, read as vLLM's argparse reads it (util/argv.py:
    ``--max_model_len`` the same flag, ``=N`` or `` N``, the last one winning, ``2k`` 2,000 and ``2K`` 2,048);
    None if absent or not such an integer (``auto``: the model's own length, unknown here)."""
    return vllm_int(flag_value(args, "--max-model-len"))


def pair_workloads(
    names: tuple[str, ...],
    workloads_dir: Path,
    target_model: str,
    args: tuple[str, ...],
    output_tokens: int | None = None,
    input_tokens: int | None = None,
    beside: Path | None = None,
) -> tuple[Workload, ...]:
    """The workloads the pair runs, in order, variants expanded; ``beside``: the pair file's folder, where a
    relative workload path not found from the current directory is looked up (profile/locate.py). Raises
    ProfileError: one line naming what is wrong with every workload (each bad prompt file's bad lines), not
    only the first."""
    out: list[Workload] = []
    errors: list[str] = []
    for name in names:
        try:
            out += _variants(name, workloads_dir, target_model, args, output_tokens, input_tokens, beside)
        except ProfileError as exc:
            errors.append(str(exc))
    if errors:
        raise ProfileError(" | ".join(errors))
    return tuple(out)


def _variants(
    name: str,
    workloads_dir: Path,
    target_model: str,
    args: tuple[str, ...],
    output_tokens: int | None,
    input_tokens: int | None,
    beside: Path | None,
) -> list[Workload]:
    """Workload ``name``'s variants with the pair's overrides and serving context applied and checked."""
    context = serving_context(args)
    out: list[Workload] = []
    variants = load_workloads(name, workloads_dir, beside)
    if input_tokens is not None:  # the pair's one length replaces the workload's list
        variants = (replace(variants[0], name=variants[0].name.split("@")[0]),)
    for w in variants:
        changes: dict[str, object] = {"context_tokens": context}
        if output_tokens is not None:
            changes["output_tokens"] = output_tokens
        if input_tokens is not None and w.kind != "file":
            changes["input_tokens"] = input_tokens
        w = replace(w, **changes)  # type: ignore[arg-type]
        if context is not None and w.input_tokens is not None and w.input_tokens + w.output_tokens > context:
            raise ProfileError(
                f"workload {w.name}: {w.input_tokens} input + {w.output_tokens} output tokens "
                f"exceed the serving context ({context} tokens, --max-model-len); lower "
                "input_tokens or raise --max-model-len in [engine].args"
            )
        if w.kind == "file":
            w = resolve_file(w, load_tokenizer(target_model))
        elif w.kind == "trace":  # the lines too long for the serving context join the skipped ones
            w = replace(w, skipped=(*w.skipped, *replay_trace(w, load_tokenizer(target_model))[1]))
        out.append(w)
    return out


def replay_trace(workload: Workload, tokenizer: Tokenizer) -> tuple[list[TraceRequest], list[str]]:
    """The requests of a ``trace`` workload in send order (offsets time-scaled, prompts of exact length;
    profile/trace.py) and the lines skipped for the serving context. Raises ProfileError when the file
    changed since the workload was loaded, or as trace.trace_requests does."""
    trace = read_trace(
        Path(workload.path or ""), workload.endpoint, workload.trace_format or "auto", workload.zero_output or "refuse"
    )
    if trace.sha256 != workload.source_sha256:
        raise ProfileError(
            f"{trace.path} changed since the workload was loaded (sha256 {trace.sha256[:12]}, "
            f"expected {str(workload.source_sha256)[:12]}); load the pair again"
        )
    replay = Replay(
        workload.time_scale or 1.0,
        workload.block_tokens or MOONCAKE_BLOCK_TOKENS,
        workload.seed,
        workload.output_tokens,
        workload.context_tokens,
    )
    return trace_requests(trace, replay, tokenizer)
