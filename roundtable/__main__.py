"""`python -m roundtable` runs the command line."""

from roundtable.entry import main

main()
