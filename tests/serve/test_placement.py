"""serve/placement.py: where a server ran, read from its saved launch and effective records (the shapes of
docs/examples/h200/*/servers/*-launch.json and *-effective.json)."""

from __future__ import annotations

import json
from pathlib import Path

from loadgen.records.runparts import LaunchFile, ServerFiles
from loadgen.serve.placement import placement
from tests.support.cards import effective, launch

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "h200" / "h200-1b-ngram" / "servers"


def test_a_launched_server_on_the_recorded_example() -> None:
    launch = json.loads((EXAMPLE / "speculative-launch.json").read_text())
    effective = json.loads((EXAMPLE / "speculative-effective.json").read_text())
    server = ServerFiles.from_json({"launch": launch, "effective": effective}, source="example")
    assert placement(server).to_json() == {
        "attached": False,
        "base_url": "http://127.0.0.1:8401",
        "cuda_visible_devices": None,
        "tensor_parallel_size": 1,
        "gpu_memory_utilization": "0.3",
    }  # the server's own cache_config_info


def test_flags_and_attachment() -> None:
    argv = ["vllm", "serve", "m", "--tensor_parallel_size", "2", "--gpu-memory-utilization=0.45"]
    server = ServerFiles(
        launch=LaunchFile(
            attached=True, base_url="http://gpu-7:8000", env={"CUDA_VISIBLE_DEVICES": "2,3"}, argv=tuple(argv)
        )
    )
    assert placement(server).to_json() == {
        "attached": True,
        "base_url": "http://gpu-7:8000",
        "cuda_visible_devices": "2,3",
        "tensor_parallel_size": 2,
        "gpu_memory_utilization": "0.45",
    }
    assert (
        placement(
            ServerFiles.from_json(
                {
                    "launch": launch(argv=["-tp", "4"]),
                    "effective": effective(cache_config_info={"gpu_memory_utilization": "0.9"}),
                },
                source="test",
            )
        ).tensor_parallel_size
        == 4
    )
    assert placement(ServerFiles()).to_json() == {
        "attached": False,
        "base_url": None,
        "cuda_visible_devices": None,
        "tensor_parallel_size": 1,
        "gpu_memory_utilization": None,
    }
