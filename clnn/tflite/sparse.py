"""Densifying TFLite sparse constants (the input of DENSIFY), with every sparsity parameter
checked before it is used: a corrupted file must not index out of range or expand a few
bytes into gigabytes."""

from __future__ import annotations

import numpy as np
import tflite

from clnn.tflite.errors import TfliteImportError

_INT_VECTORS = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}


def _index_vector(dm, which: str, what: str) -> np.ndarray:
    """array_segments / array_indices of a DimensionMetadata (a union of int vectors)."""
    kind = getattr(dm, f"Array{which}Type")()
    table = getattr(dm, f"Array{which}")()
    if kind not in _INT_VECTORS or table is None:
        raise TfliteImportError(f"{what}: a SPARSE_CSR dimension has no array_"
                                f"{which.lower()} (vector type {kind})")
    vec = _INT_VECTORS[kind]()
    vec.Init(table.Bytes, table.Pos)
    return vec.ValuesAsNumpy().astype(np.int64) if vec.ValuesLength() else np.zeros(0, np.int64)


def _ints(sparsity, field: str) -> list[int]:
    if not getattr(sparsity, f"{field}Length")():
        return []
    return [int(x) for x in getattr(sparsity, f"{field}AsNumpy")()]


def densify(values: np.ndarray, shape, sparsity, what: str = "sparse tensor") -> np.ndarray:
    """The dense array of a TFLite sparse constant (TACO-style format: dimensions visited in
    ``traversal_order``, each DENSE or SPARSE_CSR, optional block dimensions in
    ``block_map``). The caller has bounded the dense size (``shape``)."""
    rank = len(shape)
    order = _ints(sparsity, "TraversalOrder")
    block_map = _ints(sparsity, "BlockMap")
    dims = [sparsity.DimMetadata(i) for i in range(sparsity.DimMetadataLength())]
    levels = rank + len(block_map)
    if len(order) != levels or len(dims) != levels:
        raise TfliteImportError(f"{what}: traversal order ({len(order)}), dimension metadata "
                                f"({len(dims)}) and rank {rank} + block map "
                                f"({len(block_map)}) do not agree")
    if sorted(order) != list(range(levels)):
        raise TfliteImportError(f"{what}: traversal order {order} is not a permutation of "
                                f"0..{levels - 1}")
    if any(not 0 <= d < rank for d in block_map) or len(set(block_map)) != len(block_map):
        raise TfliteImportError(f"{what}: block map {block_map} must name distinct "
                                f"dimensions below rank {rank}")
    level_of = {dim: level for level, dim in enumerate(order)}
    extent = list(shape) + [0] * len(block_map)
    for j, d in enumerate(block_map):
        block = int(dims[level_of[rank + j]].DenseSize())
        if block <= 0 or shape[d] % block:
            raise TfliteImportError(f"{what}: block size {block} does not divide dimension "
                                    f"{d} ({shape[d]})")
        extent[rank + j] = block
        extent[d] = shape[d] // block
    total = int(np.prod(shape, dtype=np.int64)) if rank else 1
    # positions: index into the next level's storage; coords: expanded-space coordinates
    positions = np.zeros(1, np.int64)
    coords = np.zeros((1, levels), np.int64)
    for level, dm in enumerate(dims):
        size = extent[order[level]]
        fmt = dm.Format()
        if fmt == 0:  # DENSE
            n = int(dm.DenseSize())
            if n != size:
                raise TfliteImportError(f"{what}: dense dimension {order[level]} has size {n}, "
                                        f"the shape says {size}")
            positions = (positions[:, None] * n + np.arange(n)[None, :]).reshape(-1)
            idx = np.tile(np.arange(n), len(coords))
            coords = np.repeat(coords, n, axis=0)
        elif fmt == 1:  # SPARSE_CSR
            seg = _index_vector(dm, "Segments", what)
            ind = _index_vector(dm, "Indices", what)
            if len(positions) and (len(seg) < 2 or positions.max() + 1 >= len(seg)):
                raise TfliteImportError(f"{what}: level {level} has {len(seg)} segments for "
                                        f"{len(positions)} positions")
            if np.any(np.diff(seg) < 0) or seg[0] < 0 or seg[-1] > len(ind):
                raise TfliteImportError(f"{what}: level {level} segments are not an "
                                        f"increasing run within {len(ind)} indices")
            if np.any(ind < 0) or np.any(ind >= size):
                raise TfliteImportError(f"{what}: level {level} has indices outside "
                                        f"0..{size - 1}")
            counts = seg[positions + 1] - seg[positions]
            starts = np.repeat(seg[positions], counts)
            within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
            positions = starts + within
            idx = ind[positions]
            coords = np.repeat(coords, counts, axis=0)
        else:
            raise TfliteImportError(f"{what}: level {level} has unknown format {fmt}")
        if len(positions) > total:
            raise TfliteImportError(f"{what}: level {level} expands to {len(positions)} "
                                    f"positions, more than the {total} elements of the shape")
        coords[:, order[level]] = idx
    if len(positions) != values.size or (len(positions) and positions.max() >= values.size):
        raise TfliteImportError(f"{what}: {values.size} values stored for {len(positions)} "
                                "positions")
    dense_coords = coords[:, :rank].copy()
    for j, d in enumerate(block_map):
        dense_coords[:, d] = dense_coords[:, d] * extent[rank + j] + coords[:, rank + j]
    out = np.zeros(shape, values.dtype)
    out[tuple(dense_coords.T)] = values[positions]
    return out
