"""Create a virtual environment if it is missing and install into it, with uv when it can be had, else pip.

Usage (the system python, standard library only: it runs before any environment exists)::

    python3 scripts/envinstall.py VENV [--uv PATH] [--drop NAME]... -- PIP-INSTALL-ARGS...

The first line says which installer runs and why: ``installer: uv 0.13.8 (.tools/uv/bin/uv)``, or
``installer: pip (...)`` naming why uv did not (no ``--uv``, as with ``make INSTALLER=pip``; the file
missing because its bootstrap failed; a version that does not run). Then, with uv::

    uv venv --seed VENV --python <this python>          (when VENV/bin/python is missing)
    uv pip install --python VENV/bin/python <pip's settings> PIP-INSTALL-ARGS

and with pip ``python -m venv VENV`` and ``VENV/bin/pip install PIP-INSTALL-ARGS``. uv is pointed at the
places pip would look: pip's own settings (``pip config list``: ``PIP_*`` variables and pip.conf files) for
find-links, the index and extra indexes, ``no-index``, ``no-cache-dir`` and a constraint file become uv's
flags, and uv picks the best version over all indexes as pip does (``--index-strategy unsafe-best-match``).
So a wheel folder (``PIP_FIND_LINKS=DIR PIP_NO_INDEX=1``, README.md) and a local file such as a CPU build of
torch that pip finds are found by both. ``--drop NAME`` keeps a package out of the environment: uv never
installs it (``--excludes``), pip uninstalls it afterwards. The exit status is the failing step's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: pip settings that uv is given, and how: a flag per value (lists), or a flag alone when the setting is on.
LIST_FLAGS = {"find-links": "--find-links", "extra-index-url": "--extra-index-url", "index-url": "--index-url"}
SWITCH_FLAGS = {"no-index": "--no-index", "no-cache-dir": "--no-cache"}
FILE_FLAGS = {"constraint": "--constraint"}
TRUE = {"1", "true", "yes", "on"}


def pip_settings(listing: str) -> dict[str, str]:
    """``pip config list`` lines (``global.find-links='/opt/wheels'``, ``:env:.no-index='1'``) as key -> value;
    a ``PIP_*`` variable wins over a file, a later file over an earlier one, as in pip."""
    files: dict[str, str] = {}
    env: dict[str, str] = {}
    for line in listing.splitlines():
        scope, sep, rest = line.partition(".")
        key, eq, value = rest.partition("=")
        if not sep or not eq:
            continue
        (env if scope == ":env:" else files)[key.strip()] = value.strip().strip("'\"")
    return {**files, **env}


def uv_flags(settings: dict[str, str]) -> list[str]:
    """uv's flags for pip's ``settings`` (module docstring), beginning with pip's index strategy."""
    flags = ["--index-strategy", "unsafe-best-match"]
    for key, flag in LIST_FLAGS.items():
        for value in settings.get(key, "").split():
            flags += [flag, value]
    for key, flag in SWITCH_FLAGS.items():
        if settings.get(key, "").lower() in TRUE:
            flags.append(flag)
    for key, flag in FILE_FLAGS.items():
        if settings.get(key):
            flags += [flag, settings[key]]
    return flags


def find_uv(uv: str | None) -> tuple[str | None, str]:
    """The uv executable to run (None: pip) and the ``installer: ...`` line that says so."""
    if uv is None:
        return None, "installer: pip (uv not asked for: INSTALLER=pip)"
    if not Path(uv).is_file():
        return None, f"installer: pip (no {uv}: uv's bootstrap with pip failed, .tools/uv.log says why)"
    try:
        version = subprocess.run([uv, "--version"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"installer: pip ({uv} does not run: {exc})"
    return uv, f"installer: {' '.join(version.split()[:2])} ({uv})"


def run(cmd: list[str]) -> int:
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd).returncode


def install_uv(uv: str, venv: Path, args: list[str], drop: list[str]) -> int:
    python = venv / "bin" / "python"
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60
    ).stdout
    flags = uv_flags(pip_settings(listing))
    if not python.exists():
        # the seed (pip, as in a venv of python -m venv) comes from the same places as the packages
        seed_flags = flags[: flags.index("--constraint")] if "--constraint" in flags else flags
        status = run([uv, "venv", "--seed", "-q", *seed_flags, str(venv), "--python", sys.executable])
        if status:
            return status
    cmd = [uv, "pip", "install", "--python", str(python), *flags]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", prefix="envinstall-drop-") as excludes:
        if drop:
            excludes.write("".join(f"{name}\n" for name in drop))
            excludes.flush()
            cmd += ["--excludes", excludes.name]
        return run([*cmd, *args])


def install_pip(venv: Path, args: list[str], drop: list[str]) -> int:
    if not (venv / "bin" / "python").exists():
        status = run([sys.executable, "-m", "venv", str(venv)])
        if status:
            return status
    pip = [str(venv / "bin" / "pip")]
    status = run([*pip, "install", "--disable-pip-version-check", *args])
    if status or not drop:
        return status
    return run([*pip, "uninstall", "-q", "-y", *drop])


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--" not in args or not args[args.index("--") + 1 :]:
        usage = "envinstall.py VENV [--uv PATH] [--drop NAME]... -- PIP-INSTALL-ARGS..."
        print(f"envinstall.py: usage: {usage}", file=sys.stderr)
        return 2
    cut = args.index("--")
    parser = argparse.ArgumentParser(prog="envinstall.py")
    parser.add_argument("venv", type=Path)
    parser.add_argument("--uv", help="the uv executable; without it, or when it does not run, pip installs")
    parser.add_argument("--drop", action="append", default=[], help="a package kept out of the environment")
    opts = parser.parse_args(args[:cut])
    uv, line = find_uv(opts.uv or None)
    print(line, flush=True)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if uv is not None:
        return install_uv(uv, opts.venv, args[cut + 1 :], opts.drop)
    return install_pip(opts.venv, args[cut + 1 :], opts.drop)


if __name__ == "__main__":
    sys.exit(main())
