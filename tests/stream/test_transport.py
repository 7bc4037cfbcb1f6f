"""The streaming transport: the pure chunked decoder at every split, and keep-alive connections, errors and
framings against real loopback servers (the threaded scripted SSE server and a raw asyncio one)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest

from loadgen.profile.pair import Sampling
from loadgen.profile.workload import Prompt
from loadgen.records.request import RequestRecord
from loadgen.records.requestbody import CompletionBody
from loadgen.stream.client import build_payload, monotonic_clock, stream_request
from loadgen.stream.http1 import ChunkedDecoder, TransportError
from loadgen.stream.transport import StreamConnection, StreamResponse
from loadgen.stream.wire import _Wire
from tests.support.scripted_server import CLOSE, DONE, RESET, Counters, completion_chunk, scripted_server, usage_chunk

# ---- ChunkedDecoder (pure) ------------------------------------------------------------------------------

DATA = [b'data: {"a": 1}\r\n\r\n', b"x" * 26, b"\r\n\r\n\n", b"z"]
BODY = (
    b"12;ext=1\r\n" + DATA[0] + b"\r\n"  # an extension
    b'1A ; name="quoted;value"\r\n' + DATA[1] + b"\r\n"  # upper-case hex, whitespace, quoted extension
    b"5\r\n" + DATA[2] + b"\r\n"  # CRLFs inside chunk data
    b"1\n" + DATA[3] + b"\n"  # bare LF line ends
    b"000;last\r\nX-Trailer: a\r\nY: b;c\r\n\r\n"
)  # zero chunk with leading zeros, extension, trailers
assert [len(d) for d in DATA] == [0x12, 0x1A, 5, 1]
EXPECTED = b"".join(DATA)


def _decode(pieces: list[bytes]) -> tuple[bytes, ChunkedDecoder]:
    decoder = ChunkedDecoder()
    out = b"".join(decoder.feed(p) for p in pieces)
    return out, decoder


def test_chunked_whole_and_byte_by_byte() -> None:
    for pieces in ([BODY], [BODY[i : i + 1] for i in range(len(BODY))]):
        out, decoder = _decode(pieces)
        assert out == EXPECTED and decoder.done and decoder.tail == b""


def test_chunked_every_split_position() -> None:
    for i in range(len(BODY) + 1):
        out, decoder = _decode([BODY[:i], BODY[i:]])
        assert out == EXPECTED and decoder.done and decoder.tail == b"", i


def test_chunked_every_pair_of_split_positions() -> None:
    for i, j in itertools.combinations(range(len(BODY) + 1), 2):
        out, decoder = _decode([BODY[:i], BODY[i:j], BODY[j:]])
        assert out == EXPECTED and decoder.done, (i, j)


def test_chunked_not_done_until_the_trailer_section_ends() -> None:
    body = b"3\r\nabc\r\n0\r\nX: y\r\n"
    out, decoder = _decode([body])
    assert out == b"abc" and not decoder.done
    assert decoder.feed(b"\r\n") == b"" and decoder.done


def test_chunked_zero_chunk_only_and_bytes_after_the_end() -> None:
    out, decoder = _decode([b"0\r\n\r\n"])
    assert out == b"" and decoder.done
    out, decoder = _decode([b"2\r\nhi\r\n0\r\n\r\nHTTP/1.1 200", b" OK"])
    assert out == b"hi" and decoder.done and decoder.tail == b"HTTP/1.1 200 OK"


@pytest.mark.parametrize(
    "body",
    [
        b"zz\r\n",  # not hex
        b"0x5\r\nhello\r\n",  # a prefix int() would accept
        b"1_0\r\n",  # an underscore int() would accept
        b"-1\r\n",
        b"\r\n",  # empty size
        b"3\r\nabcX\r\n",  # chunk data not followed by CRLF
        b"1" * 70000,  # a chunk-size line over 64 KiB
    ],
)
def test_chunked_errors_at_every_split(body: bytes) -> None:
    for i in range(0, len(body) + 1, max(1, len(body) // 50)):
        decoder = ChunkedDecoder()
        with pytest.raises(TransportError, match="chunked body"):
            decoder.feed(body[:i])
            decoder.feed(body[i:])


def test_chunked_whole_frames_take_the_fast_path_with_the_same_result() -> None:
    frames = [b"5\r\nhello\r\n", b"1A\r\n" + b"x" * 26 + b"\r\n", b"3;e=1\r\nabc\r\n", b"2\r\n\r\n\r\n"]
    out, decoder = _decode([*frames, b"0\r\n\r\n"])
    assert out == b"hello" + b"x" * 26 + b"abc" + b"\r\n" and decoder.done
    for bad in (b"5\r\nhello!\r\n", b"5\r\nhellXY", b"3\r\nabc\n\n"):  # size off by one, no CRLF, LF LF
        with pytest.raises(TransportError, match="chunked body"):
            _decode([b"2\r\nhi\r\n", bad, b"0\r\n\r\n"])


SSE_BODY = (
    b"".join(
        b"%x\r\n%s\r\n" % (len(e), e)
        for e in (
            b'data: {"choices":[{"text":" a","token_ids":[1]}]}\n\n',
            b'data: {"choices":[{"text":"0","token_ids":[2]}]}\n\n',
            b'data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}\n\n',
            b"data: [DONE]\n\n",
        )
    )
    + b"0\r\n\r\n"
)


def _pieces(body: bytes, cuts: tuple[int, ...]) -> list[bytes]:
    return [body[a:b] for a, b in itertools.pairwise([0, *cuts, len(body)]) if b > a]


async def _deliver_in_pieces(body: bytes, cuts: tuple[int, ...]) -> tuple[list[tuple[float, bytes, int]], int]:
    """Hand ``body`` to a response's wire in the pieces ``cuts`` makes (piece k stamped k, from 0), a few
    loop passes after each; returns what the sink got (arrival, data, pieces handed over by then) and
    after how many pieces the response was over."""
    stamps = iter(range(1000))
    conn = StreamConnection("http://127.0.0.1:9")
    wire = conn._wire = _Wire(lambda: float(next(stamps)))
    response = StreamResponse(conn, (200, "OK", {}, "chunked", 0, True), 0.0)
    got: list[tuple[float, bytes, int]] = []
    fed = 0
    task = asyncio.create_task(response.deliver(lambda arrival, data: got.append((arrival, data, fed))))
    await asyncio.sleep(0)
    over_after = 0
    for piece in _pieces(body, cuts):
        wire.data_received(piece)
        fed += 1
        for _ in range(3):
            await asyncio.sleep(0)
        if task.done() and not over_after:
            over_after = fed
    await asyncio.wait_for(task, 1.0)
    return got, over_after


def test_held_pieces_keep_their_arrivals_and_the_end_is_seen_at_once() -> None:
    # The wire holds pieces that cannot end the body and decodes them with the next one that can: for
    # every split, the sink gets what decoding piece by piece gives, each with the stamp of the read that
    # brought it, and the response is over right after the piece that ends the body, never later.
    async def go() -> None:
        for body in (BODY, SSE_BODY):
            step = 3 if body is BODY else 17
            for cuts in itertools.chain(
                ((i,) for i in range(1, len(body))), itertools.combinations(range(1, len(body), step), 2)
            ):
                decoder, pieces = ChunkedDecoder(), _pieces(body, cuts)
                expected = [(float(k), out) for k, p in enumerate(pieces) if (out := decoder.feed(p))]
                got, over_after = await _deliver_in_pieces(body, cuts)
                assert [(a, d) for a, d, _ in got] == expected and over_after == len(pieces), cuts

    asyncio.run(go())


def test_frames_that_cannot_end_the_body_wait_for_one_that_can() -> None:
    async def go() -> None:
        frames = [b"%x\r\n%s\r\n" % (len(e), e) for e in (b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n")]
        cuts = tuple(itertools.accumulate(map(len, frames)))
        got, over_after = await _deliver_in_pieces(b"".join(frames) + b"0\r\n\r\n", cuts)
        # held until the last-chunk came (4 pieces handed over), then all at once with their own stamps
        assert got == [(0.0, b"data: 1\n\n", 4), (1.0, b"data: 2\n\n", 4), (2.0, b"data: 3\n\n", 4)]
        assert over_after == 4
        # a frame with "\n0" in its data cannot be told from an end: decoded at once
        frames[1] = b"8\r\ndata:\n0\n\r\n"
        cuts = tuple(itertools.accumulate(map(len, frames)))
        got, _ = await _deliver_in_pieces(b"".join(frames) + b"0\r\n\r\n", cuts)
        assert [fed for _, _, fed in got] == [2, 2, 4]

    asyncio.run(go())


# ---- StreamConnection against the scripted SSE server ------------------------------------------------

STREAM = [
    (0.0, completion_chunk(" a", [1])),
    (0.005, completion_chunk(" b", [2, 3], finish="length")),
    (0.0, usage_chunk(2, 3)),
    (0.0, DONE),
]
SCRIPTS = {
    "ok": (200, STREAM),
    "close-after": (200, [*STREAM, (0.0, CLOSE)]),
    "after-done": (200, [*STREAM, (0.0, b": a comment after [DONE]\n\n")]),
    "reset": (200, [(0.0, completion_chunk(" a", [1])), (0.05, RESET)]),
    "fin": (200, [(0.0, completion_chunk(" a", [1])), (0.02, None)]),
    "slow": (200, [(0.5, completion_chunk(" a", [1])), (0.0, DONE)]),
    "trickle": (200, [(0.04, completion_chunk(f" t{i}", [i])) for i in range(1, 9)] + [(0.0, DONE)]),
    "stall": (
        200,
        [
            (0.0, completion_chunk(" a", [1])),
            (0.04, completion_chunk(" b", [2])),
            (0.5, completion_chunk(" c", [3])),
            (0.0, DONE),
        ],
    ),
    # small pieces that cannot end the body (held undecoded), then a long silence mid-stream
    "stall-held": (
        200,
        [
            (0.0, completion_chunk(" a", [1])),
            (0.3, completion_chunk(" b", [2])),
            (4.0, completion_chunk(" c", [3])),
            (0.0, DONE),
        ],
    ),
    "http-400": (400, [(0.0, b'{"error": {"message": "maximum context length is 1024 tokens", "code": 400}}')]),
    "http-503": (503, [(0.0, b'{"error": {"message": "overloaded", "code": 503}}')]),
}


def _record(prompt: str) -> RequestRecord:
    return RequestRecord(prompt, "plain", "w", 1, "measured", 0.0, requested_output_tokens=3)


def _body(prompt: str) -> CompletionBody:
    return build_payload(Prompt(prompt, "w", "completions", prompt, None, 3), Sampling(), "m")


def _run(prompts: list[str], *, read_timeout_s: float = 5.0) -> tuple[list[RequestRecord], int, Counters]:
    """Send ``prompts`` one after another over one StreamConnection; records, the connection's own count
    of connections opened, and the server's counters."""
    counters = Counters()

    async def go(url: str) -> tuple[list[RequestRecord], int]:
        conn = StreamConnection(url, monotonic_clock(0.0), connect_timeout_s=5.0, read_timeout_s=read_timeout_s)
        try:
            return [await stream_request(conn, _body(p), _record(p)) for p in prompts], conn.connections
        finally:
            conn.close()

    with scripted_server(SCRIPTS, counters) as url:
        records, opened = asyncio.run(go(url))
    return records, opened, counters


def _assert_ok(r: RequestRecord) -> None:
    assert r.error is None and r.http_status == 200, r.error
    assert r.chunk_tokens == [1, 2] and r.token_ids == [1, 2, 3] and r.usage_completion_tokens == 3
    assert r.finish_reason == "length"
    assert r.done_s is not None and r.send_s < r.chunk_arrivals_s[0] <= r.chunk_arrivals_s[1] <= r.done_s


def test_keep_alive_one_connection_for_many_requests() -> None:
    records, opened, counters = _run(["ok"] * 6)
    for r in records:
        _assert_ok(r)
    assert counters.requests == 6 and counters.connections == 1 and opened == 1


def test_response_is_drained_after_done_so_the_connection_is_reused() -> None:
    records, opened, counters = _run(["after-done", "ok", "after-done"])
    for r in records:
        _assert_ok(r)
    assert counters.connections == 1 and opened == 1


def test_server_closing_between_requests_reconnects_transparently() -> None:
    records, opened, counters = _run(["close-after"] * 4)
    for r in records:
        _assert_ok(r)
    assert counters.requests == 4 and counters.connections == 4 and opened == 4


def test_reset_mid_stream_is_recorded_and_the_next_request_reconnects() -> None:
    records, opened, counters = _run(["reset", "ok"])
    assert records[0].error == "connection reset by peer mid-stream" and records[0].chunk_tokens == [1]
    assert records[0].http_status == 200
    _assert_ok(records[1])
    assert counters.connections == 2 and opened == 2


def test_connection_closed_mid_stream() -> None:
    records, _, _ = _run(["fin", "ok"])
    assert records[0].error == "connection closed mid-stream" and records[0].chunk_tokens == [1]
    _assert_ok(records[1])


def test_read_timeout_is_recorded_and_the_next_request_reconnects() -> None:
    # "slow" is silent 0.5 s; a 250 ms limit, not less: the "ok" request after it must get its first byte
    # within the limit on a busy 2-core machine (at 100 ms a loaded CI run once timed it out too)
    records, opened, counters = _run(["slow", "ok"], read_timeout_s=0.25)
    error = records[0].error
    assert error is not None and records[0].chunk_tokens == []
    silent = re.fullmatch(r"read timeout: no data for ([0-9.]+) s \(limit 0\.25 s: \[stop\]\.read_timeout_s\)", error)
    assert silent is not None and 0.25 <= float(silent.group(1)) < 0.5, error  # after the limit, before the data
    assert records[0].done_s is not None and records[0].done_s - records[0].send_s >= 0.25  # not before the timeout
    _assert_ok(records[1])
    assert counters.connections == 2 and opened == 2


def test_read_timeout_is_per_silence_not_per_stream() -> None:
    # 8 chunks 40 ms apart (320 ms in all) under a 250 ms read timeout: the one lazy timer per connection
    # must move with every piece; then a 500 ms silence after two chunks must time out. (250 ms, not less: a
    # busy CI machine can hold the scripted server's first byte of the last request past 150 ms.)
    records, _, _ = _run(["trickle", "stall", "ok"], read_timeout_s=0.25)
    assert records[0].error is None and records[0].chunk_tokens == [1] * 8
    assert records[0].chunk_arrivals_s[-1] - records[0].send_s > 0.3
    assert records[1].error is not None and records[1].error.startswith("read timeout: no data for 0.")
    assert records[1].token_ids == [1, 2]
    assert records[1].done_s is not None and records[1].done_s - records[1].chunk_arrivals_s[-1] >= 0.25
    _assert_ok(records[2])


def test_read_timeout_counts_from_the_last_byte_and_states_the_silence() -> None:
    # two small chunks (held undecoded: they cannot end the body), the last 0.3 s in, then 4 s of silence
    # under a 1.5 s limit: the stream is cut 1.5 s after its last byte (within 10%), not 1.5 s after the
    # held pieces were decoded; the message states the silence observed and the key that sets the limit
    limit = 1.5
    records, _, _ = _run(["stall-held", "ok"], read_timeout_s=limit)
    r = records[0]
    assert r.token_ids == [1, 2] and r.done_s is not None and r.error is not None
    silence = r.done_s - r.chunk_arrivals_s[-1]
    assert limit <= silence <= 1.1 * limit, silence
    stated = float(r.error.removeprefix("read timeout: no data for ").split(" ")[0])
    assert limit <= stated <= silence + 0.01 and r.error.endswith(f"(limit {limit:g} s: [stop].read_timeout_s)")
    _assert_ok(records[1])


def test_http_errors_keep_status_and_json_body_and_the_connection() -> None:
    records, opened, counters = _run(["http-400", "http-503", "ok"])
    assert records[0].http_status == 400 and records[0].error is not None
    assert records[0].error.startswith("HTTP 400: ") and "maximum context length" in records[0].error
    assert (
        records[1].http_status == 503
        and records[1].error == 'HTTP 503: {"error": {"message": "overloaded", "code": 503}}'
    )
    _assert_ok(records[2])
    assert counters.connections == 1 and opened == 1


def test_connect_refused_is_recorded() -> None:
    with socket.socket() as sock:  # a port that was just free: nothing listens on it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def go() -> RequestRecord:
        conn = StreamConnection(f"http://127.0.0.1:{port}", monotonic_clock(0.0), connect_timeout_s=5.0)
        return await stream_request(conn, _body("ok"), _record("ok"))

    r = asyncio.run(go())
    assert r.error == f"connection refused (127.0.0.1:{port})" and r.http_status is None
    assert r.done_s is not None and r.done_s >= r.send_s and not r.ok


def test_bad_base_url() -> None:
    with pytest.raises(ValueError, match="base URL"):
        StreamConnection("ftp://example.org")


# ---- StreamConnection against a raw asyncio server: request bytes, framings, protocol errors ------------

Respond = Callable[[int, int, bytes], tuple[bytes | None, bool]]


@dataclass
class RawServer:
    """Answers request k (0-based) of connection c with ``respond(c, k, request) -> (bytes, close)``
    (bytes None: close without answering); keeps every request's raw bytes."""

    respond: Respond
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index, self.connections = self.connections, self.connections + 1
        try:
            for k in itertools.count():
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                answer, close = self.respond(index, k, request)
                if answer is not None:
                    writer.write(answer)
                    await writer.drain()
                if answer is None or close:
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()


@contextlib.asynccontextmanager
async def raw_server(respond: Respond) -> AsyncIterator[tuple[str, RawServer]]:
    state = RawServer(respond)
    server = await asyncio.start_server(state.handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", state
    finally:
        server.close()


def _always(answer: bytes, close: bool = False) -> Respond:
    return lambda c, k, request: (answer, close)


async def _body_of(conn: StreamConnection, path: str = "/v1/completions") -> tuple[int, dict[str, str], bytes]:
    response = await conn.post_stream(path, b'{"x":1}')
    pieces: list[bytes] = []

    def sink(arrival: float, piece: bytes) -> None:
        assert piece and response.sent_s <= arrival
        pieces.append(piece)

    await response.deliver(sink)
    assert response.complete
    return response.status, response.headers, b"".join(pieces)


def test_request_bytes_headers_and_path_prefix() -> None:
    async def go() -> None:
        async with raw_server(_always(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")) as (url, state):
            conn = StreamConnection(url + "/prefix/", api_key="sk-test")
            assert await _body_of(conn, "/v1/chat/completions") == (200, {"content-length": "2"}, b"ok")
            conn.close()
        head, _, body = state.requests[0].partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        assert lines[0] == "POST /prefix/v1/chat/completions HTTP/1.1"
        fields = dict(line.split(": ", 1) for line in lines[1:])
        assert fields["host"] == url.removeprefix("http://")
        assert fields["content-type"] == "application/json" and fields["accept"] == "text/event-stream"
        assert fields["authorization"] == "Bearer sk-test" and fields["content-length"] == "7"
        assert body == b'{"x":1}'

    asyncio.run(go())


def test_content_length_body_keeps_the_connection() -> None:
    async def go() -> None:
        answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\nhello world"
        async with raw_server(_always(answer)) as (url, state):
            conn = StreamConnection(url)
            for _ in range(3):
                assert (await _body_of(conn))[2] == b"hello world"
            conn.close()
        assert state.connections == 1 and conn.connections == 1

    asyncio.run(go())


def test_close_delimited_body_and_connection_close_header() -> None:
    async def go() -> None:
        answers = {
            0: (b"HTTP/1.1 200 OK\r\n\r\nuntil the end", True),  # no framing: read to EOF
            1: (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", False),
            2: (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", False),
        }  # HTTP/1.0: not persistent
        async with raw_server(lambda c, k, request: answers[c]) as (url, state):
            conn = StreamConnection(url)
            assert (await _body_of(conn))[2] == b"until the end"
            assert (await _body_of(conn))[2] == b"ok"
            assert (await _body_of(conn))[2] == b"ok"
            conn.close()
        assert state.connections == 3

    asyncio.run(go())


def test_interim_response_trailers_and_repeated_fields() -> None:
    async def go() -> None:
        answer = (
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n"
            b"x-a: 2\r\n\r\n4\r\nbody\r\n0\r\nX-Trailer: t\r\n\r\n"
        )
        async with raw_server(_always(answer)) as (url, state):
            conn = StreamConnection(url)
            status, headers, data = await _body_of(conn)
            assert (status, headers["x-a"], data) == (200, "1, 2", b"body")
            assert (await _body_of(conn))[2] == b"body"
            conn.close()
        assert state.connections == 1

    asyncio.run(go())


def test_stale_keep_alive_connection_is_retried_once_on_a_new_one() -> None:
    async def go() -> None:
        ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        # every connection answers its first request, then closes on the second without answering
        async with raw_server(lambda c, k, request: (ok if k == 0 else None, False)) as (url, state):
            conn = StreamConnection(url)
            for _ in range(3):
                assert (await _body_of(conn))[2] == b"ok"
            conn.close()
        assert state.connections == 3 and len(state.requests) == 5  # two requests were sent twice

    asyncio.run(go())


def test_a_request_sent_again_on_a_new_connection_says_so_in_its_record() -> None:
    async def go() -> None:
        ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        async with raw_server(lambda c, k, request: (ok if k == 0 else None, False)) as (url, state):
            conn = StreamConnection(url)
            first = await stream_request(conn, _body("a"), _record("a"))
            second = await stream_request(conn, _body("b"), _record("b"))
            conn.close()
        assert state.connections == 2 and len(state.requests) == 3
        assert first.resent is None and "resent" not in first.to_json()  # sent once: the line is as before
        assert second.resent == "connection closed before the response on a reused connection: sent again on a new one"
        assert second.to_json()["resent"] == second.resent

    asyncio.run(go())


def test_fresh_connection_closed_before_the_response_is_an_error() -> None:
    async def go() -> None:
        async with raw_server(lambda c, k, request: (None, True)) as (url, state):
            conn = StreamConnection(url)
            r = await stream_request(conn, _body("x"), _record("x"))
            conn.close()
        assert r.error == "connection closed before the response" and r.http_status is None
        assert conn.sent_s is not None and r.send_s == conn.sent_s
        assert state.connections == 1

    asyncio.run(go())


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"HTTP/1.1 2OO OK\r\n\r\n", "bad status line: 'HTTP/1.1 2OO OK'"),
        (b"ICY 200 OK\r\n\r\n", "bad status line: 'ICY 200 OK'"),
        (b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "bad header line: 'no colon'"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length: '-1'"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nnope\r\n", "chunked body: bad chunk-size line b'nope'"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "connection closed mid-stream"),
        (b"HTTP/1.1 200 OK\r\nContent-Len", "connection closed in the response head"),
    ],
)
def test_protocol_errors_are_recorded(answer: bytes, message: str) -> None:
    async def go() -> RequestRecord:
        async with raw_server(_always(answer, close=True)) as (url, _):
            conn = StreamConnection(url)
            try:
                return await stream_request(conn, _body("x"), _record("x"))
            finally:
                conn.close()

    assert asyncio.run(go()).error == message


def test_https_to_a_plain_http_server_is_a_tls_error() -> None:
    async def tls_server() -> RequestRecord:
        # a plain server that answers anything, the TLS ClientHello included, with plain HTTP
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read(1)
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        try:
            conn = StreamConnection(f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}", connect_timeout_s=5.0)
            return await stream_request(conn, _body("x"), _record("x"))
        finally:
            server.close()

    r = asyncio.run(tls_server())
    assert r.error is not None and r.error.startswith("cannot connect: TLS error: "), r.error
    assert r.error.endswith(")") and r.http_status is None
