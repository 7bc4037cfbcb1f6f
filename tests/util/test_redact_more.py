"""util/redact.py beyond the basics: every secret-looking environment name, ``--opt=value`` and ``--opt value``
for each secret option, and URLs stripped of userinfo, query and fragment (also when not parseable)."""

from __future__ import annotations

import pytest

from loadgen.util.redact import MASK, SECRET_OPTIONS, redact_argv, redact_env, redact_text, redact_url


@pytest.mark.parametrize(
    ("name", "masked"),
    [
        ("AWS_SECRET_ACCESS_KEY", True),
        ("GITHUB_TOKEN", True),
        ("PGPASSWORD", True),
        ("GOOGLE_CREDENTIALS", True),
        ("my_api_key", True),
        ("VLLM_API_KEY", True),
        ("KEYBOARD", True),  # a substring match: better masked than leaked
        ("HOME", False),
        ("VLLM_USE_V1", False),
        ("CUDA_VISIBLE_DEVICES", False),
        ("PATH", False),
    ],
)
def test_env_names_matching_key_token_secret_password_credential(name: str, masked: bool) -> None:
    assert redact_env({name: "v"}) == {name: MASK if masked else "v"}


@pytest.mark.parametrize("option", SECRET_OPTIONS)
def test_each_secret_option_is_masked_in_both_spellings(option: str) -> None:
    assert redact_argv([option, "s3cret", "--port", "1"]) == [option, MASK, "--port", "1"]
    assert redact_argv([f"{option}=s3cret", "--x"]) == [f"{option}={MASK}", "--x"]
    assert redact_argv([option]) == [option]  # a trailing option without a value: nothing to hide


def test_other_options_and_lookalikes_are_kept() -> None:
    argv = ["--api-keys", "a", "--api-key-file=/f", "api-key", "--model", "m"]
    assert redact_argv(argv) == argv
    assert redact_argv(["--api-key", "--port"]) == ["--api-key", MASK]  # the next word is the value, whatever it is


def test_text_masks_every_occurrence_of_each_secret() -> None:
    assert redact_text("k=abc; k2=abcd; abc", ["abcd", "abc"]) == f"k={MASK}; k2={MASK}; {MASK}"
    assert redact_text("nothing", []) == "nothing"


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("http://user:pw@host:8000/v1?token=x#frag", "http://host:8000/v1"),
        ("https://host/metrics", "https://host/metrics"),
        ("  http://a@b.example:9090/  ", "http://b.example:9090/"),
        ("http://[::1]:8000/x?k=v", "http://[::1]:8000/x"),
        ("http://u:p@[::1:80/p?token=t0k", "http://[::1:80/p"),  # urlsplit refuses: cut by hand
    ],
)
def test_urls_lose_userinfo_query_and_fragment(url: str, kept: str) -> None:
    assert redact_url(url) == kept
