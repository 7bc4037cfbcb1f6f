"""Write each candidate of a sweep pair file as the plain pair file that `loadgen sweep` checks and runs.

    python scripts/sweep_pairs.py SWEEP OUT_DIR          # prints "NAME PATH" per candidate, file order
    python scripts/sweep_pairs.py SWEEP OUT_DIR --url    # prints the plain server's URL only

`loadgen check OUT_DIR/<candidate>.toml` then checks one candidate before any sweep starts, and
`scripts/launch_server.py OUT_DIR/<candidate>.toml plain` starts the plain server that the sweep's
`--attach-plain URL` measures (the same for every candidate: only `[speculative]` differs). The files
are those of loadgen/run/sweep.py (`candidates/<name>.toml` in the sweep folder): the sweep file without
`[[candidates]]`, with the candidate's `[speculative]` and the name `<sweep>-<candidate>`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadgen.errors import LoadgenError
from loadgen.profile.pairfile import load_pair, resolve_pair_path
from loadgen.profile.tomlread import read_toml
from loadgen.records.candidates import candidate_doc, expand_candidates
from loadgen.run.arms import launch_spec
from loadgen.util import tomlwrite


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", help="a sweep pair name in profiles/pairs/ or a .toml path")
    parser.add_argument("out", type=Path, help="folder for the candidates' pair files")
    parser.add_argument("--url", action="store_true", help="print the plain server's URL instead")
    args = parser.parse_args()
    try:
        path = resolve_pair_path(args.sweep)
        doc = read_toml(path)
        candidates = expand_candidates(doc, path)
        args.out.mkdir(parents=True, exist_ok=True)
        written = []
        for c in candidates:
            target = args.out / f"{c.name}.toml"
            target.write_text(tomlwrite.to_toml(candidate_doc(doc, c, str(doc.get("name", path.stem)))))
            written.append((c.name, target))
        pair = load_pair(str(written[0][1]))
    except (LoadgenError, OSError) as exc:
        print(f"sweep_pairs: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)
    if args.url:
        print(launch_spec(pair, "plain", args.out).base_url)
    else:
        for name, target in written:
            print(name, target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
