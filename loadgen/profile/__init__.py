"""What the user declares: pair profiles (pair: the dataclasses; pairfile: reading profiles/pairs/*.toml),
workloads, the strict TOML reader and its value domains, a stream's read timeout (timeouts), arrival
schedules, the declared criteria, and the tables of vLLM's speculative-config fields per version (fields).

May import: errors, util, records.
Layers, lowest first: errors, util < records < store < profile < check < prom < serve < stream < measure < report < run
< fleet < cli; check, serve and stream import none of each other (tests/test_layers.py enforces it).
"""
