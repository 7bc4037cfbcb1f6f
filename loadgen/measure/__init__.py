"""Numbers from records (pure): per-request and per-cell statistics, throughput, paired ratios,
diagnosis, step times, counter cross-checks, outcomes and fault categories, server-side histograms,
and the verdict against the declared criteria.

May import: errors, util, records, profile, check, prom, serve, stream.
Layers, lowest first: errors, util < records < profile < check < prom < serve < stream < measure < report < run
< fleet < cli
(tests/test_layers.py enforces it).
"""
