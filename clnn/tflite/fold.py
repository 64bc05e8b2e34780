"""Shape arithmetic folded at TFLite import: SHAPE and the integer operations after it
(STRIDED_SLICE, SLICE, GATHER, PACK, CONCATENATION, RESHAPE/SQUEEZE/EXPAND_DIMS, CAST and
elementwise ADD/SUB/MUL/FLOOR_DIV/DIV/MAXIMUM/MINIMUM, REDUCE_PROD) become constants, as a
converter with every shape known would compute them; NNAPI has no SHAPE operation.

A dynamic dimension (``shape_signature`` -1) read by SHAPE is a :class:`Dynamic` element: it
travels through the selection operations (slices, gathers, packs, concatenations, reshapes,
casts) as it is; arithmetic on it cannot be folded. A RESHAPE whose target holds one dynamic
element gets -1 there (NNAPI RESHAPE infers it: the other dimensions are known, so the
inferred size is that dimension). Anywhere else a dynamic element is an import error naming
the dimension.
"""

from __future__ import annotations

import numpy as np

from clnn.tflite.op_args import opt


class Dynamic:
    """One dynamic dimension read by SHAPE: ``dimension k of tensor t ('name')``."""

    def __init__(self, what: str):
        self.what = what

    def __repr__(self):
        return self.what


def _dynamic_in(v: np.ndarray) -> Dynamic | None:
    for e in v.reshape(-1):
        if isinstance(e, Dynamic):
            return e
    return None


def shape_value(imp, ti: int):
    """The folded value of an integer tensor (an int64 array, or an object array holding
    Dynamic elements), else None."""
    if ti in imp.symbolic:
        return imp.symbolic[ti]
    v = imp.value(ti)
    if v is None or v.dtype.kind not in "iub":
        return None
    return v.astype(np.int64)


def _store(imp, ti: int, v: np.ndarray):
    if v.dtype == object and _dynamic_in(v) is not None:
        imp.symbolic[ti] = v
        return
    dtype = imp.tensor(ti).dtype or np.int32
    imp.folded[ti] = np.asarray(v.astype(np.int64), dtype=dtype)


def _shape(imp, op, vals):
    ti = op.inputs[0]
    t = imp.tensor(ti)
    dims = []
    for k, (d, s) in enumerate(zip(t.shape, t.signature)):
        dims.append(Dynamic(f"dimension {k} of tensor {ti} ({t.name!r})") if s < 0 else int(d))
    return np.array(dims if dims else [], dtype=object).reshape(len(dims))


def _strided_slice(imp, op, vals):
    x, begin, end, strides = vals[:4]
    for name in ("EllipsisMask", "NewAxisMask", "Offset"):
        if opt(op, name):
            imp.fail(f"{name} is not supported when folding the shape arithmetic")
    bm, em, sm = opt(op, "BeginMask"), opt(op, "EndMask"), opt(op, "ShrinkAxisMask")
    index = []
    for k in range(len(begin)):
        b, e, s = int(begin[k]), int(end[k]), int(strides[k])
        if sm >> k & 1:
            index.append(b)
            continue
        index.append(slice(None if bm >> k & 1 else b, None if em >> k & 1 else e, s))
    return np.asarray(x[tuple(index)])


def _slice(imp, op, vals):
    x, begin, size = vals[:3]
    index = tuple(slice(int(b), None if int(n) < 0 else int(b) + int(n))
                  for b, n in zip(begin, size))
    return x[index]


def _gather(imp, op, vals):
    if opt(op, "BatchDims"):
        imp.fail("batch_dims is not supported when folding the shape arithmetic")
    x, idx = vals[:2]
    return np.take(x, np.asarray(idx, dtype=np.int64), axis=opt(op, "Axis") % max(x.ndim, 1))


def _pack(imp, op, vals):
    return np.stack(vals, axis=opt(op, "Axis") % (vals[0].ndim + 1))


def _concatenation(imp, op, vals):
    if opt(op, "FusedActivationFunction"):
        imp.fail("a fused activation on shape arithmetic cannot be folded")
    return np.concatenate(vals, axis=opt(op, "Axis") % max(vals[0].ndim, 1))


def _reshape(imp, op, vals):
    shape = imp.shape(op.outputs[0])
    if 0 in shape:
        imp.fail("the output shape of folded shape arithmetic must be static")
    return vals[0].reshape(shape)


def _cast(imp, op, vals):
    return vals[0]


def _arith(fn):
    def fold(imp, op, vals):
        for v in vals:
            d = _dynamic_in(v)
            if d is not None:
                imp.fail(f"the shape arithmetic needs {d}, which is dynamic (shape_signature "
                         "-1): fix that dimension to import the model")
        if opt(op, "FusedActivationFunction"):
            imp.fail("a fused activation on shape arithmetic cannot be folded")
        return fn(*(v.astype(np.int64) for v in vals))
    return fold


def _div(a, b):
    if np.any(b == 0):
        raise ZeroDivisionError
    return np.trunc(a / b).astype(np.int64)


def _reduce_prod(imp, op, vals):
    d = _dynamic_in(vals[0])
    if d is not None:
        imp.fail(f"the shape arithmetic needs {d}, which is dynamic (shape_signature -1): fix "
                 "that dimension to import the model")
    axes = tuple(int(a) % max(vals[0].ndim, 1) for a in np.asarray(vals[1]).reshape(-1))
    return np.prod(vals[0].astype(np.int64), axis=axes, keepdims=bool(opt(op, "KeepDims")))


FOLDERS = {
    "SHAPE": _shape,
    "STRIDED_SLICE": _strided_slice,
    "SLICE": _slice,
    "GATHER": _gather,
    "PACK": _pack,
    "CONCATENATION": _concatenation,
    "RESHAPE": _reshape,
    "SQUEEZE": _reshape,
    "EXPAND_DIMS": _reshape,
    "CAST": _cast,
    "ADD": _arith(np.add),
    "SUB": _arith(np.subtract),
    "MUL": _arith(np.multiply),
    "FLOOR_DIV": _arith(np.floor_divide),
    "DIV": _arith(_div),
    "MAXIMUM": _arith(np.maximum),
    "MINIMUM": _arith(np.minimum),
    "REDUCE_PROD": _reduce_prod,
}

#: operators that only exist as shape arithmetic here: anything else is an import error
FOLD_ONLY = {"SHAPE", "PACK", "FLOOR_DIV"}


def _data_inputs(op) -> list[int]:
    """The inputs whose values the fold reads (SHAPE reads only its input's shape)."""
    if op.name in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS"):
        return op.inputs[:1]
    return [ti for ti in op.inputs if ti >= 0]


def try_fold(imp, op) -> bool:
    """Fold ``op`` when it is shape arithmetic on known values; True when folded."""
    fold = FOLDERS.get(op.name)
    if fold is None or len(op.outputs) != 1 or not op.inputs:
        return False
    if op.outputs[0] in imp.graph.outputs and op.name != "SHAPE":
        return False  # a model output is computed, never a constant
    out = imp.tensor(op.outputs[0])
    if out.type_code not in (2, 4) and op.name != "SHAPE":  # INT32 / INT64 results only
        return False
    if op.name == "SHAPE":
        vals = []
    else:
        vals = [shape_value(imp, ti) for ti in _data_inputs(op)]
        if any(v is None for v in vals):
            return False
    try:
        result = fold(imp, op, vals)
    except (IndexError, ValueError, ZeroDivisionError) as e:
        imp.fail(f"the shape arithmetic cannot be folded: {e or type(e).__name__}")
    _store(imp, op.outputs[0], np.asarray(result))
    return True


def reshape_target(imp, ti: int) -> list[int] | None:
    """A RESHAPE's folded target with its one dynamic element as -1; None when ``ti`` holds no
    dynamic element."""
    v = imp.symbolic.get(ti)
    if v is None:
        return None
    flat = list(v.reshape(-1))
    dyn = [e for e in flat if isinstance(e, Dynamic)]
    if len(dyn) > 1 or -1 in flat:
        imp.fail(f"the target shape holds {dyn[0]}, which is dynamic (shape_signature -1), "
                 "with another unknown dimension: fix that dimension to import the model")
    return [-1 if isinstance(e, Dynamic) else int(e) for e in flat]


def fail_dynamic(imp, ti: int):
    """A tensor holding a dynamic dimension is used as data: the error names it."""
    d = _dynamic_in(imp.symbolic[ti])
    imp.fail(f"tensor {ti} holds {d}, which is dynamic (shape_signature -1) and cannot be "
             "folded at import: fix that dimension to import the model")
