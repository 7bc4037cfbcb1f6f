"""Numeric and type domains of profile values (pure): checked on the parsed TOML before any table is read.

TOML has ``inf`` and ``nan`` literals and integers of any size, which tomllib parses as they are, so two
checks run on every value of a pair or workload file:

- **every number, anywhere** (any table, any list): finite, and within :data:`MAX_ABS_INT` (integers: a
  signed 64-bit value, the TOML limit) or :data:`MAX_ABS_FLOAT` (floats);
- **per key** (:data:`PAIR_DOMAINS`, :data:`WORKLOAD_DOMAINS`): its type and range, with the limits of a
  run named in the message: at most :data:`MAX_CONCURRENCY` requests in flight, :data:`MAX_CELL_REQUESTS`
  requests per cell, :data:`MAX_SECONDS` for any duration, ports 1-65535; sampling as vLLM's
  ``SamplingParams`` accepts it (temperature >= 0, top_p in (0, 1]); speculative-config fields with the
  types of vLLM's ``SpeculativeConfig`` (vLLM docs, "Speculative decoding"; vllm/config/speculative.py).

A value outside its domain raises ProfileError (exit 2) with one line naming the file, the key, the
domain and the value.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadgen.errors import ProfileError

MAX_ABS_INT = 2**63 - 1
MAX_ABS_FLOAT = 1e15
MAX_CONCURRENCY = 100_000
MAX_CELL_REQUESTS = 10_000_000
MAX_RATE_RPS = 100_000.0
MAX_SECONDS = 604_800.0  # one week
MAX_TOKENS = 10_000_000
MAX_REPETITIONS = 1_000
MAX_TIME_SCALE = 1_000  # a trace replayed at most 1,000 times slower than recorded


@dataclass(frozen=True)
class Domain:
    """``kind``: ``int``, ``number``, ``str`` or ``bool``; numbers lie in [low, high] (``low_open``: low
    excluded), in ``unit``; ``why`` ends the message (the limit's reason)."""

    kind: str
    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    why: str = ""
    unit: str = ""

    def describe(self) -> str:
        if self.kind in ("str", "bool"):
            return "a string" if self.kind == "str" else "true or false"
        what = "an integer" if self.kind == "int" else f"a number of {self.unit}" if self.unit else "a number"
        low = f"{what} {'>' if self.low_open else '>='} {_show(self.low)}"
        return low if self.high >= MAX_ABS_INT else f"{low} and <= {_show(self.high)}"

    def admits(self, value: Any) -> bool:
        if self.kind == "str":
            return isinstance(value, str)
        if self.kind == "bool":
            return isinstance(value, bool)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.kind == "int" and not isinstance(value, int):
            return False
        return (value > self.low if self.low_open else value >= self.low) and value <= self.high


def _show(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def _int(low: int, high: float = MAX_ABS_INT, why: str = "") -> Domain:
    return Domain("int", low, high, why=why)


def _num(low: float, high: float, low_open: bool = True, why: str = "") -> Domain:
    return Domain("number", low, high, low_open, why)


_PORT = _int(1, 65535, "a TCP port")
_SECONDS = Domain("number", 0, MAX_SECONDS, True, "at most one week", "seconds")
_INFLIGHT = _int(1, MAX_CONCURRENCY, "requests in flight a run can hold")
_REQUESTS = _int(1, MAX_CELL_REQUESTS, "requests per cell")
_FRACTION = _num(0, 1, low_open=False)
_STR, _BOOL = Domain("str"), Domain("bool")

#: Dotted key patterns (``[]``: each list element, ``*``: any name) -> domain, for pair files.
PAIR_DOMAINS: dict[str, Domain] = {
    "engine.port": _PORT,
    "servers.*.port": _PORT,
    "engine.startup_timeout_s": _SECONDS,
    "sampling.temperature": _num(0, 100, low_open=False, why="0 = greedy"),
    "sampling.top_p": _num(0, 1, why="vLLM's SamplingParams"),
    "sampling.top_k": _int(-1, 1_000_000, "-1 = off (vLLM's SamplingParams)"),
    "sampling.min_p": _num(0, 1, low_open=False, why="vLLM's SamplingParams"),
    "sampling.repetition_penalty": _num(0, 100, why="1 = off (vLLM's SamplingParams)"),
    "sampling.presence_penalty": _num(-2, 2, low_open=False, why="0 = off (vLLM's SamplingParams)"),
    "sampling.frequency_penalty": _num(-2, 2, low_open=False, why="0 = off (vLLM's SamplingParams)"),
    "run.concurrency[]": _INFLIGHT,
    "run.max_concurrency": _INFLIGHT,
    "run.rates_rps[]": _num(0, MAX_RATE_RPS, why="requests/s"),
    "run.burstiness": _num(0, 1000),
    "run.repetitions": _int(1, MAX_REPETITIONS),
    "run.output_tokens": _int(1, MAX_TOKENS, "tokens"),
    "run.input_tokens": _int(1, MAX_TOKENS, "tokens"),
    "stop.min_requests": _REQUESTS,
    "stop.max_requests": _REQUESTS,
    "stop.rounds": _REQUESTS,
    "stop.warmup_requests": _int(0, MAX_CELL_REQUESTS, "requests per cell"),
    "stop.duration_s": _SECONDS,
    "stop.max_error_rate": _FRACTION,
    "slo.percentile": _num(0, 100),
    "slo.ttft_s": _SECONDS,
    "slo.tpot_s": _SECONDS,
    "slo.e2e_s": _SECONDS,
    "criteria.min_speedup": _num(0, 1000),
    "criteria.max_regression.*": _num(1, 1000, low_open=False),
    "criteria.concurrency[]": _INFLIGHT,
    "criteria.max_extra_memory_bytes": _int(0),
    "criteria.max_kv_capacity_loss": _FRACTION,
    "criteria.min_lossless_match": _FRACTION,
    "criteria.ci_half_width": _num(0, 1, why="half the log width of a 95% CI; 0.05 is about ±5%"),
    # vLLM's SpeculativeConfig field types (vllm/config/speculative.py, 0.10-0.33)
    **{
        f"speculative.{k}": _STR
        for k in ("method", "model", "revision", "code_revision", "quantization", "speculative_token_tree")
    },
    "speculative.num_speculative_tokens": _int(1, 1024, "draft tokens per step"),
    **{
        f"speculative.{k}": _int(1)
        for k in (
            "draft_tensor_parallel_size",
            "max_model_len",
            "prompt_lookup_max",
            "prompt_lookup_min",
            "suffix_decoding_max_tree_depth",
        )
    },
    "speculative.disable_by_batch_size": _int(2),
    "speculative.suffix_decoding_max_spec_factor": _num(0, 1000),
    "speculative.suffix_decoding_min_token_prob": _FRACTION,
    "speculative.synthetic_acceptance_rate": _FRACTION,
    **{
        f"speculative.{k}": _BOOL
        for k in (
            "disable_logprobs",
            "enforce_eager",
            "disable_padded_drafter_batch",
            "parallel_drafting",
            "use_local_argmax_reduction",
            "use_heterogeneous_vocab",
        )
    },
}
WORKLOAD_DOMAINS: dict[str, Domain] = {
    "output_tokens": _int(1, MAX_TOKENS, "tokens"),
    "input_tokens": _int(1, MAX_TOKENS, "tokens"),
    "input_tokens[]": _int(1, MAX_TOKENS, "tokens"),
    "seed": _int(0),
    "block_tokens": _int(1, MAX_TOKENS, "tokens"),
    "window_s": _SECONDS,
    "time_scale": _num(0, MAX_TIME_SCALE, why="trace offsets x time_scale"),
    "time_scale[]": _num(0, MAX_TIME_SCALE, why="trace offsets x time_scale"),
}


def _walk(value: Any, parts: tuple[str, ...], pattern: str) -> Iterator[tuple[tuple[str, ...], str, Any]]:
    """(display parts, pattern, value) for every value, tables and lists before their contents; list
    elements get ``[i]`` (display) and ``[]`` (pattern)."""
    if parts:
        yield parts, pattern, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, (*parts, str(k)), f"{pattern}.{k}" if pattern else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, (*parts[:-1], f"{parts[-1]}[{i}]"), pattern + "[]")


def _matches(key: str, pattern: str) -> bool:
    """``pattern``'s ``*`` segments match any one segment of the dotted ``key``."""
    a, b = key.split("."), pattern.split(".")
    return len(a) == len(b) and all(y in ("*", x) for x, y in zip(a, b, strict=True))


def _display(parts: tuple[str, ...]) -> str:
    return parts[0] if len(parts) == 1 else f"[{'.'.join(parts[:-1])}].{parts[-1]}"


def check_document(path: Path, doc: Mapping[str, Any], domains: Mapping[str, Domain]) -> None:
    """Check every number of ``doc`` (finite, within the 64-bit / 1e15 bounds) and every key with a
    domain in ``domains``. Raises ProfileError naming the first offending key."""
    for parts, pattern, value in _walk(dict(doc), (), ""):
        name = _display(parts)
        if isinstance(value, float) and not math.isfinite(value):
            raise ProfileError(f"{path}: {name} must be a finite number, got {value!r}; write a number")
        if isinstance(value, int | float) and not isinstance(value, bool):
            bound = MAX_ABS_INT if isinstance(value, int) else MAX_ABS_FLOAT
            if abs(value) > bound:
                raise ProfileError(
                    f"{path}: {name} = {value!r} is out of range: numbers in a profile lie within ±{bound:.3g}"
                )
        domain = domains.get(pattern) or next((d for p, d in domains.items() if _matches(pattern, p)), None)
        listed = isinstance(value, list) and f"{pattern}[]" in domains  # e.g. input_tokens = [128, 1024]
        if domain is not None and not listed and not domain.admits(value):
            why = f" ({domain.why})" if domain.why else ""
            raise ProfileError(
                f"{path}: {name} must be {domain.describe()}{why}, got {value!r} (see profiles/README.md)"
            )
