"""Run ``vllm bench serve`` in-process (for scripts/bench_peers.py): the CPU build's ``vllm`` console script
does not start here, so this builds the same parser (``vllm.benchmarks.serve.add_cli_args`` on vLLM's
``FlexibleArgumentParser``) and calls ``vllm.benchmarks.serve.main``. Arguments are those of
``vllm bench serve``. Run it with the vLLM environment's interpreter (``.venv-vllm/bin/python``).
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    """Parse ``argv`` as ``vllm bench serve`` does and run the benchmark; 0 when it finished."""
    # vLLM lives in its own environment (.venv-vllm), not in loadgen's, where mypy runs
    from vllm.benchmarks.serve import add_cli_args  # type: ignore[import-not-found,unused-ignore]
    from vllm.benchmarks.serve import main as bench_main  # type: ignore[import-not-found,unused-ignore]

    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # older vLLM kept it in vllm.utils
        from vllm.utils import FlexibleArgumentParser  # type: ignore[import-not-found,no-redef,unused-ignore]

    parser = FlexibleArgumentParser(prog="vllm bench serve")
    add_cli_args(parser)
    bench_main(parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
