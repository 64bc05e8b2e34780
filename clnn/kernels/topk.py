"""TOPK_V2 on OpenCL (template topk.cl.mako): every type of the signatures (float32, float16,
int32, quant8 asymm / signed), any rank; k is read on the host at planning.

Each row (the last dimension) is sorted by a bitonic network on (value, index) keys: values
descending, equal values by descending index (what the reference's stable ascending sort,
reversed, gives; NaN first, as NumPy's sort puts NaN last). The row is padded to a power of two
with keys that sort last. A row that fits in local memory is sorted by one work-group (every
step of the network in local memory, the group size from the device's limits); a longer row
by global passes over a scratch buffer, one launch per step of the network. The first k keys
of each row are written out.
"""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import FLOAT_QUANT8_INT32, code, copy_code, i32, numel, types_in

#: the longest padded row sorted in local memory (keys of 8 bytes: 32 KiB)
MAX_LOCAL_ROW = 4096


def _pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def key_type(info) -> str:
    """Values compared as float (float types) or int (int32, quantized: raw values order as
    real values since the scale is positive)."""
    return "float" if info.dtype.kind == "f" else "int"


def local_group(b, padded: int, key_bytes: int = 8) -> int | None:
    """Work-group size for sorting a row of ``padded`` keys in local memory, or None when the
    row does not fit there (device queries, not assumptions)."""
    limits = b.device.limits
    if padded > MAX_LOCAL_ROW or padded * key_bytes > limits.local_mem_size // 2:
        return None
    return limits.pow2_group(min(256, max(padded // 2, 1)))


def support(ctx):
    return types_in(ctx, 0, FLOAT_QUANT8_INT32)


def plan(ctx, b):
    import pyopencl as cl

    x = ctx.inputs[0]
    n = int(x.shape[-1])
    rows = numel(x.shape[:-1])
    k = int(ctx.outputs[0].shape[-1])
    padded = _pow2(n)
    params = {"dt": copy_code(x), "src": code(x), "kt": key_type(x)}
    wg = local_group(b, padded)
    if wg is not None:
        b.launch("topk", "topk_local", {**params, "padded": padded, "wg": wg},
                 (rows * wg,), [In(0), Out(0), Out(1), i32(n), i32(k)], local_size=(wg,))
        return
    keys = cl.Buffer(b.device.context, cl.mem_flags.READ_WRITE, rows * padded * 4)
    idx = cl.Buffer(b.device.context, cl.mem_flags.READ_WRITE, rows * padded * 4)
    b.launch("topk", "topk_init", params, (rows * padded,),
             [In(0), keys, idx, i32(n), i32(padded)])
    size = 2
    while size <= padded:
        j = size // 2
        while j >= 1:
            b.launch("topk", "topk_step", params, (rows * padded // 2,),
                     [keys, idx, i32(padded), i32(size), i32(j)])
            j //= 2
        size *= 2
    b.launch("topk", "topk_out", params, (rows * k,),
             [In(0), Out(0), Out(1), idx, i32(n), i32(k), i32(padded)])


register_kernel("TOPK_V2", family="topk", support=support, plan=plan, host_inputs=[1])
