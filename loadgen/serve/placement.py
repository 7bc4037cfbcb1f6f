"""Where a server of the pair ran, from its saved launch and effective files (pure; report/carddata.py)."""

from __future__ import annotations

from collections.abc import Mapping

from loadgen.records.runparts import ServerFiles
from loadgen.records.server import Placement
from loadgen.records.wire import JsonObject, JsonValue
from loadgen.util.argv import flag_value


def placement(server: ServerFiles) -> Placement:
    """Where a server ran: attached URL or launch, visible GPUs, tensor parallel size, memory fraction.
    ``server``: its saved files as read (``launch``, ``effective``; either may be absent, and a key of either
    missing or of another shape is unknown)."""
    launch = server.launch or {}
    argv = [str(a) for a in _list(launch.get("argv"))]
    cache = _object((server.effective or {}).get("cache_config_info"))
    env = _object(launch.get("env"))
    fraction = cache.get("gpu_memory_utilization") or flag_value(argv, "--gpu-memory-utilization")
    return Placement(
        attached=bool(launch.get("attached")),
        base_url=_text(launch.get("base_url")),
        cuda_visible_devices=_text(env.get("CUDA_VISIBLE_DEVICES")),
        tensor_parallel_size=int(flag_value(argv, "--tensor-parallel-size", "-tp") or 1),
        gpu_memory_utilization=_text(fraction),
    )


def _list(value: JsonValue) -> list[JsonValue]:
    return value if isinstance(value, list) else []


def _object(value: JsonValue) -> JsonObject:
    return value if isinstance(value, Mapping) else {}


def _text(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None
