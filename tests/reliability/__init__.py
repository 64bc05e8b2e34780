"""Reliability suites: hostile input, mutations, fuzzing, random graphs, concurrency."""
