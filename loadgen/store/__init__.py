"""The run folder on disk: its layout and atomic writes (rundir), each file's typed reader and writer (files),
the one-process lock (runlock), the marker of a folder refused before measuring (refused), what ``--resume`` keeps
of a folder (resumefiles), a run folder read once for the card (runfiles) and what of a run is on disk (ondisk).
run/ writes through it, report/ reads through it.

May import: errors, util, records. Imported only by report, run, fleet and cli (the layers that touch run
folders).
Layers, lowest first: errors, util < records < store < profile < check < prom < serve < stream < measure < report < run
< fleet < cli; check, serve and stream import none of each other (tests/test_layers.py enforces it).
"""
