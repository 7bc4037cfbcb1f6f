"""Secrets never reach what loadgen writes."""

from __future__ import annotations

from loadgen.util.redact import MASK, redact_argv, redact_env, redact_text


def test_env_names_that_look_secret_are_masked() -> None:
    env = {
        "VLLM_API_KEY": "k1",
        "HF_TOKEN": "t",
        "OPENAI_API_KEY": "k2",
        "HF_HUB_OFFLINE": "1",
        "CUDA_VISIBLE_DEVICES": "0",
        "db_password": "p",
    }
    assert redact_env(env) == {
        "VLLM_API_KEY": MASK,
        "HF_TOKEN": MASK,
        "OPENAI_API_KEY": MASK,
        "HF_HUB_OFFLINE": "1",
        "CUDA_VISIBLE_DEVICES": "0",
        "db_password": MASK,
    }


def test_secret_options_are_masked_in_argv() -> None:
    argv = ["vllm", "serve", "--api-key", "sk-1", "--port", "8000", "--hf-token=hf_x", "--api-key"]
    assert redact_argv(argv) == [
        "vllm",
        "serve",
        "--api-key",
        MASK,
        "--port",
        "8000",
        f"--hf-token={MASK}",
        "--api-key",
    ]


def test_text() -> None:
    assert redact_text("Bearer sk-1 and sk-1", ["sk-1", None, ""]) == f"Bearer {MASK} and {MASK}"
