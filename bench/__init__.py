"""Benchmarks: `make bench` runs every module listed in `bench.__main__.MODULES`."""
