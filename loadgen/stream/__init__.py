"""The client side of a cell: the HTTP/1.1 transport, the SSE decoder and chunk reader, one streamed
request (client), the cell runner with its event loop and signal plumbing, and the read timeout.

May import: errors, util, records, profile, check, prom, serve.
Layers, lowest first: errors, util < records < profile < check < prom < serve < stream < measure < report < run
< fleet < cli
(tests/test_layers.py enforces it).
"""
