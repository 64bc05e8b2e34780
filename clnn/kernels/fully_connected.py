"""FULLY_CONNECTED on OpenCL: the shared GEMM with A = the input as [batch, input_size] rows
(no copy) and B = weights^T, packed once when the plan is made (or on the device when the
weights are a model input); bias, fused activation and the reference requantization run in the
GEMM epilogue, and (float) a RELU* / LOGISTIC / HARD_SWISH / SILU operation fused after it
(clnn/fusion/): its clamp or function. FLOAT32, FLOAT16, QUANT8_ASYMM, QUANT8_ASYMM_SIGNED.
"""

from __future__ import annotations

from clnn.kernels import _gemm, _gemm_variants
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    CLAMPS,
    EPILOGUE_FUNCTIONS,
    FLOAT_QUANT8,
    act_args,
    code,
    constant_inputs,
    f32,
    first,
    types_in,
)
from hal.operations.conv2d import UPWARD


def support(ctx):
    return first(types_in(ctx, 0, FLOAT_QUANT8), constant_inputs(ctx, [3], "fused activation"))


def gemm_signature(ctx, device=None) -> dict:
    """The signature of the layer's GEMM (A the input's rows; int16 pairs where ``device``'s
    class sums them, _gemm.int_pairs)."""
    inp, w = ctx.inputs[0], ctx.inputs[1]
    units, size = w.shape
    quant = None
    if code(inp) in _gemm_variants.QUANT:  # what of the quantization changes the source
        facc = w.value is not None and _gemm.float_exact(w.value.T[None], _gemm.zero_of(w))
        quant = _gemm_variants.quant_keys(
            facc=facc, rq=_gemm.requant_form(ctx, units, inp, w, UPWARD),
            ip=_gemm.tuned_pairs(device, _gemm.int_pairs(device, facc, size),
                                 None if w.value is None else w.value.T[None],
                                 _gemm.zero_of(w), size))
    return _gemm_variants.signature(dt=code(inp), amode="rows", M=ctx.outputs[0].shape[0],
                                    N=units, K=size, quant=quant)


def select(ctx, node, device, decided) -> list:
    """The select pass's choice of the GEMM variant (clnn.passes.select)."""
    return [_gemm_variants.select(device, gemm_signature(ctx, device))]


def plan(ctx, b):
    inp, w, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    units, size = w.shape
    batch = out.shape[0]
    dt = code(inp)
    quant = dt in ("u8", "i8")
    variant = _gemm_variants.choose(b, **gemm_signature(ctx, b.device))
    tile = tuple(variant["tile"])
    nr = tile[1] * tile[2]
    facc = pairs = False
    if w.value is not None:
        facc = quant and _gemm.float_exact(w.value.T[None], _gemm.zero_of(w))
        pairs = _gemm.pair_form(b.device, _gemm.int_pairs(b.device, facc, size),
                                w.value.T[None], w, size, tile)
        bpk = _gemm.packed_weights(b, _gemm.pack_weights(
            w.value.T[None], nr, quant, _gemm.zero_of(w), facc, pairs,
            _gemm.unsigned_zero(dt, inp)))
    else:
        bpk, _ = _gemm.launch_pack_b(b, dt=code(w), y=In(1), N=units, K=size, nr=nr, sk=1,
                                     sn=size, zb=_gemm.zero_of(w))
    g = b.activation  # (its own activation is NONE then)
    lo, hi = (f32(g.clamp[0]), f32(g.clamp[1])) if g is not None else act_args(ctx, 3, out)
    requant = _gemm.requant_buffers(b, ctx, units, inp, w, UPWARD) if quant else ()
    _gemm.launch_gemm(b, dt=dt, a=In(0), bpk=bpk, c=Out(0), M=batch, N=units, K=size,
                      tile=tile, sam=size, sak=1, ldc=units, bias=In(2), requant=requant,
                      za=_gemm.zero_of(inp), zo=_gemm.zero_of(out), lo=lo, hi=hi,
                      wg=variant["wg"], facc=facc, ip=pairs, fn=g.fn if g is not None else None)


def epilogue_activations(ctx) -> tuple[str, ...]:
    """The activation operations a float GEMM epilogue runs after the layer (no PRELU: its
    alpha is per NHWC channel)."""
    return (*CLAMPS, *EPILOGUE_FUNCTIONS) if code(ctx.outputs[0]) in ("f32", "f16") else ()


register_kernel("FULLY_CONNECTED", family="fully_connected", support=support, plan=plan,
                select=select, epilogue_activations=epilogue_activations)
