"""Benchmarks and profiling: ``clnn bench``, the timing protocol, rooflines, plots, traces."""
