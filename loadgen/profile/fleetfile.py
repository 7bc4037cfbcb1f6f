"""The fleet file (``loadgen fleet run FLEET.toml``): which pairs and sweeps to measure on which nodes of a
Ray cluster (docs/fleet/README.md). Strict TOML, read once; nothing here talks to a cluster.

Format::

    name = "staging"               # the fleet folder is runs/fleet-<name>-<UTC timestamp>/ unless --out
    gpu_resource = "GPU"           # the Ray resource one task takes, one unit (default "GPU")
    workdir = "/opt/loadgen"       # where loadgen runs on every node (default: the driver's folder)
    [[measure]]
    pairs = ["demo-cpu"]           # pair files (loadgen compare): names in profiles/pairs/ or .toml paths
    sweeps = ["demo-cpu-sweep"]    # sweep pair files (loadgen sweep)
    nodes = "every-gpu-node"       # or a list of node names, addresses or Ray node ids
    labels = { "loadgen.io/gpu-type" = "H200" }   # instead of nodes: every node whose labels match
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from loadgen.errors import ProfileError
from loadgen.profile.tomlread import Table, read_toml

#: ``nodes`` value meaning every node that has at least one unit of the fleet's GPU resource.
EVERY_GPU_NODE = "every-gpu-node"
FLEETS_DIR = Path("profiles/fleets")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class NodeSelector:
    """Which nodes one ``[[measure]]`` entry runs on: every GPU node, the named ones (node name, address
    or Ray node id), or those whose Ray labels include every ``labels`` item."""

    every_gpu_node: bool = False
    names: tuple[str, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        """How the selector reads in a message (``every-gpu-node``, ``nodes a, b``, ``labels k=v``)."""
        if self.every_gpu_node:
            return EVERY_GPU_NODE
        if self.names:
            return "nodes " + ", ".join(self.names)
        return "labels " + ", ".join(f"{k}={v}" for k, v in self.labels)


@dataclass(frozen=True)
class Measure:
    """One ``[[measure]]`` entry: pair files to compare and sweep files to sweep, on the selected nodes."""

    pairs: tuple[str, ...]
    sweeps: tuple[str, ...]
    nodes: NodeSelector


@dataclass(frozen=True)
class FleetFile:
    """A parsed fleet file; ``path`` is where it was read from, ``text`` its bytes as text (copied into the
    fleet folder as fleet.toml)."""

    path: Path
    text: str
    name: str
    gpu_resource: str = "GPU"
    workdir: str | None = None
    measures: tuple[Measure, ...] = field(default_factory=tuple)


def resolve_fleet_path(ref: str, fleets_dir: Path = FLEETS_DIR) -> Path:
    """``ref`` as a path when it is a file, else ``profiles/fleets/<ref>.toml`` when that exists.

    Raises ProfileError naming both places and the fleets there are."""
    path = Path(ref)
    if path.is_file():
        return path
    named = fleets_dir / f"{ref}.toml"
    if named.is_file():
        return named
    there = ", ".join(sorted(p.stem for p in fleets_dir.glob("*.toml"))) or "none"
    raise ProfileError(f"fleet file {ref!r} not found (neither a file nor {named}); fleets in {fleets_dir}: {there}")


def load_fleet(path: Path) -> FleetFile:
    """Read and check a fleet file.

    Raises ProfileError (exit 2, one line naming the file, the key and the fix) on unknown keys, wrong
    types, a bad name, an entry with no pair and no sweep, or a node selector that is neither
    ``"every-gpu-node"``, a list of names nor a labels table.
    """
    doc = Table(path, "", read_toml(path))
    name = doc.get("name", str)
    if not _NAME.match(name):
        raise ProfileError(
            f"{path}: name {name!r} must be 1-64 letters, digits, '.', '_' or '-' (it names the fleet folder)"
        )
    gpu_resource = doc.get("gpu_resource", str, "GPU")
    if not gpu_resource:
        raise ProfileError(f'{path}: gpu_resource must name a Ray resource ("GPU" on GPU nodes)')
    workdir = doc.get("workdir", str, None)
    if workdir is not None and not Path(workdir).is_absolute():
        raise ProfileError(
            f"{path}: workdir {workdir!r} must be an absolute path (the folder on every node "
            "that holds profiles/ and the models)"
        )
    entries = doc.get("measure", list, ..., "an array of [[measure]] tables")
    if not entries:
        raise ProfileError(f"{path}: no [[measure]] entry; add one with pairs = [...] and nodes = ...")
    measures = tuple(_measure(path, i, raw) for i, raw in enumerate(entries, start=1))
    doc.finish()
    return FleetFile(path, path.read_text(), name, gpu_resource, workdir, measures)


def _measure(path: Path, index: int, raw: object) -> Measure:
    t = Table(path, f"[[measure]] #{index}", raw)
    pairs, sweeps = t.str_list("pairs", ()), t.str_list("sweeps", ())
    nodes = t.get("nodes", (str, list), None, f'"{EVERY_GPU_NODE}" or a list of node names')
    labels = t.get("labels", dict, None, "a table of label = value strings")
    t.finish()  # an unknown key (a typo such as `pair`) is named before anything else
    if not pairs and not sweeps:
        raise ProfileError(f'{path}: [[measure]] #{index} names no pair and no sweep; add pairs = ["<pair>"]')
    for what, names in (("pairs", pairs), ("sweeps", sweeps)):
        if len(set(names)) != len(names):
            raise ProfileError(f"{path}: [[measure]] #{index}.{what} lists a file twice; list each once")
    return Measure(pairs, sweeps, _selector(path, index, nodes, labels))


def _selector(
    path: Path, index: int, nodes: str | list[object] | None, labels: dict[str, object] | None
) -> NodeSelector:
    where = f"{path}: [[measure]] #{index}"
    if (nodes is None) == (labels is None):
        raise ProfileError(f'{where} needs exactly one of nodes = "{EVERY_GPU_NODE}" | [names] or labels = {{...}}')
    if labels is not None:
        if not labels or not all(isinstance(v, str) for v in labels.values()):
            raise ProfileError(f'{where}.labels must be a non-empty table of label = "value" strings')
        return NodeSelector(labels=tuple(sorted((k, str(v)) for k, v in labels.items())))
    if isinstance(nodes, str):
        if nodes != EVERY_GPU_NODE:
            raise ProfileError(f'{where}.nodes is {nodes!r}; write "{EVERY_GPU_NODE}" or a list of node names')
        return NodeSelector(every_gpu_node=True)
    assert nodes is not None
    if not nodes or not all(isinstance(n, str) and n for n in nodes):
        raise ProfileError(f"{where}.nodes must be a non-empty list of node names, addresses or Ray node ids")
    if len(set(nodes)) != len(nodes):
        raise ProfileError(f"{where}.nodes lists a node twice; list each once")
    return NodeSelector(names=tuple(str(n) for n in nodes))
