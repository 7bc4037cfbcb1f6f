"""records/serverparts.py, runparts.py ``ServerFiles`` and the card's ``resources`` against every committed example
under docs/: each ``servers/<server>-{launch,effective,resources,teardown}.json`` reads as its record (store/
serverfiles.py ``read_part``) and writes back byte for byte, whichever loadgen wrote it; each card.json's ``servers``
and ``resources`` sections read as records and write back the same; and the readers get the saved values by
attribute."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgen.records.card import PairCard
from loadgen.records.cardwire import Wire
from loadgen.records.runparts import LaunchFile
from loadgen.records.serverparts import EffectiveFile, TeardownFile, UsageMoments
from loadgen.records.usage import ServerUsage
from loadgen.report.cardmd import render_markdown
from loadgen.store.rundir import write_json
from loadgen.store.serverfiles import read_part, read_server_files

DOCS = Path(__file__).resolve().parents[2] / "docs"
RECORDS: dict[str, type[Wire]] = {
    "launch": LaunchFile,
    "effective": EffectiveFile,
    "resources": UsageMoments,
    "teardown": TeardownFile,
}
SERVER_FILES = sorted(p for part in RECORDS for p in DOCS.glob(f"examples/**/servers/*-{part}.json"))
CARDS = sorted(DOCS.glob("examples/**/card.json"))


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(DOCS)) for p in paths]


def test_every_example_is_there() -> None:
    assert (len(SERVER_FILES), len(CARDS)) == (100, 11)


@pytest.mark.parametrize("path", SERVER_FILES, ids=_ids(SERVER_FILES))
def test_a_server_file_reads_as_its_record_and_writes_back_byte_for_byte(path: Path, tmp_path: Path) -> None:
    server, part = path.stem.rsplit("-", 1)
    record = read_part(path.parent.parent, server, part, RECORDS[part])
    assert isinstance(record, RECORDS[part])
    assert record.extra == {}  # every key the file holds is a field of its record
    write_json(tmp_path / path.name, record.to_json())
    assert (tmp_path / path.name).read_bytes() == path.read_bytes()


@pytest.mark.parametrize("path", CARDS, ids=_ids(CARDS))
def test_a_cards_servers_and_resources_read_as_records_and_write_back_the_same(path: Path) -> None:
    saved = json.loads(path.read_text())
    card = PairCard.from_json(saved, source=str(path))
    for usage in (card.resources.plain, card.resources.speculative):
        assert usage is None or (isinstance(usage, ServerUsage) and usage.extra == {})
    assert json.dumps(card.resources.to_json(), indent=2) == json.dumps(saved["resources"], indent=2)
    for role, files in card.servers.items():
        assert json.dumps(files.to_json(), indent=2) == json.dumps(saved["servers"][role], indent=2), role
        for part, record in RECORDS.items():
            value = getattr(files, part)
            assert value is None or (isinstance(value, record) and value.extra == {}), (role, part)


def test_the_run_folder_and_its_card_agree_on_every_server_file() -> None:
    for card_path in CARDS:
        if not (card_path.parent / "servers").is_dir():
            continue
        card = json.loads(card_path.read_text())
        for role, section in card["servers"].items():
            files = read_server_files(card_path.parent, role)
            assert files.resources is None or files.to_json()["resources"] == section["resources"], (card_path, role)
            assert files.to_json()["launch"] == section["launch"], (card_path, role)


def test_the_readers_get_the_saved_figures_by_attribute() -> None:
    run = DOCS / "examples" / "h200" / "h200-1b-ngram"
    saved = json.loads((run / "servers" / "speculative-resources.json").read_text())["after_load"]
    files = read_server_files(run, "speculative")
    usage = files.usage()
    assert usage is not None and usage.kv_cache_tokens == saved["kv_cache_tokens"] > 0
    assert usage.gpu_memory is not None and usage.gpu_memory.bytes == saved["gpu_memory"]["bytes"]
    assert files.view().kv_cache_tokens == saved["kv_cache_tokens"]
    assert files.effective is not None and files.version() == files.effective.version == "0.24.0"
    assert files.launch is not None and files.launch.argv is not None and files.launch.argv[0] == "python3"
    card = PairCard.from_json(json.loads((run / "card.json").read_text()), source="card.json")
    assert (
        card.resources.speculative is not None and card.resources.speculative.kv_cache_tokens == usage.kv_cache_tokens
    )
    row = next(line for line in render_markdown(card).splitlines() if line.startswith("| KV-cache capacity"))
    assert f"| {card.resources.speculative.kv_cache_tokens} |" in row
