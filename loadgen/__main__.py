"""`python -m loadgen` entry point."""

from loadgen.cli import main

main()
