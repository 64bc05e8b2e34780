"""LSTM on OpenCL (template lstm.cl.mako), and the float cell that UNIDIRECTIONAL_ and
BIDIRECTIONAL_SEQUENCE_LSTM (clnn/kernels/sequence_lstm.py) unroll over time.

The time loop runs on the device, every launch recorded in the plan (no host round trip per
step): before the loop one GEMM computes the input-to-gate pre-activations of all steps
(x @ [W_i W_f W_c W_o]^T, [steps, batch, G * units] float32; the aux input's weights add a
second GEMM into the same buffer); per step, one GEMM h_{t-1} @ [R_i R_f R_c R_o]^T, one cell
kernel (bias, peephole, layer normalization, gate functions, cell clip, the new cell and
hidden state: one work-item per unit, or one work-group per batch row with layer norm), and
with a projection one GEMM with its bias and clip in the epilogue. The cell and hidden
states stay in float32 scratch buffers across steps (the reference computes float16 models
in float32 too); outputs are converted where they are stored.

Weights are stacked and packed for the shared GEMM (clnn/kernels/_gemm.py) once per plan: on
the host when they are constants, else on the device (stack_rows, then the GEMM's pack_b).
Optional inputs omitted by the request (the CTS passes empty model inputs) are taken as
NO_VALUE (``omitted_inputs=True``). Operands in shapes or optional forms the kernels do not
take (possible when the model leaves dimensions unknown) make the plan Unplannable: the
reference device runs that shape signature and fails (or broadcasts) exactly as it does alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clnn.kernels import _gemm, _gemm_variants
from clnn.kernels.registry import In, Out, Unplannable, register_kernel
from clnn.kernels.support import FLOAT, code, f32, first, i32, numel, types_in
from hal.operations.lstm import (
    BIAS_SLOTS,
    LSTM_ACTIVATIONS,
    PEEP_SLOTS,
    PROJ_BIAS_SLOT,
    PROJ_SLOT,
    R_SLOTS,
    X_SLOTS,
)

GATES = ("input", "forget", "cell", "output")
#: the largest work-group of the layer-norm cell (a power of two; the device may allow less)
MAX_LN_GROUP = 256


def present(ctx, i) -> bool:
    """An optional input is present when given and not a tensor with no elements."""
    return i is not None and ctx.has_input(i) and numel(ctx.inputs[i].shape) > 0


def float_support(ctx, sequence_inputs=(0,)):
    """The float recurrent families run float32 and float16 (and relaxed) models."""
    return first(*(types_in(ctx, i, FLOAT) for i in sequence_inputs if ctx.has_input(i)))


def ref(b, t, extra: int = 0):
    """(buffer, element offset + extra) of In(k) / Out(k), or of a scratch buffer."""
    if isinstance(t, In | Out):
        ops = b.operation.inputs if isinstance(t, In) else b.operation.outputs
        buf, off = b.tensor(ops[t.index])
        return (buf, int(off) + extra)
    return (t, extra)


def stacked_weights(b, ctx, idx: list[int], K: int, tile):
    """The packed B of x @ [W_0 .. W_g]^T for the weight inputs ``idx`` ([rows_k, K] each):
    on the host for constants, else stacked on the device and packed by the GEMM."""
    nr = tile[1] * tile[2]
    rows = [ctx.inputs[i].shape[0] for i in idx]
    n = sum(rows)
    if all(ctx.inputs[i].value is not None for i in idx):
        w = np.concatenate([np.asarray(ctx.inputs[i].value, np.float32).reshape(r, K)
                            for i, r in zip(idx, rows)], axis=0)
        return _gemm.device_buffer(b, _gemm.pack_weights(w.T[None], nr, False))
    dst = _gemm.scratch(b, n * K * 4)
    r0 = 0
    for i, r in zip(idx, rows):
        stack_rows(b, In(i), code(ctx.inputs[i]), (dst, r0 * K), K, r)
        r0 += r
    bpk, _ = _gemm.launch_pack_b(b, dt="f32", y=dst, N=n, K=K, nr=nr, sk=1, sn=K)
    return bpk


def stack_rows(b, src, dt: str, dst, cols: int, rows: int):
    """Copy (and convert to float32) ``rows`` x ``cols`` of ``src`` into ``dst`` (buffer,
    element offset)."""
    b.launch("lstm", "stack_rows", {"dt": dt}, (cols, rows),
             [*_gemm.tensor_arg(src), dst[0], i32(dst[1]), i32(cols)])


def store_rows(b, src, dst, dt: str, cols: int, rows: int, stride: int):
    """float32 [rows, cols] at ``src`` into ``dst`` (buffer, offset) of type dt, rows
    ``stride`` apart."""
    b.launch("lstm", "store_rows", {"dt": dt}, (cols, rows),
             [src[0], i32(src[1]), dst[0], i32(dst[1]), i32(cols), i32(stride)])


def row_tile(b, m: int, n: int):
    """The device's GEMM tile (:func:`clnn.kernels._gemm_variants.device_default`: a heuristic
    from device queries, not a CPU constant) with its row block cut to fit M (a batch of 1
    computes one row, not eight)."""
    mr, nv, vw = _gemm_variants.device_default(b, n)["tile"]
    while mr > 1 and mr >= 2 * m:
        mr //= 2
    return (mr, nv, vw)


def gemm(b, *, a, a_dt, bpk, c, M, N, K, tile, sam, ldc, bias=None, res=None, lo=None,
         hi=None, batch=(1, 1), a_b=(0, 0), c_b=(0, 0)):
    """A float GEMM into a float32 C."""
    _gemm.launch_gemm(b, dt=a_dt, odt="f32", a=a, bpk=bpk, c=c, M=M, N=N, K=K, tile=tile,
                      sam=sam, sak=1, ldc=ldc, bias=bias, res=res, lo=lo, hi=hi,
                      batch=batch, a_b=a_b, c_b=c_b)


@dataclass
class Direction:
    """Where one direction of an LSTM reads and writes (input indexes, Out indexes)."""
    first: int                   # input index of the input-to-input weights
    ln_first: int | None         # of the input layer norm weights
    aux_first: int | None        # of the aux input-to-input weights
    x: int                       # the sequence input
    aux: int | None              # the aux input (cross-linking: with aux weights)
    h_in: int
    c_in: int
    y: int | None                # the output sequence
    y_col: int = 0               # first column of this direction in y (merge_outputs)
    y_width: int = 0             # row width of y
    h_out: int | None = None
    c_out: int | None = None
    scratch: int | None = None   # LSTM's gate scratch buffer output
    reverse: bool = False


def expect_shapes(ctx, want: dict):
    """Unplannable unless every input ``i`` of ``want`` has shape ``want[i]``: operands whose
    shapes disagree (the model validates; the reference then fails, or broadcasts a [1]
    vector) run on the reference device, which decides as it always does."""
    for i, shape in want.items():
        got = tuple(ctx.inputs[i].shape)
        if got != tuple(shape):
            raise Unplannable(f"input {i} has shape {list(got)}, the kernels take "
                              f"{list(shape)}")


def dims(ctx, i: int, rank: int) -> tuple:
    shape = tuple(ctx.inputs[i].shape)
    if len(shape) != rank:
        raise Unplannable(f"input {i} has rank {len(shape)}, the kernels take {rank}")
    return shape


def same_time_and_batch(ctx, aux: int, x: int) -> tuple:
    """The shape of the aux input, Unplannable unless its time and batch are the input's."""
    shape = dims(ctx, aux, 3)
    if shape[:2] != tuple(ctx.inputs[x].shape[:2]):
        raise Unplannable("the aux input's time and batch differ from the input's")
    return shape


def check_direction(ctx, d: Direction, batch: int, act: int):
    """The all-or-none rules and shapes of one direction's operands, as the kernels run
    them (anything else goes to the reference, see expect_shapes)."""
    f = d.first
    units = dims(ctx, f + X_SLOTS["forget"], 2)[0]
    out = dims(ctx, f + R_SLOTS["forget"], 2)[1]
    x_shape = tuple(ctx.inputs[d.x].shape)  # rank 2 (LSTM) or 3, as validated
    in_size = x_shape[-1] if x_shape else 0
    cifg = not present(ctx, f + X_SLOTS["input"])
    gates = GATES[1:] if cifg else GATES
    if act not in LSTM_ACTIVATIONS:
        raise Unplannable(f"activation {act} is not an LSTM activation")
    # CIFG: the input gate's weights, recurrent weights and bias are all absent
    if any(present(ctx, f + s["input"]) == cifg for s in (R_SLOTS, BIAS_SLOTS)):
        raise Unplannable("the input gate's operands are partly given")
    want = {d.h_in: (batch, out), d.c_in: (batch, units)}
    for g in gates:
        want.update({f + X_SLOTS[g]: (units, in_size), f + R_SLOTS[g]: (units, out),
                     f + BIAS_SLOTS[g]: (units,)})
    peep = [g for g in PEEP_SLOTS if present(ctx, f + PEEP_SLOTS[g])]
    if peep and peep != [g for g in PEEP_SLOTS if g != "input" or not cifg]:
        raise Unplannable("the peephole weights are partly given")
    want.update({f + PEEP_SLOTS[g]: (units,) for g in peep})
    if d.ln_first is not None:
        ln = [g for g in GATES if present(ctx, d.ln_first + GATES.index(g))]
        if ln and ln != list(gates):
            raise Unplannable("the layer norm weights are partly given")
        want.update({d.ln_first + GATES.index(g): (units,) for g in ln})
    if present(ctx, f + PROJ_SLOT):
        want[f + PROJ_SLOT] = (out, units)
        if present(ctx, f + PROJ_BIAS_SLOT):
            want[f + PROJ_BIAS_SLOT] = (out,)
    elif out != units or present(ctx, f + PROJ_BIAS_SLOT):
        raise Unplannable("no projection, but the output size differs from the units")
    if d.aux is not None:
        aux = same_time_and_batch(ctx, d.aux, d.x)
        want.update({d.aux_first + GATES.index(g): (units, aux[2]) for g in gates})
    expect_shapes(ctx, want)


def input_gates(b, ctx, d: Direction, gates, N: int, in_size: int, steps: int, batch: int,
                time_major: bool):
    """Record the GEMMs of the input-to-gate pre-activations of every step (the input's and
    the auxiliary input's), [steps, batch, N] (time-major): their scratch buffer."""
    rows = steps * batch
    xt = row_tile(b, rows, N)
    xpre = _gemm.scratch(b, rows * N * 4)
    bx = stacked_weights(b, ctx, [d.first + X_SLOTS[g] for g in gates], in_size, xt)
    seq = dict(M=rows, batch=(1, 1), a_b=(0, 0), c_b=(0, 0), ldc=N) if time_major else \
        dict(M=steps, batch=(batch, 1), a_b=(steps * in_size, 0), c_b=(N, 0), ldc=batch * N)
    gemm(b, a=In(d.x), a_dt=code(ctx.inputs[d.x]), bpk=bx, c=(xpre, 0), N=N, K=in_size,
         tile=xt, sam=in_size, **seq)
    if d.aux is not None and d.aux_first is not None and present(ctx, d.aux_first + 1):
        aux_size = ctx.inputs[d.aux_first + 1].shape[1]
        ba = stacked_weights(b, ctx, [d.aux_first + GATES.index(g) for g in gates], aux_size,
                             xt)
        aseq = dict(seq, a_b=(0 if time_major else steps * aux_size, 0))
        gemm(b, a=In(d.aux), a_dt=code(ctx.inputs[d.aux]), bpk=ba, c=(xpre, 0), N=N,
             K=aux_size, tile=xt, sam=aux_size, res=(xpre, i32(0)), **aseq)
    return xpre


def plan_direction(b, ctx, d: Direction, *, act: int, cell_clip: float, proj_clip: float,
                   steps: int, batch: int, time_major: bool):
    """Record the launches of one direction over ``steps`` time steps."""
    check_direction(ctx, d, batch, act)
    wt = code(ctx.inputs[d.first + X_SLOTS["forget"]])
    odt = code(ctx.outputs[0])
    cifg = not present(ctx, d.first + X_SLOTS["input"])
    gates = GATES[1:] if cifg else GATES
    units, in_size = ctx.inputs[d.first + X_SLOTS["forget"]].shape
    out_size = ctx.inputs[d.first + R_SLOTS["forget"]].shape[1]
    peep = present(ctx, d.first + PEEP_SLOTS["forget"])
    ln = d.ln_first is not None and present(ctx, d.ln_first + 1)
    proj = present(ctx, d.first + PROJ_SLOT)
    N = len(gates) * units
    xpre = input_gates(b, ctx, d, gates, N, in_size, steps, batch, time_major)
    # states in float32 across the steps
    hs = _gemm.scratch(b, batch * out_size * 4)
    cs = _gemm.scratch(b, batch * units * 4)
    stack_rows(b, In(d.h_in), code(ctx.inputs[d.h_in]), (hs, 0), out_size, batch)
    stack_rows(b, In(d.c_in), code(ctx.inputs[d.c_in]), (cs, 0), units, batch)
    rt = row_tile(b, batch, N)
    br = stacked_weights(b, ctx, [d.first + R_SLOTS[g] for g in gates], out_size, rt)
    rpre = _gemm.scratch(b, batch * N * 4)
    hbuf = _gemm.scratch(b, batch * units * 4) if proj else hs
    if proj:
        pt, bp, pbias, lo, hi = projection(b, ctx, d, wt, units, out_size, batch, proj_clip)
    vec_args = [In(d.first + BIAS_SLOTS[g]) for g in gates]
    if peep:
        vec_args += [In(d.first + PEEP_SLOTS[g]) for g in gates if g != "cell"]
    if ln:
        vec_args += [In(d.ln_first + GATES.index(g)) for g in gates]
    group = ln_group(b) if ln else 1
    params = {"wt": wt, "odt": odt, "cifg": cifg, "peep": peep, "ln": ln, "act": act,
              "clip": cell_clip > 0, "scratch": d.scratch is not None,
              "write_y": d.y is not None and not proj, "L": group}
    ystride_t, ystride_b = (batch * d.y_width, d.y_width) if time_major else \
        (d.y_width, steps * d.y_width)
    order = range(steps - 1, -1, -1) if d.reverse else range(steps)
    for t in order:
        gemm(b, a=(hs, 0), a_dt="f32", bpk=br, c=(rpre, 0), M=batch, N=N, K=out_size,
             tile=rt, sam=out_size, ldc=N)
        args = [xpre, i32(t * batch * N), rpre, i32(0), *vec_args, cs, i32(0), hbuf, i32(0)]
        y_at = ref(b, Out(d.y), d.y_col + t * ystride_t) if d.y is not None else None
        if params["write_y"]:
            args += [*_gemm.tensor_arg(y_at), i32(ystride_b)]
        if d.scratch is not None:
            args.append(Out(d.scratch))
        args += [i32(units), f32(cell_clip)]
        if ln:
            b.launch("lstm", "cell", params, (group, batch), args, local_size=(group, 1))
        else:
            b.launch("lstm", "cell", params, (units, batch), args)
        if proj:
            gemm(b, a=(hbuf, 0), a_dt="f32", bpk=bp, c=(hs, 0), M=batch, N=out_size, K=units,
                 tile=pt, sam=units, ldc=out_size, bias=pbias, lo=lo, hi=hi)
            if y_at is not None:
                store_rows(b, (hs, 0), y_at, odt, out_size, batch, ystride_b)
    if d.h_out is not None:
        store_rows(b, (hs, 0), ref(b, Out(d.h_out)), odt, out_size, batch, out_size)
    if d.c_out is not None:
        store_rows(b, (cs, 0), ref(b, Out(d.c_out)), odt, units, batch, units)


def projection(b, ctx, d: Direction, wt: str, units: int, out_size: int, batch: int,
               proj_clip: float) -> tuple:
    """(tile, packed weights, float32 bias or None, clip low, clip high) of a direction's
    projection GEMM (the hidden state to the output size)."""
    pt = row_tile(b, batch, out_size)
    bp = stacked_weights(b, ctx, [d.first + PROJ_SLOT], units, pt)
    pbias = None
    if present(ctx, d.first + PROJ_BIAS_SLOT):  # the GEMM epilogue reads float32
        pbias = _gemm.scratch(b, out_size * 4)
        stack_rows(b, In(d.first + PROJ_BIAS_SLOT), wt, (pbias, 0), out_size, 1)
        pbias = (pbias, 0)
    lo, hi = (f32(-proj_clip), f32(proj_clip)) if proj_clip > 0 else (None, None)
    return pt, bp, pbias, lo, hi


def ln_group(b, local_bytes: int = 24) -> int:
    """The work-group of the layer-norm cell: a power of two the device allows, with
    ``local_bytes`` of local memory per work-item (its reduction buffer)."""
    limit = min(MAX_LN_GROUP, b.device.limits.group_limit(0, local_bytes))
    if limit < 1:
        raise Unplannable("the device runs no work-group")
    return 1 << (limit.bit_length() - 1)


def local_memory_support(local_bytes: int):
    """device_support of a cell kernel that keeps ``local_bytes`` of reduction sums per
    work-item in local memory (its work-group at least one work-item)."""
    def check(ctx, limits):
        if limits.group_limit(0, local_bytes) < 1:
            return (f"the cell kernel needs {local_bytes} bytes of local memory per work-item; "
                    f"the device has {limits.local_mem_size} (profile {limits.profile})")
        return None
    return check


def scalars(ctx, act_i: int, cell_clip_i: int, proj_clip_i: int):
    return dict(act=int(ctx.scalar(act_i)), cell_clip=float(ctx.scalar(cell_clip_i) or 0.0),
                proj_clip=float(ctx.scalar(proj_clip_i) or 0.0))


# --------------------------------------------------------------------------- LSTM

def support(ctx):
    return float_support(ctx)


def plan(ctx, b):
    batch = ctx.inputs[0].shape[0]
    ln = 23 if len(ctx.inputs) == 27 else None
    d = Direction(first=1, ln_first=ln, aux_first=None, x=0, aux=None, h_in=18, c_in=19,
                  y=3, y_width=ctx.outputs[3].shape[1], h_out=1, c_out=2, scratch=0)
    plan_direction(b, ctx, d, **scalars(ctx, 20, 21, 22), steps=1, batch=batch,
                   time_major=True)


register_kernel("LSTM", family="lstm", support=support, plan=plan,
                host_inputs=[20, 21, 22], omitted_inputs=True,
                device_support=local_memory_support(24))
