"""Record raw SSE bodies from a running vLLM server, for the decoder's recorded-stream tests.

    python scripts/record_vllm_streams.py BASE_URL MODEL OUT_DIR

Writes ``vllm<version>_completions_stream.txt`` and ``vllm<version>_chat_stream.txt``: the exact response
bytes of one streamed /v1/completions and one /v1/chat/completions request (greedy, ``return_token_ids``,
``include_usage``, ``ignore_eos`` with ``min_tokens = max_tokens``). Against a speculative server the
chunks carry several tokens each.
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx


def record(base_url: str, model: str, out_dir: Path) -> list[Path]:
    version = httpx.get(f"{base_url}/version", timeout=10).json()["version"].replace(".", "")[:3]
    common = {
        "model": model,
        "stream": True,
        "stream_options": {"include_usage": True},
        "return_token_ids": True,
        "temperature": 0.0,
        "max_tokens": 24,
        "min_tokens": 24,
        "ignore_eos": True,
    }
    bodies = {
        "completions": ("/v1/completions", common | {"prompt": "The history of the telescope began when"}),
        "chat": ("/v1/chat/completions", common | {"messages": [{"role": "user", "content": "Name three rivers."}]}),
    }
    written = []
    for name, (path, body) in bodies.items():
        with httpx.stream("POST", base_url + path, json=body, timeout=120) as response:
            response.raise_for_status()
            raw = b"".join(response.iter_raw())
        target = out_dir / f"vllm{version}_{name}_stream.txt"
        target.write_bytes(raw)
        written.append(target)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    for p in record(sys.argv[1].rstrip("/"), sys.argv[2], Path(sys.argv[3])):
        print(p)
