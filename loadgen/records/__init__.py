"""Typed records: every value that crosses a module or the disk, with to_json/from_json at the disk boundary
(docs/architecture.md).

May import: errors, util.
Layers, lowest first: errors, util < records < store < profile < check < prom < serve < stream < measure < report < run
< fleet < cli; check, serve and stream import none of each other (tests/test_layers.py enforces it).
"""
