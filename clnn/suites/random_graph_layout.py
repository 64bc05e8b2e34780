"""The layout, reduction, matrix and type operations of random graphs, and :func:`grow`, which
draws the operations of one graph (clnn/suites/random_graph_ops.py has the element-wise and
windowed ones)."""

from __future__ import annotations

import numpy as np

from clnn.suites.random_graph_ops import (
    _Ctx,
    _rank4,
    activation,
    binary,
    conv,
    math,
    pool,
    prelu,
)
from clnn.suites.random_graph_spec import BOOL8, F16, F32, FLOATS, I32, QA, QS, QUANT, Graph

_ANY = FLOATS + QUANT


def _any(t) -> bool:
    return t.type in _ANY and 1 <= len(t.shape) <= 4


def reshape(c: _Ctx):
    x = c.pick(lambda t: _any(t) and len(t.shape) >= 2)
    if x is None:
        return None
    tx = c.t(x)
    n = int(np.prod(tx.shape))
    shape = c.choice([(n,), (n // tx.shape[-1], tx.shape[-1]), (1, n // tx.shape[-1], 1,
                                                               tx.shape[-1])])
    dims = list(shape)
    if c.rng.random() < 0.3:
        dims[0] = -1
    return c.op("RESHAPE", [x, c.ints(dims)], tx.type, shape, c.amp[x], (tx.scale, tx.zp))


def transpose(c: _Ctx):
    x = c.pick(lambda t: _any(t) and len(t.shape) >= 2)
    if x is None:
        return None
    tx = c.t(x)
    perm = [int(v) for v in c.rng.permutation(len(tx.shape))]
    return c.op("TRANSPOSE", [x, c.ints(perm)], tx.type, [tx.shape[p] for p in perm],
                c.amp[x], (tx.scale, tx.zp))


def concat(c: _Ctx):
    x = c.pick(_any)
    if x is None:
        return None
    tx = c.t(x)
    axis = int(c.rng.integers(len(tx.shape)))
    other = c.pick(lambda t: t.type == tx.type and len(t.shape) == len(tx.shape) and all(
        a == b for k, (a, b) in enumerate(zip(t.shape, tx.shape)) if k != axis))
    if other is None or c.rng.random() < 0.4:
        shape = list(tx.shape)
        shape[axis] = int(c.rng.integers(1, 4))
        other = c.input(tx.type, shape)
    shape = list(tx.shape)
    shape[axis] += c.t(other).shape[axis]
    neg = axis - len(shape) if c.rng.random() < 0.3 else axis
    return c.op("CONCATENATION", [x, other, ("INT32", neg)], tx.type, shape,
                max(c.amp[x], c.amp[other]), (tx.scale, tx.zp))


def softmax(c: _Ctx):
    x = c.pick(_any)
    if x is None:
        return None
    tx = c.t(x)
    beta = ("FLOAT16" if tx.type == F16 else "FLOAT32", float(c.choice([1.0, 0.5])))
    ins = [x, beta] + ([("INT32", -1)] if c.rng.random() < 0.5 else [])
    quant = (1 / 256, 0 if tx.type == QA else -128) if tx.type in QUANT else None
    return c.op("SOFTMAX", ins, tx.type, tx.shape, 1.0, quant)


def reduce(c: _Ctx):
    x = c.pick(_any)
    if x is None:
        return None
    tx = c.t(x)
    names = ["MEAN", "REDUCE_MAX", "REDUCE_MIN"] + (["REDUCE_SUM"] if tx.type in FLOATS else [])
    name = c.choice(names)
    rank = len(tx.shape)
    axes = sorted({int(a) for a in c.rng.integers(0, rank, int(c.rng.integers(1, rank + 1)))})
    keep = bool(c.rng.random() < 0.5)
    shape = [1 if k in axes else d for k, d in enumerate(tx.shape) if keep or k not in axes]
    keep_arg = ("INT32", int(keep)) if name == "MEAN" else ("BOOL", keep)
    n = int(np.prod([tx.shape[a] for a in axes]))
    amp = c.amp[x] * (n if name == "REDUCE_SUM" else 1)
    return c.op(name, [x, c.ints(axes), keep_arg], tx.type, shape or [1], amp,
                (tx.scale, tx.zp) if name != "REDUCE_SUM" else None)


def fully_connected(c: _Ctx):
    x = c.pick(lambda t: _any(t) and len(t.shape) >= 2)
    if x is None:
        return None
    tx = c.t(x)
    k = tx.shape[-1]
    units = int(c.rng.integers(1, 5))
    if tx.type in FLOATS:
        w = c.const(tx.type, (units, k), -0.5, 0.5)
        b = c.const(tx.type, (units,), -0.5, 0.5)
    else:
        ws = float(np.float32(c.rng.uniform(0.002, 0.008)))
        w = c.const(tx.type, (units, k), scale=ws,
                    zp=int(c.rng.integers(-10, 11)) + (128 if tx.type == QA else 0))
        b = c.const(I32, (units,), -300, 300, scale=float(np.float32(tx.scale * ws)))
    batch = int(np.prod(tx.shape)) // k
    return c.op("FULLY_CONNECTED", [x, w, b, c.choice([("INT32", 0), ("INT32", 1)])],
                tx.type, (batch, units), c.amp[x] * 0.5 * k ** 0.5 + 0.5)


def resize(c: _Ctx):
    x = c.pick(_rank4)
    if x is None:
        return None
    tx = c.t(x)
    name = c.choice(["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
    oh, ow = (int(v) for v in c.rng.integers(1, 7, 2))
    ins = [x, ("INT32", ow), ("INT32", oh)]
    if c.rng.random() < 0.5 or name == "RESIZE_NEAREST_NEIGHBOR":
        ins.append(("BOOL", False))
        corners = bool(c.rng.random() < 0.5)
        ins += [("BOOL", corners), ("BOOL", not corners and bool(c.rng.random() < 0.5))]
    return c.op(name, ins, tx.type, (tx.shape[0], oh, ow, tx.shape[3]), c.amp[x],
                (tx.scale, tx.zp), exact=name == "RESIZE_NEAREST_NEIGHBOR")


def space_depth(c: _Ctx):
    x = c.pick(_rank4)
    if x is None:
        return None
    tx = c.t(x)
    n, h, w, ch = tx.shape
    if h % 2 == 0 and w % 2 == 0 and c.rng.random() < 0.5:
        return c.op("SPACE_TO_DEPTH", [x, ("INT32", 2)], tx.type, (n, h // 2, w // 2, ch * 4),
                    c.amp[x], (tx.scale, tx.zp))
    if ch % 4 == 0:
        return c.op("DEPTH_TO_SPACE", [x, ("INT32", 2)], tx.type, (n, h * 2, w * 2, ch // 4),
                    c.amp[x], (tx.scale, tx.zp))
    return None


def l2_normalization(c: _Ctx):
    x = c.pick(_rank4)
    if x is None:
        return None
    tx = c.t(x)
    quant = (1 / 128, 128 if tx.type == QA else 0) if tx.type in QUANT else None
    return c.op("L2_NORMALIZATION", [x], tx.type, tx.shape, 1.0, quant)


def slicing(c: _Ctx):
    x = c.pick(_any)
    if x is None:
        return None
    tx = c.t(x)
    begin = [int(c.rng.integers(0, d)) for d in tx.shape]
    size = [int(c.rng.integers(1, d - b + 1)) for b, d in zip(begin, tx.shape)]
    if c.rng.random() < 0.5:
        return c.op("SLICE", [x, c.ints(begin), c.ints(size)], tx.type, size, c.amp[x],
                    (tx.scale, tx.zp))
    reps = [int(c.rng.integers(1, 3)) for _ in tx.shape]
    return c.op("TILE", [x, c.ints(reps)], tx.type, [d * r for d, r in zip(tx.shape, reps)],
                c.amp[x], (tx.scale, tx.zp))


def shuffle_gather(c: _Ctx):
    x = c.pick(_rank4)
    if x is None:
        return None
    tx = c.t(x)
    if tx.shape[3] % 2 == 0 and c.rng.random() < 0.5:
        return c.op("CHANNEL_SHUFFLE", [x, ("INT32", 2), ("INT32", -1)], tx.type, tx.shape,
                    c.amp[x], (tx.scale, tx.zp))
    axis = int(c.rng.integers(0, 4))
    idx = c.rng.integers(0, tx.shape[axis], int(c.rng.integers(1, 4))).astype(np.int32)
    i = c.ints(idx)
    shape = list(tx.shape)
    shape[axis] = len(idx)
    return c.op("GATHER", [x, ("INT32", axis), i], tx.type, shape, c.amp[x], (tx.scale, tx.zp))


def compare_select(c: _Ctx):
    """GREATER / LESS of an exact tensor (a comparison of computed values could flip on a
    rounding difference), then SELECT between it and another tensor."""
    x = c.pick(lambda t: _any(t) and t.exact)
    if x is None:
        return None
    tx = c.t(x)
    th = c.const(tx.type, (1,), scale=tx.scale, zp=tx.zp, lo=-0.3, hi=0.3)
    cond = c.op(c.choice(["GREATER", "LESS"]), [x, th], BOOL8, tx.shape, 1.0)
    y = c.pick(lambda t: t.type == tx.type and t.shape == tx.shape and t.scale == tx.scale and
               t.zp == tx.zp and t is not tx)
    if y is None:
        y = c.input(tx.type, tx.shape) if tx.type in FLOATS else \
            c.const(tx.type, tx.shape, scale=tx.scale, zp=tx.zp)
    return c.op("SELECT", [cond, x, y], tx.type, tx.shape, max(c.amp[x], c.amp[y]),
                (tx.scale, tx.zp))


def convert(c: _Ctx):
    """ARGMAX, CAST, QUANTIZE, DEQUANTIZE: the edges between types."""
    x = c.pick(_any)
    if x is None:
        return None
    tx = c.t(x)
    r = c.rng.random()
    if r < 0.25 and tx.exact:
        axis = int(c.rng.integers(len(tx.shape)))
        shape = [d for k, d in enumerate(tx.shape) if k != axis] or [1]
        y = c.op("ARGMAX", [x, ("INT32", axis)], I32, shape, float(tx.shape[axis]))
        if c.rng.random() < 0.5:  # int32 arithmetic (no fused activation for int32)
            name = c.choice(["ADD", "SUB", "MUL", "MAXIMUM"])
            y = c.op(name, [y, c.const(I32, (1,), -3, 3)] + ([("INT32", 0)] if name !=
                                                              "MAXIMUM" else []), I32, shape, 8.0)
        return y
    if tx.type in FLOATS and r < 0.6:
        other = F16 if tx.type == F32 else F32
        return c.op("CAST", [x], other, tx.shape, c.amp[x], exact=tx.type == F16)
    if tx.type in FLOATS and tx.exact:
        q = c.choice(QUANT)
        return c.op("QUANTIZE", [x], q, tx.shape, c.amp[x])
    if tx.type in QUANT:
        return c.op("DEQUANTIZE", [x], c.choice(FLOATS), tx.shape, c.amp[x])
    return None


def matmul(c: _Ctx):
    x = c.pick(lambda t: t.type in (F32, F16, QS) and 2 <= len(t.shape) <= 4)
    if x is None:
        return None
    tx = c.t(x)
    k = int(c.rng.integers(1, 5))
    y_shape = (1,) * (len(tx.shape) - 2) + (tx.shape[-1], k)
    if tx.type == QS:
        y = c.const(QS, y_shape, scale=float(np.float32(0.01)), zp=int(c.rng.integers(-5, 6)))
    else:
        y = c.const(tx.type, y_shape, -0.5, 0.5)
    return c.op("BATCH_MATMUL", [x, y], tx.type, tx.shape[:-1] + (k,),
                c.amp[x] * 0.5 * tx.shape[-1] ** 0.5 + 0.5)


_GENERATORS = [(binary, 6), (activation, 4), (conv, 6), (pool, 3), (prelu, 1), (math, 2),
               (reshape, 1), (transpose, 1), (concat, 2), (softmax, 1), (reduce, 2),
               (fully_connected, 2), (resize, 1), (space_depth, 1), (l2_normalization, 1),
               (slicing, 1), (shuffle_gather, 1), (compare_select, 1), (convert, 1),
               (matmul, 1)]


def grow(g: Graph, rng: np.random.Generator, max_ops: int) -> Graph:
    c = _Ctx(g, rng)
    family = c.choice([F32, F32, F32, F16, QA, QS])
    if rng.random() < 0.15:  # wide: the GEMM and tiled kernel paths, edge tiles
        c.max_channels = 40
        c.input(family, (1, int(rng.integers(4, 13)), int(rng.integers(4, 13)),
                         int(rng.integers(5, 25))))
    else:
        c.input(family, (1, int(rng.integers(1, 6)), int(rng.integers(1, 6)),
                         int(rng.integers(1, 5))))
    fns = [f for f, _ in _GENERATORS]
    weights = np.array([w for _, w in _GENERATORS], float)
    steps = int(rng.integers(1, max_ops + 1))
    for _ in range(steps):
        for _attempt in range(10):
            fn = fns[int(rng.choice(len(fns), p=weights / weights.sum()))]
            if fn(c) is not None:
                break
    read = {i for op in g.ops for i in op.inputs if isinstance(i, int)}
    made = g.producers()
    g.outputs = [i for i in c.pool if i in made and i not in read] or \
        ([g.ops[-1].outputs[0]] if g.ops else [])
    inner = [i for i in c.pool if i in made and i not in g.outputs]
    if inner and rng.random() < 0.2:  # an intermediate read outside too: no fusion may hide it
        g.outputs.append(c.choice(inner))
    return g


