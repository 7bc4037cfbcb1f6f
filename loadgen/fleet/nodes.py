"""The nodes of a Ray cluster as the fleet sees them, and which of them a ``[[measure]]`` entry selects
(pure: the input is the list ``ray.nodes()`` returns, https://docs.ray.io/en/latest/ray-core/api/doc/ray.nodes.html).

A node's **name** is its Ray label ``loadgen.io/node`` when set (``ray start --labels
loadgen.io/node=stg-a``), else its IP address (``NodeManagerAddress``). Its **GPU type** is the label
``loadgen.io/gpu-type`` when set, else the ``accelerator_type:<type>`` resource Ray detects on GPU nodes
(e.g. ``accelerator_type:H200``), else None (the fleet card then reads the GPU name from the run's card).
The node record itself, as tasks.json holds it: records/fleettasks.py ``FleetNode``, read from ``ray.nodes()`` by
records/raynodes.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from loadgen.errors import BadInput
from loadgen.profile.fleetfile import NodeSelector
from loadgen.records.fleettasks import FleetNode
from loadgen.records.raynodes import NAME_LABEL


def has_gpu(node: FleetNode, gpu_resource: str) -> bool:
    """True when ``node`` offers at least one unit of ``gpu_resource``."""
    return node.resources.get(gpu_resource, 0.0) >= 1.0


def select(nodes: Sequence[FleetNode], selector: NodeSelector, gpu_resource: str) -> list[FleetNode]:
    """The nodes ``selector`` picks among ``nodes``; only nodes with the GPU resource qualify.

    Raises BadInput (one line listing the nodes there are) when a named node is not in the cluster or
    has no ``gpu_resource``, or when the selector matches no node."""
    gpu_nodes = [n for n in nodes if has_gpu(n, gpu_resource)]
    shown = (
        ", ".join(f"{n.name} ({n.address}, {n.resources.get(gpu_resource, 0):g} {gpu_resource})" for n in nodes)
        or "none"
    )
    if selector.every_gpu_node:
        picked = gpu_nodes
    elif selector.names:
        picked = []
        for want in selector.names:
            match = [n for n in nodes if want in (n.name, n.address, n.id)]
            if not match:
                raise BadInput(f"node {want!r} is not in the Ray cluster; its alive nodes: {shown}")
            usable = [n for n in match if has_gpu(n, gpu_resource)]
            if not usable:
                raise BadInput(f"node {want!r} has no {gpu_resource!r} resource to run on; its alive nodes: {shown}")
            picked += [n for n in usable if n not in picked]
    else:
        picked = [n for n in gpu_nodes if all(n.labels.get(k) == v for k, v in selector.labels)]
    names = [n.name for n in picked]
    if dup := sorted({name for name in names if names.count(name) > 1}):
        raise BadInput(
            f"two selected Ray nodes are both named {dup[0]!r} (their address); give each its own name "
            f"with `ray start --labels {NAME_LABEL}=<name>`"
        )
    if not picked:
        raise BadInput(
            f"{selector.describe()} matches no node with a {gpu_resource!r} resource; "
            f"the cluster's alive nodes: {shown}"
        )
    return picked
