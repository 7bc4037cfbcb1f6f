"""trace: Mooncake and timestamped prompt lines read strictly, replay offsets, hash_ids prompt blocks shared
token for token, exact input lengths, the serving context, and a trace workload's variants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from loadgen.errors import ProfileError
from loadgen.profile.trace import WORDS, Replay, offsets_s, read_trace, specials_added, trace_requests
from loadgen.profile.workload import load_tokenizer, load_workloads
from tests.support.tokfactory import trained_vocab, write_model

SMOLLM2 = Path(".models/smollm2-135m-instruct")


def _lines(tmp_path: Path, rows: list[object], name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _word_tokenizer(tmp_path: Path) -> Tokenizer:
    return load_tokenizer(str(write_model(tmp_path / "m", trained_vocab((" ".join(WORDS),)))))


def _tokenizers(tmp_path: Path) -> list[Tokenizer]:
    """A WordLevel tokenizer over the word list, and the real smollm2 BPE tokenizer where it is installed."""
    out = [_word_tokenizer(tmp_path)]
    if (SMOLLM2 / "tokenizer.json").is_file():
        out.append(load_tokenizer(str(SMOLLM2)))
    return out


def test_mooncake_lines_are_sorted_by_timestamp_and_offsets_scale(tmp_path: Path) -> None:
    path = _lines(
        tmp_path,
        [
            {"timestamp": 1000, "input_length": 4, "output_length": 2, "hash_ids": [0]},
            {"timestamp": 500, "input_length": 5, "output_length": 3},
            "",
            {"timestamp": 2500, "input_length": 6, "output_length": 1, "hash_ids": [7]},
        ],
    )
    trace = read_trace(path)
    assert (trace.layout, trace.endpoint, trace.lines, trace.skipped) == ("mooncake", "completions", 3, ())
    assert [e.line for e in trace.entries] == [2, 1, 4]
    assert offsets_s(trace.entries, 1.0) == (0.0, 0.5, 2.0)
    assert offsets_s(trace.entries, 0.5) == (0.0, 0.25, 1.0)  # twice as fast


def test_hash_ids_share_exactly_their_blocks_and_lengths_are_exact(tmp_path: Path) -> None:
    block = 16
    path = _lines(
        tmp_path,
        [
            {"timestamp": 0, "input_length": 3 * block, "output_length": 4, "hash_ids": [11, 22, 33]},
            {"timestamp": 10, "input_length": 3 * block, "output_length": 5, "hash_ids": [11, 22, 44]},
            {"timestamp": 20, "input_length": 2 * block + 5, "output_length": 6, "hash_ids": [11, 99, 44]},
            {"timestamp": 30, "input_length": 40, "output_length": 7},
        ],
    )
    for tok in _tokenizers(tmp_path):
        reqs, skipped = trace_requests(read_trace(path), Replay(block_tokens=block, seed=3), tok)
        ids = [tok.encode(r.text or "").ids for r in reqs]
        assert [len(i) for i in ids] == [48, 48, 37, 40] and skipped == []
        assert [r.output_tokens for r in reqs] == [4, 5, 6, 7]
        s = specials_added(tok)
        shared = 2 * block + s
        assert ids[0][:shared] == ids[1][:shared]  # same first two hashes: the same first 2 x block tokens
        assert (reqs[0].text or "")[:100] == (reqs[1].text or "")[:100]
        assert ids[0][shared:] != ids[1][shared:]  # then different tokens
        assert (
            ids[2][: block + s] == ids[0][: block + s]
            and ids[2][block + s : 2 * block + s] != ids[0][block + s : shared]
        )
        # the same hash gives the same block wherever it sits: hash 44 opens the third block of both
        assert ids[1][shared:] == ids[2][shared:] + ids[1][shared + 5 :]


def test_the_same_trace_gives_the_same_prompts_and_the_seed_changes_them(tmp_path: Path) -> None:
    path = _lines(tmp_path, [{"timestamp": 0, "input_length": 20, "output_length": 2, "hash_ids": [1]}])
    tok = _word_tokenizer(tmp_path)
    a = trace_requests(read_trace(path), Replay(block_tokens=8, seed=1), tok)[0]
    assert a == trace_requests(read_trace(path), Replay(block_tokens=8, seed=1), tok)[0]
    assert a[0].text != trace_requests(read_trace(path), Replay(block_tokens=8, seed=2), tok)[0][0].text


def test_prompt_lines_with_a_timestamp_keep_their_text_and_skip_the_other_shape(tmp_path: Path) -> None:
    path = _lines(
        tmp_path,
        [
            {"timestamp": 2000, "prompt": "the cat sat", "output_tokens": 3},
            {"timestamp": 1000, "prompt": "a dog ran"},
            {"timestamp": 1500, "messages": [{"role": "user", "content": "the bird"}]},
        ],
    )
    trace = read_trace(path)
    assert (trace.layout, trace.endpoint, trace.skipped) == (
        "prompts",
        "completions",
        ("line 3: a chat line in a completions trace",),
    )
    reqs, _ = trace_requests(trace, Replay(time_scale=2.0, output_tokens=9), _word_tokenizer(tmp_path))
    assert [(r.text, r.offset_s, r.output_tokens) for r in reqs] == [("a dog ran", 0.0, 9), ("the cat sat", 2.0, 3)]


def test_requests_over_the_serving_context_are_skipped_and_named(tmp_path: Path) -> None:
    path = _lines(
        tmp_path,
        [
            {"timestamp": 0, "input_length": 10, "output_length": 4},
            {"timestamp": 1, "input_length": 30, "output_length": 4},
        ],
    )
    reqs, skipped = trace_requests(read_trace(path), Replay(context_tokens=20), _word_tokenizer(tmp_path))
    assert [r.line for r in reqs] == [1]
    assert skipped == ["line 2: 30 prompt + 4 output tokens exceed the serving context (20 tokens, --max-model-len)"]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("not json", "line 2 is not JSON"),
        ({"input_length": 4, "output_length": 2}, "line 2: timestamp must be a number of milliseconds >= 0, got None"),
        ({"timestamp": -5, "input_length": 4, "output_length": 2}, "line 2: timestamp must be"),
        ({"timestamp": 5, "input_length": 0, "output_length": 2}, "line 2: input_length must be a positive integer"),
        ({"timestamp": 5, "input_length": 4}, "line 2: output_length must be a positive integer"),
        ({"timestamp": 5, "input_length": 4, "output_length": 2, "hash_ids": ["a"]}, "line 2: hash_ids must be a list"),
        ({"timestamp": 5, "prompt": "x"}, "line 2 has no input_length/output_length"),
        ([1, 2], "line 2 is not a JSON object"),
        # a typo'd key is named with the fix; a length no context holds is refused before a prompt of that many words
        # is built (it hung check and compare)
        ({"timestmp": 5, "input_length": 4, "output_length": 2}, "got None \\(the line has 'timestmp': did you mean "),
        (
            {"timestamp": 5, "input_length": 2_000_000_000, "output_length": 2},
            "line 2: input_length must be a positive integer \\(tokens\\) up to 10,000,000, got 2000000000",
        ),
        ({"timestamp": 5, "input_length": 4, "output_length": 10_000_001}, "output_length must be a positive integer"),
        # a second origin (0 among epoch milliseconds, or 1e300) would make the replay wait for years
        (
            {"timestamp": 1.7e12, "input_length": 4, "output_length": 2},
            "the trace spans 19,676 days \\(line 1 to line 2\\), over 30; give every timestamp in milliseconds",
        ),
    ],
)
def test_a_bad_line_is_one_line_profile_error(tmp_path: Path, row: object, message: str) -> None:
    path = _lines(tmp_path, [{"timestamp": 0, "input_length": 4, "output_length": 2}, row])
    with pytest.raises(ProfileError, match=message) as err:
        read_trace(path)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"timestamp": 0, "promt": "x"},
            "line 1 has an unknown key 'promt' \\(did you mean 'prompt'\\?\\); a trace "
            "line has timestamp, input_length, output_length, hash_ids \\(Mooncake\\) or "
            "timestamp, prompt, messages, output_tokens$",
        ),
        (
            {"timestamp": 0, "input_lenght": 5, "output_length": 3},
            "unknown key 'input_lenght' \\(did you mean 'input_l",
        ),
        (
            {"timestamp": 0, "prompt": "x", "output_tokns": 3},
            "unknown key 'output_tokns' \\(did you mean 'output_tokens",
        ),
        ({"timestamp": 0}, 'line 1 has no prompt or messages; write one request per line, e.g. \\{"timestamp": 0, '),
    ],
)
def test_a_first_line_with_a_typo_is_named_with_did_you_mean(tmp_path: Path, row: object, message: str) -> None:
    """A first line with `promt` read "has no prompt or messages like the first line; one trace holds one line
    shape" (it is the first line), and `output_tokns` on a prompt line was ignored: the output length silently
    became the workload's."""
    with pytest.raises(ProfileError, match=message):
        read_trace(_lines(tmp_path, [row]))


def test_a_mooncake_line_may_carry_more_keys(tmp_path: Path) -> None:
    row = {"timestamp": 0, "input_length": 5, "output_length": 3, "session_id": 7}
    assert read_trace(_lines(tmp_path, [row])).entries[0].input_length == 5


def test_a_trace_of_30_days_and_lengths_of_10m_tokens_are_read(tmp_path: Path) -> None:
    path = _lines(
        tmp_path,
        [
            {"timestamp": 0, "input_length": 10_000_000, "output_length": 10_000_000},
            {"timestamp": 30 * 86_400_000, "input_length": 4, "output_length": 2},
        ],
    )
    assert [e.timestamp_ms for e in read_trace(path).entries] == [0.0, 2_592_000_000.0]


def test_a_trace_workload_records_its_file_and_expands_its_time_scales(tmp_path: Path) -> None:
    path = _lines(tmp_path, [{"timestamp": 0, "prompt": "the cat"}, {"timestamp": 9, "prompt": "a dog"}])
    (tmp_path / "tr.toml").write_text(
        f'kind = "trace"\npath = "{path}"\noutput_tokens = 4\ntime_scale = [1.0, 0.5]\nblock_tokens = 64\n'
    )
    one, two = load_workloads("tr", tmp_path)
    assert (one.name, one.time_scale, two.name, two.time_scale) == ("tr@ts1", 1.0, "tr@ts0.5", 0.5)
    assert (one.kind, one.source_lines, one.block_tokens, len(one.source_sha256 or "")) == ("trace", 2, 64, 64)
    (tmp_path / "bad.toml").write_text(f'kind = "trace"\npath = "{path}"\noutput_tokens = 4\ntime_scale = 0\n')
    with pytest.raises(ProfileError, match="time_scale must be a number > 0"):
        load_workloads("bad", tmp_path)


def test_a_huge_block_size_costs_only_the_tokens_sent_and_domains_bound_the_keys(tmp_path: Path) -> None:
    path = _lines(tmp_path, [{"timestamp": 0, "input_length": 6, "output_length": 2, "hash_ids": [5]}])
    tok = _word_tokenizer(tmp_path)
    big = trace_requests(read_trace(path), Replay(block_tokens=10**9), tok)[0][0].text  # at once, not 10^9 words
    assert big == trace_requests(read_trace(path), Replay(block_tokens=6), tok)[0][0].text
    (tmp_path / "w.toml").write_text(f'kind = "trace"\npath = "{path}"\noutput_tokens = 4\nwindow_s = -1\n')
    with pytest.raises(ProfileError, match="window_s must be a number of seconds > 0"):
        load_workloads("w", tmp_path)
