"""Shared test scaffolding: a scripted SSE server, real Prometheus/Pushgateway processes, fake run folders,
trained tokenizer files."""
