"""The variants of ``depthwise_tile`` (templates/depthwise_conv2d.cl.mako) and their choice per
layer, as clnn/kernels/_gemm_variants.py does for the GEMM.

A variant is ``{"vw": channels per vector, "tx": output pixels per work-item, "rows": output
rows per work-group}``: vw and tx change the source (the kernel key); rows is the launch's
work-group shape ((channel blocks, 1, rows) as :func:`clnn.kernels._tiles.tile_rows_group`
builds it; 0: the driver's choice). ``"sweep": 1`` runs ``depthwise_sweep`` instead: one
work-item per channel vector and output row, tx pixels at a time along the row; ``"slide": 1``
runs ``depthwise_slide``: one work-item per channel vector and output row, one output pixel a
step with the filter in registers (tx 1; dilation 1 along x), and with ``"r": n`` (n > 1)
``depthwise_slide_rows``: the same over bands of n output rows (dilation 1 along y too), each
input vector loaded once for the band; ``"pairs": 1`` runs ``depthwise_pairs`` (float, 8
channels, at most 3 filter columns, stride 1 along x): two output pixels a 16-float vector,
the CPU rule's kernel there where native vectors hold 16 floats (class data dw_pairs:
:func:`pairs_apply`); ``"flat": 1`` runs ``depthwise_flat`` (float, 8 m channels, m odd:
the row's channels one flat array of 16-float vectors; with ``"r": n`` bands of n output rows),
the CPU rule's kernel for such 3x3 layers of at most the class data's dw_flat_m halves a
pixel (:func:`flat_apply`); ``"row": 1`` runs
``depthwise_row``: the row sweep with the row's geometry (input and output widths, left
padding) compiled in, tiles of tx pixels loading only the columns inside the input (a tuner
candidate only, a kernel per row geometry costing too much of a cold prepare, but for the
narrow rows below). The heuristic on
a CPU is the sliding window (the widest vector dividing the channels, or the device class's
dw_overlap_vw where it does not divide them: :func:`row_vector`; one row per work-group)
for strided filters, 3x3 ones and, with native vectors of 16 floats, filters of at most
:data:`SLIDE_VECTORS` native vectors, with dilation 1 along x (in bands of the device class's
``dw_bands`` rows where the registers hold them: :func:`bands`); else the row sweep where the
filter unrolls and a row has more than one step, else the tile rule (the widest tile whose
span fits, tile_rows_group's rows); on a GPU narrower vectors and
tiles (vw 4, tx 2: more work-items, fewer registers) and the driver's work-groups. The tuner
measures float32 layers and 8-bit quantized ones (their filter type and requantization form in
the signature: :func:`quant_keys`).

With ``"r"``, ``"mr": 1`` reads the band's input rows outside the input as zeros, so that every
band runs its steps inside the input unchecked: the CPU rule's for 5x5 bands at row stride 1
(class data dw_bands_masked). Float rows of at most the class data's dw_row_narrow output
pixels of 5x5 filters at stride 1 run the compiled row, one tile of 8 pixels (:func:`narrow_row`;
0 on every class for now: a kernel more per model to compile).
"""

from __future__ import annotations

import numpy as np

from clnn.kernels import _defaults, _gemm, _gemm_variants
from clnn.kernels._tiles import MAX_SPAN, fit_registers, tile_rows_group, tile_width
from clnn.kernels.support import f32, i32

#: the variant space's version, part of every signature: an entry measured over an older space
#: (1: without the row sweeps, 2: without the sliding windows, 3: without the compiled rows,
#: 4: without the sliding window's bands of rows, 5: without the flat rows, 6: without the
#: bands' masked rows) is measured again
SPACE = 7
#: most filter taps of a row sweep (its filter rows unroll)
SWEEP_TAPS = 49
#: most native vectors of filter the CPU rule's sliding window of stride 1 holds beyond 3x3
#: filters, on CPUs with native vectors of 16 floats and 32 vector registers (5x5 fits; with
#: 16 registers 5x5 filters spill: the row sweep keeps those)
SLIDE_VECTORS = 25
#: most halves of 16-float vectors a pixel of a depthwise_flat layer holds (its channels / 8:
#: the filter's phases; more ran slower than the row kernels, the phases' filter vectors
#: outgrowing the registers)
FLAT_M = 3


def vector_widths(o: int) -> list[int]:
    return [v for v in (16, 8, 4, 2, 1) if o % v == 0]


def tile_widths(ow: int, fw: int, sw: int, dw: int) -> list[int]:
    widest = tile_width(ow, fw, sw, dw)
    return [t for t in (8, 4, 2, 1) if widest is not None and t <= widest]


def heuristic(cpu: bool, o: int, ow: int, fw: int, sw: int, dw: int, vec: int = 16,
              fh: int = 0, sh: int = 0, oh: int = 0, quant: bool = False) -> dict:
    """The variant without a tuning entry (``fh``: the filter's rows, ``sh`` the row stride
    where the rows are not dilated, ``oh`` the output's rows; 0 unknown: one output row per
    work-item; ``quant``: an 8-bit quantized layer, whose 3x3 filters keep one row per
    work-item: the device class's dw_bands were measured on float32 layers)."""
    vws, txs = vector_widths(o), tile_widths(ow, fw, sw, dw)
    rvw = row_vector(cpu, o, vws[0], vec)
    if cpu and not quant and fh == fw == 3 and flat_apply(o, fw, sw, dw, fh, vec) and \
            o // 8 <= _defaults.TABLE["cpu"].dw_flat_m:
        # the row's channels as one flat array of 16-float vectors (depthwise_flat), bands of
        # dw_flat_rows output rows at a row stride of 1
        r = _defaults.TABLE["cpu"].dw_flat_rows if sh == 1 else 1
        return {"vw": 8, "tx": 1, "rows": 1, "flat": 1, **({"r": r} if r > 1 else {})}
    if cpu and not quant and pairs_apply(o, fw, sw, dw, fh, vec):
        # two pixels of 8 channels a vector of 16 (depthwise_pairs): the lanes that
        # depthwise_slide's 8-channel vectors leave empty
        return {"vw": 8, "tx": 2, "rows": 1, "pairs": 1}
    sweep_tx = fit_registers(next(t for t in txs if t <= 4), rvw, vec) if txs else 0
    if cpu and not quant and narrow_row(ow, fh, fw, sw, dw, vec):
        # a narrow row of a 5x5 filter compiled (depthwise_row): one tile of 8 pixels whose
        # border taps are skipped where the sliding window ran its steps at the row's ends
        return {"vw": rvw, "tx": 8, "rows": 1, "row": 1}
    if cpu and slides_apply(fw, sw, dw, fh) and (sw > 1 or 1 < fh * fw <= 9 or (
            vec >= 16 and fh * fw * -(-vws[0] // vec) <= SLIDE_VECTORS)):
        # the sliding window, widest vector, one row per work-group, for strided filters and
        # those whose filter vectors fit the registers: ahead of the sweep on the depthwise
        # layers of the benchmark models (benchmarks/kernel_rates_ab.py), except 5x5 stride
        # 1 with 16 vector registers (its filter vectors spill: the sweep keeps those). The compiled
        # row (depthwise_row) can be faster still, but compiles a kernel per row geometry,
        # too long for a cold prepare (`clnn bench prepare`), so it is a tuner candidate only.
        # Bands of several output rows (depthwise_slide_rows) where the registers hold them
        r = wide_bands(fh * fw, sh, oh, rvw, vec) if fh * fw > 9 else \
            bands(1 if quant else _defaults.TABLE["cpu"].dw_bands, fh, fw, sw, sh, rvw, vec)
        # (the wide bands at row stride 1 with their rows outside the input masked: the
        # class's dw_bands_masked)
        mr = r > 1 and fh * fw > 9 and sh == 1 and _defaults.TABLE["cpu"].dw_bands_masked
        return {"vw": rvw, "tx": 1, "rows": 1, "slide": 1, **({"r": r} if r > 1 else {}),
                **({"mr": 1} if mr else {})}
    if cpu and 0 < fh * fw <= SWEEP_TAPS and ow > sweep_tx:
        # the row sweep, widest vector, 4 pixels a step, one row per work-group, where a row
        # has more than one step: ahead of the tile rule in every size class of the
        # benchmark models' depthwise layers (benchmarks/kernel_rates_ab.py; rows of one
        # step: the tile)
        return {"vw": rvw, "tx": sweep_tx, "rows": 1, "sweep": 1}
    if cpu:
        # rows narrower than 8 pixels run the widest tile whose span fits (its stores are
        # guarded, its loads clamped): a few wasted multiplies on tiny layers, fewer kernels
        # to compile (each tile width a kernel of its own in a cold prepare, `clnn bench
        # prepare`)
        # (8 native vectors of accumulators at most: ``vec``, the device's native width)
        tx = next((t for t in (8, 4) if (t - 1) * sw + (fw - 1) * dw + 1 <= MAX_SPAN),
                  txs[0])
        return {"vw": vws[0], "tx": fit_registers(tx, vws[0], vec),
                "rows": _defaults.TABLE["cpu"].direct_rows}
    gpu = _defaults.TABLE["gpu"]  # narrower vectors and tiles: more work-items, fewer registers
    return {"vw": next((v for v in vws if v <= gpu.direct_max_vw), 1),
            "tx": next(t for t in txs if t <= gpu.direct_max_tx), "rows": gpu.direct_rows}


def narrow_row(ow: int, fh: int, fw: int, sw: int, dw: int, vec: int) -> bool:
    """Whether the CPU rule runs a float layer as the compiled row (depthwise_row, tx 8): a
    row of at most the device class's dw_row_narrow output pixels (0 < ow <= 8: one tile), a
    filter of more than 9 taps (``fh`` rows, 0: unknown) that unrolls, stride and dilation 1
    along x, native vectors of 16 floats."""
    most = min(_defaults.TABLE["cpu"].dw_row_narrow, 8)
    return (0 < ow <= most and 9 < fh * fw <= SWEEP_TAPS and sw == 1 and dw == 1
            and vec >= 16)


def row_vector(cpu: bool, o: int, widest: int, vec: int) -> int:
    """The vector width of the row kernels (depthwise_slide, _slide_rows, _sweep) on ``o``
    channels whose widest divisor is ``widest``: the device class's dw_overlap_vw where it
    exceeds that divisor, is below ``o`` (the last channel vector overlapping the one before
    it) and the device's native vectors (``vec`` floats) hold it, else the divisor."""
    vw = _defaults.TABLE["cpu" if cpu else "gpu"].dw_overlap_vw
    return vw if widest < vw < o and vw <= vec else widest


def blocks(o: int, vw: int) -> int:
    """The channel vectors of a row kernel's launch (the last one overlapping where ``vw``
    does not divide ``o``: :func:`row_vector`)."""
    return -(-o // vw)


def bands(most: int, fh: int, fw: int, sw: int, sh: int, vw: int, vec: int) -> int:
    """Output rows per work-item of the sliding window: ``most`` (the device class's
    dw_bands) at a row stride ``sh`` of 1, half of it at 2, 1 beyond (or with ``sh`` 0:
    unknown), halved until the filter's fh * fw vectors,
    the band's accumulators (ceil(fw / sw) a row) and an input vector take at most 30 of the
    device's registers (32 with native vectors of 16 floats, else 16) in its native vectors of
    ``vec`` floats; 1 where the vector ``vw`` is narrower than the native one (CPU, PoCL,
    AVX-512: the 8-channel 3x3 stride 1 layers of the 13 MediaPipe models ran 1.36-1.44x
    slower in bands of 2-4 rows than in one, the 16-wide ones 0.80x: s24)."""
    if vw < vec:
        return 1
    r = most if sh == 1 else most // 2 if sh == 2 else 1
    r = max(1, r)
    nv = -(-vw // max(vec, 1))
    regs = 30 if vec >= 16 else 14
    while r > 1 and nv * (fh * fw + r * -(-fw // sw) + 1) > regs:
        r //= 2
    return r


def wide_bands(taps: int, sh: int, oh: int, vw: int, vec: int) -> int:
    """Output rows per work-item of the sliding window of a filter of more than 9 taps: the
    device class's dw_bands_wide at a row stride ``sh`` of 1 or 2 where the output has more
    than one row (``oh``), the filter takes at most :data:`SLIDE_VECTORS` native vectors of
    16 floats and the vector ``vw`` one of them; else 1."""
    r = _defaults.TABLE["cpu"].dw_bands_wide
    if r < 2 or sh not in (1, 2) or oh < 2 or vec < 16 or vw > vec or taps > SLIDE_VECTORS:
        return 1
    return r


def row_stride(s: dict) -> int:
    """The row stride of signature ``s`` where its rows are not dilated, else 0 (no bands)."""
    return s["sh"] if s["dh"] == 1 else 0


def pairs_apply(o: int, fw: int, sw: int, dw: int, fh: int, vec: int) -> bool:
    """Whether ``depthwise_pairs`` runs the float layer on a CPU: the device class's
    dw_pairs, 8 channels, native vectors of 16 floats, a filter of at most 3 columns and 9
    taps (``fh`` rows, 0: unknown), stride and dilation 1 along x."""
    return (_defaults.TABLE["cpu"].dw_pairs and o == 8 and vec == 16 and fw <= 3
            and 0 < fh * fw <= 9 and sw == 1 and dw == 1)


def flat_apply(o: int, fw: int, sw: int, dw: int, fh: int, vec: int) -> bool:
    """Whether ``depthwise_flat`` can run the float layer on a CPU: 8 m channels (m odd, at
    most :data:`FLAT_M`), native vectors of 16 floats, a filter of an odd number of columns
    and at most 9 taps (``fh`` rows, 0: unknown), stride and dilation 1 along x."""
    return (o % 16 == 8 and o // 8 <= FLAT_M and vec == 16 and fw % 2 == 1
            and 0 < fh * fw <= 9 and sw == 1 and dw == 1)


def slides_apply(fw: int, sw: int, dw: int, fh: int) -> bool:
    """Whether ``depthwise_slide`` and ``depthwise_row`` run the layer: the filter (``fh`` rows,
    0: unknown) unrolls, dilation 1 along x, a stride no wider than the filter."""
    return 0 < fh * fw <= SWEEP_TAPS and dw == 1 and sw <= fw


#: the variants :func:`candidates` listed for its arguments in this process
_LISTED: dict[tuple, list] = {}


def candidates(cpu: bool, o: int, ow: int, fw: int, sw: int, dw: int,
               vec: int = 16, fh: int = 0, sh: int = 0, oh: int = 0,
               quant: bool = False) -> list[dict]:
    """:func:`list_candidates`, listed once per layer in a process and copied (a layer's
    variants are asked for at its selection, its tuning and its plan: 228 times for the 38
    depthwise layers of pose_landmark_full, 9 ms of a second process's prepare)."""
    key = (cpu, o, ow, fw, sw, dw, vec, fh, sh, oh, quant)
    listed = _LISTED.get(key)
    if listed is None:
        listed = _LISTED[key] = list_candidates(*key)
    return [dict(v) for v in listed]


def list_candidates(cpu: bool, o: int, ow: int, fw: int, sw: int, dw: int,
                    vec: int = 16, fh: int = 0, sh: int = 0, oh: int = 0,
                    quant: bool = False) -> list[dict]:
    """The heuristic's variant first, then the compiled rows (the 3 widest vectors x tiles of
    4, 6 and 8 pixels, one row per work-group), the tiles (:func:`tile_candidates`: the 3
    widest vectors x the 3 widest tiles x the rows -1, 0, 1) and, where the filter (``fh``
    rows, 0: unknown, none) is small enough to unroll, the row sweep of each and the sliding
    windows (the 3 widest vectors x the rows); the compiled rows and sliding windows where
    :func:`slides_apply`."""
    tiles = tile_candidates(heuristic(cpu, o, ow, fw, sw, dw, vec), o, ow, fw, sw, dw)
    if not 0 < fh * fw <= SWEEP_TAPS:
        return tiles
    first = heuristic(cpu, o, ow, fw, sw, dw, vec, fh, sh, oh, quant)
    vws = vector_widths(o)[:3] if slides_apply(fw, sw, dw, fh) else []
    slides = [{"vw": vw, "tx": 1, "rows": rows, "slide": 1} for vw in vws for rows in (-1, 0, 1)]
    masked = sh == 1 and fh * fw > 9  # (the bands' masked rows: 5x5 filters measured)
    slides += [{"vw": vw, "tx": 1, "rows": 1, "slide": 1, "r": r, **m} for vw in vws[:2]
               for r in (2, 4) if 0 < sh <= 2 for m in ({}, {"mr": 1})[:1 + masked]]
    rows = [{"vw": vw, "tx": tx, "rows": 1, "row": 1} for vw in vws for tx in (4, 6, 8)]
    if cpu and not quant and flat_apply(o, fw, sw, dw, fh, vec):
        rows += [{"vw": 8, "tx": 1, "rows": 1, "flat": 1, **({"r": r} if r > 1 else {})}
                 for r in ((1, 2) if sh == 1 else (1,))]
    return [first, *(v for v in rows + tiles + [{**t, "sweep": 1} for t in tiles] + slides
                     if v != first)]


def signature(*, dt: str, n: int, h: int, w: int, o: int, oh: int, ow: int, fh: int, fw: int,
              sh: int, sw: int, dh: int, dw: int, quant: dict | None = None) -> dict:
    """The tuning signature of one depthwise layer (also the depthwise half of a dwpw one);
    ``quant``: a quantized layer's :func:`quant_keys` (float32 signatures are as they were
    before quantized layers were tuned, so their entries stand)."""
    sig = {"dt": dt, "n": n, "h": h, "w": w, "c": o, "oh": oh, "ow": ow, "fh": fh, "fw": fw,
           "sh": sh, "sw": sw, "dh": dh, "dw": dw, "space": SPACE}
    if dt in _gemm_variants.QUANT and quant is not None:
        sig.update(quant)
    return sig


def quant_keys(*, fdt: str, rq: str | None) -> dict:
    """What of a quantized depthwise layer's quantization changes its kernel's source (zero
    points and multipliers are arguments): the filter's type ``fdt`` and the requantization
    form ``rq`` (_gemm.Requant)."""
    return {"fdt": fdt, "rq": rq}


#: what of depthwise_tile's key the row kernels' keys take (``ws``: :func:`whole_stores`,
#: where the key has it)
ROW_KEYS = ("dt", "fdt", "vw", "fw", "sw", "ws")


def kernel(v: dict, key: dict, fh: int, ow: int, n_oh: int, o: int, w: int = 0, pl: int = 0,
           n: int = 1, sh: int = 1):
    """(kernel name, key, global size) of variant ``v`` given depthwise_tile's ``key`` (``w``,
    ``pl``: the input's width and left padding, which depthwise_row compiles in; a quantized
    key's ``rq``, the requantization form, goes to every kernel but the bands; ``n``, ``sh``:
    the batch and the row stride, which depthwise_slide_rows's bands need)."""
    if v.get("slide") and v.get("r", 1) > 1:
        bands = n * -(-(n_oh // n) // v["r"])
        return "depthwise_slide_rows", {**{k: key[k] for k in ROW_KEYS if k in key},
                                        "fh": fh, "sh": sh, "r": v["r"],
                                        **({"mr": 1} if v.get("mr") else {})}, \
            (blocks(o, v["vw"]), 1, bands)
    if v.get("flat"):
        r = v.get("r", 1)
        return "depthwise_flat", {**{k: key[k] for k in ("dt", "fdt", "fw", "ws") if k in key},
                                  "fh": fh, "m": o // 8, **({"r": r, "sh": sh} if r > 1 else {})}, \
            (1, 1, n * -(-(n_oh // n) // r))
    if v.get("pairs"):
        return "depthwise_pairs", {**{k: key[k] for k in ("dt", "fdt", "fw", "ws") if k in key},
                                   "fh": fh}, (1, 1, n_oh)
    rq = {"rq": key["rq"]} if "rq" in key else {}
    if v.get("row"):
        return "depthwise_row", {**{k: key[k] for k in ("tx", *ROW_KEYS) if k in key},
                                 "fh": fh, "w": w, "ow": ow, "pl": pl, **rq}, \
            (blocks(o, v["vw"]), 1, n_oh)
    if v.get("slide"):
        return "depthwise_slide", {**{k: key[k] for k in ROW_KEYS if k in key},
                                   "fh": fh, **rq}, (blocks(o, v["vw"]), 1, n_oh)
    if v.get("sweep"):
        return "depthwise_sweep", {**key, "fh": fh}, (blocks(o, v["vw"]), 1, n_oh)
    return "depthwise_tile", key, (o // v["vw"], -(-ow // v["tx"]), n_oh)


def whole_stores(limits, dt: str, vw: int) -> dict:
    """``{"ws": 1}`` (depthwise_tile's key and every row kernel's: each output vector stored
    as one copy of its bytes, depthwise_conv2d.cl.mako vst) for float32 vectors on a device
    whose class has dw_whole_stores, else ``{}``."""
    if dt != "f32" or vw < 2 or limits is None:
        return {}
    return {"ws": 1} if _defaults.defaults(_defaults.traits(limits)).dw_whole_stores else {}


def tile_candidates(default: dict, o: int, ow: int, fw: int, sw: int, dw: int) -> list[dict]:
    """``default`` first, then the 3 widest vectors x the 3 widest tiles x work-group rows
    (-1, 0, 1) of a tiled direct kernel (``depthwise_tile``, ``conv_tile``)."""
    out = [default]
    for vw in vector_widths(o)[:3]:
        for tx in tile_widths(ow, fw, sw, dw)[:3]:
            for rows in (-1, 0, 1):
                v = {"vw": vw, "tx": tx, "rows": rows}
                if v not in out:
                    out.append(v)
    return out


def local_for(rows: int, gsize, max_wg: int):
    """rows -1: tile_rows_group's rule; 0: the driver's; else (channel blocks, 1, rows) where
    it divides and fits."""
    if rows == -1:
        return tile_rows_group(gsize)
    if rows == 0 or gsize[2] % rows or gsize[0] * rows > max_wg:
        return None
    return (gsize[0], 1, rows)


def choose(b, *, dt: str, n: int, h: int, w: int, o: int, oh: int, ow: int, fh: int, fw: int,
           sh: int, sw: int, dh: int, dw: int, flop: float, quant: dict | None = None) -> dict:
    """The depthwise_tile variant of one layer planned by ``b`` (``quant``: a quantized
    layer's :func:`quant_keys`)."""
    sig = signature(dt=dt, n=n, h=h, w=w, o=o, oh=oh, ow=ow, fh=fh, fw=fw, sh=sh, sw=sw, dh=dh,
                    dw=dw, quant=quant)
    return choose_tile(b, FAMILY, sig, flop=flop)


def tile_family(name: str, cands, scratch, flop, scratch_bytes):
    """The tuning declaration (clnn.tuning.Family) of a tiled direct kernel: ``cands(cpu,
    vec, sig)`` its variants on a device class, the default first; ``scratch(device, v,
    sig)`` one layer on scratch buffers."""
    from clnn import tuning

    return tuning.Family(
        name, default=lambda t, s: cands(t.cpu, t.vec, s)[0],
        space=lambda t, s, full: cands(t.cpu, t.vec, s),
        scratch=lambda device, tuner, v, s: scratch(device, v, s), flop=flop,
        scratch_bytes=scratch_bytes)


def select_tile(device, family, sig: dict, op: int = -1, flop: float | None = None):
    """The select pass's variant of a tiled direct kernel's layer (``sig``; a
    clnn.tuning.Choice): the device-class default, tunable for float32 layers and 8-bit
    quantized ones whose signature holds their quantization (on a device without limits: a
    CPU's with 16-wide vectors)."""
    from clnn import tuning

    limits = getattr(device, "limits", None)
    if limits is None:
        v = family.space(_gemm_variants.Traits(cpu=True, max_wg=0, max_items=(0, 0, 0),
                                               local_mem=0, vec=16), sig, True)[0]
        return tuning.fixed_choice(family.name, sig, v, "the CPU rule (no device limits)", op)
    t = _gemm_variants.traits(limits)
    if not _gemm_variants.tunable(sig) or not hasattr(device, "platform"):
        return tuning.fixed_choice(family.name, sig, family.default(t, sig),
                                   f"the {tuning.class_name(t)} class default (float32 and "
                                   "quantized 8-bit layers are tuned)", op)
    return tuning.default_choice(family, t, sig, op, flop)


def choose_tile(b, family, sig: dict, flop: float | None = None) -> dict:
    """The variant of a tiled direct kernel's layer (``sig``) planned by ``b``: the one the
    select and tune passes chose (clnn.tuning.chosen)."""
    from clnn import tuning

    return tuning.chosen(b, select_tile(b.device, family, sig, getattr(b, "op_index", -1),
                                        flop))


def scratch_depthwise(device, v: dict, s: dict, out=None):
    """(kernels, release) of one float32 or quantized depthwise_tile layer in variant ``v``
    on zeroed scratch buffers (``out``: the output buffer, the caller's, else one of them;
    a quantized layer's requantization on zeroed buffers too, in its form ``rq``), padded as
    SAME pads (the signature holds no padding: half of it on top and left, rounded down)."""
    sizes = (s["n"] * s["h"] * s["w"] * s["c"], s["fh"] * s["fw"] * s["c"], s["c"],
             s["n"] * s["oh"] * s["ow"] * s["c"])
    mine = _gemm_variants.zeroed(device, sizes if out is None else sizes[:3])
    bufs = mine if out is None else [*mine, out]
    quant = s["dt"] in _gemm_variants.QUANT
    requant = _gemm_variants.zeroed(device, (s["c"], s["c"])) if quant else []
    mine = [*mine, *requant]
    pt, pl = (max((o - 1) * st + (f - 1) * d + 1 - i, 0) // 2 for o, st, f, d, i in (
        (s["oh"], s["sh"], s["fh"], s["dh"], s["h"]), (s["ow"], s["sw"], s["fw"], s["dw"], s["w"])))
    base = {"dt": s["dt"], "fdt": s.get("fdt", s["dt"]), "vw": v["vw"], "tx": v["tx"],
            "fw": s["fw"], "sw": s["sw"], "dw": s["dw"]}
    if quant and s.get("rq") and v["vw"] > 1:  # (as the plan keys it)
        base["rq"] = _gemm.rq_key(device.limits, s["rq"], v["vw"])
    base.update(whole_stores(device.limits, s["dt"], v["vw"]))
    name, key, gsize = kernel(v, base, s["fh"], s["ow"], s["n"] * s["oh"], s["c"], s["w"], pl,
                              s["n"], s["sh"])
    rec = _gemm_variants.scratch_builder(device, 2.0 * s["n"] * s["oh"] * s["ow"] * s["c"] * s["fh"]
                                   * s["fw"])
    rec.launch("depthwise_conv2d", name, key, gsize,
               [*[x for buf in bufs for x in (buf, i32(0))], *requant,
                *[i32(x) for x in (s["h"], s["w"], s["c"], s["oh"], s["ow"], s["fh"], s["sh"],
                                   s["dh"], pt, pl, 0, 0, 0)], *_clamp(quant)],
               local_size=local_for(v["rows"], gsize, device.limits.max_work_group_size),
               flexible=True)

    return rec.kernels(), _gemm_variants.releaser(mine)


def _clamp(quant: bool) -> list:
    """The clamp arguments of a scratch layer without an activation (and a float one's
    epilogue function: none)."""
    if quant:
        return [i32(-2**31), i32(2**31 - 1)]
    return [f32(-np.inf), f32(np.inf), i32(0)]


#: depthwise_tile's tuning declaration (clnn.tuning.Family)
FAMILY = tile_family(
    "depthwise", lambda cpu, vec, s: candidates(cpu, s["c"], s["ow"], s["fw"], s["sw"], s["dw"],
                                                 vec, s["fh"], row_stride(s), s["oh"],
                                                 s["dt"] in _gemm_variants.QUANT),
    scratch_depthwise,
    flop=lambda s: 2.0 * s["n"] * s["oh"] * s["ow"] * s["c"] * s["fh"] * s["fw"],
    scratch_bytes=lambda s: 4 * s["n"] * s["c"] * (s["h"] * s["w"] + s["oh"] * s["ow"]))
