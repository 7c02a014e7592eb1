"""Servers the transport benchmark runs as subprocesses: floors and an echo-tool owner."""
