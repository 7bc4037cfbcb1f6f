"""Build random-weight Llama models at realistic sizes for a GPU node that has no model hub.

    python scripts/build_random_models.py --tokenizer-from DIR --out DIR [--device cuda]

Writes two models that share one tokenizer (copied from ``--tokenizer-from``, e.g. the demo target's
SmolLM2 tokenizer, vocabulary 49,152):

- ``OUT/llama-1b-random``: the target, 16 layers, hidden 2048, intermediate 8192, 32 heads (8 KV heads),
  about 1.1B parameters (docs/examples/h200/README.md: a 1B random target of this shape served on one H200);
- ``OUT/llama-1b-draft-random``: an unrelated draft, 4 layers, hidden 512, about 3% of the target's
  size (random, so its acceptance is near 0: the ground truth for an unrelated draft).

Weights are drawn with a fixed seed and saved in bfloat16 safetensors; a marker file makes re-runs
no-ops. Needs torch and transformers (present in the GPU image); no network.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

SHAPES = {
    "llama-1b-random": {
        "num_hidden_layers": 16,
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
    },
    "llama-1b-draft-random": {
        "num_hidden_layers": 4,
        "hidden_size": 512,
        "intermediate_size": 1536,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
    },
}
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "vocab.json",
    "merges.txt",
)


def build(name: str, shape: dict[str, int], tok_dir: Path, out: Path, device: str, seed: int) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    target = out / name
    marker = target / ".build-complete.json"
    recipe = {"shape": shape, "seed": seed, "tokenizer": str(tok_dir)}
    if marker.exists() and json.loads(marker.read_text()) == recipe:
        print(f"{target}: already built")
        return
    started = time.monotonic()
    base = json.loads((tok_dir / "config.json").read_text())
    config = LlamaConfig(
        vocab_size=base["vocab_size"],
        bos_token_id=base.get("bos_token_id"),
        eos_token_id=base.get("eos_token_id"),
        pad_token_id=base.get("pad_token_id"),
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        torch_dtype="bfloat16",
        **shape,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(device=device, dtype=torch.bfloat16)
    tmp = out / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    for f in TOKENIZER_FILES:
        if (tok_dir / f).exists():
            shutil.copyfile(tok_dir / f, tmp / f)
    (tmp / ".build-complete.json").write_text(json.dumps(recipe))
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    params = sum(p.numel() for p in model.parameters())
    print(f"{target}: {params / 1e6:.0f}M parameters in {time.monotonic() - started:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer-from", type=Path, required=True, help="a model dir whose tokenizer is shared")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not (args.tokenizer_from / "tokenizer.json").is_file():
        print(
            f"error: {args.tokenizer_from}/tokenizer.json not found; pass a model dir with a tokenizer", file=sys.stderr
        )
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for i, (name, shape) in enumerate(SHAPES.items()):
        build(name, shape, args.tokenizer_from, args.out, args.device, args.seed + i)
    return 0


if __name__ == "__main__":
    sys.exit(main())
