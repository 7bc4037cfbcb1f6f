"""The card: card data from the run folder as store/ reads it (carddata, saveddata, partial, enginelog),
Markdown (cardmd, sweepmd), the card files written (cardwrite, sweepwrite), plots and the
diff of two cards.

May import: errors, util, records, store, profile, check, prom, serve, measure.
Not stream: records/ holds the request record.
Layers, lowest first: errors, util < records < store < profile < check < prom < serve < stream < measure < report < run
< fleet < cli; check, serve and stream import none of each other (tests/test_layers.py enforces it).
"""
