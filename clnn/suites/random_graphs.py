"""Random valid graphs, as the NNAPI CTS ``RandomGraph`` fuzzing test builds them:
:func:`generate` draws a graph spec from a seed (clnn/suites/random_graph_spec.py: the spec,
:func:`build` into a hal Model, :func:`to_python` as ModelBuilder code); the operations are in
clnn/suites/random_graph_ops.py and clnn/suites/random_graph_layout.py. clnn/suites/fuzz_graphs.py
runs them on OpenCL against the reference.
"""

from __future__ import annotations

import numpy as np

from clnn.suites.random_graph_layout import grow
from clnn.suites.random_graph_spec import Graph, build, random_data, to_python


def generate(seed: int, max_ops: int = 6) -> Graph:
    """A random valid graph of 1..max_ops operations (a fusion chain counts as several)."""
    return grow(Graph(seed), np.random.default_rng(seed), max_ops)


__all__ = ["Graph", "build", "generate", "random_data", "to_python"]
