"""records/raynodes.py: ``ray.nodes()`` entries read into FleetNode records (name and GPU type by label first)."""

from __future__ import annotations

from loadgen.records.fleettasks import FleetNode
from loadgen.records.raynodes import alive_nodes, node_of

RAW = {
    "NodeID": "ab12",
    "Alive": True,
    "NodeManagerAddress": "10.0.0.7",
    "NodeManagerHostname": "gpu-7",
    "Resources": {"GPU": 8, "accelerator_type:H200": 1},
    "Labels": {"loadgen.io/node": "stg-a"},
}


def test_a_node_is_named_by_its_label_and_typed_by_its_accelerator_resource() -> None:
    assert node_of(RAW) == FleetNode(
        "ab12",
        "stg-a",
        "10.0.0.7",
        "gpu-7",
        "H200",
        {"GPU": 8.0, "accelerator_type:H200": 1.0},
        {"loadgen.io/node": "stg-a"},
    )


def test_only_alive_nodes_are_kept_sorted_by_name_and_an_unlabelled_one_is_named_by_its_address() -> None:
    other = {"NodeID": "cd34", "alive": True, "NodeManagerAddress": "10.0.0.2", "Resources": {}, "Labels": None}
    dead = RAW | {"NodeID": "ef56", "Alive": False}
    got = alive_nodes([RAW, dead, other])
    assert [(n.id, n.name, n.gpu_type) for n in got] == [("cd34", "10.0.0.2", None), ("ab12", "stg-a", "H200")]
