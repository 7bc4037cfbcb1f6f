"""The GPU type of a fleet node (pure): the Ray node label ``loadgen.io/gpu-type``, else Ray's
``accelerator_type:<type>`` resource, else the first GPU name of the card's ``hardware`` written the way Ray
writes an accelerator type (``NVIDIA H200`` -> ``H200``), else unknown (None).
"""

from __future__ import annotations

import re

from loadgen.records.fleetparts import NodeHardware
from loadgen.records.fleettasks import FleetNode
from loadgen.records.raynodes import ACCELERATOR_RESOURCE, GPU_TYPE_LABEL, declared_gpu_types

#: Ray's accelerator type from an NVIDIA device name: ``NVIDIA_GPU_NAME_PATTERN`` and its fallback in
#: ``NvidiaGPUAcceleratorManager._gpu_name_to_accelerator_type`` (ray-project/ray,
#: python/ray/_private/accelerators/nvidia_gpu.py): "NVIDIA H200" -> "H200", "NVIDIA A100-SXM4-80GB" ->
#: "A100", "NVIDIA GeForce RTX 5090" -> "GeForce-RTX-5090".
_RAY_GPU_NAME = re.compile(r"\w+\s+((?:[A-Z]+\s+)*[A-Z0-9]*\d[A-Z0-9]*)")


def ray_accelerator_type(device_name: str | None) -> str | None:
    """An NVIDIA device name (``nvidia-smi``/NVML, as in the card's ``hardware.gpus[].name``) written as
    Ray's ``accelerator_type`` (see ``_RAY_GPU_NAME``); None for None or an empty name."""
    if not device_name:
        return None
    match = _RAY_GPU_NAME.match(device_name)
    result = match.group(1).replace(" ", "-") if match else None
    if result and len(result) > 1:
        return result
    cleaned = re.sub(r"^NVIDIA\s+", "", device_name).strip()
    return cleaned.replace(" ", "-") or None


def gpu_type_of(node: FleetNode, hardware: NodeHardware | None) -> tuple[str | None, str | None]:
    """(GPU type, where it came from) of ``node``: the runner's ``gpu_type`` (named by the label or
    resource it matches), the label ``loadgen.io/gpu-type``, the ``accelerator_type:<type>`` resource, the
    first GPU of a card's ``hardware``; (None, None) when none says."""
    label, accel = declared_gpu_types(node.labels, node.resources)
    by_label, by_resource = f"label {GPU_TYPE_LABEL}", f"Ray resource {ACCELERATOR_RESOURCE}<type>"
    if node.gpu_type:
        source = by_label if node.gpu_type == label else by_resource if node.gpu_type == accel else "tasks.json"
        return node.gpu_type, source
    if label:
        return label, by_label
    if accel:
        return accel, by_resource
    found = ray_accelerator_type(hardware.gpus[0].name) if hardware and hardware.gpus else None
    return (found, "card hardware (first GPU)") if found else (None, None)
