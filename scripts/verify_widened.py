"""Prove in vLLM, in bfloat16, that a widened target (scripts/widen_target.py) computes its source's function.

    # 1. before any server starts (vLLM's memory profiling must see a free GPU): the source, offline
    python scripts/verify_widened.py reference --model .models/smollm2-135m-instruct --out ref.json
    # 2. against the running plain server of the widened target
    python scripts/verify_widened.py compare --ref ref.json --url http://127.0.0.1:8400 \
        --marker .models/smollm2-7b-widened/.build-complete.json

``reference`` runs the source with vLLM's offline ``LLM`` (eager, 8% of the GPU) on 16 held-out prompts,
64 greedy tokens each with the top-5 logprobs, twice: all prompts in one batch, then one at a time. The
two runs differ only in batch shape, so their disagreement is the engine's own bf16 noise, the baseline.
``compare`` sends the same prompts, all at once, to the widened target's server (``/v1/completions``,
``temperature`` 0, ``ignore_eos``, ``logprobs`` 5, ``return_tokens_as_token_ids``) and measures against the
source's batch run: greedy continuations identical (count and first differing position) and the largest
difference of a top-5 logprob at the positions before the first difference (tokens in both top-5 sets).
The figures and a one-line ``summary`` go into the widened model's build marker, which the pair card
prints beside the target (loadgen/check/hashes.py). Exit 0 when the widened target is no further from the
source than the source from itself (logprobs within 2x the baseline + 0.05 nats, at least as many
identical continuations minus one), 1 when it is further, 2 on bad input.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

PROMPTS = [
    "Explain why the sky is blue in two sentences.", "Write a haiku about a lighthouse in winter.",
    "What are three uses of baking soda around the house?", "Summarise the plot of Romeo and Juliet.",
    "How do I reverse a list in Python?", "Give me a packing list for a weekend hike.",
    "What is the difference between weather and climate?", "Describe how a bicycle gear works.",
    "List four facts about the planet Mars.", "Why do cats purr?",
    "Write a short apology email for missing a meeting.", "What does a compiler do?",
    "Suggest a name for a bakery by the sea.", "How many minutes are in a week? Show the steps.",
    "What causes the seasons on Earth?", "Translate 'good morning, friend' into French and Spanish.",
]
TOKENS = 64
TOP = 5


def run_reference(model: str) -> dict[str, Any]:
    """The source's greedy continuations and top-5 logprobs, batched and one at a time (offline vLLM)."""
    from vllm import LLM, SamplingParams

    llm = LLM(model=model, dtype="bfloat16", enforce_eager=True, gpu_memory_utilization=0.08, max_model_len=2048,
              seed=0)
    params = SamplingParams(temperature=0.0, max_tokens=TOKENS, logprobs=TOP, ignore_eos=True)

    def pack(out: Any) -> dict[str, Any]:
        o = out.outputs[0]
        return {"ids": list(o.token_ids),
                "top": [{str(t): lp.logprob for t, lp in pos.items()} for pos in (o.logprobs or [])]}

    batch = [pack(o) for o in llm.generate(PROMPTS, params)]
    single = [pack(llm.generate([p], params)[0]) for p in PROMPTS]
    return {"model": model, "batch": batch, "single": single}


def _ask(url: str, name: str, prompt: str) -> dict[str, Any]:
    body = {"model": name, "prompt": prompt, "max_tokens": TOKENS, "temperature": 0.0, "ignore_eos": True,
            "logprobs": TOP, "return_tokens_as_token_ids": True}
    req = urllib.request.Request(f"{url}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as resp:
        lp = json.loads(resp.read())["choices"][0]["logprobs"]
    ids = [int(t.split(":", 1)[1]) for t in lp["tokens"]]
    top = [{k.split(":", 1)[1]: v for k, v in (pos or {}).items()} for pos in lp["top_logprobs"]]
    return {"ids": ids, "top": top}


def run_server(url: str) -> list[dict[str, Any]]:
    """The server's answers to :data:`PROMPTS`, all in flight at once (one batch, as the reference's)."""
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
    return {"identical": same, "of": len(a), "first_differences": sorted(firsts),
            "logprob_max_diff": deltas[-1] if deltas else None,
            "logprob_p50_diff": deltas[len(deltas) // 2] if deltas else None, "compared_logprobs": len(deltas)}


def verdict(wide: dict[str, Any], base: dict[str, Any]) -> bool:
    """True when the widened target is within the source's own bf16 noise (the module docstring's rule)."""
    limit = 2 * (base["logprob_max_diff"] or 0.0) + 0.05
    return (wide["logprob_max_diff"] or 0.0) <= limit and wide["identical"] >= base["identical"] - 1


def summary(marker: dict[str, Any], wide: dict[str, Any], base: dict[str, Any]) -> str:
    """The one line the card prints beside the target."""
    src = Path(marker.get("recipe", {}).get("source", "the source")).name
    return (f"widened from {src} to {marker.get('parameters', 0) / 1e9:.2f} B parameters (scripts/widen_target.py),"
            f" the same function: in vLLM bf16 on {wide['of']} held-out prompts x {TOKENS} greedy tokens, top-{TOP}"
            f" logprobs within {wide['logprob_max_diff']:.3f} nats of the source's (the source against itself in"
            f" another batch shape: {base['logprob_max_diff']:.3f}), {wide['identical']}/{wide['of']} continuations"
            f" identical (source against itself: {base['identical']}/{base['of']})")


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
        print(f"verify_widened: cannot read {exc}: run `reference` first and pass the widened model's marker",
              file=sys.stderr)
        return 2
    base = agreement(reference["batch"], reference["single"])
    wide = agreement(run_server(args.url.rstrip("/")), reference["batch"])
    marker["function_check"] = {"widened_vs_source": wide, "source_vs_itself": base, "prompts": len(PROMPTS),
                                "tokens": TOKENS, "top_logprobs": TOP, "engine": "vLLM, bfloat16",
                                "same_function": verdict(wide, base)}
    marker["summary"] = summary(marker, wide, base)
    args.marker.write_text(json.dumps(marker, indent=1))
    print(f"verify: {marker['summary']}")
    return 0 if verdict(wide, base) else 1


if __name__ == "__main__":
    sys.exit(main())
