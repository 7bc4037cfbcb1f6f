"""The client side of a cell: the HTTP/1.1 transport, the SSE decoder and chunk reader, one streamed
request (client) and a cell's load loop (loadloop) with its event loop and signal plumbing.

May import: errors, util, records, profile, prom.
Layers, lowest first: errors, util < records < store < profile < check < prom < serve < stream < measure < report < run
< fleet < cli; check, serve and stream import none of each other (tests/test_layers.py enforces it).
"""
