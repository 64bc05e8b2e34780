"""The test suites run by the CLI: conformance (``clnn cts``), fuzzing, model and request
mutations, random graphs, kernel checks and per-operation divergence."""
