"""Requests from NumPy arrays and output arrays back from an execution (the builder's
companions for tests, benchmarks and the CLI)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from hal.builder_layout import SMALL_ALIGN
from hal.types import (
    NUMPY_DTYPE,
    DataLocation,
    HostMemory,
    Model,
    Request,
    RequestArgument,
    is_scalar_type,
)


def make_request(model: Model, inputs: Iterable, output_sizes: Sequence[int] | None = None
                 ) -> Request:
    """A request for ``model``: input arrays (None = omitted) in pool 0, outputs in pool 1.

    An output's buffer is sized from its dimensions when they are known, else ``output_sizes``
    (bytes per output) or 1 MiB.
    """
    sg = model.main
    inputs = list(inputs)
    if len(inputs) != len(sg.input_indexes):
        raise ValueError(f"the model takes {len(sg.input_indexes)} inputs, got {len(inputs)}")
    arrays, args, size = [], [], 0
    for i, x in zip(sg.input_indexes, inputs):
        if x is None:
            args.append(RequestArgument(has_no_value=True))
            continue
        op = sg.operands[i]
        arr = np.asarray(x, dtype=NUMPY_DTYPE[op.type])
        if arr.dtype == np.bool_:
            arr = arr.astype(np.uint8)
        size += -size % SMALL_ALIGN
        dims = tuple(arr.shape) if not is_scalar_type(op.type) else ()
        args.append(RequestArgument(False, DataLocation(0, size, arr.nbytes), dims))
        arrays.append((size, arr))
        size += arr.nbytes
    # one copy of each input, straight into the pool: every extra copy of a big input is
    # paid at every execution (``clnn bench models`` latency)
    data = bytearray(max(size, 1))
    for offset, arr in arrays:
        if arr.nbytes:
            np.frombuffer(data, np.uint8, arr.nbytes, offset)[:] = \
                np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    outs, off = [], 0
    for k, i in enumerate(sg.output_indexes):
        op = sg.operands[i]
        if output_sizes is not None:
            n = output_sizes[k]
        elif op.is_fully_specified():
            n = op.byte_size()
        else:
            n = 1 << 20
        outs.append(RequestArgument(False, DataLocation(1, off, n), ()))
        off += n + (-n % SMALL_ALIGN)
    return Request(args, outs, [HostMemory(data), HostMemory(max(off, 1))])


def read_outputs(model: Model, request: Request, output_shapes) -> list[np.ndarray]:
    """The output arrays of an execution of ``request``, shaped by its OutputShapes."""
    arrays = []
    for arg, shape, i in zip(request.outputs, output_shapes, model.main.output_indexes):
        dt = NUMPY_DTYPE[model.main.operands[i].type]
        dims = tuple(shape.dimensions)
        n = int(np.prod(dims, dtype=np.int64)) * dt.itemsize
        view = request.pools[arg.location.pool_index].view()
        a = np.frombuffer(view[arg.location.offset: arg.location.offset + n],
                          dtype=np.uint8 if dt == np.bool_ else dt)
        arrays.append(a.astype(dt).reshape(dims))  # (a copy: the pool is the request's)
    return arrays
