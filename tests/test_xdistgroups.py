"""The folders ``make test`` runs in one pytest-xdist worker each (tests/support/xdistgroups.py)."""

from __future__ import annotations

from pathlib import Path

from tests.support.xdistgroups import SERIAL_GROUPS, FolderGroups, group_of

ROOT = Path(__file__).resolve().parents[1]


def test_an_end_to_end_or_fleet_test_is_in_its_folder_group_and_any_other_test_alone() -> None:
    assert group_of("tests/e2e/test_attach.py::test_x[a-b]") == "e2e"
    assert group_of("tests/fleet/test_fleet_ray.py::test_y") == "fleet"
    assert group_of("tests/run/test_e2e_like.py::test_z") is None
    assert group_of("tests/test_fleet.py::test_w") is None
    split = FolderGroups._split_scope
    assert split(FolderGroups.__new__(FolderGroups), "tests/e2e/test_a.py::test_b") == "e2e"
    assert split(FolderGroups.__new__(FolderGroups), "tests/cli/test_a.py::test_b") == "tests/cli/test_a.py::test_b"


def test_every_serial_group_names_a_test_folder() -> None:
    for folder in SERIAL_GROUPS:
        assert (ROOT / folder).is_dir() and list((ROOT / folder).glob("test_*.py")), folder
