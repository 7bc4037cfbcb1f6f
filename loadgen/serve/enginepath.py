"""The engine path of a vLLM server from its startup log (pure): async scheduling on or off, the model
runner (V1 or V2), and the reasons vLLM gives when it changes either.

vLLM changes the engine path silently when speculative decoding is on: for the methods it cannot overlap
it turns async scheduling off, and it runs Model Runner V2 only for what V2 supports, falling back to the
V1 model runner otherwise. A speculative server's step time then includes that change, not only the
draft's work. The wordings, read from vLLM's source:

- ``vllm/config/vllm.py`` (``VllmConfig.__post_init__``, ``VllmConfig.use_v2_model_runner``):
  ``Asynchronous scheduling is enabled.`` / ``... is disabled.`` (INFO, 0.24; 0.32 prints neither),
  ``Async scheduling not supported with <method>-based speculative decoding and will be disabled.``,
  ``Async scheduling is not compatible with disable_padded_drafter_batch=True and will be disabled.``,
  ``Async scheduling will be disabled because ...``, ``Async scheduling is disabled for|because ...``
  (WARNING, 0.24 and 0.32), ``Disabling asynchronous scheduling by default for pooling model.`` (DEBUG),
  ``Model Runner V2 does not yet support <what>; using the V1 model runner instead.`` and
  ``Model Runner V2 requires Triton; using the V1 model runner instead.`` (WARNING);
- ``vllm/v1/worker/gpu_worker.py``, ``cpu_worker.py``, ``xpu_worker.py``: ``Using V2 Model Runner`` (INFO).

vLLM's CPU backend turns async scheduling off without a log line (``vllm/platforms/cpu.py``, 0.32): its
state stays unknown there. A line reads as ``(EngineCore pid=N) WARNING 12-01 23:19:25 [vllm.py:981] message``
(``vllm/logger.py``); the API server and the EngineCore each print some, so later lines win.
"""

from __future__ import annotations

import re

from loadgen.records.server import EnginePath

#: The prefix vLLM's logger writes before a message (``vllm/logger.py`` ``_FORMAT``), ANSI colours aside.
_PREFIX_RE = re.compile(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+"
    r"\[[^\]]*:\d+\]\s+"
)
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
_ASYNC_ON = re.compile(r"Asynchronous scheduling is enabled")
_ASYNC_OFF = re.compile(r"Asynchronous scheduling is disabled")
#: A stated reason for turning async scheduling off (the message is kept as the reason).
_ASYNC_FALLBACK = re.compile(r"Async scheduling\b[^\n]*\bdisabled|Disabling asynchronous scheduling")
_RUNNER_V2 = re.compile(r"Using V2 Model Runner")
#: A stated reason for falling back to the V1 model runner.
_RUNNER_V1 = re.compile(r"Model Runner V2\b[^\n]*\busing the V1 model runner")


def _message(line: str) -> str:
    """The log message of ``line`` without vLLM's prefix (the whole line when it has none)."""
    line = _ANSI_RE.sub("", line).strip()
    match = _PREFIX_RE.search(line)
    return line[match.end() :] if match else line


def parse_engine_path(log: str) -> EnginePath:
    """The engine path a startup log states (module docstring); every field unknown for an empty log."""
    async_on: bool | None = None
    runner: str | None = None
    reasons: list[str] = []
    for line in log.splitlines():
        if "sched" not in line and "Runner" not in line and "runner" not in line:
            continue
        msg = _message(line)
        reason = None
        if _ASYNC_ON.search(msg):
            async_on = True
        elif _ASYNC_OFF.search(msg):
            async_on = False
        elif found := _ASYNC_FALLBACK.search(msg):
            async_on, reason = False, msg[found.start() :]
        if _RUNNER_V2.search(msg):
            runner = "V2"
        elif found := _RUNNER_V1.search(msg):
            runner, reason = "V1", msg[found.start() :]
        if reason is not None and reason not in reasons:
            reasons.append(reason)
    return EnginePath(async_on, runner, tuple(reasons))


def _async_word(path: EnginePath) -> str:
    return {True: "on", False: "off", None: "unknown"}[path.async_scheduling]


def _quoted(reasons: tuple[str, ...]) -> str:
    return "; ".join(f'"{r}"' for r in reasons)


def engine_path_line(path: EnginePath) -> str:
    """The card's line for one server's engine path (its effective record's ``engine_path``, as
    ``EnginePath.of`` reads it: unknown when absent)."""
    line = (
        f"engine path (startup log): async scheduling {_async_word(path)}, "
        f"model runner {path.model_runner or 'unknown'}"
    )
    return line + (f" (vLLM: {_quoted(path.fallback_reasons)})" if path.fallback_reasons else "")


def engine_path_note(plain: EnginePath, spec: EnginePath) -> str | None:
    """One note when the speculative server's engine path differs from the plain server's: its async
    scheduling off while the plain server's is not known to be off, or its model runner known and not the
    plain server's (an unknown plain runner counts only against a V1 fallback). None otherwise."""
    no_async = spec.async_scheduling is False and plain.async_scheduling is not False
    runner = (
        spec.model_runner is not None
        and spec.model_runner != plain.model_runner
        and (plain.model_runner is not None or spec.model_runner == "V1")
    )
    if not (no_async or runner):
        return None
    what = " and ".join(
        [
            *(["without async scheduling"] if no_async else []),
            *([f"on the {spec.model_runner} model runner"] if runner else []),
        ]
    )
    fixes = [
        *(["`--no-async-scheduling`"] if no_async else []),
        *([f"`VLLM_USE_V2_MODEL_RUNNER={int(spec.model_runner == 'V2')}`"] if runner else []),
    ]
    said = f" (vLLM: {_quoted(spec.fallback_reasons)})" if spec.fallback_reasons else ""
    return (
        f"Engine path: the speculative server runs {what}{said}; the plain server: async scheduling "
        f"{_async_word(plain)}, model runner {plain.model_runner or 'unknown'}. The measured step-time ratio "
        f"includes that engine-path change, not only the draft's work; compare against a plain server "
        f"launched with {' and '.join(fixes)} to separate the two."
    )


_CEILING_RE = re.compile(r"['\"]max_cudagraph_capture_size['\"]:\s*(\d+)")


def cudagraph_ceiling(log: str) -> int | None:
    """The largest batch (tokens) the engine runs as a CUDA graph: ``max_cudagraph_capture_size`` of the
    startup log's compilation config (vLLM 0.11+; 512 by default on H200, vLLM PR #54418); None when the log
    shows ``enforce_eager=True`` (every step eager) or does not say."""
    if "enforce_eager=True" in log:
        return None
    found = _CEILING_RE.search(log)
    return int(found.group(1)) if found else None
