"""profile/fleetfile.py: fleet files written here, read to their typed records, and each refusal's one line
(the file, the ``[[measure]]`` entry, the key and the fix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.fleetfile import FleetFile, Measure, NodeSelector, load_fleet, resolve_fleet_path

GOOD = """name = "staging.1"
gpu_resource = "test_gpu"
workdir = "/opt/loadgen"
[[measure]]
pairs = ["demo-cpu", "x/y.toml"]
nodes = "every-gpu-node"
[[measure]]
sweeps = ["demo-cpu-sweep"]
nodes = ["node-a", "10.0.0.2"]
[[measure]]
pairs = ["h200-1b-draft"]
labels = { "loadgen.io/gpu-type" = "H200", "zone" = "b" }
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "f.toml"
    path.write_text(text)
    return path


def test_a_fleet_file_read_to_its_records(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    assert load_fleet(path) == FleetFile(
        path,
        GOOD,
        "staging.1",
        "test_gpu",
        "/opt/loadgen",
        (
            Measure(("demo-cpu", "x/y.toml"), (), NodeSelector(every_gpu_node=True)),
            Measure((), ("demo-cpu-sweep",), NodeSelector(names=("node-a", "10.0.0.2"))),
            Measure(("h200-1b-draft",), (), NodeSelector(labels=(("loadgen.io/gpu-type", "H200"), ("zone", "b")))),
        ),
    )
    assert [m.nodes.describe() for m in load_fleet(path).measures] == [
        "every-gpu-node",
        "nodes node-a, 10.0.0.2",
        "labels loadgen.io/gpu-type=H200, zone=b",
    ]
    minimal = load_fleet(write(tmp_path, 'name = "m"\n[[measure]]\npairs = ["p"]\nnodes = "every-gpu-node"\n'))
    assert (minimal.gpu_resource, minimal.workdir) == ("GPU", None)


ENTRY = '[[measure]]\npairs = ["p"]\nnodes = "every-gpu-node"\n'


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            'name = "a b"\n' + ENTRY,
            "name 'a b' must be 1-64 letters, digits, '.', '_' or '-' (it names the fleet folder)",
        ),
        ('name = "a"\ngpu_resource = ""\n' + ENTRY, 'gpu_resource must name a Ray resource ("GPU" on GPU nodes)'),
        (
            'name = "a"\nworkdir = "rel"\n' + ENTRY,
            "workdir 'rel' must be an absolute path (the folder on every node that holds profiles/ and the models)",
        ),
        ('name = "a"\nmeasure = []\n', "no [[measure]] entry; add one with pairs = [...] and nodes = ..."),
        (
            'name = "a"\n[[measure]]\nnodes = "every-gpu-node"\n',
            '[[measure]] #1 names no pair and no sweep; add pairs = ["<pair>"]',
        ),
        (
            'name = "a"\n[[measure]]\npairs = ["p", "p"]\nnodes = "every-gpu-node"\n',
            "[[measure]] #1.pairs lists a file twice; list each once",
        ),
        (
            'name = "a"\n' + ENTRY + '[[measure]]\npairs = ["p"]\n',
            '[[measure]] #2 needs exactly one of nodes = "every-gpu-node" | [names] or labels = {...}',
        ),
        (
            'name = "a"\n[[measure]]\npairs = ["p"]\nnodes = "all"\n',
            "[[measure]] #1.nodes is 'all'; write \"every-gpu-node\" or a list of node names",
        ),
        (
            'name = "a"\n[[measure]]\npairs = ["p"]\nnodes = []\n',
            "[[measure]] #1.nodes must be a non-empty list of node names, addresses or Ray node ids",
        ),
        (
            'name = "a"\n[[measure]]\npairs = ["p"]\nnodes = ["n", "n"]\n',
            "[[measure]] #1.nodes lists a node twice; list each once",
        ),
        (
            'name = "a"\n[[measure]]\npairs = ["p"]\nlabels = { k = 1 }\n',
            '[[measure]] #1.labels must be a non-empty table of label = "value" strings',
        ),
        (
            'name = "a"\n[[measure]]\npair = ["p"]\nnodes = "every-gpu-node"\n',
            "unknown key 'pair' in [[measure]] #1; known keys: labels, nodes, pairs, sweeps "
            "(see profiles/README.md); did "
            "you mean 'pairs'?",
        ),
    ],
)
def test_each_refusal(tmp_path: Path, text: str, says: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ProfileError) as info:
        load_fleet(path)
    assert str(info.value) == f"{path}: {says}"


def test_resolve_a_fleet_by_path_or_name(tmp_path: Path) -> None:
    fleets = tmp_path / "fleets"
    fleets.mkdir()
    (fleets / "staging.toml").write_text("")
    (fleets / "prod.toml").write_text("")
    assert resolve_fleet_path("staging", fleets) == fleets / "staging.toml"
    assert resolve_fleet_path(str(fleets / "prod.toml"), fleets) == fleets / "prod.toml"
    with pytest.raises(ProfileError) as info:
        resolve_fleet_path("stage", fleets)
    assert str(info.value) == (
        f"fleet file 'stage' not found (neither a file nor {fleets / 'stage.toml'}); fleets in {fleets}: prod, staging"
    )
