"""records/runparts.py: a model's hashes and a run's status.json write the keys earlier code wrote (a hub id
without files, a local folder with them; a status without the sizing line or lost records) and read back."""

from __future__ import annotations

import pytest

from loadgen.errors import BadInput
from loadgen.records.runparts import ArmRecord, DesignRecord, ModelHashes, StatusFile
from loadgen.records.speculative import SpeculativeConfig


def test_model_hashes_of_a_hub_id_and_a_local_folder() -> None:
    hub = ModelHashes("org/model", "abc123", False)
    assert hub.to_json() == {"model": "org/model", "revision": "abc123", "local": False}
    local = ModelHashes("/m", None, True, files={}, content_sha256="e3b0", draft_vocab_size=8)
    assert list(local.to_json().items()) == [
        ("model", "/m"),
        ("revision", None),
        ("local", True),
        ("files", {}),  # an empty folder still says so
        ("content_sha256", "e3b0"),
        ("draft_vocab_size", 8),
    ]
    assert ModelHashes.from_json(local.to_json(), source="protocol.json") == local


def test_status_file_keys_and_reading() -> None:
    assert StatusFile(False, None).to_json() == {"complete": False, "failure": None}
    ended = StatusFile(False, "interrupted (Ctrl-C or SIGTERM)", sizing_end="goal met", requests_not_written=3)
    assert list(ended.to_json()) == ["complete", "failure", "sizing_end", "requests_not_written"]
    assert StatusFile.from_json(ended.to_json(), source="status.json") == ended
    with pytest.raises(BadInput, match=r"^status.json: complete: missing \(expected true or false\)"):
        StatusFile.from_json({"failure": None}, source="status.json")


def test_the_design_record_writes_protocol_jsons_design_keys() -> None:
    arms = (
        ArmRecord("plain", "plain", 8001, False, None),
        ArmRecord(
            "speculative", "speculative", 8002, True, SpeculativeConfig(method="ngram", num_speculative_tokens=3)
        ),
    )
    design = DesignRecord(arms, False, "one server at a time", "blocks", 4, (("plain", "w", "c1", 0),))
    got = design.to_json()
    assert list(got) == ["arms", "co_resident", "co_resident_reason", "placebo_effective", "server_starts", "order"]
    assert got["arms"][1] == {
        "arm": "speculative",
        "server": "speculative",
        "port": 8002,
        "attached": True,
        "speculative_config": {"method": "ngram", "num_speculative_tokens": 3},
    }
    assert got["arms"][0]["speculative_config"] is None and got["order"] == [["plain", "w", "c1", 0]]
    assert DesignRecord.from_json(got, source="protocol.json") == design
