"""scripts/envinstall.py: which installer runs and says so, and uv pointed at the places pip looks (pip's own
settings), so a wheel folder and a local CPU build of torch are found by both. A stand-in uv records what it is
asked; nothing is downloaded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "envinstall.py"
sys.path.insert(0, str(REPO / "scripts"))

import envinstall  # noqa: E402


def test_pip_settings_take_the_variable_over_the_files_and_the_later_file() -> None:
    listing = (
        ":env:.find-links='/home/me/wheels'\n"
        ":env:.no-index='1'\n"
        "global.find-links='/opt/wheels'\n"
        "global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'\n"
        "global.constraint='/etc/xdg/pip/constraints.txt'\n"
        "user.constraint='/home/me/c.txt'\n"
        "not a setting\n"
    )
    assert envinstall.pip_settings(listing) == {
        "find-links": "/home/me/wheels",
        "no-index": "1",
        "extra-index-url": "file:///opt/pypi/simple file:///opt/pypi-more/simple",
        "constraint": "/home/me/c.txt",
    }


def test_uv_flags_name_every_folder_index_and_switch_pip_would_use() -> None:
    settings = {
        "find-links": "/opt/wheels /home/me/wheels",
        "extra-index-url": "file:///opt/pypi/simple",
        "index-url": "https://mirror.example/simple",
        "no-index": "true",
        "no-cache-dir": "1",
        "constraint": "/etc/xdg/pip/constraints.txt",
        "timeout": "180",  # no uv flag: left out
    }
    assert envinstall.uv_flags(settings) == [
        "--index-strategy", "unsafe-best-match",
        "--find-links", "/opt/wheels", "--find-links", "/home/me/wheels",
        "--extra-index-url", "file:///opt/pypi/simple",
        "--index-url", "https://mirror.example/simple",
        "--no-index", "--no-cache",
        "--constraint", "/etc/xdg/pip/constraints.txt",
    ]  # fmt: skip
    assert envinstall.uv_flags({"no-index": "0"}) == ["--index-strategy", "unsafe-best-match"]


def _fake_uv(tmp_path: Path) -> Path:
    """A uv that answers --version and writes every other call's arguments (and an --excludes file's
    lines) to calls.jsonl; `uv venv` makes VENV/bin/python."""
    uv = tmp_path / "uv"
    uv.write_text(
        f"#!{sys.executable}\n"
        "import json, pathlib, sys\n"
        "args = sys.argv[1:]\n"
        "if args == ['--version']:\n"
        "    print('uv 0.13.8 (x86_64-unknown-linux-gnu)'); sys.exit(0)\n"
        "ex = args.index('--excludes') + 1 if '--excludes' in args else 0\n"
        "dropped = pathlib.Path(args[ex]).read_text().split() if ex else []\n"
        f"with open({str(tmp_path / 'calls.jsonl')!r}, 'a') as f: f.write(json.dumps([args, dropped]) + '\\n')\n"
        "if args[0] == 'venv':\n"
        "    py = pathlib.Path(args[-3]) / 'bin' / 'python'; py.parent.mkdir(parents=True); py.touch()\n"
    )
    uv.chmod(0o755)
    return uv


def test_uv_creates_the_venv_and_installs_with_pips_settings_and_the_drops(tmp_path: Path) -> None:
    uv, venv = _fake_uv(tmp_path), tmp_path / "venv"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PIP_FIND_LINKS": "/srv/wheels", "PIP_NO_INDEX": "1"}
    argv = [sys.executable, str(SCRIPT), "--uv", str(uv), str(venv), "--drop", "torchvision", "--drop", "torchaudio"]
    proc = subprocess.run([*argv, "--", "-r", "req.txt"], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == f"installer: uv 0.13.8 ({uv})"
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    seed = ["--index-strategy", "unsafe-best-match", "--find-links", "/srv/wheels", "--no-index"]
    assert calls[0] == [["venv", "--seed", "-q", *seed, str(venv), "--python", sys.executable], []]
    install, dropped = calls[1]
    assert install[:3] == ["pip", "install", "--python"] and install[3] == str(venv / "bin" / "python")
    assert install[4:6] == ["--index-strategy", "unsafe-best-match"]
    assert install[install.index("--find-links") + 1] == "/srv/wheels" and "--no-index" in install
    assert install[-2:] == ["-r", "req.txt"] and dropped == ["torchvision", "torchaudio"]
    # the venv is there: a second install (an extra) only installs
    proc = subprocess.run([*argv[:5], "--", "-e", "."], capture_output=True, text=True, timeout=60, env=env)
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert proc.returncode == 0 and len(calls) == 3 and calls[2][0][:2] == ["pip", "install"]
    assert calls[2][0][-2:] == ["-e", "."] and calls[2][1] == []


def test_without_uv_pip_runs_and_the_first_line_says_why(tmp_path: Path) -> None:
    missing = tmp_path / "tools" / "uv"
    assert envinstall.find_uv(None) == (None, "installer: pip (uv not asked for: INSTALLER=pip)")
    assert envinstall.find_uv(str(missing)) == (
        None,
        f"installer: pip (no {missing}: uv's bootstrap with pip failed, .tools/uv.log says why)",
    )
    broken = tmp_path / "broken-uv"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    uv, line = envinstall.find_uv(str(broken))
    assert uv is None and line.startswith(f"installer: pip ({broken} does not run: ")


def test_a_call_without_the_install_arguments_is_one_usage_line(tmp_path: Path) -> None:
    for args in ([str(tmp_path / "venv")], [str(tmp_path / "venv"), "--"]):
        proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1
        assert proc.stderr.startswith("envinstall.py: usage: envinstall.py VENV")
