"""Write the example trace ``profiles/data/trace-example.jsonl`` (Mooncake format, loadgen/profile/trace.py):
a small, seeded stand-in for production traffic with bursts and shared prefixes, about 20 s long.

Usage::

    python scripts/make_trace_example.py [--out profiles/data/trace-example.jsonl] [--seed 7]

Shape: quiet traffic (Poisson, 0.6 requests/s) with two bursts (8 requests within 1.5 s at 6 s, 10 within 2 s
at 13 s). Every request opens with the same system-prompt block (hash 0); each belongs to one of three
conversations whose second block it shares (hashes 1-3), and about half continue that conversation with a
third shared block (hashes 4-6); the rest of the prompt is its own (a hash no other request has). Blocks are
64 tokens (the example workload declares ``block_tokens = 64``; Mooncake's own are 512), inputs 130-250
tokens, outputs 8-24 tokens: short enough for the CPU engine.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

BLOCK = 64


def requests(seed: int) -> list[dict[str, object]]:
    """The trace's lines in time order (``timestamp`` in ms)."""
    rng = random.Random(seed)
    times, t = [], 0.0
    while t < 20.0:
        times.append(t)
        t += rng.expovariate(0.6)
    times += [6.0 + rng.uniform(0, 1.5) for _ in range(8)] + [13.0 + rng.uniform(0, 2.0) for _ in range(10)]
    out, own = [], 100
    for ts in sorted(times):
        conv = rng.randrange(3)
        hashes = [0, 1 + conv] + ([4 + conv] if rng.random() < 0.5 else [])
        tail = rng.randrange(2, 60)
        hashes.append(own)
        own += 1
        out.append(
            {
                "timestamp": round(ts * 1000),
                "input_length": BLOCK * (len(hashes) - 1) + tail,
                "output_length": rng.randrange(8, 25),
                "hash_ids": hashes,
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("profiles/data/trace-example.jsonl"))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.out.write_text("".join(json.dumps(r) + "\n" for r in requests(args.seed)))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
