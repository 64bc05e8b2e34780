"""The variants of the direct convolution ``conv_tile`` (templates/conv2d.cl.mako: float NHWC
convolutions over a few input channels, clnn/kernels/conv2d.py plan_conv_direct) and their
choice per layer, as clnn/kernels/_depthwise_variants.py does for ``depthwise_tile``.

A variant is ``{"vw": output channels per vector, "tx": output pixels per work-item, "rows":
output rows per work-group}`` (vw and tx change the source; rows is the launch's work-group
shape, as for the depthwise kernel). The heuristic is the widest vector dividing the output
channels and the widest tile whose input span fits, cut to 8 native vectors of accumulators
(:func:`clnn.kernels._tiles.fit_registers`); on a GPU vectors of 4 and 2 pixels at most with
the driver's work-groups. The tuner (clnn/tuning.py, family "conv") measures float32 layers.
"""

from __future__ import annotations

from clnn.kernels import _defaults, _depthwise_variants, _gemm_variants
from clnn.kernels._tiles import fit_registers


def heuristic(cpu: bool, o: int, ow: int, fw: int, sw: int, dw: int, vec: int = 16) -> dict:
    vws = _depthwise_variants.vector_widths(o)
    txs = _depthwise_variants.tile_widths(ow, fw, sw, dw)
    if cpu:
        return {"vw": vws[0], "tx": fit_registers(txs[0], vws[0], vec),
                "rows": _defaults.TABLE["cpu"].direct_rows}
    gpu = _defaults.TABLE["gpu"]
    return {"vw": next(v for v in vws if v <= gpu.direct_max_vw),
            "tx": next(t for t in txs if t <= gpu.direct_max_tx), "rows": gpu.direct_rows}


def candidates(cpu: bool, o: int, ow: int, fw: int, sw: int, dw: int,
               vec: int = 16) -> list[dict]:
    return _depthwise_variants.tile_candidates(heuristic(cpu, o, ow, fw, sw, dw, vec), o, ow,
                                               fw, sw, dw)


def signature(*, dt: str, n: int, h: int, w: int, c: int, o: int, oh: int, ow: int, fh: int,
              fw: int, sh: int, sw: int, dh: int, dw: int) -> dict:
    """The tuning signature of one conv_tile layer."""
    return {"dt": dt, "n": n, "h": h, "w": w, "c": c, "o": o, "oh": oh, "ow": ow, "fh": fh,
            "fw": fw, "sh": sh, "sw": sw, "dh": dh, "dw": dw}


def select(device, sig: dict, op: int = -1):
    """The select pass's conv_tile variant of a layer (clnn.tuning.Choice)."""
    return _depthwise_variants.select_tile(device, FAMILY, sig, op)


def choose(b, **sig) -> dict:
    """The conv_tile variant of one layer (``sig``: :func:`signature`'s fields) planned by
    ``b`` (a LaunchBuilder): the one the select and tune passes chose for it
    (clnn.tuning.chosen)."""
    return _depthwise_variants.choose_tile(b, FAMILY, signature(**sig))


def key(dt: str, v: dict, fw: int, sw: int, dw: int, c: int) -> dict:
    """The kernel key (``c``: the input channels, unrolled in the kernel)."""
    return {"dt": dt, "vw": v["vw"], "tx": v["tx"], "fw": fw, "sw": sw, "dw": dw, "cc": c}


def global_size(v: dict, n: int, o: int, oh: int, ow: int) -> tuple[int, int, int]:
    return (o // v["vw"], -(-ow // v["tx"]), n * oh)


def scratch_conv(device, v: dict, s: dict):
    """(kernels, release) of one float32 conv_tile layer in variant ``v`` on zeroed scratch
    buffers (padding 0: the time of a layer hardly depends on it)."""
    import numpy as np

    from clnn.kernels.support import f32, i32

    x, wt, bias, y = _gemm_variants.zeroed(device, (
        s["n"] * s["h"] * s["w"] * s["c"], s["fh"] * s["fw"] * s["c"] * s["o"], s["o"],
        s["n"] * s["oh"] * s["ow"] * s["o"]))
    gsize = global_size(v, s["n"], s["o"], s["oh"], s["ow"])
    rec = _gemm_variants.scratch_builder(device, 2.0 * s["n"] * s["oh"] * s["ow"] * s["o"] * s["fh"]
                                   * s["fw"] * s["c"])
    rec.launch("conv2d", "conv_tile", key("f32", v, s["fw"], s["sw"], s["dw"], s["c"]), gsize,
               [x, i32(0), wt, bias, i32(0), y, i32(0),
                *[i32(q) for q in (s["h"], s["w"], s["c"], s["o"], s["oh"], s["ow"], s["fh"],
                                   s["sh"], s["dh"], 0, 0)], f32(-np.inf), f32(np.inf)],
               local_size=_depthwise_variants.local_for(
                   v["rows"], gsize, device.limits.max_work_group_size),
               flexible=True)
    return rec.kernels(), _gemm_variants.releaser([x, wt, bias, y])


#: conv_tile's tuning declaration (clnn.tuning.Family)
FAMILY = _depthwise_variants.tile_family(
    "conv", lambda cpu, vec, s: candidates(cpu, s["o"], s["ow"], s["fw"], s["sw"], s["dw"], vec),
    scratch_conv,
    flop=lambda s: 2.0 * s["n"] * s["oh"] * s["ow"] * s["o"] * s["fh"] * s["fw"] * s["c"],
    scratch_bytes=lambda s: 4 * s["n"] * (s["h"] * s["w"] * s["c"] + s["oh"] * s["ow"] * s["o"]))
