"""A ``trace`` workload's keys (profiles/README.md "Workloads"): the trace file found beside the workload file
like a prompt file (profile/locate.py), read in its declared or detected format (profile/traceformats.py,
profile/trace.py), its time scales and windows (pure apart from reading the trace)."""

from __future__ import annotations

from pathlib import Path

from loadgen.errors import ProfileError
from loadgen.profile.locate import locate, looked_in
from loadgen.profile.tomlread import Table
from loadgen.profile.trace import MOONCAKE_BLOCK_TOKENS, WINDOW_S, read_trace
from loadgen.profile.traceformats import FORMATS, zero_output


def trace_fields(
    top: Table, endpoint: str | None, beside: Path | None = None
) -> tuple[str, dict[str, object], tuple[float, ...]]:
    """A ``trace`` workload's keys read from its table: the endpoint, the Workload fields (``path``, found as a
    prompt file's is: profile/locate.py, relative to the current directory, else to ``beside``, the workload
    file's folder; ``source_sha256``, ``source_lines``, ``skipped``, ``block_tokens``, ``window_s``,
    ``trace_format`` (declared), ``trace_format_read`` (declared or detected), ``zero_output`` and ``floored``:
    profile/traceformats.py) and the declared time scales (one variant
    each). Raises ProfileError for a bad trace or a time scale that is not a distinct positive number."""
    ref = top.get("path", str)
    fmt = top.get("format", str, "auto")
    if fmt not in FORMATS:
        raise ProfileError(f"{top.path}: format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    zero = zero_output(top.get("zero_output", (str, int), "refuse", '"refuse", "skip" or a number'), str(top.path))
    path = locate(ref, beside)
    if not path.is_file():
        raise ProfileError(
            f"{top.path}: trace file {ref!r} not found: no {looked_in(ref, beside)}; give its absolute path, or "
            "one relative to the current directory or to the workload file's folder"
        )
    trace = read_trace(path, endpoint, fmt, zero)
    declared = top.get("time_scale", (int, float, list), 1.0, "a number > 0 or a list of distinct ones")
    scales = declared if isinstance(declared, list) else [declared]
    if (
        not scales
        or len(set(scales)) != len(scales)
        or not all(isinstance(s, int | float) and not isinstance(s, bool) and s > 0 for s in scales)
    ):
        raise ProfileError(
            f"{top.path}: time_scale must be a number > 0 or a list of distinct ones (0.5 replays "
            f"twice as fast), got {declared!r}"
        )
    window = top.get("window_s", (int, float), WINDOW_S, "a number of seconds > 0")
    if window <= 0:
        raise ProfileError(
            f"{top.path}: window_s must be a number of seconds > 0 (the card's time windows), got {window!r}"
        )
    fields = {
        "path": trace.path,
        "source_sha256": trace.sha256,
        "source_lines": trace.lines,
        "skipped": trace.skipped,
        "block_tokens": top.positive_int("block_tokens", MOONCAKE_BLOCK_TOKENS),
        "window_s": float(window),
        "trace_format": fmt,
        "zero_output": zero,
        "trace_format_read": trace.format,
        "floored": trace.floored,
    }
    return trace.endpoint, fields, tuple(float(s) for s in scales)


def scaled_name(name: str, scale: float, scales: tuple[float, ...]) -> str:
    """The workload variant's name at ``scale``: ``<name>@ts<scale>`` when several are declared, else ``name``."""
    return f"{name}@ts{scale:g}" if len(scales) > 1 else name
