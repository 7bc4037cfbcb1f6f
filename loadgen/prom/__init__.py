"""Prometheus text: exposition parsing and snapshots, reset-aware deltas, vLLM metric names across versions,
scraping /metrics, and the PromQL reader of a Prometheus server.

May import: errors, util, records, profile, check.
Layers, lowest first: errors, util < records < store < profile < check < prom < serve < stream < measure < report < run
< fleet < cli; check, serve and stream import none of each other (tests/test_layers.py enforces it).
"""
