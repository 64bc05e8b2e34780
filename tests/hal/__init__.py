"""Tests of the HAL: reference operations, validation, builder, types, execution paths, memory
domains, the compilation cache, spec variants and the HAL's architecture."""
