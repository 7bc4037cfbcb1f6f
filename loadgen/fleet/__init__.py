"""The same comparison across a fleet of nodes, on Ray: one Ray task per (pair x node), pinned to its
node with one GPU, runs the ordinary ``loadgen compare`` / ``loadgen sweep`` there and ships the run
folder back; the fleet card merges the run folders and flags nodes that disagree (docs/fleet/README.md).

Ray is an optional extra (``pip install loadgen[fleet]``): only the modules that talk to a cluster import
it, and only inside their functions, so ``loadgen fleet report`` and the rest of loadgen run without it.

May import: errors, util, records, store, profile, check, prom, serve, stream, measure, report, run.
Layers, lowest first: errors, util < records < store < profile < check < prom < serve < stream < measure < report < run
< fleet < cli; check, serve and stream import none of each other (tests/test_layers.py enforces it).
"""
