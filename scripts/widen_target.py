"""Widen a Llama checkpoint to a larger shape without changing the function it computes.

    python scripts/widen_target.py --source .models/smollm2-135m-instruct --out .models/smollm2-7b-widened

The default shape is a 7B-class Llama (hidden 4096, 64 query heads and 16 KV heads of head_dim 64,
intermediate 14336, 32 layers; vocabulary unchanged): 7.18 B parameters, 14.4 GB in bfloat16. Dense kernels
do not skip zeros, so every decode step of the widened model moves a 7B model's bytes and does a 7B
model's arithmetic, while its next-token distribution is the source model's. loadgen uses it to measure
speculative decoding against a target with a 7B model's cost (docs/examples/h200/README.md).

How the function is kept (every matrix zero-padded, the real weights in the leading block):
- the residual stream's real dimensions are the first ``hidden`` of ``hidden_w``; embeddings, o_proj and
  down_proj write nothing into the others (zero rows), so they stay exactly 0 through every layer;
- query head ``i`` of the source (KV group ``g = i // G``, ``G = heads / kv_heads``) goes to widened head
  ``g * G_w + i % G``, which the grouped-query mapping of the engine (query head ``j`` reads KV head
  ``j // G_w``, as in vLLM's and transformers' ``repeat_kv``) gives KV head ``g``, where the source's KV head
  ``g`` is placed; padded query heads see real or zero keys but write through zero columns of o_proj;
- padded MLP units have zero gate and up rows (silu(0) * 0 = 0) and zero down_proj columns;
- extra layers are identities: every projection zero, so attention and MLP add 0 to the residual;
- RMSNorm divides by sqrt(mean(x^2) + eps) over all ``hidden_w`` dimensions, of which ``hidden`` are
  non-zero: mean_w = mean * hidden / hidden_w. Scaling eps by ``hidden / hidden_w`` and the norm weights
  by ``sqrt(hidden / hidden_w)`` gives the source's normalised values exactly (in exact arithmetic;
  sqrt(576 / 4096) = 0.375 is exact in bfloat16).
Rotary embeddings act per head on head_dim, which is unchanged. Requirements: head_dim unchanged,
G <= G_w (query heads per KV head), and every widened size at least the source's.

The output folder holds config.json, sharded safetensors with their index, the source's tokenizer and
generation files, and ``.build-complete.json`` (the recipe: source folder sha256, both shapes, the rules
above). scripts/verify_widened.py adds the function check to that marker. Exit 2 on a shape or source
that cannot be widened (one line), 0 when done or already up to date.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

SHAPE_7B = {
    "hidden_size": 4096,
    "num_attention_heads": 64,
    "num_key_value_heads": 16,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
}
COPIED = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "generation_config.json",
    "chat_template.jinja",
    "vocab.json",
    "merges.txt",
)
SHARD_BYTES = 4 * 1024**3


class WidenError(Exception):
    """A source or shape that cannot be widened; its message is the one line printed (exit 2)."""


def head_dim(cfg: dict[str, Any]) -> int:
    """head_dim from the config, or hidden_size / num_attention_heads as transformers computes it."""
    return int(cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"])


def widened_config(src: dict[str, Any], shape: dict[str, int]) -> dict[str, Any]:
    """The widened config.json: the source's with the new sizes, head_dim pinned and eps scaled.

    Raises WidenError when the shape shrinks a size, changes head_dim or breaks the query-head groups."""
    hd = head_dim(src)
    for key, value in shape.items():
        if value < src[key]:
            raise WidenError(f"{key} {value} is smaller than the source's {src[key]}: widening only grows")
    if shape["hidden_size"] != shape["num_attention_heads"] * hd:
        raise WidenError(
            f"hidden_size {shape['hidden_size']} != num_attention_heads {shape['num_attention_heads']}"
            f" x head_dim {hd}: keep head_dim {hd} (rotary embeddings act per head)"
        )
    if shape["num_attention_heads"] % shape["num_key_value_heads"]:
        raise WidenError("num_attention_heads must be a multiple of num_key_value_heads")
    group, group_w = (
        src["num_attention_heads"] // src["num_key_value_heads"],
        shape["num_attention_heads"] // shape["num_key_value_heads"],
    )
    if group > group_w:
        raise WidenError(f"the source has {group} query heads per KV head, the shape {group_w}: need at least {group}")
    cfg = dict(src) | shape | {"head_dim": hd}
    cfg["rms_norm_eps"] = src["rms_norm_eps"] * src["hidden_size"] / shape["hidden_size"]
    return cfg


def head_map(src: dict[str, Any], cfg: dict[str, Any]) -> list[int]:
    """Widened query-head index of each source query head (length: the source's num_attention_heads)."""
    group = src["num_attention_heads"] // src["num_key_value_heads"]
    group_w = cfg["num_attention_heads"] // cfg["num_key_value_heads"]
    return [(i // group) * group_w + i % group for i in range(src["num_attention_heads"])]


def _pad(torch: Any, w: Any, shape: tuple[int, ...]) -> Any:
    out = torch.zeros(shape, dtype=w.dtype)
    out[tuple(slice(0, n) for n in w.shape)] = w
    return out


def widen_layer(
    torch: Any, src: dict[str, Any], cfg: dict[str, Any], weights: dict[str, Any], dtype: Any
) -> dict[str, Any]:
    """One decoder layer's tensors (names without the ``model.layers.N.`` prefix), widened.

    ``weights`` empty: the identity layer (zero projections, norm weights sqrt(hidden / hidden_w))."""
    hd, h, hw = head_dim(src), src["hidden_size"], cfg["hidden_size"]
    nqw, nkvw, iw = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["intermediate_size"]
    if any(k.endswith(".bias") for k in weights):
        raise WidenError("the source has attention or MLP biases: this script widens bias-free Llama layers only")
    scale = math.sqrt(h / hw)
    out: dict[str, Any] = {}
    q = torch.zeros((nqw * hd, hw), dtype=dtype)
    o = torch.zeros((hw, nqw * hd), dtype=dtype)
    if weights:
        for i, j in enumerate(head_map(src, cfg)):
            q[j * hd : (j + 1) * hd, :h] = weights["self_attn.q_proj.weight"][i * hd : (i + 1) * hd]
            o[:h, j * hd : (j + 1) * hd] = weights["self_attn.o_proj.weight"][:, i * hd : (i + 1) * hd]
    out["self_attn.q_proj.weight"], out["self_attn.o_proj.weight"] = q, o
    for name in ("k_proj", "v_proj"):
        key = f"self_attn.{name}.weight"
        out[key] = _pad(torch, weights[key], (nkvw * hd, hw)) if weights else torch.zeros((nkvw * hd, hw), dtype=dtype)
    for name, rows, cols in (("gate_proj", iw, hw), ("up_proj", iw, hw), ("down_proj", hw, iw)):
        key = f"mlp.{name}.weight"
        out[key] = _pad(torch, weights[key], (rows, cols)) if weights else torch.zeros((rows, cols), dtype=dtype)
    for key in ("input_layernorm.weight", "post_attention_layernorm.weight"):
        real = weights[key] if weights else torch.ones(h, dtype=dtype)
        out[key] = _pad(torch, (real.float() * scale).to(dtype), (hw,))
    return out


def widen_state(torch: Any, src: dict[str, Any], cfg: dict[str, Any], state: dict[str, Any]) -> Any:
    """Yield (name, tensor) of the widened model, layer by layer (a 7B model is never whole in memory
    twice). ``state`` maps the source's tensor names (transformers' Llama names) to tensors."""
    h, hw = src["hidden_size"], cfg["hidden_size"]
    vocab = src["vocab_size"]
    yield "model.embed_tokens.weight", _pad(torch, state["model.embed_tokens.weight"], (vocab, hw))
    for n in range(cfg["num_hidden_layers"]):
        prefix = f"model.layers.{n}."
        real = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
        for name, tensor in widen_layer(torch, src, cfg, real, state["model.embed_tokens.weight"].dtype).items():
            yield prefix + name, tensor
    norm = state["model.norm.weight"]
    yield "model.norm.weight", _pad(torch, (norm.float() * math.sqrt(h / hw)).to(norm.dtype), (hw,))
    if "lm_head.weight" in state and not cfg.get("tie_word_embeddings"):
        yield "lm_head.weight", _pad(torch, state["lm_head.weight"], (vocab, hw))


def folder_sha256(folder: Path) -> str:
    """sha256 over ``name sha256`` lines of the folder's config and weight files (sorted by name)."""
    lines = []
    for path in sorted(folder.iterdir()):
        if path.name == "config.json" or path.suffix == ".safetensors":
            lines.append(f"{path.name} {hashlib.sha256(path.read_bytes()).hexdigest()}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def load_source(source: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The source's config.json and its tensors (every *.safetensors file). WidenError when not Llama."""
    from safetensors.torch import load_file

    if not (source / "config.json").is_file():
        raise WidenError(f"no {source}/config.json: --source must be a transformers model folder")
    cfg = json.loads((source / "config.json").read_text())
    if cfg.get("model_type") != "llama":
        raise WidenError(f"{source} is a {cfg.get('model_type')!r} model: this script widens Llama models only")
    state: dict[str, Any] = {}
    for path in sorted(source.glob("*.safetensors")):
        state.update(load_file(str(path)))
    if not state:
        raise WidenError(f"no *.safetensors in {source}: save the source with safetensors")
    return cfg, state


def write(source: Path, out: Path, shape: dict[str, int], dtype: str) -> dict[str, Any]:
    """Widen ``source`` into ``out`` (written to ``out.partial`` and renamed); returns the marker."""
    import torch
    from safetensors.torch import save_file

    src, state = load_source(source)
    state = {k: v.to(getattr(torch, dtype)) for k, v in state.items()}
    cfg = widened_config(src, shape)
    cfg["torch_dtype"] = cfg["dtype"] = dtype
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shard: dict[str, Any] = {}
    weight_map: dict[str, str] = {}
    size = params = 0

    def flush() -> None:
        nonlocal shard, size
        name = f"model-{len(set(weight_map.values())) + 1:05d}.safetensors"
        save_file(shard, str(tmp / name), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(shard, name))
        shard, size = {}, 0

    for name, tensor in widen_state(torch, src, cfg, state):
        shard[name] = tensor.contiguous()
        size += tensor.numel() * tensor.element_size()
        params += tensor.numel()
        if size >= SHARD_BYTES:
            flush()
    if shard:
        flush()
    total = sum((tmp / f).stat().st_size for f in set(weight_map.values()))
    (tmp / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=1)
    )
    (tmp / "config.json").write_text(json.dumps(cfg, indent=2))
    for name in COPIED:
        if (source / name).is_file():
            shutil.copy2(source / name, tmp / name)
    marker = {"recipe": recipe(source, src, shape, dtype), "parameters": params, "bytes": total}
    (tmp / ".build-complete.json").write_text(json.dumps(marker, indent=1))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return marker


def recipe(source: Path, src: dict[str, Any], shape: dict[str, int], dtype: str) -> dict[str, Any]:
    """What makes a widened folder: the source's sha256, both shapes, the dtype and the rules' version."""
    keys = ("hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size", "num_hidden_layers")
    return {
        "version": 1,
        "source": str(source.resolve()),
        "source_sha256": folder_sha256(source),
        "source_shape": {k: src[k] for k in keys},
        "shape": shape,
        "dtype": dtype,
        "rules": "zero-padded leading blocks; query head i -> (i // G) * G_w + i % G; extra layers identity;"
        " norm weights x sqrt(h / h_w), eps x h / h_w",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="a transformers Llama folder (safetensors)")
    parser.add_argument("--out", type=Path, required=True, help="the widened model's folder")
    for key, value in SHAPE_7B.items():
        parser.add_argument("--" + key.replace("_", "-"), type=int, default=value, help=f"default {value}")
    parser.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16")
    args = parser.parse_args(argv)
    shape = {key: getattr(args, key) for key in SHAPE_7B}
    t0 = time.monotonic()
    try:
        marker_path = args.out / ".build-complete.json"
        if marker_path.is_file() and json.loads(marker_path.read_text()).get("recipe") == recipe(
            args.source, json.loads((args.source / "config.json").read_text()), shape, args.dtype
        ):
            print(f"widen: {args.out} is up to date")
            return 0
        print(f"widen: {args.source} -> {args.out} ({shape}, {args.dtype})", flush=True)
        marker = write(args.source, args.out, shape, args.dtype)
    except (WidenError, OSError, KeyError) as exc:
        print(f"widen_target: {exc}", file=sys.stderr)
        return 2
    print(
        f"widen: {marker['parameters'] / 1e9:.2f} B parameters, {marker['bytes'] / 1e9:.1f} GB,"
        f" in {time.monotonic() - t0:.0f} s",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
