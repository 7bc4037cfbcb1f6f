"""Checks of a pair before anything starts: the pair check (validate), vocabularies, the speculative-config
rules, the draft checks, the engine probe; each check's outcome is one Finding.

May import: errors, util, profile.
Layers, lowest first: errors, util < profile < check < prom < serve < stream < measure < report < run < fleet < cli
(tests/test_layers.py enforces it).
"""
