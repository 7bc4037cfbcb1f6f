"""Session-scoped real vLLM (CPU) runs shared by the end-to-end tests.

They need the engine venv (.venv-vllm) and the demo models (.models): `make test` builds both.
A vLLM CPU server takes about a minute to start on 2 cores, so each fixture starts its servers once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loadgen.profile.pairfile import load_pair
from loadgen.run.arms import launch_spec
from loadgen.serve import servers

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / ".models"
TARGET = MODELS / "smollm2-135m-instruct"
DRAFT = MODELS / "smollm2-135m-draft"
ENGINE_PY = ROOT / ".venv-vllm" / "bin" / "python"


#: Session servers that stay up from their first test to the end of the session: the tests that use one run
#: last, one after the other, so it is not up (its memory held, its engine beside every other run's servers on
#: 2 cores) through the rest of the suite.
LATE_FIXTURES = ("demo_spec_server",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)
    # a stable sort: the tests of a late fixture keep their order among themselves, at the end of the run
    items.sort(key=lambda item: any(name in getattr(item, "fixturenames", ()) for name in LATE_FIXTURES))


def _require_engine() -> None:
    missing = [str(p) for p in (ENGINE_PY, TARGET / "config.json", DRAFT / "config.json") if not p.exists()]
    if missing:
        pytest.fail(
            f"end-to-end tests need the engine and demo models ({', '.join(missing)} missing): run "
            "`make models`, or `make test-unit` for the tests that need no engine"
        )


@pytest.fixture(scope="session")
def selfdraft_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`loadgen compare` on the target-as-its-own-draft pair (greedy, K=3), through the real CLI."""
    _require_engine()
    runs = tmp_path_factory.mktemp("runs")
    proc = subprocess.run(
        [sys.executable, "-m", "loadgen", "compare", "tests/data/pairs/selfdraft.toml", "--runs-dir", str(runs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    run_dirs = sorted((runs / "selfdraft").glob("*"))
    return {
        "proc": proc,
        "run_dir": run_dirs[-1] if run_dirs else None,
        "card": json.loads((run_dirs[-1] / "card.json").read_text()) if run_dirs else None,
    }


@pytest.fixture(scope="session")
def demo_spec_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Server]:
    """The embedded demo pair's speculative server (distilled draft, K=3), shared by every test."""
    _require_engine()
    spec = launch_spec(load_pair("demo-cpu"), "speculative", tmp_path_factory.mktemp("demo"))
    with servers.running(spec) as server:
        yield server
