"""The pair check in attach mode reads the engine version the attached server reports, not the installed one."""

from __future__ import annotations

from loadgen.check.preflight import run_pair_check
from loadgen.profile.pairfile import load_pair
from loadgen.run.flow import attached_version
from tests.support.scripted_server import scripted_server

VERSION = {"/version": (200, b'{"version": "0.24.0"}')}


def test_an_attached_servers_version_is_the_one_checked_against() -> None:
    with scripted_server({}, None, VERSION) as url:
        assert attached_version({"plain": url}, None) == "0.24.0"
    lines: list[str] = []
    attached = ["plain", "speculative"]  # as compare passes them: neither runs the engine command here
    version, _ = run_pair_check(load_pair("demo-cpu"), False, lines.append, attached="0.24.0", attached_roles=attached)
    assert version == "0.24.0" and lines[0] == "engine version (attached server): 0.24.0"


def test_no_attached_version_without_an_answering_server() -> None:
    assert attached_version(None, None) is None
    assert attached_version({"plain": "http://127.0.0.1:9"}, "k") is None  # nothing listens on port 9
