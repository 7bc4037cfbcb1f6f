"""What the server's configuration will change in the measurement, said before anything starts (pure rules over
the launch lines and the target's files): the model's ``generation_config.json`` sampling defaults, the stream
interval, ``--max-num-seqs`` below a declared level, a per-batch-size K schedule under data parallelism, and an
MTP ``num_speculative_tokens`` above the target's MTP layers. Each is one warning ``Finding`` naming the fact,
what it changes and the fix (docs/vllm-notes.md, "What loadgen reads of a server's configuration").

Sources: vLLM applies ``generation_config.json``'s ``temperature``, ``top_p``, ``top_k``, ``min_p`` and
``repetition_penalty`` to every field a request leaves out (``--generation-config auto``, the default; vLLM docs
"OpenAI-Compatible Server"), so loadgen sends each explicitly (profile/pair.py ``Sampling``). MTP layers:
config.json ``num_nextn_predict_layers`` (DeepSeek-V3, GLM-4.5, MiMo ``num_nextn_predict_layers``; Qwen3-Next
``num_mtp_layers``); with K above it vLLM runs the last layer again for the further positions
(``vllm/v1/spec_decode/eagle.py``), whose acceptance falls with the position.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from loadgen.check.finding import Finding
from loadgen.records.modelconfig import read_model_json
from loadgen.records.serverfacts import ServerFacts

#: generation_config.json keys vLLM takes as sampling defaults, and the neutral value loadgen sends instead.
GENERATION_KEYS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty")
MTP_LAYER_KEYS = ("num_nextn_predict_layers", "num_mtp_layers")


def generation_defaults(target_dir: Path | None) -> dict[str, float]:
    """The sampling defaults of ``target_dir/generation_config.json`` (:data:`GENERATION_KEYS` present); {} when
    there is no such file or folder."""
    data = read_model_json(target_dir / "generation_config.json") if target_dir else {}
    return {k: data[k] for k in GENERATION_KEYS if isinstance(data.get(k), int | float)}


def generation_findings(target_dir: Path | None, sent: Mapping[str, object]) -> list[Finding]:
    """A warning when the target ships sampling defaults that differ from what loadgen sends (``sent``: the
    pair's sampling, profile/pair.py ``Sampling`` as a mapping), naming each with both values: they would apply
    to any field a request leaves out; loadgen sends every one, so the measured sampling is the pair's."""
    found = generation_defaults(target_dir)
    differ = {k: v for k, v in found.items() if isinstance(x := sent.get(k), int | float) and float(x) != v}
    if not differ:
        return []
    named = ", ".join(f"{k} {v} (sent: {sent[k]})" for k, v in differ.items())
    return [
        Finding(
            "sampling defaults",
            False,
            False,
            f"the target's generation_config.json sets {named}; vLLM applies these to every field a request "
            "leaves out, so loadgen sends each explicitly and equally to both servers: the card measures the "
            "pair's [sampling], not the model's recommended one (declare them in [sampling] to measure that)",
            {"generation_config": found},
        )
    ]


def attached_findings(roles: Sequence[str]) -> list[Finding]:
    """One passing finding per attached role (``[servers.<role>].url``, ``--attach-<role>``): its launch settings
    (``[engine].args``, ``[servers.<role>].args``) are not judged, since the server started by hand runs its own
    (the same rule as the chat template's, check/targetcheck.py); its facts are read from the server instead
    (serve/attached.py, and ``[servers.<role>].log`` when given)."""
    return [
        Finding(
            "launch settings",
            True,
            False,
            f"the {role} server is attached: the pair file's launch arguments are not its own, so they are not "
            "judged; what it runs is read from it (/v1/models, /metrics, and its startup log when "
            f"[servers.{role}].log names it)",
        )
        for role in roles
    ]


def launch_findings(roles: Mapping[str, Sequence[str]], levels: Sequence[int], k_schedule: bool) -> list[Finding]:
    """Warnings from each server's launch arguments (``roles``: role -> ``[engine].args`` + its own; the facts
    of records/serverfacts.py): a stream interval above 1, ``--max-num-seqs`` below the highest closed-loop
    level in ``levels``, and on the speculative server a per-batch-size K schedule (``k_schedule``) with a data
    parallel size above 1: vLLM picks K from the engine's batch (``vllm/v1/spec_decode/dynamic/utils.py``), and
    with data parallelism the schedule was seen not to apply, K staying ``num_speculative_tokens`` (scripted
    deployments of issue 42; not read in vLLM's code, docs/vllm-notes.md)."""
    out: list[Finding] = []
    top = max(levels, default=0)
    for role, args in roles.items():
        facts = ServerFacts.from_args(args)
        if (si := facts.stream_interval) and si > 1:
            out.append(
                Finding(
                    "stream interval",
                    False,
                    False,
                    f"the {role} server streams up to {si} tokens a chunk (--stream-interval {si}): chunks carry "
                    "several tokens without speculation; loadgen counts tokens from token_ids and proves the "
                    "plain mode against that interval, and inter-chunk latency spans several steps",
                )
            )
        if (mns := facts.max_num_seqs) and top > mns:
            out.append(
                Finding(
                    "max-num-seqs",
                    False,
                    False,
                    f"the {role} server runs at most {mns} requests at once (--max-num-seqs {mns}) but the pair "
                    f"declares concurrency up to {top}: above {mns} the rest queue, and the card names those "
                    "levels; raise --max-num-seqs or drop the levels above it",
                )
            )
        if role == "speculative" and k_schedule and (dp := facts.data_parallel_size) and dp > 1:
            out.append(
                Finding(
                    "K schedule",
                    False,
                    False,
                    f"num_speculative_tokens_per_batch_size with --data-parallel-size {dp}: vLLM does not apply "
                    "the schedule under data parallelism, so every step drafts num_speculative_tokens; use one "
                    "data-parallel rank per server, or a fixed K",
                )
            )
    return out


def mtp_findings(method: str | None, k: int, target_dir: Path | None) -> list[Finding]:
    """A warning when ``method`` is MTP (``mtp`` or a ``*_mtp`` name) and K exceeds the target's MTP layers
    (config.json :data:`MTP_LAYER_KEYS`; nothing when the file does not say)."""
    if method is None or not (method == "mtp" or method.endswith("_mtp")) or target_dir is None:
        return []
    cfg = read_model_json(target_dir / "config.json")
    layers = next((cfg[k] for k in MTP_LAYER_KEYS if isinstance(cfg.get(k), int)), None)
    if layers is None or k <= layers:
        return []
    return [
        Finding(
            "MTP layers",
            False,
            False,
            f"num_speculative_tokens = {k} with a target of {layers} MTP layer(s): positions beyond {layers} "
            "reuse the last layer on its own drafts, so their acceptance falls with the position (read "
            f"per-position acceptance with that in mind); K = {layers} drafts only with trained layers",
        )
    ]
