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

#: the most vectors of output channels per work-item the CPU rule and the tuner take
MAX_NV = 4
#: the CPU rule takes :func:`half_variant` where it applies
HALF = True


def vector_counts(o: int, vw: int) -> list[int]:
    """The vectors of vw output channels per work-item that divide the output channels, most
    first."""
    return [nv for nv in range(MAX_NV, 0, -1) if (o // vw) % nv == 0]


def cpu_tile(o: int, vw: int, widest: int, vec: int) -> tuple[int, int]:
    """(nv, tx) of the CPU rule: the most vectors per work-item whose tile keeps at least 4
    pixels (or ``widest``) within the register budget (:func:`fit_registers`), each input
    loaded once for all of them; else one vector and the widest tile that fits."""
    for nv in vector_counts(o, vw):
        tx = fit_registers(widest, vw * nv, vec)
        if nv == 1 or tx >= min(4, widest):
            return nv, tx
    return 1, fit_registers(widest, vw, vec)


#: the most accumulator vectors of the ``half`` variant's tile (half of AVX-512's registers:
#: 8 pixels x 2 vectors ran 1.03-1.06x faster than 4 x 2 on the 24-channel first layers)
HALF_ACCUMULATORS = 16


def half_variant(o: int, widest: int, vec: int) -> dict | None:
    """The variant of whole vectors of ``vec`` floats over output channels that half a vector
    would leave over (O = (nv - 0.5) * vec, more than one vector: 24, 40, 56 on 16-wide
    vectors): one work-item takes every channel, its last vector half padding (the kernel's
    ``half``), the widest tile of at most :data:`HALF_ACCUMULATORS` vectors, at least 4
    pixels (or ``widest``); else None. Three vectors of 8 floats for 24 channels cost an
    AVX-512 core three FMAs where two of 16 do: face_detection_short_range's 5x5/2 128x128x3
    -> 24 first layer 67 -> 52 us in the chain, hand_landmark_lite's 3x3/2 224x224x3 -> 24
    100 -> 82 (fastest of 300 chained runs, load 3-4)."""
    nv = -(-o // vec)
    if vec < 16 or o <= vec or o % vec != vec // 2 or nv > MAX_NV:
        return None
    tx = widest
    while tx > 1 and tx * nv > HALF_ACCUMULATORS:
        tx //= 2
    if tx < min(4, widest):
        return None
    return {"vw": vec, "tx": tx, "rows": 0, "nv": nv, "half": True}


def pairs_variant(o: int, widest: int, vec: int) -> dict | None:
    """The variant of two pixels' output channels as whole vectors of ``vec`` floats where
    one pixel's would leave half a vector over (O = (n - 0.5) * vec: 24 channels x 2 pixels,
    three vectors of 16; the kernel's ``pairs``): one work-item takes every channel of
    ``tx`` pixels (even), tx / 2 pairs of 2 * O / vec vectors within
    :data:`HALF_ACCUMULATORS`, at least 2 pairs; else None. Where half_variant pads a quarter
    of the lanes (24 channels) this pads none; the middle vector's input is the two pixels'
    values (half a vector each)."""
    if vec < 16 or o <= vec or o % vec != vec // 2:
        return None
    nv = 2 * o // vec
    tx = widest - widest % 2
    while tx > 4 and tx // 2 * nv > HALF_ACCUMULATORS:
        tx = (tx // 2) - (tx // 2) % 2
    if tx < 4 or tx // 2 * nv > HALF_ACCUMULATORS:
        return None
    return {"vw": vec, "tx": tx, "rows": 0, "nv": nv, "pairs": True}


#: the most vectors per pair of pixels the CPU rule's ``pairs`` variant takes (3: 24 channels
#: on 16-wide vectors, the layers it was measured on; 40 and 56 keep the half variant as the
#: rule, pairs a tuner candidate)
PAIRS_RULE_NV = 3


def heuristic(cpu: bool, o: int, ow: int, fw: int, sw: int, dw: int, vec: int = 16,
              dt: str = "f32") -> dict:
    """The variant without a tuning entry (``dt``: the layer's kernel type; the ``pairs``
    variant, where the device class takes it (``conv_pairs``), is float32's alone)."""
    vws = _depthwise_variants.vector_widths(o)
    txs = _depthwise_variants.tile_widths(ow, fw, sw, dw)
    pairs = pairs_variant(o, txs[0], vec) \
        if cpu and dt == "f32" and _defaults.TABLE["cpu"].conv_pairs else None
    if pairs is not None and pairs["nv"] > PAIRS_RULE_NV:
        pairs = None
    if pairs is not None:
        return pairs
    half = half_variant(o, txs[0], vec) if cpu and HALF else None
    if half is not None:
        return half
    if cpu:
        nv, tx = cpu_tile(o, vws[0], txs[0], vec)
        if nv == 1:
            return {"vw": vws[0], "tx": tx, "rows": _defaults.TABLE["cpu"].direct_rows}
        # the driver's work-groups: tile_rows_group's (channel blocks, 1, rows) shrinks to one
        # column of work-items when a work-item takes every channel (up to 1.9x slower on
        # the 3-channel stride-2 first layers: benchmarks/results/issue36_conv_tile_nv-*.json)
        return {"vw": vws[0], "tx": tx, "rows": 0, "nv": nv}
    gpu = _defaults.TABLE["gpu"]
    return {"vw": next(v for v in vws if v <= gpu.direct_max_vw),
            "tx": next(t for t in txs if t <= gpu.direct_max_tx), "rows": gpu.direct_rows}


def candidates(cpu: bool, o: int, ow: int, fw: int, sw: int, dw: int,
               vec: int = 16, dt: str = "f32") -> list[dict]:
    """The default first, the tiles of :func:`clnn.kernels._depthwise_variants.tile_candidates`,
    then on a CPU the half and (float32) pairs variants and the widest vector with more
    vectors per work-item (each fitting tile)."""
    out = _depthwise_variants.tile_candidates(heuristic(cpu, o, ow, fw, sw, dw, vec, dt), o,
                                              ow, fw, sw, dw)
    if not cpu:
        return out
    for tx in _depthwise_variants.tile_widths(ow, fw, sw, dw)[:3]:  # (the halves' tiles)
        for v in (half_variant(o, tx, vec), pairs_variant(o, tx, vec) if dt == "f32" else None):
            if v is not None and v not in out:
                out.append(v)
    vw = _depthwise_variants.vector_widths(o)[0]
    for nv in vector_counts(o, vw)[:-1]:
        for tx in _depthwise_variants.tile_widths(ow, fw, sw, dw)[:3]:
            v = {"vw": vw, "tx": tx, "rows": 0, "nv": nv}
            if fit_registers(tx, vw * nv, vec) == tx and v not in out:
                out.append(v)
    return out


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
    """The kernel key (``c``: the input channels, unrolled in the kernel; ``nv``: vectors per
    work-item, in the key only when more than one; ``flex``: a fused PRELU is a run-time flag,
    the kernel's last argument, :func:`post`)."""
    k = {"dt": dt, "vw": v["vw"], "tx": v["tx"], "fw": fw, "sw": sw, "dw": dw, "cc": c,
         "flex": True}
    if v.get("nv", 1) > 1:
        k["nv"] = v["nv"]
    if v.get("half"):
        k["half"] = True
    if v.get("pairs"):
        k["pairs"] = True
    return k


def post(prelu: bool) -> int:
    """conv_tile's ``post`` flags (bit 2 of the GEMM's flex epilogue's, templates/gemm.cl.mako):
    a PRELU (alpha per output channel) or none. The first layers of models differing only in
    that share one kernel (issue #37: a new model finds its kernels built). A function
    (LOGISTIC, HARD_SWISH, SILU) stays in the key (``fn``): its run-time choice measured slower
    (selfie_segmentation's first layer)."""
    return int(prelu) << 2


def global_size(v: dict, n: int, o: int, oh: int, ow: int) -> tuple[int, int, int]:
    return (-(-o // (v["vw"] * v.get("nv", 1))), -(-ow // v["tx"]), n * oh)


def filter_channels(v: dict, o: int) -> int:
    """The output channels of the packed filter [fh, fw, C, channels]: ``o``, or whole
    vectors (the ``half`` variant; ``pairs``: two pixels' channels, 2 * O)."""
    return v["vw"] * v["nv"] if v.get("half") or v.get("pairs") else o


def pack_filter(v: dict, filt):
    """The float32 filter [O, fh, fw, C] packed for variant ``v``: [fh, fw, C, channels]
    (:func:`filter_channels`, zeros past O; ``pairs``: the O channels twice, so that vector
    i of a tap holds the two pixels' lanes i * vw ... (i + 1) * vw - 1)."""
    import numpy as np

    o = filt.shape[0]
    packed = np.zeros(filt.shape[1:] + (filter_channels(v, o),), np.float32)
    packed[..., :o] = filt.astype(np.float32).transpose(1, 2, 3, 0)
    if v.get("pairs"):
        packed[..., o:] = packed[..., :o]
    return packed


def scratch_conv(device, v: dict, s: dict):
    """(kernels, release) of one float32 conv_tile layer in variant ``v`` on zeroed scratch
    buffers (padding 0: the time of a layer hardly depends on it)."""
    import numpy as np

    from clnn.kernels.support import f32, i32

    x, wt, bias, y = _gemm_variants.zeroed(device, (
        s["n"] * s["h"] * s["w"] * s["c"], s["fh"] * s["fw"] * s["c"] * filter_channels(v, s["o"]),
        s["o"],
        s["n"] * s["oh"] * s["ow"] * s["o"]))
    gsize = global_size(v, s["n"], s["o"], s["oh"], s["ow"])
    rec = _gemm_variants.scratch_builder(device, 2.0 * s["n"] * s["oh"] * s["ow"] * s["o"] * s["fh"]
                                   * s["fw"] * s["c"])
    rec.launch("conv2d", "conv_tile", key("f32", v, s["fw"], s["sw"], s["dw"], s["c"]), gsize,
               [x, i32(0), wt, bias, i32(0), y, i32(0), None, i32(0),
                *[i32(q) for q in (s["h"], s["w"], s["c"], s["o"], s["oh"], s["ow"], s["fh"],
                                   s["sh"], s["dh"], 0, 0, s["o"])], f32(-np.inf),
                f32(np.inf), i32(post(False))],
               local_size=_depthwise_variants.local_for(
                   v["rows"], gsize, device.limits.max_work_group_size),
               flexible=True)
    return rec.kernels(), _gemm_variants.releaser([x, wt, bias, y])


#: conv_tile's tuning declaration (clnn.tuning.Family)
FAMILY = _depthwise_variants.tile_family(
    "conv", lambda cpu, vec, s: candidates(cpu, s["o"], s["ow"], s["fw"], s["sw"], s["dw"], vec,
                                           s["dt"]),
    scratch_conv,
    flop=lambda s: 2.0 * s["n"] * s["oh"] * s["ow"] * s["o"] * s["fh"] * s["fw"] * s["c"],
    scratch_bytes=lambda s: 4 * s["n"] * (s["h"] * s["w"] * s["c"] + s["oh"] * s["ow"] * s["o"]))
