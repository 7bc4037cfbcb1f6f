#!/usr/bin/env bash
# Build an offline wheelhouse for the air-gapped GPU node (CPython 3.12, x86_64, manylinux; its image already
# holds torch 2.11.0+cu130, numpy, transformers, tokenizers, triton and more): `pip download --no-deps` of each
# pin in REQUIREMENTS for that platform, whatever Python and machine run this script. Files larger than
# PART_MB MiB are split into NAME.part-aa, NAME.part-ab, ... (PART_MB MiB each, the last one smaller) with
# NAME.sha256 beside (the whole file's sha256), so that each part fits one device call beside the working
# tree (64 MiB a call in all, the tree's tracked and untracked files included: scripts/h200_sweep.sh's header).
# Choose PART_MB below 64 less the tree's size (`git ls-files -z | xargs -0 du -cb | tail -1`): the default 55
# fits a tree of up to ~8 MiB; the tree was 21 MiB on 2026-12-04, where PART_MB 38 leaves ~4 MiB spare.
#
#   scripts/build_wheelhouse.sh REQUIREMENTS OUT_DIR [PART_MB]
#   scripts/build_wheelhouse.sh docs/examples/h200/vllm-0.24.0-offline.txt .gpu/wh-0.24.0
#   scripts/build_wheelhouse.sh scripts/vllm-0.26.0-offline.txt .gpu/wh-0.26.0
#
# REQUIREMENTS pins every package with == (the lists name each dependency themselves: nothing is resolved);
# OUT_DIR must be empty or absent. On the node, in OUT_DIR, join the parts, check them and install:
#   for s in *.sha256; do w=${s%.sha256}; cat "$w".part-* > "$w" && rm "$w".part-*; done
#   sha256sum -c *.sha256 && python3 -m pip install -q --no-index --no-deps --no-compile --target DIR *.whl
set -euo pipefail
usage="usage: scripts/build_wheelhouse.sh REQUIREMENTS OUT_DIR [PART_MB]"
req=${1:?$usage}
out=${2:?$usage}
part_mb=${3:-55}
[ -f "$req" ] || { echo "no such requirement file: $req" >&2; exit 2; }
[[ $part_mb =~ ^[1-9][0-9]*$ ]] || { echo "PART_MB must be a whole number of MiB: $part_mb" >&2; exit 2; }
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ]; then
  echo "$out is not empty: give an empty or new folder (one wheelhouse a folder)" >&2
  exit 2
fi
mkdir -p "$out"

# every requirement line must be an exact pin (NAME==VERSION, optionally with a marker after ';')
pins=$(grep -v '^[[:space:]]*#' "$req" | sed 's/#.*//; s/[[:space:]]*$//' | grep -v '^$' || true)
bad=$(grep -vE '^[A-Za-z0-9._-]+==[A-Za-z0-9.+!_-]+([[:space:]]*;.*)?$' <<< "$pins" || true)
[ -z "$bad" ] || { echo "not an exact pin in $req:" >&2; echo "$bad" >&2; exit 2; }
n_pins=$(grep -c . <<< "$pins" || true)

plat=(--only-binary=:all: --python-version 3.12 --implementation cp)
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
  manylinux2014_x86_64 manylinux_2_31_x86_64 manylinux_2_34_x86_64 manylinux_2_35_x86_64 manylinux1_x86_64; do
  plat+=(--platform "$p")
done
python3 -m pip download -q --no-deps "${plat[@]}" -d "$out" -r "$req"

cd "$out"
n_whl=$(compgen -G '*.whl' | wc -l)
if [ "$n_whl" -ne "$n_pins" ]; then
  echo "$req pins $n_pins packages but $out holds $n_whl wheels" >&2
  exit 1
fi
limit=$((part_mb * 1024 * 1024))
for f in *.whl; do
  if [ "$(stat -c %s "$f")" -gt "$limit" ]; then
    sha256sum "$f" > "$f.sha256"
    split -b "$limit" -a 2 "$f" "$f.part-"
    rm "$f"
  fi
done
ls -l --time-style=+ | awk 'NR > 1 {printf "%12d  %s\n", $5, $NF}'
du -cb -- * | tail -1 | awk -v n="$n_whl" '{printf "%d wheels, %.1f MiB in all\n", n, $1 / 1048576}'
