"""Small shared pieces with no loadgen imports but errors: strict JSON (strictjson), secret redaction (redact),
vLLM argv (argv), number formatting (numbers), TOML writing (tomlwrite), the last-resort traceback file (crashlog)
and the one TLS context of every HTTP client (tls).

May import: errors.
Layers, lowest first: errors, util < records < store < profile < check < prom < serve < stream < measure < report < run
< fleet < cli; check, serve and stream import none of each other (tests/test_layers.py enforces it).
"""
