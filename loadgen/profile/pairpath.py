"""Where a pair file is: a pair name under ``profiles/pairs/`` or a path to a ``.toml`` file, with one line
naming the path or the available names (and the closest one) when there is none."""

from __future__ import annotations

import difflib
from pathlib import Path

from loadgen.errors import ProfileError

PAIRS_DIR = Path("profiles/pairs")


def available_pairs(pairs_dir: Path = PAIRS_DIR) -> list[str]:
    """Names of the pair files in ``pairs_dir`` (sorted)."""
    return sorted(p.stem for p in pairs_dir.glob("*.toml"))


def resolve_pair_path(name_or_path: str, pairs_dir: Path = PAIRS_DIR) -> Path:
    """Map a pair name (``demo-cpu``) or a path (it holds a ``/`` or ends in ``.toml``) to its TOML file.

    Raises ProfileError naming a path that is no file as that path (with the file of the same name in ``pairs_dir``
    when there is one), and a name that is no pair with the available pairs and the closest name (difflib)."""
    candidate = Path(name_or_path)
    names = available_pairs(pairs_dir)
    listed = ", ".join(names) or (
        f"none in {pairs_dir.resolve()} (pair names are read from the repository's profiles/pairs/: run loadgen "
        "from the repository root)"
    )
    if "/" in name_or_path or candidate.suffix == ".toml":
        if candidate.is_file():
            return candidate
        same = pairs_dir / (candidate.name if candidate.suffix == ".toml" else f"{candidate.name}.toml")
        hint = (
            f"; did you mean {same}?"
            if same.is_file() and same.resolve() != candidate.resolve()
            else f"; pass an existing .toml file or a pair name (available: {listed})"
        )
        raise ProfileError(
            f"no pair file {name_or_path} ({'a folder' if candidate.is_dir() else 'no such file'})" + hint
        )
    by_name = pairs_dir / f"{name_or_path}.toml"
    if by_name.is_file():
        return by_name
    close = difflib.get_close_matches(name_or_path, names, n=1)
    raise ProfileError(
        f"unknown pair {name_or_path!r}: no {by_name}; "
        + (f"did you mean {close[0]!r}? " if close else "")
        + f"available pairs: {listed} (give a pair name or the path to a .toml file)"
    )
