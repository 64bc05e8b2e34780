"""Shapes and data movement: Reshape / Flatten / Squeeze / Unsqueeze (all RESHAPE), Transpose,
Concat, Split, Slice, Pad, Gather, Cast and Identity / Dropout (removed).
Attributes that later opsets moved to inputs (Squeeze axes, Split sizes, Slice starts / ends,
Pad pads, ReduceX axes) are read from where the node's opset puts them."""

from __future__ import annotations

import numpy as np

from clnn.onnx import views
from clnn.onnx.dtypes import ELEM_TYPES
from hal.types import OperandType

OT = OperandType
INT_BIG = 2**31 - 1



def reshape_to(imp, x: str, y: str, target):
    """RESHAPE ``x`` into output ``y`` of shape ``target`` (0 = unknown: at most one, sent to
    NNAPI as -1)."""
    target = [int(d) for d in target]
    readers = imp.readers.get(y, [])
    if len(target) > 4 and y not in imp.outputs and readers and all(
            r.op_type in views.READERS for r in readers):
        imp.views[y] = (imp.source(x), tuple(target))  # for a Transpose (a channel shuffle)
        if x in imp.quant:
            imp.quant[y] = imp.quant[x]
        return
    if target.count(0) > 1:
        imp.fail(f"the target shape {target} has more than one unknown dimension")
    out = imp.output(y, shape=target, like=x)
    imp.emit("RESHAPE", [imp.source(x), imp.ints([d or -1 for d in target])], [out])


def reshape(imp, n):
    x = n.input(0)
    if imp.opset < 5:  # pragma: no cover - opsets below 7 are rejected earlier
        imp.fail("the shape attribute has no mapping")
    shape = [int(d) for d in imp.const_input(n, 1, "the shape")]
    allowzero = n.attr("allowzero", 0)
    src = imp.shape(x)
    if src is None:
        imp.fail(f"the rank of {x!r} is unknown")
    if n.input(1) in imp.symbolic:  # 0 = a dynamic dimension: the input's, at that place
        bad = [i for i, d in enumerate(shape) if d == 0 and (allowzero or i >= len(src)
                                                             or src[i] != 0)]
        if bad:
            imp.fail(f"the shape {shape} copies dynamic dimensions to places {bad} where the "
                     "input's dimension is not dynamic; fix the input shapes with shapes=")
    reshape_to(imp, x, n.outputs[0], reshaped(src, shape, allowzero))


def reshaped(src, shape, allowzero=0) -> list[int]:
    """The output shape of a Reshape of a ``src``-shaped value to target ``shape`` (0 in
    ``src`` and in the result: a dimension known only at execution)."""
    copied = {i for i, d in enumerate(shape) if d == 0 and not allowzero and i < len(src)}
    out = [src[i] if i in copied else int(d) for i, d in enumerate(shape)]
    if -1 in out:
        # the copied dimensions cancel, so a -1 is known even beside an unknown batch
        k = out.index(-1)
        rest = [d for i, d in enumerate(src) if i not in copied]
        others = [d for i, d in enumerate(out) if i not in copied and i != k]
        known = 0 not in rest and 0 not in others and int(np.prod(others)) > 0
        out[k] = int(np.prod(rest)) // int(np.prod(others)) if known else 0
    return out


def flatten(imp, n):
    x = n.input(0)
    s = imp.shape(x)
    if s is None:
        imp.fail(f"the rank of {x!r} is unknown")
    axis = n.attr("axis", 1)
    axis = axis + len(s) if axis < 0 else axis
    head, tail = s[:axis], s[axis:]
    reshape_to(imp, x, n.outputs[0], [0 if 0 in head else int(np.prod(head)),
                                      0 if 0 in tail else int(np.prod(tail))])


def axes_of(imp, n, first_input_opset: int, index: int = 1):
    """The axes of a node: the ``axes`` attribute before ``first_input_opset``, input
    ``index`` from then on (None when absent)."""
    if imp.opset < first_input_opset:
        a = n.attr("axes")
        return None if a is None else [int(v) for v in a]
    if not n.input(index):
        return None
    return [int(v) for v in imp.const_input(n, index, "axes").reshape(-1)]


def squeeze(imp, n):
    x = n.input(0)
    s = imp.shape(x)
    if s is None:
        imp.fail(f"the rank of {x!r} is unknown")
    axes = axes_of(imp, n, 13)
    if axes is None:
        s = imp.static_shape(x)
        axes = [i for i, d in enumerate(s) if d == 1]
    axes = {a + len(s) if a < 0 else a for a in axes}
    reshape_to(imp, x, n.outputs[0], [d for i, d in enumerate(s) if i not in axes])


def unsqueeze(imp, n):
    x = n.input(0)
    s = list(imp.shape(x) or ())
    axes = axes_of(imp, n, 13)
    if axes is None:
        imp.fail("the axes are missing")
    rank = len(s) + len(axes)
    for a in sorted(a + rank if a < 0 else a for a in axes):
        s.insert(a, 1)
    reshape_to(imp, x, n.outputs[0], s)


def transpose(imp, n):
    x = n.input(0)
    perm = n.attr("perm")
    if perm is None:
        perm = list(range(imp.rank(x)))[::-1]
    perm = [int(p) for p in perm]
    if len(perm) <= 4:
        y = imp.output(n.outputs[0], like=x)
        imp.emit("TRANSPOSE", [imp.operand(x), imp.ints(perm)], [y])
        return
    # NNAPI transposes up to rank 4: merge the input axes that stay together and in order
    # (a channel shuffle's [N, g, C/g, H, W] -> [N, C/g, g, H, W] is [N, g, C/g, H*W]); axes
    # of size 1 go anywhere, so they join no group (attention's [1, T, 3, h, d] -> [3, 1, h,
    # T, d] is [T, 3, h, d] -> [3, h, T, d])
    s = imp.shape(x)
    kept = [a for a in range(len(perm)) if s is None or s[a] != 1] or [perm[0]]
    nxt = {a: b for a, b in zip(kept, kept[1:])}
    groups = []
    for p in (p for p in perm if p in kept):
        if groups and nxt.get(groups[-1][-1]) == p:
            groups[-1].append(p)
        else:
            groups.append([p])
    if len(perm) == 6 and views.pixel_shuffle(imp, n, x, perm):
        return
    if len(groups) > 4:
        imp.fail(f"perm {perm} moves more than 4 groups of axes (NNAPI transposes up to rank 4)")
    in_groups = sorted(groups)
    merged = [0 if any(s[a] == 0 for a in g) else int(np.prod([s[a] for a in g]))
              for g in in_groups]
    if merged.count(0) > 1:
        imp.fail(f"perm {perm} on shape {list(s)}: the merged shape has more than one unknown "
                 "dimension")
    t1 = imp.temp(x, merged)
    imp.emit("RESHAPE", [imp.source(x), imp.ints([d or -1 for d in merged])], [t1])
    small = [in_groups.index(g) for g in groups]
    t2 = imp.temp(x, [merged[k] for k in small])
    imp.emit("TRANSPOSE", [t1, imp.ints(small)], [t2])
    ys = imp.shape(n.outputs[0]) or tuple(s[p] for p in perm)
    if len(ys) > 4:  # stays a view: the Reshape after it reads t2
        squeezed = [d for d in ys if d != 1]
        readers = {r.op_type for r in imp.readers.get(n.outputs[0], [])}
        if len(squeezed) <= 4 and 0 not in squeezed and len(squeezed) > len(small) and \
                readers - {"Reshape", "Flatten"}:
            t3 = imp.temp(x, squeezed)  # each axis of its own where it fits (for a Slice)
            imp.emit("RESHAPE", [t2, imp.ints(squeezed)], [t3])
            t2 = t3
        imp.views[n.outputs[0]] = (t2, tuple(ys))
        if x in imp.quant:
            imp.quant[n.outputs[0]] = imp.quant[x]
        return
    if list(ys).count(0) > 1:
        imp.fail(f"the output shape {list(ys)} has more than one unknown dimension")
    y = imp.output(n.outputs[0], shape=ys, like=x)
    imp.emit("RESHAPE", [t2, imp.ints([d or -1 for d in ys])], [y])


def concat(imp, n):
    names = [x for x in n.inputs if x]
    like = next((x for x in names if imp.const(x) is None), names[0])
    rank = imp.rank(like)
    axis = n.attr("axis")
    axis = axis + rank if axis < 0 else axis
    # an empty constant piece adds nothing, and NNAPI has no empty constants
    names = [x for x in names if imp.const(x) is None or imp.const(x).shape[axis] != 0]
    y = imp.output(n.outputs[0], like=like)
    ops = [imp.float_like(imp.const(x), like) if imp.const(x) is not None and imp.is_float(like)
           else imp.operand(x) for x in names]
    if len(ops) == 1:
        imp.emit("RESHAPE", [ops[0], imp.ints([d or -1 for d in imp.shape(like)])], [y])
        return
    imp.emit("CONCATENATION", [*ops, imp.int32(axis)], [y])


def split(imp, n):
    x = n.input(0)
    rank = imp.rank(x)
    axis = n.attr("axis", 0)
    axis = axis + rank if axis < 0 else axis
    n.attr("num_outputs")
    outs = n.outputs
    if imp.opset < 13:
        sizes = n.attr("split")
    else:
        sizes = None if not n.input(1) else \
            [int(v) for v in imp.const_input(n, 1, "the split sizes")]
    dim = imp.shape(x)[axis]
    if sizes is None:
        if dim and dim % len(outs):  # opset 18's num_outputs: the last piece is smaller
            step = -(-dim // len(outs))
            sizes = [min(step, dim - k * step) for k in range(len(outs))]
        elif dim == 0:
            ys = [imp.output(o, like=x) for o in outs]
            imp.emit("SPLIT", [imp.operand(x), imp.int32(axis), imp.int32(len(outs))], ys)
            return
        else:
            sizes = [dim // len(outs)] * len(outs)
    if len(set(sizes)) == 1:
        ys = [imp.output(o, like=x) for o in outs]
        imp.emit("SPLIT", [imp.operand(x), imp.int32(axis), imp.int32(len(outs))], ys)
        return
    start = 0
    for o, size in zip(outs, sizes):  # unequal pieces: one SLICE each
        begin, count = [0] * rank, [-1] * rank
        begin[axis], count[axis] = start, size
        y = imp.output(o, like=x)
        imp.emit("SLICE", [imp.operand(x), imp.ints(begin), imp.ints(count)], [y])
        start += size


def slice_(imp, n):
    x = n.input(0)
    s = imp.shape(x)
    if s is None:
        imp.fail(f"the rank of {x!r} is unknown")
    rank = len(s)
    if imp.opset < 10:
        starts, ends = n.attr("starts"), n.attr("ends")
        axes, steps = n.attr("axes"), None
    else:
        starts = imp.const_input(n, 1, "starts").reshape(-1).tolist()
        ends = imp.const_input(n, 2, "ends").reshape(-1).tolist()
        axes = imp.const_input(n, 3, "axes").reshape(-1).tolist() if n.input(3) else None
        steps = imp.const_input(n, 4, "steps").reshape(-1).tolist() if n.input(4) else None
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    begin, end, stride = [0] * rank, [0] * rank, [1] * rank
    begin_mask = end_mask = 0
    for i in range(rank):
        begin_mask |= 1 << i
        end_mask |= 1 << i
    for a, b, e, st in zip(axes, starts, ends, steps):
        a = a + rank if a < 0 else a
        dim = s[a]
        if st == 0:
            imp.fail("a slice step is 0")
        stride[a] = int(st)
        begin_mask &= ~(1 << a)
        end_mask &= ~(1 << a)
        if dim:  # clamp as ONNX does, then say "to the end" with the mask
            b = b + dim if b < 0 else b
            e = e + dim if e < 0 else e
            if st > 0:
                b, e = min(max(b, 0), dim), min(max(e, 0), dim)
                if e == dim:
                    end_mask |= 1 << a
            else:
                b, e = min(max(b, 0), dim - 1), min(max(e, -1), dim - 1)
                if e == -1:
                    end_mask |= 1 << a
        else:
            if (st > 0 and e >= INT_BIG) or (st < 0 and e <= -INT_BIG):
                end_mask |= 1 << a
            if abs(b) >= INT_BIG or abs(e) >= INT_BIG and not end_mask & (1 << a):
                imp.fail(f"slice bounds {b}:{e} on an unknown dimension have no mapping")
        begin[a], end[a] = int(b), int(e) if not end_mask & (1 << a) else 0
    y = imp.output(n.outputs[0], like=x)
    imp.emit("STRIDED_SLICE", [imp.operand(x), imp.ints(begin), imp.ints(end), imp.ints(stride),
                               imp.int32(begin_mask), imp.int32(end_mask), imp.int32(0)], [y])


def pad(imp, n):
    x = n.input(0)
    rank = imp.rank(x)
    mode = n.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        imp.fail(f"attribute 'mode'={mode!r} has no mapping")
    if imp.opset < 11:
        pads, value = list(n.attr("pads", n.attr("paddings"))), float(n.attr("value", 0.0))
    else:
        pads = imp.const_input(n, 1, "pads").reshape(-1).tolist()
        v = imp.const_input(n, 2, "constant_value") if n.input(2) else None
        value = 0.0 if v is None else v.reshape(-1)[0].item()
        if n.input(3):
            axes = [int(a) + rank if a < 0 else int(a) for a in
                    imp.const_input(n, 3, "axes").reshape(-1)]
            full = [0] * (2 * rank)
            for k, a in enumerate(axes):
                full[a], full[a + rank] = pads[k], pads[k + len(axes)]
            pads = full
    if min(pads) < 0:
        imp.fail(f"negative pads {pads} have no mapping")
    pairs = [[int(pads[i]), int(pads[i + rank])] for i in range(rank)]
    if mode != "constant":
        from clnn.onnx.ops_misc import pad_by_copies

        pad_by_copies(imp, x, n.outputs[0], pairs, mode)
        return
    y = imp.output(n.outputs[0], like=x)
    if value == 0:
        imp.emit("PAD", [imp.operand(x), imp.ints(pairs)], [y])
        return
    if imp.is_float(x):
        pv = imp.scalar_like(value, x)
    else:
        pv = imp.int32(value)
    imp.emit("PAD_V2", [imp.operand(x), imp.ints(pairs), pv], [y])


def gather(imp, n):
    x, ind = n.input(0), n.input(1)
    s = imp.shape(x)
    rank = len(s) if s is not None else imp.rank(x)
    axis = n.attr("axis", 0)
    axis = axis + rank if axis < 0 else axis
    iv = imp.const(ind)
    y_shape = imp.shape(n.outputs[0])
    if iv is not None:
        if (iv < 0).any():
            dim = imp.static_shape(x)[axis]
            iv = np.where(iv < 0, iv + dim, iv)
        io = imp.ints(iv.reshape(-1)) if iv.ndim == 0 else \
            imp.b.constant(iv.astype(np.int32))
        scalar = iv.ndim == 0
    else:
        io, scalar = imp.operand(ind), False
    xo = imp.operand(x)
    if not scalar:
        imp.emit("GATHER", [xo, imp.int32(axis), io], [imp.output(n.outputs[0], like=x)])
        return
    kept = list(s)
    kept[axis] = 1
    t = imp.temp(x, kept)  # a scalar index: gather one, then drop the axis
    imp.emit("GATHER", [xo, imp.int32(axis), io], [t])
    if y_shape is None or y_shape.count(0) > 1:
        imp.fail("the output shape of a scalar Gather is unknown")
    y = imp.output(n.outputs[0], like=x)
    imp.emit("RESHAPE", [t, imp.ints([d or -1 for d in y_shape])], [y])


def cast(imp, n):
    x = n.input(0)
    to = n.attr("to")
    n.attr("saturate")
    if to not in ELEM_TYPES or ELEM_TYPES[to] in (OT.TENSOR_QUANT8_ASYMM,
                                                  OT.TENSOR_QUANT8_ASYMM_SIGNED):
        imp.fail(f"attribute 'to'={to} names a type with no NNAPI CAST")
    if ELEM_TYPES[to] == imp.operand_type(x):
        imp.alias(n.outputs[0], x)
        return
    y = imp.output(n.outputs[0], type=ELEM_TYPES[to])
    imp.emit("CAST", [imp.operand(x)], [y])


def identity(imp, n):
    """Identity and inference-mode Dropout: the output is the input (no operation)."""
    n.attr("ratio")
    n.attr("seed")
    if n.op_type == "Dropout" and n.input(2) and imp.const(n.input(2)) is not None and \
            bool(imp.const(n.input(2)).reshape(-1)[0]):
        imp.fail("training mode has no mapping")
    mask = n.outputs[1] if len(n.outputs) > 1 else ""
    if mask and (imp.readers.get(mask) or mask in imp.outputs):  # an unread mask is dropped
        imp.fail("the mask output has no mapping")
    x = n.input(0)
    if x in imp.input_names and n.outputs[0] in imp.outputs:
        imp.fail("an Identity from a model input to a model output has no NNAPI operation")
    imp.alias(n.outputs[0], x)


CONVERTERS = {
    "Reshape": reshape,
    "Flatten": flatten,
    "Squeeze": squeeze,
    "Unsqueeze": unsqueeze,
    "Transpose": transpose,
    "Concat": concat,
    "Split": split,
    "Slice": slice_,
    "Pad": pad,
    "Gather": gather,
    "Cast": cast,
    "Identity": identity,
    "Dropout": identity,
}
