"""Helpers the tests share: models they build, devices they compare, data they derive."""
