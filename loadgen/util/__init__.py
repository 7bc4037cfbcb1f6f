"""Small shared pieces with no loadgen imports but errors: strict JSON (strictjson) and secret redaction (redact).

May import: loadgen.errors only.
Layers, lowest first: errors, util < profile < check < prom < serve < stream < measure < report < run < cli
(tests/test_layers.py enforces it).
"""
