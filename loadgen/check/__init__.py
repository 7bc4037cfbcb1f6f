"""Checks of a pair before anything starts: the pair check (validate), vocabularies, the speculative-config
rules, the draft checks (draftcheck, headvocab: a head's vocabulary), the target checks (targetcheck: a
speculators checkpoint as target, the chat template), lossy rejection (lossy), the engine probe; each check's
outcome is one Finding.

May import: errors, util, records, profile.
Layers, lowest first: errors, util < records < store < profile < check < prom < serve < stream < measure < report < run
< fleet < cli; check, serve and stream import none of each other (tests/test_layers.py enforces it).
"""
