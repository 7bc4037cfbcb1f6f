"""The compare flow: plan and protocol, one cell end to end, observers (live exporter, PromQL
cross-check), closing a run.

May import: errors, util, records, store, profile, check, prom, serve, stream, measure, report.
Layers, lowest first: errors, util < records < store < profile < check < prom < serve < stream < measure < report < run
< fleet < cli; check, serve and stream import none of each other (tests/test_layers.py enforces it).
"""
