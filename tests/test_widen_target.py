"""scripts/widen_target.py: a widened random Llama computes the original's logits (transformers, on the CPU, in
float32 and bfloat16), including the case where the widened model has more query heads per KV head than the
source. Runs in the engine venv (.venv-vllm: torch, transformers, safetensors), which `make test` installs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: Timed scripted runs: ratios a vLLM server's load beside them would move (make test runs them in a round of
#: their own, after the end-to-end tests).
pytestmark = pytest.mark.timed

ROOT = Path(__file__).resolve().parents[1]
ENGINE_PY = ROOT / ".venv-vllm" / "bin" / "python"
sys.path.insert(0, str(ROOT / "scripts"))

import widen_target  # noqa: E402

# Builds a random Llama, widens it with the script, and prints the largest logit differences as JSON.
PROGRAM = r"""
import json, sys, torch, transformers
sys.path.insert(0, sys.argv[1])
import widen_target
src_shape, wide_shape, out = json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
torch.manual_seed(0)
cfg = transformers.LlamaConfig(vocab_size=256, max_position_embeddings=256, rms_norm_eps=1e-5,
                               tie_word_embeddings=True, head_dim=16, **src_shape)
model = transformers.LlamaForCausalLM(cfg).eval()
with torch.no_grad():  # norms away from 1, so a wrong norm scaling shows
    for name, p in model.named_parameters():
        if "norm" in name:
            p.uniform_(0.5, 1.5)
model.save_pretrained(out + "/src")
result = {}
for dtype in ("float32", "bfloat16"):
    code = widen_target.main(["--source", out + "/src", "--out", out + "/wide-" + dtype, "--dtype", dtype]
                             + [a for k, v in wide_shape.items() for a in ("--" + k.replace("_", "-"), str(v))])
    assert code == 0, code
    ids = torch.randint(0, 256, (3, 40), generator=torch.Generator().manual_seed(1))
    t = getattr(torch, dtype)
    with torch.no_grad():
        ref32 = model.float()(ids).logits
        ref = model.to(t)(ids).logits.float()
        wide = transformers.LlamaForCausalLM.from_pretrained(out + "/wide-" + dtype, dtype=t).eval()
        got = wide(ids).logits.float()
    result[dtype] = {"wide_vs_src": (got - ref).abs().max().item(), "src_vs_fp32": (ref - ref32).abs().max().item(),
                     "scale": ref32.abs().max().item(),
                     "argmax_same": (got.argmax(-1) == ref.argmax(-1)).float().mean().item(),
                     "params": sum(p.numel() for p in wide.parameters())}
    model = model.float()
print(json.dumps(result))
"""

SOURCES = {
    "same groups": (
        {
            "hidden_size": 64,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "intermediate_size": 96,
            "num_hidden_layers": 2,
        },
        {
            "hidden_size": 128,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
            "intermediate_size": 256,
            "num_hidden_layers": 3,
        },
    ),
    "3 -> 4 per KV head": (
        {
            "hidden_size": 96,
            "num_attention_heads": 6,
            "num_key_value_heads": 2,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
        },
        {
            "hidden_size": 256,
            "num_attention_heads": 16,
            "num_key_value_heads": 4,
            "intermediate_size": 384,
            "num_hidden_layers": 4,
        },
    ),
}


@pytest.mark.slow
@pytest.mark.skipif(not ENGINE_PY.exists(), reason="needs the engine venv (.venv-vllm): make engine")
@pytest.mark.parametrize("case", sorted(SOURCES))
def test_a_widened_llama_computes_the_same_logits(case: str, tmp_path: Path) -> None:
    src, wide = SOURCES[case]
    done = subprocess.run(
        [str(ENGINE_PY), "-c", PROGRAM, str(ROOT / "scripts"), json.dumps(src), json.dumps(wide), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    fp32, bf16 = result["float32"], result["bfloat16"]
    # float32: the same function up to summation order
    assert fp32["wide_vs_src"] < 1e-4 * max(1.0, fp32["scale"])
    assert fp32["argmax_same"] == 1.0
    # bfloat16: no further from the source than the source in bfloat16 is from itself in float32
    assert bf16["wide_vs_src"] <= 2 * bf16["src_vs_fp32"] + 1e-3
    assert bf16["argmax_same"] >= 0.97
    hd = 16
    h, i, n, q, kv = (
        wide[k]
        for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads")
    )
    per_layer = h * q * hd * 2 + h * kv * hd * 2 + 3 * h * i + 2 * h
    assert fp32["params"] == 256 * h + n * per_layer + h  # embeddings (tied) + layers + final norm


def test_query_heads_keep_their_kv_head() -> None:
    src = {"num_attention_heads": 9, "num_key_value_heads": 3}
    wide = {"num_attention_heads": 64, "num_key_value_heads": 16}
    mapping = widen_target.head_map(src, wide)
    assert mapping == [0, 1, 2, 4, 5, 6, 8, 9, 10]
    assert [j // 4 for j in mapping] == [i // 3 for i in range(9)]  # the engine's KV head of each = the source's


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hidden_size": 512}, "smaller than the source"),
        ({"hidden_size": 4032}, "keep head_dim 64"),
        ({"num_key_value_heads": 32}, "need at least 3"),
    ],
)
def test_a_shape_that_cannot_hold_the_function_is_refused(change: dict[str, int], message: str) -> None:
    src = {
        "hidden_size": 576,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "intermediate_size": 1536,
        "num_hidden_layers": 30,
        "head_dim": 64,
        "rms_norm_eps": 1e-5,
    }
    shape = dict(widen_target.SHAPE_7B) | change
    with pytest.raises(widen_target.WidenError, match=message):
        widen_target.widened_config(src, shape)


def test_eps_and_the_seven_b_shape() -> None:
    src = {
        "hidden_size": 576,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "intermediate_size": 1536,
        "num_hidden_layers": 30,
        "head_dim": 64,
        "rms_norm_eps": 1e-5,
    }
    cfg = widen_target.widened_config(src, widen_target.SHAPE_7B)
    assert cfg["rms_norm_eps"] == pytest.approx(1e-5 * 576 / 4096)
    assert cfg["num_attention_heads"] * cfg["head_dim"] == cfg["hidden_size"] == 4096


def test_agreement_counts_identical_continuations_and_compares_logprobs_before_the_first_difference() -> None:
    import verify_widened as verify

    a = [
        {"ids": [1, 2, 3], "top": [{"1": -0.1, "9": -2.0}, {"2": -0.2}, {"3": -0.3}]},
        {"ids": [4, 5, 6], "top": [{"4": -0.5}, {"5": -0.6}, {"6": -0.7}]},
    ]
    b = [
        {"ids": [1, 2, 3], "top": [{"1": -0.15, "8": -2.0}, {"2": -0.2}, {"3": -0.1}]},
        {"ids": [4, 7, 6], "top": [{"4": -0.9}, {"7": -0.1}, {"6": -9.0}]},
    ]
    got = verify.agreement(a, b)
    # prompt 1: all 3 positions (diffs 0.05, 0, 0.2); prompt 2: position 0 only (0.4), the rest is after it
    assert got["identical"] == 1 and got["first_differences"] == [1] and got["compared_logprobs"] == 4
    assert got["logprob_max_diff"] == pytest.approx(0.4)
    assert got["logprob_p50_diff"] == pytest.approx(0.2)  # sorted 0, 0.05, 0.2, 0.4: the upper median
    base = {"identical": 1, "of": 2, "logprob_max_diff": 0.2, "logprob_p50_diff": 0.1}
    assert verify.verdict(got, base)  # 0.4 <= 2 x 0.2 + 0.05, 0.2 <= 2 x 0.1 + 0.01
    assert not verify.verdict(got | {"logprob_max_diff": 0.5}, base)
    assert not verify.verdict(got | {"logprob_p50_diff": 0.25}, base)
    many = got | {"identical": 0, "of": 16}
    assert verify.verdict(many, base | {"identical": 4, "of": 16})  # 0/16 against 4/16: p = 0.10, chance
    assert not verify.verdict(many, base | {"identical": 8, "of": 16})  # 0/16 against 8/16: p = 0.002


def test_fisher_exact_p_closed_forms() -> None:
    import verify_widened as verify

    # all 16 identical against none: 2 tables of C(32, 16) are as extreme, two-sided
    assert verify.fisher_p(0, 16, 16, 16) == pytest.approx(2 / 601_080_390)
    assert verify.fisher_p(8, 16, 8, 16) == pytest.approx(1.0)
    # the 2026-12-02 H200 function check: 5/16 widened against 10/16 for the source in bf16
    assert verify.fisher_p(5, 16, 10, 16) == pytest.approx(0.1556, abs=1e-4)
    assert verify.fisher_p(10, 16, 5, 16) == pytest.approx(verify.fisher_p(5, 16, 10, 16))
