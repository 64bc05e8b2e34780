"""OpenVX contexts and tensors.

A tensor's dimensions are in OpenVX order, fastest-varying first: [width, height, #IFM,
#batches] for images, [#IFM, #batches] for fully connected layers. Its data, read and written as
NumPy arrays, is indexed the same way: ``a[x, y, ifm, batch]`` (the array's shape equals
``tensor.dims``). A fixed-point tensor (VX_TYPE_INT8, VX_TYPE_UINT8, VX_TYPE_INT16) holds
integers whose real value is ``raw * 2**-fixed_point_position``; :meth:`Tensor.write` and
:meth:`Tensor.read` move the raw integers, :meth:`Tensor.write_values` and
:meth:`Tensor.read_values` real numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from clnn.openvx.constants import (
    DATA_TYPES,
    VX_ERROR_INVALID_DIMENSION,
    VX_ERROR_INVALID_FORMAT,
    VX_ERROR_INVALID_PARAMETERS,
    VX_ERROR_INVALID_REFERENCE,
    VX_ERROR_OPTIMIZED_AWAY,
    VX_TYPE_FLOAT32,
    VX_TYPE_INT8,
    VX_TYPE_INT16,
    VX_TYPE_UINT8,
    VxError,
)

NUMPY_OF = {VX_TYPE_INT8: np.dtype(np.int8), VX_TYPE_UINT8: np.dtype(np.uint8),
            VX_TYPE_INT16: np.dtype(np.int16), VX_TYPE_FLOAT32: np.dtype(np.float32)}
#: the largest rank a tensor may have (VX_CONTEXT_MAX_TENSOR_DIMS of this implementation)
MAX_TENSOR_DIMS = 6


class Context:
    """vx_context: owns the device graphs run on. ``device`` is a name for
    :func:`clnn.devices.open_device` ("reference", "opencl", ...; ``options`` go with it,
    e.g. ``fallback=False``) or a HAL Device; it is opened when a graph is first verified."""

    def __init__(self, device="reference", **options):
        self._device_spec = device
        self._options = options
        self._device = None if isinstance(device, str) else device

    @property
    def device(self):
        if self._device is None:
            from clnn.devices import open_device

            self._device = open_device(self._device_spec, **self._options)
        return self._device

    def create_tensor(self, dims: Sequence[int], data_type: int = VX_TYPE_FLOAT32,
                      fixed_point_position: int = 0) -> Tensor:
        """vxCreateTensor."""
        return Tensor(self, dims, data_type, fixed_point_position)


def check_data_type(data_type, fixed_point_position) -> None:
    if data_type not in NUMPY_OF:
        raise VxError(VX_ERROR_INVALID_FORMAT, f"data type {data_type!r} is not one of "
                      f"{', '.join('VX_TYPE_' + n for n in DATA_TYPES.values())}")
    fpp = fixed_point_position
    if isinstance(fpp, bool) or not isinstance(fpp, (int, np.integer)):
        raise VxError(VX_ERROR_INVALID_PARAMETERS,
                      f"fixed point position {fpp!r} is not an integer")
    if data_type == VX_TYPE_FLOAT32 and fpp != 0:
        raise VxError(VX_ERROR_INVALID_PARAMETERS,
                      f"a VX_TYPE_FLOAT32 tensor has fixed point position 0, got {fpp}")
    bits = NUMPY_OF[data_type].itemsize * 8
    if not 0 <= fpp < bits:
        raise VxError(VX_ERROR_INVALID_PARAMETERS, f"fixed point position {fpp} is outside "
                      f"0..{bits - 1} for VX_TYPE_{DATA_TYPES[data_type]}")


class Tensor:
    """vx_tensor. ``virtual`` tensors belong to one graph, hold no data the user can reach,
    and may leave dimensions unknown (0, or ``dims=None`` for an unknown rank) for
    Graph.verify to infer from the node that writes them."""

    def __init__(self, context: Context, dims: Sequence[int] | None, data_type: int,
                 fixed_point_position: int = 0, *, graph=None):
        if not isinstance(context, Context):
            raise VxError(VX_ERROR_INVALID_REFERENCE, f"{context!r} is not a Context")
        check_data_type(data_type, fixed_point_position)
        self.context = context
        self.graph = graph
        self.data_type = int(data_type)
        self.fixed_point_position = int(fixed_point_position)
        if dims is None:
            if graph is None:
                raise VxError(VX_ERROR_INVALID_DIMENSION,
                              "only a virtual tensor may leave its dimensions unknown")
            self.dims = None
        else:
            try:
                dims = tuple(int(d) for d in dims)
            except (TypeError, ValueError):
                raise VxError(VX_ERROR_INVALID_DIMENSION,
                              f"dimensions {dims!r} are not a list of integers") from None
            if not 1 <= len(dims) <= MAX_TENSOR_DIMS:
                raise VxError(VX_ERROR_INVALID_DIMENSION, f"a tensor has 1 to "
                              f"{MAX_TENSOR_DIMS} dimensions, got {len(dims)}")
            if any(d < 0 for d in dims) or (graph is None and 0 in dims):
                raise VxError(VX_ERROR_INVALID_DIMENSION, f"dimensions {list(dims)} must be "
                              "positive" + ("" if graph is not None else
                                            " (only a virtual tensor may leave one unknown)"))
            self.dims = dims
        self._data = None
        #: bumped by every write, so a graph notices new [static] weights and lowers again
        self.version = 0
        self.inferred_dims: tuple[int, ...] | None = None

    @property
    def virtual(self) -> bool:
        return self.graph is not None

    @property
    def dtype(self) -> np.dtype:
        return NUMPY_OF[self.data_type]

    @property
    def is_fixed_point(self) -> bool:
        return self.data_type != VX_TYPE_FLOAT32

    @property
    def shape(self) -> tuple[int, ...] | None:
        """The dimensions once known: as given, else as Graph.verify inferred them."""
        if self.dims is not None and 0 not in self.dims:
            return self.dims
        return self.inferred_dims

    @property
    def rank(self) -> int | None:
        return len(self.dims) if self.dims is not None else (
            len(self.inferred_dims) if self.inferred_dims else None)

    def __repr__(self):
        kind = "virtual tensor" if self.virtual else "tensor"
        dt = DATA_TYPES[self.data_type]
        q = f", Q{self.fixed_point_position}" if self.is_fixed_point else ""
        return f"<{kind} {list(self.shape or self.dims or [])} {dt}{q}>"

    # ------------------------------------------------------------------ data
    def _check_reachable(self, what: str):
        if self.virtual:
            raise VxError(VX_ERROR_OPTIMIZED_AWAY,
                          f"cannot {what} a virtual tensor: its data lives inside the graph")

    def write(self, array) -> None:
        """Copy raw elements in (vxCopyTensorPatch, VX_WRITE_ONLY): an array of the tensor's
        shape, indexed in OpenVX order; integers for fixed-point tensors."""
        self._check_reachable("write")
        a = np.asarray(array)
        if a.shape != self.dims:
            raise VxError(VX_ERROR_INVALID_DIMENSION, f"an array of shape {list(a.shape)} "
                          f"does not fit a tensor of dimensions {list(self.dims)}")
        if self.is_fixed_point:
            info = np.iinfo(self.dtype)
            if not np.issubdtype(a.dtype, np.integer) \
                    or (a.size and (a.min() < info.min or a.max() > info.max)):
                raise VxError(VX_ERROR_INVALID_FORMAT, "raw data of a VX_TYPE_"
                              f"{DATA_TYPES[self.data_type]} tensor must be integers in "
                              f"{info.min}..{info.max}")
        self._data = np.array(a, dtype=self.dtype)
        self.version += 1

    def read(self) -> np.ndarray:
        """A copy of the raw elements (vxCopyTensorPatch, VX_READ_ONLY)."""
        self._check_reachable("read")
        if self._data is None:
            raise VxError(VX_ERROR_INVALID_PARAMETERS, f"{self!r} has no data yet")
        return self._data.copy()

    @property
    def has_data(self) -> bool:
        return self._data is not None

    def write_values(self, values) -> None:
        """Write real numbers: fixed-point tensors round them to nearest (ties to even) at
        their fixed point position and saturate to the type's range."""
        v = np.asarray(values, dtype=np.float64)
        if self.is_fixed_point:
            info = np.iinfo(self.dtype)
            v = np.clip(np.rint(v * 2.0 ** self.fixed_point_position), info.min, info.max)
        self.write(v.astype(self.dtype))

    def read_values(self) -> np.ndarray:
        """The elements as real numbers (float64 for fixed point, float32 for float)."""
        raw = self.read()
        if not self.is_fixed_point:
            return raw
        return raw.astype(np.float64) * 2.0 ** -self.fixed_point_position

    def set_result(self, array: np.ndarray) -> None:
        """Graph.process stores a node's output here (no version bump: results are not
        [static] inputs of the graph)."""
        self._data = np.asarray(array, dtype=self.dtype)
