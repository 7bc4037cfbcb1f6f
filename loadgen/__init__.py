"""loadgen: does this speculative-decoding pair make vLLM serving better, on our workloads, at what cost?"""

__version__ = "0.1.0"
