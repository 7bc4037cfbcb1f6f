"""The nodes of a Ray cluster read from ``ray.nodes()`` (https://docs.ray.io/en/latest/ray-core/api/doc/ray.nodes.html)
into :class:`~loadgen.records.fleettasks.FleetNode` records, the one place the fleet reads Ray's node entries
(fleet/nodes.py selects among the records).

A node's **name** is its Ray label ``loadgen.io/node`` when set (``ray start --labels loadgen.io/node=stg-a``),
else its IP address (``NodeManagerAddress``). Its **GPU type** is the label ``loadgen.io/gpu-type`` when set,
else the ``accelerator_type:<type>`` resource Ray detects on GPU nodes (e.g. ``accelerator_type:H200``), else None.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from loadgen.records.fleettasks import FleetNode

NAME_LABEL = "loadgen.io/node"
GPU_TYPE_LABEL = "loadgen.io/gpu-type"
ACCELERATOR_RESOURCE = "accelerator_type:"


def declared_gpu_types(labels: Mapping[str, str], resources: Mapping[str, float]) -> tuple[str | None, str | None]:
    """(the label ``loadgen.io/gpu-type``, the type of Ray's ``accelerator_type:<type>`` resource), each None
    when the node has none (the first type, sorted, when it has several)."""
    accel = sorted(k[len(ACCELERATOR_RESOURCE) :] for k in resources if k.startswith(ACCELERATOR_RESOURCE))
    return labels.get(GPU_TYPE_LABEL), (accel[0] if accel else None)


def node_of(raw: Mapping[str, Any]) -> FleetNode:
    """A :class:`FleetNode` from one entry of ``ray.nodes()`` (keys ``NodeID``, ``NodeManagerAddress``,
    ``NodeManagerHostname``, ``Resources``, ``Labels``)."""
    labels = {str(k): str(v) for k, v in (raw.get("Labels") or {}).items()}
    resources = {str(k): float(v) for k, v in (raw.get("Resources") or {}).items()}
    address = str(raw.get("NodeManagerAddress") or "")
    label, accel = declared_gpu_types(labels, resources)
    return FleetNode(
        str(raw["NodeID"]),
        labels.get(NAME_LABEL) or address,
        address,
        raw.get("NodeManagerHostname"),
        label or accel,
        resources,
        labels,
    )


def alive_nodes(raw_nodes: Iterable[Mapping[str, Any]]) -> list[FleetNode]:
    """The alive nodes of ``ray.nodes()``, sorted by name."""
    return sorted((node_of(n) for n in raw_nodes if n.get("Alive", n.get("alive"))), key=lambda n: (n.name, n.id))
