"""The testing domain: test runs as evidence about a proposal's revision.

Test runs and their records (`test_runs`), running one allowed command in the sandbox with its
limits (`test_exec`), and command suggestions from the repository's own markers (`test_suggest`).
It sits above governance (a test run is evidence the gates read).
"""
