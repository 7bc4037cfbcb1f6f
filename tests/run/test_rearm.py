"""The arms of a resumed run come from protocol.json (run/rearm.py): an arm recorded as attached is attached
again (a placebo on the plain server's blocks at the plain URL), never launched; a URL for a server the run
launched is refused, and so is an attached arm with slots left whose URL is not known."""

from __future__ import annotations

import pytest

from loadgen.errors import BadInput
from loadgen.profile.pairfile import load_pair
from loadgen.records.protoparts import RunDesign
from loadgen.records.runparts import ArmRecord
from loadgen.records.wire import Where
from loadgen.run.arms import Arm
from loadgen.run.rearm import recorded_arms, resume_arms

PAIR = load_pair("demo-cpu")
URL = "http://127.0.0.1:8000"


def _records(*rows: tuple[str, str, int, bool]) -> dict[str, ArmRecord]:
    return {r[0]: ArmRecord(*r, None) for r in rows}


def test_a_placebo_recorded_on_the_attached_plain_server_is_attached_there_not_launched() -> None:
    # built from the pair file alone, the placebo would be a server of its own at port + 2
    built = [Arm("plain", PAIR, "plain", 8000, URL), Arm("placebo", PAIR, "placebo", 8002, None)]
    records = _records(("plain", "plain", 8000, True), ("placebo", "plain", 8000, True))
    plain, placebo = resume_arms(built, records, {}, {"placebo"})
    assert placebo.server == "plain" and placebo.port == 8000 and placebo.attach_url == URL
    assert plain.attach_url == URL


def test_an_attached_arm_with_slots_left_and_no_url_is_refused_naming_the_flag() -> None:
    built = [Arm("plain", PAIR, "plain", 8000, None), Arm("speculative", PAIR, "speculative", 8001, None)]
    records = _records(("plain", "plain", 8000, False), ("speculative", "speculative", 8001, True))
    with pytest.raises(BadInput, match="give it again with --attach-speculative URL"):
        resume_arms(built, records, {}, {"speculative"})
    # nothing left on it: nothing to attach, nothing refused
    assert resume_arms(built, records, {}, {"plain"})[1].attach_url is None


def test_a_url_for_a_server_the_run_launched_is_refused() -> None:
    built = [Arm("plain", PAIR, "plain", 8000, URL)]
    with pytest.raises(BadInput, match="this run launched its plain server .*drop --attach-plain"):
        resume_arms(built, _records(("plain", "plain", 8000, False)), {"plain": URL}, {"plain"})


def test_a_protocol_of_older_code_keeps_the_planned_arms() -> None:
    built = [Arm("plain", PAIR, "plain", 8000, URL)]
    assert recorded_arms(RunDesign(blocks=2)) == recorded_arms(None) == {}
    assert resume_arms(built, {}, {}, {"plain"}) == built
    with pytest.raises(BadInput, match=r"^protocol.json: design.arms\[0\]"):
        RunDesign.read_at({"arms": [{"arm": "plain"}]}, Where("protocol.json").at("design"))
