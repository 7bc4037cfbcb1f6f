"""Start one server of a pair by hand, exactly as `loadgen compare` would (same argv and environment).

    python scripts/launch_server.py PAIR {plain,speculative} [--print]

The server runs in the foreground (Ctrl-C stops it); `loadgen compare PAIR --attach-plain URL` (or
`--attach-speculative URL`) can then measure it. `--print` only prints the command line.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadgen.errors import LoadgenError
from loadgen.profile.pairfile import load_pair
from loadgen.run.arms import launch_spec


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pair", help="a pair name in profiles/pairs/ or a .toml path")
    parser.add_argument("role", choices=("plain", "speculative"))
    parser.add_argument("--print", action="store_true", help="print the command line and exit")
    args = parser.parse_args()
    try:
        spec = launch_spec(load_pair(args.pair), args.role, Path(tempfile.gettempdir()))
    except LoadgenError as exc:
        print(f"launch_server: error: {exc}", file=sys.stderr)
        return exc.exit_code
    env_prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in spec.env.items())
    print(f"{env_prefix} {shlex.join(spec.argv)}".strip(), flush=True)
    if args.print:
        return 0
    os.execvpe(spec.argv[0], spec.argv, {**os.environ, **spec.env})


if __name__ == "__main__":
    sys.exit(main())
