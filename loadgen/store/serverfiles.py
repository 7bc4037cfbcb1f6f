"""The servers' files of a run folder, ``servers/<server>-<part>.json`` (README.md, "What a card holds"): each
written by run/bench.py from its record (``launch``: records/runparts.py ``LaunchFile``; ``minimal``: the
minimal completion, records/server.py ``MinimalRequest`` and ``MinimalResponse``; ``effective``:
``StartupRecord``; ``resources``: records/usage.py ``ServerUsage`` per moment; ``teardown``: ``Teardown``, or
``AttachedTeardown`` for a server loadgen did not start), and read back as saved: :func:`read_server_file` the
parsed JSON, :func:`read_part` one file as its record (records/serverparts.py, or runparts.py ``LaunchFile``:
whatever loadgen version wrote it, written back byte for byte), :func:`read_server_files` the four the card
copies (records/runparts.py ``ServerFiles``); a sweep's plan reads a start time of older runs from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from loadgen.records.cardwire import Wire
from loadgen.records.runparts import LaunchFile, ServerFiles
from loadgen.records.server import MinimalRequest, MinimalResponse, StartupRecord
from loadgen.records.serverparts import EffectiveFile, TeardownFile, UsageMoments
from loadgen.records.usage import AttachedTeardown, ServerUsage, Teardown
from loadgen.store.rundir import read_json, write_json

#: The per-server files the card reads (``<server>-<part>.json``).
SERVER_PARTS = ("launch", "effective", "resources", "teardown")
_R = TypeVar("_R", bound=Wire)


def server_file(folder: Path, server: str, part: str) -> Path:
    """``folder/servers/<server>-<part>.json``."""
    return folder / "servers" / f"{server}-{part}.json"


def write_launch(folder: Path, server: str, launch: LaunchFile) -> None:
    """Write ``<server>-launch.json``. Raises RunDirUnwritable."""
    write_json(server_file(folder, server, "launch"), launch.to_json())


def write_minimal(folder: Path, server: str, request: MinimalRequest | None, response: MinimalResponse | None) -> None:
    """Write ``<server>-minimal.json`` (``{}`` for a part not known). Raises RunDirUnwritable."""
    write_json(
        server_file(folder, server, "minimal"),
        {"request": request.to_json() if request else {}, "response": response.to_json() if response else {}},
    )


def write_effective(folder: Path, server: str, effective: StartupRecord) -> None:
    """Write ``<server>-effective.json``. Raises RunDirUnwritable."""
    write_json(server_file(folder, server, "effective"), effective.to_json())


def write_resources(folder: Path, server: str, usage: Mapping[str, ServerUsage]) -> None:
    """Write ``<server>-resources.json``: the server's usage per moment (``ready``, ``after_load``). Raises
    RunDirUnwritable."""
    write_json(server_file(folder, server, "resources"), {k: u.to_json() for k, u in usage.items()})


def write_teardown(folder: Path, server: str, teardown: Teardown | AttachedTeardown | None) -> None:
    """Write ``<server>-teardown.json`` (``{}`` when the stop left no report). Raises RunDirUnwritable."""
    write_json(server_file(folder, server, "teardown"), teardown.to_json() if teardown else {})


def read_server_file(folder: Path, server: str, part: str) -> Any:
    """``<server>-<part>.json`` as saved (the card copies it verbatim), None when the folder has none. Raises
    BadInput (exit 2) naming the file when it is not JSON."""
    path = server_file(folder, server, part)
    return read_json(path) if path.is_file() else None


def read_part(folder: Path, server: str, part: str, record: type[_R]) -> _R | None:
    """``<server>-<part>.json`` read as ``record`` (its keys kept in their order), None when the folder has none.
    Raises BadInput (exit 2) naming the file, and the field where one does not match its record."""
    data = read_server_file(folder, server, part)
    return None if data is None else record.from_json(data, source=str(server_file(folder, server, part)))


def read_server_files(folder: Path, server: str) -> ServerFiles:
    """The server's files the card copies (:data:`SERVER_PARTS`), each read as its record, None where absent; the
    record writes every part, null where absent. Raises BadInput as :func:`read_part`."""
    return ServerFiles(
        read_part(folder, server, "launch", LaunchFile),
        read_part(folder, server, "effective", EffectiveFile),
        read_part(folder, server, "resources", UsageMoments),
        read_part(folder, server, "teardown", TeardownFile),
        keys=SERVER_PARTS,
    )
