"""Tests of the programs in clnn/cli, clnn/bench, clnn/suites and clnn/models: the conformance
runner, demo, benchmarks."""
