"""serve/attached.py's answers one by one: the URL problems, what a ``/v1/models`` answer says (status, API-key
hint, model listed, its max_model_len), which workload does not fit, where to look, the engine version a
scripted server reports, and the URLs kept across ``--resume``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from loadgen.errors import BadInput
from loadgen.records.runparts import RecordedUrl
from loadgen.serve.attached import (
    attach_record,
    check_fit,
    check_url,
    engine_version,
    listed_max_model_len,
    listing_problem,
    resume_urls,
    unreachable,
    where_to_look,
)
from loadgen.serve.servers import LaunchSpec
from tests.support.promstack import free_port
from tests.support.scripted_server import scripted_server


def spec(url: str | None = "http://u:pw@gpu-1:8000/", model: str = "m") -> LaunchSpec:
    return LaunchSpec("speculative", [], {}, "127.0.0.1", 8001, model, 5.0, Path("/runs/x/spec.log"), attach_url=url)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://h:0", "has a port outside 1..65535"),
        ("http://h:x", "has a port outside 1..65535"),
        ("http://[::1", "is not a URL"),
        ("ftp://h", "does not start with http:// or https://"),
        ("http://h\x7f", "holds a space or a control character"),
        ("https://", "names no host"),
    ],
)
def test_url_problems(url: str, problem: str) -> None:
    with pytest.raises(BadInput) as info:
        check_url(url, "[servers.plain].url")
    assert str(info.value).startswith(f"[servers.plain].url {url!r} {problem}; give a URL")


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000", "https://gpu-1.example/v1/", "http://[::1]:65535/p"])
def test_good_urls_are_returned(url: str) -> None:
    assert check_url(url, "--attach-plain") == url


def models(status: int, body: Any) -> httpx.Response:
    return httpx.Response(status, json=body) if not isinstance(body, bytes) else httpx.Response(status, content=body)


def test_what_a_models_listing_says() -> None:
    listed = {"data": [{"id": "other", "max_model_len": 4096}, {"id": "m", "max_model_len": 2048}]}
    assert listing_problem(spec(), models(200, listed)) is None
    assert listing_problem(spec(), models(401, {})) == (
        "answered /v1/models with HTTP 401; give the server's key with --api-key or OPENAI_API_KEY"
    )
    assert listing_problem(spec(), models(503, {})) == "answered /v1/models with HTTP 503"
    assert listing_problem(spec(), models(200, {"data": [{"id": "other"}]})).startswith(  # type: ignore[union-attr]
        "does not serve 'm' (it lists ['other']); loadgen requests the name it derives from [target].model"
    )
    assert "(it lists [])" in (listing_problem(spec(), models(200, b"not json")) or "")
    assert "(it lists [])" in (listing_problem(spec(), models(200, [1, 2])) or "")


@pytest.mark.parametrize(
    ("entry", "length"),
    [
        ({"max_model_len": 2048}, 2048),
        ({"max_model_len": 0}, None),
        ({"max_model_len": True}, None),
        ({"max_model_len": "2048"}, None),
        ({}, None),
    ],
)
def test_listed_max_model_len(entry: dict[str, Any], length: int | None) -> None:
    assert listed_max_model_len({"data": [{"id": "x", "max_model_len": 9}, {"id": "m", **entry}]}, "m") == length
    assert listed_max_model_len({"data": "nope"}, "m") is None and listed_max_model_len(None, "m") is None


def test_the_workload_named_is_the_longest_that_does_not_fit() -> None:
    check_fit(spec(), None, [("w", 10**6, 10)])  # unknown max_model_len: not judged here
    check_fit(spec(), 1024, [("natural", None, 4096), ("exact", 1000, 24)])  # 1,024 fits exactly
    with pytest.raises(BadInput) as info:
        check_fit(spec(), 1024, [("a", 1000, 25), ("b", 2000, 1), ("c", 100, 1)])
    assert str(info.value) == (
        "workload 'b' needs 2001 tokens (2000 input + 1 output) but the speculative server at "
        "http://gpu-1:8000 serves max_model_len 1024 (/v1/models); shorten the workload or "
        "restart the server with a larger --max-model-len"
    )


def test_where_to_look_and_unreachable_name_no_credentials() -> None:
    assert where_to_look(spec()) == (
        "the attached server at http://gpu-1:8000 (its own output; loadgen keeps no log of it)"
    )
    assert where_to_look(spec(None)) == "/runs/x/spec.log"
    assert unreachable(spec(), ConnectionRefusedError("[Errno 111] Connection refused")) == (
        "speculative server: connection refused at http://gpu-1:8000; start it there, or give its URL with "
        "--attach-speculative URL (or [servers.speculative].url)"
    )
    assert "cannot connect (timed out) at http://gpu-1:8000" in unreachable(spec(), TimeoutError("timed out"))


@pytest.mark.parametrize(
    ("answer", "version"),
    [
        ((200, b'{"version": "0.32.0"}'), "0.32.0"),
        ((200, b'{"version": "  "}'), None),
        ((200, b'{"version": 32}'), None),
        ((200, b"<html>"), None),
        ((404, b'{"version": "0.32.0"}'), None),
        ((200, b"[1]"), None),
    ],
)
def test_engine_version_as_the_server_reports_it(answer: tuple[int, bytes], version: str | None) -> None:
    with scripted_server({}, gets={"/version": answer}) as url:
        assert engine_version(url + "/", {}) == version


def test_engine_version_of_nothing_listening_is_none() -> None:
    assert engine_version(f"http://127.0.0.1:{free_port()}", {}) is None


def test_urls_across_resume() -> None:
    rec = attach_record({"plain": "http://a:1/", "speculative": "http://k@b:2/?t=1"})
    assert rec == {"plain": RecordedUrl("http://a:1/", True), "speculative": RecordedUrl("http://b:2/", False)}
    assert rec["plain"].to_json() == {"url": "http://a:1/", "complete": True}
    assert resume_urls(rec, {"speculative": "http://k@b:2/?t=1"}, ["plain", "speculative"]) == {
        "speculative": "http://k@b:2/?t=1",
        "plain": "http://a:1/",
    }
    assert resume_urls(rec, {}, ["plain"]) == {"plain": "http://a:1/"}  # the speculative half is done
    assert resume_urls({}, {}, ["plain"]) == {}  # launched, not attached
    with pytest.raises(
        BadInput, match="whose credentials were not saved; give its URL again with --attach-speculative URL"
    ):
        resume_urls(rec, {}, ["plain", "speculative"])
