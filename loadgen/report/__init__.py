"""The card: the run folder on disk (rundir), card data from saved files (carddata, savedcard, partial),
Markdown, plots, the terminal summary and the diff of two cards.

May import: every layer below (errors, util, records, profile, check, prom, serve, stream, measure).
Layers, lowest first: errors, util < records < profile < check < prom < serve < stream < measure < report < run
< fleet < cli
(tests/test_layers.py enforces it).
"""
