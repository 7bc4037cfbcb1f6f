#!/usr/bin/env bash
# Reproduce docs/examples/h200/ on one GPU node with vLLM 0.24.0 (CUDA 13, torch 2.11) and no model hub.
#
#   scripts/h200_example.sh RESULTS_DIR
#
# Before: vLLM installed so that `PYTHONPATH=/tmp/site python3 -m vllm.entrypoints.openai.api_server`
# starts it (offline: `pip download --no-deps` of vLLM 0.24.0 and its pinned dependencies, then
# `pip install --no-index --no-deps --target /tmp/site WHEELS`), and a tokenizer folder in .gpu/tok
# (the demo target's tokenizer.json, tokenizer_config.json, config.json). loadgen itself needs only
# httpx, click, numpy, prometheus-client, tokenizers, psutil, nvidia-ml-py (the GPU image has them).
#
# Steps: build the random-weight models on the GPU; start the plain server once (it is identical for
# the three pairs) and attach every compare to it; each compare launches its speculative server after
# the plain one is up (one after the other on one GPU, memory fraction 0.3 each), replays both
# workloads at concurrency 1, 4, 16 and 64 with CUDA graphs on, and writes its run folder.
set -euo pipefail
results=${1:?usage: scripts/h200_example.sh RESULTS_DIR}
mkdir -p "$results/runs" "$results/logs"
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
stamp() { date -u +%H:%M:%S; }

echo "$(stamp) building models"
python3 scripts/build_random_models.py --tokenizer-from .gpu/tok --out .models 2>&1 | tee "$results/logs/models.log"

for pair in h200-1b-draft h200-1b-selfdraft h200-1b-ngram; do
  python3 -m loadgen check "$pair" | tee "$results/logs/check-$pair.log"
done

echo "$(stamp) starting the plain server"
setsid python3 scripts/launch_server.py h200-1b-draft plain > "$results/logs/plain-server.log" 2>&1 &
plain_pid=$!
trap 'kill -TERM -- -$plain_pid 2>/dev/null || true' EXIT
started=$(date +%s)
until curl -sf http://127.0.0.1:8400/health > /dev/null; do
  if ! kill -0 "$plain_pid" 2>/dev/null; then echo "plain server died"; tail -20 "$results/logs/plain-server.log"; exit 1; fi
  if (( $(date +%s) - started > 900 )); then echo "plain server not ready after 900 s"; exit 1; fi
  sleep 2
done
echo "$(stamp) plain server ready after $(( $(date +%s) - started )) s"

for pair in h200-1b-draft h200-1b-selfdraft h200-1b-ngram; do
  echo "$(stamp) compare $pair"
  python3 -m loadgen compare "$pair" --attach-plain http://127.0.0.1:8400 --runs-dir "$results/runs" \
    2>&1 | tee "$results/logs/compare-$pair.log" || echo "compare $pair exited with ${PIPESTATUS[0]}"
done
echo "$(stamp) done"
