"""`python -m roundtable` runs the command line."""

from roundtable.cli import main

main()
