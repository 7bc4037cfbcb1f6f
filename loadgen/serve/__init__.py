"""The servers under test: launch, attach, readiness, teardown, fatal start-up log lines, resource
accounting, GPU placement, and the proof of mode (plain or speculative).

May import: errors, util, records, profile, prom.
Layers, lowest first: errors, util < records < store < profile < check < prom < serve < stream < measure < report < run
< fleet < cli; check, serve and stream import none of each other (tests/test_layers.py enforces it).
"""
