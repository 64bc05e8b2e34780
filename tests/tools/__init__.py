"""Tests of the programs in clnn/tools/: the conformance runner, demo, benchmarks."""
