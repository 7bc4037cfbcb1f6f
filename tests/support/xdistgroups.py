"""The test folders that run in one pytest-xdist worker each, in order (``make test`` runs pytest-xdist).

pytest-xdist's own ``--dist loadgroup`` reads ``xdist_group`` markers into the test ids, which pytest 9.2's
node ids no longer take; this scheduler groups by folder instead, in the controller, from the collected ids.
Its base, ``LoadScopeScheduling``, hands out the largest groups first, so the end-to-end tests (the longest
run) start at once on one worker while the others share the rest, one test at a time.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

#: Test folders whose tests must not run beside each other: the end-to-end tests start vLLM servers on fixed
#: ports and share session servers; the fleet tests start a local Ray cluster each and clear a node task's
#: leftovers by its id.
SERIAL_GROUPS = {"tests/e2e/": "e2e", "tests/fleet/": "fleet"}


def group_of(nodeid: str) -> str | None:
    """The serial group of a test id (``tests/e2e/test_x.py::test_y`` → ``"e2e"``), None outside them."""
    return next((group for folder, group in SERIAL_GROUPS.items() if nodeid.startswith(folder)), None)


class FolderGroups(LoadScopeScheduling):
    """Each :data:`SERIAL_GROUPS` folder one unit of work; every other test a unit of its own."""

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid) or nodeid
