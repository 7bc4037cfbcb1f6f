"""Prove that a widened target (scripts/widen_target.py) served by vLLM in bfloat16 computes its source's function.

    # 1. the source's exact function (float32) and its own bfloat16 rounding, with transformers
    python scripts/verify_widened.py reference --model .models/smollm2-135m-instruct --out ref.json
    # 2. against the running vLLM server of the widened target
    python scripts/verify_widened.py compare --ref ref.json --url http://127.0.0.1:8400 \
        --marker .models/smollm2-7b-widened/.build-complete.json

``reference`` decodes 16 held-out prompts greedily for 64 tokens with the source in transformers (one prompt
at a time, KV cache, no EOS stop, on the GPU when there is one), in float32 (the exact function) and in
bfloat16, keeping the top-5 logprobs of each step. The bfloat16 run against the float32 one is the noise of
bfloat16 rounding for this very function: the baseline. ``compare`` sends the same prompts, all at once, to
the widened target's server (``/v1/completions``, ``temperature`` 0, ``ignore_eos``, ``logprobs`` 5,
``return_tokens_as_token_ids``) and measures it against the float32 reference the same way: greedy
continuations identical (count and first differing position) and the largest and median difference of a
top-5 logprob at the positions before the first difference (tokens in both top-5 sets). The figures and a
one-line ``summary`` go into the widened model's build marker, which the pair card prints beside the target
(loadgen/check/hashes.py). Exit 0 when the widened target is no further from the exact function than the
source in bfloat16 is (:func:`verdict`), 1 when it is further, 2 on bad input. Greedy continuations part
where the exact function's top two tokens are nearly tied; with 16 prompts their count is a coarse
statistic, so it is compared by Fisher's exact test, not as a number.

Seen on the CPU (2026-12-02): SmolLM2-135M-Instruct widened to hidden 1024 in float32 gives the source's
log-probabilities within 4e-5 and the same greedy tokens; the source itself in bfloat16 moves them by up to
1.26 nats (median 0.06). So a batch-shape baseline (the source against itself in bfloat16) understates
the noise a widened model may legitimately show, which an earlier version of this script used.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import sys
import urllib.request
from pathlib import Path
from typing import Any

PROMPTS = [
    "Explain why the sky is blue in two sentences.",
    "Write a haiku about a lighthouse in winter.",
    "What are three uses of baking soda around the house?",
    "Summarise the plot of Romeo and Juliet.",
    "How do I reverse a list in Python?",
    "Give me a packing list for a weekend hike.",
    "What is the difference between weather and climate?",
    "Describe how a bicycle gear works.",
    "List four facts about the planet Mars.",
    "Why do cats purr?",
    "Write a short apology email for missing a meeting.",
    "What does a compiler do?",
    "Suggest a name for a bakery by the sea.",
    "How many minutes are in a week? Show the steps.",
    "What causes the seasons on Earth?",
    "Translate 'good morning, friend' into French and Spanish.",
]
TOKENS = 64
TOP = 5


def run_reference(model: str) -> dict[str, Any]:
    """The source's greedy continuations with top-5 logprobs, in float32 and bfloat16 (transformers)."""
    import torch
    import transformers

    device = "cuda" if torch.cuda.is_available() else "cpu"
    tok = transformers.AutoTokenizer.from_pretrained(model)
    out: dict[str, Any] = {"model": model, "device": device}
    for dtype in ("float32", "bfloat16"):
        lm = transformers.AutoModelForCausalLM.from_pretrained(model, dtype=getattr(torch, dtype)).to(device).eval()
        runs = []
        with torch.no_grad():
            for prompt in PROMPTS:
                ids = tok(prompt, return_tensors="pt").input_ids.to(device)
                step = lm(ids, use_cache=True)
                got: dict[str, Any] = {"ids": [], "top": []}
                for _ in range(TOKENS):
                    logprobs = torch.log_softmax(step.logits[0, -1].float(), -1)
                    top = torch.topk(logprobs, TOP)
                    pairs = zip(top.indices.tolist(), top.values.tolist(), strict=True)
                    got["top"].append({str(i): v for i, v in pairs})
                    nxt = int(torch.argmax(step.logits[0, -1]))
                    got["ids"].append(nxt)
                    step = lm(
                        torch.tensor([[nxt]], device=device), past_key_values=step.past_key_values, use_cache=True
                    )
                runs.append(got)
        out[dtype] = runs
        del lm
    return out


def _ask(url: str, name: str, prompt: str) -> dict[str, Any]:
    body = {
        "model": name,
        "prompt": prompt,
        "max_tokens": TOKENS,
        "temperature": 0.0,
        "ignore_eos": True,
        "logprobs": TOP,
        "return_tokens_as_token_ids": True,
    }
    req = urllib.request.Request(
        f"{url}/v1/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=300) as resp:
        lp = json.loads(resp.read())["choices"][0]["logprobs"]
    ids = [int(t.split(":", 1)[1]) for t in lp["tokens"]]
    top = [{k.split(":", 1)[1]: v for k, v in (pos or {}).items()} for pos in lp["top_logprobs"]]
    return {"ids": ids, "top": top}


def run_server(url: str) -> list[dict[str, Any]]:
    """The server's answers to :data:`PROMPTS`, all in flight at once (one batch)."""
    with urllib.request.urlopen(f"{url}/v1/models", timeout=30) as resp:
        name = json.loads(resp.read())["data"][0]["id"]
    with concurrent.futures.ThreadPoolExecutor(len(PROMPTS)) as pool:
        return list(pool.map(lambda p: _ask(url, name, p), PROMPTS))


def agreement(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> dict[str, Any]:
    """Identical continuations, first differing positions and the largest top-5 logprob difference (nats)
    at the positions before the first difference, over tokens in both top-5 sets."""
    same, firsts, deltas = 0, [], []
    for x, y in zip(a, b, strict=True):
        first = next((i for i, (s, t) in enumerate(zip(x["ids"], y["ids"], strict=False)) if s != t), None)
        if first is None:
            same += 1
        else:
            firsts.append(first)
        for pos in range(first if first is not None else min(len(x["top"]), len(y["top"]))):
            tx, ty = x["top"][pos], y["top"][pos]
            deltas += [abs(tx[k] - ty[k]) for k in tx.keys() & ty.keys()]
    deltas.sort()
    return {
        "identical": same,
        "of": len(a),
        "first_differences": sorted(firsts),
        "logprob_max_diff": deltas[-1] if deltas else None,
        "logprob_p50_diff": deltas[len(deltas) // 2] if deltas else None,
        "compared_logprobs": len(deltas),
    }


def fisher_p(a: int, n_a: int, b: int, n_b: int) -> float:
    """Two-sided Fisher exact test p-value that a/n_a and b/n_b identical continuations share one rate
    (hypergeometric, the tables no more likely than the observed one; Fisher 1922)."""
    total, ones = n_a + n_b, a + b

    def prob(x: int) -> float:
        return math.comb(ones, x) * math.comb(total - ones, n_a - x) / math.comb(total, n_a)

    seen = prob(a)
    tables = (prob(x) for x in range(max(0, ones - n_b), min(ones, n_a) + 1))
    return min(1.0, sum(p for p in tables if p <= seen * (1 + 1e-9)))


def verdict(wide: dict[str, Any], base: dict[str, Any]) -> bool:
    """True when the widened target is within the source's own bf16 noise: its largest and median top-5
    logprob differences from the exact function within 2x the source's in bf16 (+0.05 and +0.01 nats), and
    its count of identical continuations not below the source's by more than chance (Fisher p >= 0.05)."""
    fewer = (
        wide["identical"] < base["identical"]
        and fisher_p(wide["identical"], wide["of"], base["identical"], base["of"]) < 0.05
    )
    return (
        (wide["logprob_max_diff"] or 0.0) <= 2 * (base["logprob_max_diff"] or 0.0) + 0.05
        and (wide["logprob_p50_diff"] or 0.0) <= 2 * (base["logprob_p50_diff"] or 0.0) + 0.01
        and not fewer
    )


def summary(marker: dict[str, Any], wide: dict[str, Any], base: dict[str, Any]) -> str:
    """The one line the card prints beside the target."""
    src = Path(marker.get("recipe", {}).get("source", "the source")).name
    p = fisher_p(wide["identical"], wide["of"], base["identical"], base["of"])
    return (
        f"widened from {src} to {marker.get('parameters', 0) / 1e9:.2f} B parameters (scripts/widen_target.py),"
        f" checked in vLLM bf16 on {wide['of']} held-out prompts x {TOKENS} greedy tokens against the source in"
        f" float32: top-{TOP} logprobs within {wide['logprob_max_diff']:.3f} nats (median"
        f" {wide['logprob_p50_diff']:.3f}), {wide['identical']}/{wide['of']} continuations identical; the source"
        f" itself in bf16: {base['logprob_max_diff']:.3f} (median {base['logprob_p50_diff']:.3f}),"
        f" {base['identical']}/{base['of']} (Fisher p = {p:.2f})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    ref = sub.add_parser("reference")
    ref.add_argument("--model", required=True)
    ref.add_argument("--out", type=Path, required=True)
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("--ref", type=Path, required=True)
    cmp_.add_argument("--url", required=True)
    cmp_.add_argument("--marker", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.cmd == "reference":
        args.out.write_text(json.dumps(run_reference(args.model)))
        print(f"verify: reference of {args.model} written to {args.out}")
        return 0
    try:
        reference = json.loads(args.ref.read_text())
        marker = json.loads(args.marker.read_text())
    except (OSError, ValueError) as exc:
        print(
            f"verify_widened: cannot read {exc}: run `reference` first and pass the widened model's marker",
            file=sys.stderr,
        )
        return 2
    base = agreement(reference["bfloat16"], reference["float32"])
    wide = agreement(run_server(args.url.rstrip("/")), reference["float32"])
    marker["function_check"] = {
        "widened_bf16_vs_source_fp32": wide,
        "source_bf16_vs_source_fp32": base,
        "prompts": len(PROMPTS),
        "tokens": TOKENS,
        "top_logprobs": TOP,
        "engine": "vLLM bfloat16 vs transformers float32",
        "same_function": verdict(wide, base),
    }
    marker["summary"] = summary(marker, wide, base)
    args.marker.write_text(json.dumps(marker, indent=1))
    print(f"verify: {marker['summary']}")
    return 0 if verdict(wide, base) else 1


if __name__ == "__main__":
    sys.exit(main())
