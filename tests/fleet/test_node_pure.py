"""fleet/gputype.py, fleet/nodes.py and fleet/nodetask.py's pure parts without a Ray cluster: the GPU type of a
node (label, accelerator resource, the card's hardware written the way Ray writes an accelerator type), the
ports a node task writes into a pair file, and the one line that says why a task failed."""

from __future__ import annotations

import socket
import tomllib

import pytest

from loadgen.fleet.gputype import gpu_type_of, ray_accelerator_type
from loadgen.fleet.nodetask import free_port_pair, reason_of, with_ports
from loadgen.records.fleetparts import NodeGpu, NodeHardware
from loadgen.records.fleettasks import FleetNode
from loadgen.records.raynodes import declared_gpu_types, node_of


@pytest.mark.parametrize(
    ("name", "ray"),
    [
        ("NVIDIA H200", "H200"),
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("NVIDIA GeForce RTX 5090", "GeForce-RTX-5090"),
        ("NVIDIA L4", "L4"),
        ("Tesla V100-SXM2-16GB", "V100"),
        ("", None),
        (None, None),
    ],
)
def test_device_names_as_ray_writes_them(name: str | None, ray: str | None) -> None:
    assert ray_accelerator_type(name) == ray


def node(
    gpu_type: str | None = None, labels: dict[str, str] | None = None, resources: dict[str, float] | None = None
) -> FleetNode:
    return FleetNode("ab12", "n1", "10.0.0.1", "host-1", gpu_type, resources or {}, labels or {})


def test_where_a_nodes_gpu_type_comes_from() -> None:
    hw = NodeHardware(gpus=[NodeGpu("NVIDIA H100 80GB HBM3")])
    label, accel = {"loadgen.io/gpu-type": "H200"}, {"accelerator_type:A100": 1.0, "accelerator_type:H100": 1.0}
    assert declared_gpu_types(label, accel) == ("H200", "A100")  # the first type, sorted
    assert gpu_type_of(node("H200", label), hw) == ("H200", "label loadgen.io/gpu-type")
    assert gpu_type_of(node("A100", resources=accel), hw) == ("A100", "Ray resource accelerator_type:<type>")
    assert gpu_type_of(node("B200"), hw) == ("B200", "tasks.json")
    assert gpu_type_of(node(labels=label, resources=accel), hw) == ("H200", "label loadgen.io/gpu-type")
    assert gpu_type_of(node(resources=accel), None) == ("A100", "Ray resource accelerator_type:<type>")
    assert gpu_type_of(node(), hw) == ("H100", "card hardware (first GPU)")
    assert gpu_type_of(node(), NodeHardware()) == (None, None) and gpu_type_of(node(), None) == (None, None)


def test_a_ray_node_entry() -> None:
    raw = {
        "NodeID": "ff00",
        "NodeManagerAddress": "10.0.0.7",
        "NodeManagerHostname": "gpu-7",
        "Resources": {"GPU": 8, "accelerator_type:H200": 1},
        "Labels": {"loadgen.io/node": "gpu-7"},
    }
    got = node_of(raw)
    assert (got.id, got.address, got.hostname, got.resources) == (
        "ff00",
        "10.0.0.7",
        "gpu-7",
        {"GPU": 8.0, "accelerator_type:H200": 1.0},
    )
    assert got.to_json()["labels"] == {"loadgen.io/node": "gpu-7"}


def test_a_node_task_writes_free_ports_into_the_pair_file() -> None:
    text, ports = with_ports('pair = "p"\n[engine]\nport = 8000\n[servers.speculative]\nport = 8001\nargs = ["-x"]\n')
    assert ports is not None and ports[1] == ports[0] + 1
    assert tomllib.loads(text) == {
        "pair": "p",
        "engine": {"port": ports[0]},
        "servers": {"speculative": {"args": ["-x"]}},
    }
    for port in ports:  # both were free when chosen
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
    attached = '[servers.plain]\nurl = "http://a:1"\n[servers.speculative]\nurl = "http://b:1"\n'
    assert with_ports(attached) == (attached, None) and with_ports("not = toml = x") == ("not = toml = x", None)
    low, high = free_port_pair()
    assert high == low + 1


def test_why_a_task_failed() -> None:
    assert reason_of(0, "anything") is None and reason_of(3, "FAIL: criteria") is None
    said = "starting\nloadgen: error: unknown pair 'x'\nmore\n"
    assert reason_of(2, said) == "exit 2: loadgen: error: unknown pair 'x'"  # the error line, not the last one
    assert reason_of(1, "line one\n  last words  \n\n") == "exit 1: last words"
    assert reason_of(137, "") == "exit 137: no output"
