"""Where a server of the pair ran, from its saved launch and effective files (pure; report/carddata.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadgen.records.server import Placement
from loadgen.util.argv import flag_value


def placement(server: Mapping[str, Any]) -> Placement:
    """Where a server ran: attached URL or launch, visible GPUs, tensor parallel size, memory fraction.
    ``server``: its saved files as read (``launch``, ``effective``; either may be absent)."""
    launch = server.get("launch") or {}
    argv = launch.get("argv") or []
    cache = (server.get("effective") or {}).get("cache_config_info") or {}
    return Placement(
        attached=bool(launch.get("attached")),
        base_url=launch.get("base_url"),
        cuda_visible_devices=(launch.get("env") or {}).get("CUDA_VISIBLE_DEVICES"),
        tensor_parallel_size=int(flag_value(argv, "--tensor-parallel-size", "-tp") or 1),
        gpu_memory_utilization=cache.get("gpu_memory_utilization") or flag_value(argv, "--gpu-memory-utilization"),
    )
