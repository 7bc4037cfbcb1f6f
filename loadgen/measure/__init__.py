"""Numbers from records (pure): per-request and per-cell statistics, throughput, paired ratios,
diagnosis, step times, counter cross-checks, outcomes and fault categories, server-side histograms,
and the verdict against the declared criteria.

May import: errors, util, records, profile, check, prom, serve.
Not stream: records/ holds the request record.
Layers, lowest first: errors, util < records < store < profile < check < prom < serve < stream < measure < report < run
< fleet < cli; check, serve and stream import none of each other (tests/test_layers.py enforces it).
"""
