"""The variants of the shared GEMM (templates/gemm.cl.mako) and how one is chosen per layer.

A variant is ``{"tile": [mr, nv, vw], "wg": ...}``: the tile (mr rows x nv vectors of vw
columns per work-item: mr * nv accumulators of vw floats; the only knobs that change the
source, so the only ones in the kernel key) and the work-group shape (a launch argument):
``"auto"`` (the PoCL-measured rule of :func:`clnn.kernels._gemm.local_size`), ``None`` (the
driver's choice) or ``[rows, columns]`` work-items, shrunk to divisors of the global size
(OpenCL 1.2 needs whole work-groups).

Without a tuning entry, :func:`heuristic` picks from device queries: on a CPU with native
vectors of 16 floats the outer-product tiles of `clnn bench gemm --sweep`
(:data:`clnn.kernels._gemm.TILE`, narrower for narrow outputs) with the "auto" groups; on
narrower vectors (16 vector registers) tiles of fewer accumulators
(:func:`clnn.kernels._gemm.narrow_vector_tile`, 4 x 16 mostly); on a GPU (or anything
else) a tile of at most 16 accumulators per work-item, which stays in a GPU thread's registers,
with work-groups of 64-256 work-items bounded by CL_DEVICE_MAX_WORK_GROUP_SIZE. The tuner
(clnn/tuning.py) measures :func:`candidates` per layer shape where the ``tune`` option allows.
"""

from __future__ import annotations

from clnn.kernels import _defaults, _gemm
from clnn.kernels._defaults import Traits, traits  # noqa: F401 (the GEMM's traits)

#: the variant spaces of the CPU and GPU classes (clnn/kernels/_defaults.py TABLE)
CPU_TILES = _defaults.TABLE["cpu"].gemm_tiles
GPU_TILES = _defaults.TABLE["gpu"].gemm_tiles
CPU_GROUPS = _defaults.TABLE["cpu"].gemm_groups
GPU_GROUPS = _defaults.TABLE["gpu"].gemm_groups


def fits_n(tile, n: int) -> bool:
    """A tile no wider than the output rounded to its vector width (no panel of padding)."""
    nr = tile[1] * tile[2]
    return nr <= max(_gemm.ceil_to(n, tile[2]), tile[2])


def _group_ok(t: Traits, wg) -> bool:
    if wg in ("auto", None):
        return True
    return wg[0] * wg[1] <= t.max_wg and wg[0] <= t.max_items[0] and wg[1] <= t.max_items[1]


def heuristic(t: Traits, n: int, m: int = 0, k: int = 0, packed: bool = False,
              fit: bool = False) -> dict:
    """The variant without a tuning entry (m, k: the GEMM's other sizes, 0 unknown;
    ``packed``: A is an im2col panel; ``fit``: A is float rows of the input (amode "rows"),
    whose tile the class may widen to more vectors per row, ``gemm_wide_rows``
    (:func:`clnn.kernels._gemm.wide_tile`; tiny GEMMs too: their tile is then one the model's
    wider layers mostly compile anyway), and fit in height to M, ``gemm_fit_rows``
    (:func:`clnn.kernels._gemm.fit_rows`; not for tiny GEMMs))."""
    d = _defaults.defaults(t)
    if d.gemm_tile == "rule":  # the CPU rule measured on PoCL
        tile = _gemm.pick_tile(n, m=m, k=k, packed=packed, vec=t.vec)
        if fit and not packed:
            tile = list(_gemm.wide_tile(n, tile, d.gemm_wide_rows, t.vec))
            if m * n * k > _gemm.TINY:
                tile[0] = _gemm.fit_rows(m, tile[0], d.gemm_fit_rows)
        return {"tile": list(tile), "wg": d.gemm_group}
    tile = list(d.gemm_tile if n > 2 else d.gemm_tile_narrow)
    want = next((list(g) for g in d.gemm_group if _group_ok(t, g)), None)
    return {"tile": tile, "wg": want}


def candidates(t: Traits, n: int, full: bool = True, m: int = 0, k: int = 0,
               packed: bool = False, fit: bool = False) -> list[dict]:
    """The variants the tuner measures for an output of ``n`` columns (the heuristic's
    first); ``full=False``: the tiles only, with the heuristic's groups (CLNN_TUNE=fast)."""
    default = heuristic(t, n, m, k, packed, fit)
    d = _defaults.defaults(t)
    tiles = [tl for tl in d.gemm_tiles if fits_n(tl, n)]
    groups = [g for g in d.gemm_groups if _group_ok(t, g)]
    out = [default]
    for tl in tiles:
        for g in (groups if full else [default["wg"]]):
            v = {"tile": list(tl), "wg": g}
            if v not in out:
                out.append(v)
    # the heuristic's tile under the other groups too (a tile of a narrow output may be no
    # tile of the list: the full space holds every fast candidate)
    out += [{"tile": default["tile"], "wg": g} for g in groups
            if {"tile": default["tile"], "wg": g} not in out]
    return out


def merge_few_rows(t: Traits, choices: list) -> list:
    """``choices`` (one plan's clnn.tuning.Choices) with the device class's
    ``gemm_merge_few_rows``: each float GEMM of one to four rows whose tile is the select
    pass's few-row one (not a tuned one), tiny (M x N x K up to :data:`clnn.kernels._gemm.TINY`),
    on the tile of :data:`clnn.kernels._gemm.TILE`'s height and its own vectors where another
    GEMM choice of the same A mode has that tile and no choice left keeps the few-row one: a
    kernel key fewer to compile for a few rows computed past M."""
    import dataclasses

    if not _defaults.defaults(t).gemm_merge_few_rows:
        return choices
    mr = _gemm.TILE[0]

    def mode(c):
        return (c.signature["dt"], c.signature["amode"])

    def tile(c):
        return tuple(c.variant["tile"])

    def few(c):
        s = c.signature
        return (c.family == "gemm" and s["dt"] == "f32" and c.variant == c.selected
                and 0 < s["M"] <= 4 and s["M"] * s["N"] * s["K"] * s["batches"] <= _gemm.TINY
                and tile(c)[0] < mr)

    gemms = [c for c in choices if c.family == "gemm"]
    kept = {(mode(c), tile(c)) for c in gemms if not few(c)}
    movable = {(mode(c), tile(c)) for c in gemms if few(c)} - kept
    out = []
    for c in choices:
        if c.family == "gemm" and few(c) and (mode(c), tile(c)) in movable:
            wide = (mr, *tile(c)[1:])
            if (mode(c), wide) in kept:
                c = dataclasses.replace(c, variant={**c.variant, "tile": list(wide)},
                                        reason=f"{c.reason}; on the plan's {mr}-row tile "
                                        "(a kernel fewer: gemm_merge_few_rows)")
        out.append(c)
    return out


#: the A modes of packed panels (the tile rule's ``packed``)
PACKED = ("packed", "planes")


#: the 8-bit quantized types of the GEMM
QUANT = ("u8", "i8")


def signature(*, dt: str, amode: str, M: int, N: int, K: int, batches: int = 1,
              quant: dict | None = None) -> dict:
    """The GEMM layer's signature (its key in the tuning cache). ``amode``: "packed" (im2col
    panels), "rows" (A[m, k] at m * K + k), "cols" (at k * M + m: an NCHW plane), "taps"
    (the implicit GEMM of a convolution: the tiles of "rows"; float32 ones measured as
    "rows", quantized ones in their geometry) or "planes" (A the packed filter, B the packed
    rows of an NCHW plane: launch_gemm's ``chrow``). ``quant``: a quantized layer's
    :func:`quant_keys` (float32 signatures are as they were before quantized layers were
    tuned, so their entries stand)."""
    sig = {"dt": dt, "amode": amode, "M": M, "N": N, "K": K, "batches": batches}
    if dt in QUANT and quant is not None:
        sig.update(quant)
    return sig


def quant_keys(*, facc: bool, rq: str | None, taps=None, ip: bool = False) -> dict:
    """What of a quantized GEMM layer's quantization changes its kernel's source (not the
    values: zero points and multipliers are arguments): ``facc`` (float accumulation,
    _gemm.float_exact), ``rq`` (the requantization form, _gemm.Requant) and, for the
    implicit GEMM (amode "taps"), its convolution geometry (_gemm.taps_args: the input's
    channels decide its vector loads, the window its reads), in which it is measured;
    ``ip`` (int16 pairs, _gemm.int_pairs) where the layer has it."""
    out = {"facc": bool(facc), "rq": rq}
    if ip:  # (bytes by quads where the layer's 16-lane tiles take them: _gemm.tuned_pairs)
        out["ip"] = "quads" if ip == "quads" else True
    if taps is not None:
        out["taps"] = [int(x) for x in taps]
    return out


def tunable(sig: dict) -> bool:
    """Whether the tuner measures layers of this signature: float32, and 8-bit quantized
    ones whose signature holds their quantization (:func:`quant_keys`)."""
    return sig["dt"] == "f32" or (sig["dt"] in QUANT and "rq" in sig)


def select(device, sig: dict, op: int = -1):
    """The select pass's GEMM variant of a layer (clnn.tuning.Choice): the device-class
    default, tunable for float32 and 8-bit quantized layers (the tune pass, :func:`tunable`)."""
    from clnn import tuning

    limits = getattr(device, "limits", None)
    if limits is None:
        v = {"tile": list(_gemm.pick_tile(sig["N"], m=sig["M"], k=sig["K"],
                                          packed=sig["amode"] in PACKED)), "wg": "auto"}
        return tuning.fixed_choice("gemm", sig, v, "the CPU rule (no device limits)", op)
    t = traits(limits)
    if not tunable(sig) or not hasattr(device, "platform"):
        return tuning.fixed_choice("gemm", sig, FAMILY.default(t, sig),
                                   f"the {tuning.class_name(t)} class default (float32 and "
                                   "quantized 8-bit layers are tuned)", op)
    return tuning.default_choice(FAMILY, t, sig, op)


def choose(b, *, dt: str, amode: str, M: int, N: int, K: int, batches: int = 1,
           **quant) -> dict:
    """The GEMM variant of one layer planned by ``b`` (a LaunchBuilder): the one the select
    and tune passes chose for it (clnn.tuning.chosen); ``quant``: a quantized layer's
    :func:`quant_keys`."""
    from clnn import tuning

    sig = signature(dt=dt, amode=amode, M=M, N=N, K=K, batches=batches, quant=quant or None)
    return tuning.chosen(b, select(b.device, sig, getattr(b, "op_index", -1)))


def _scratch(device, tuner, v: dict, s: dict):
    quant = {k: s[k] for k in ("facc", "rq", "taps", "ip") if k in s} if s["dt"] in QUANT else None
    return scratch_gemm(device, v, s["dt"], s["amode"], s["M"], s["N"], s["K"], s["batches"],
                        **_layout(s["amode"], s["M"]), quant=quant)


def _family():
    from clnn import tuning

    return tuning.Family(
        "gemm",
        default=lambda t, s: heuristic(t, s["N"], s["M"], s["K"], s["amode"] in PACKED,
                                       _fits(s)),
        space=lambda t, s, full: candidates(t, s["N"], full=full, m=s["M"], k=s["K"],
                                            packed=s["amode"] in PACKED, fit=_fits(s)),
        scratch=_scratch, flop=lambda s: 2.0 * s["M"] * s["N"] * s["K"] * s["batches"],
        scratch_bytes=lambda s: 4 * (s["M"] * s["K"] + s["K"] * s["N"] + s["M"] * s["N"]) *
        s["batches"])


def _fits(s: dict) -> bool:
    """Whether a layer of signature ``s`` may take a tile height fitted to its M
    (:func:`heuristic`'s ``fit``): float32 rows of the input."""
    return s["amode"] == "rows" and s["dt"] == "f32"


def _layout(amode: str, m: int) -> dict:
    """C's layout in a layer of this A mode: NCHW planes of M pixels for "cols" (an NCHW 1x1
    convolution, one batch per image), else rows of N."""
    return {"cmode": "nchw", "ohw": m} if amode == "cols" else {}


def device_default(b, n: int) -> dict:
    """The heuristic variant for the device ``b`` plans on (GEMMs that are not tuned:
    TRANSPOSE_CONV_2D, BATCH_MATMUL), so that no GEMM runs a CPU tile on a GPU."""
    limits = getattr(b.device, "limits", None)
    if limits is None:
        return {"tile": list(_gemm.pick_tile(n)), "wg": "auto"}
    return heuristic(traits(limits), n)


def scratch_builder(device, flop: float = 0.0):
    """The builder of one scratch layer (clnn.launch.LaunchBuilder.scratch_layer: the one
    LaunchBuilder, its launches made by its ``kernels()``)."""
    from clnn.launch import LaunchBuilder

    return LaunchBuilder.scratch_layer(device, flop)


def zeroed(device, counts) -> list:
    """Zero-filled float32 scratch buffers of these element counts (the tuner's layers: the
    values do not change a float kernel's time)."""
    import numpy as np
    import pyopencl as cl

    q = device.timing_queue()
    bufs = []
    for n in counts:
        buf = cl.Buffer(device.context, cl.mem_flags.READ_WRITE, max(4, 4 * n))
        cl.enqueue_fill_buffer(q, buf, np.float32(0), 0, max(4, 4 * n))
        bufs.append(buf)
    return bufs


def releaser(bufs):
    """A function releasing ``bufs`` (the second half of a scratch layer's result)."""
    def release():
        for buf in bufs:
            buf.release()

    return release


def scratch_gemm(device, v: dict, dt: str, amode: str, M: int, N: int, K: int, batches: int,
                 a=None, c=None, cmode: str = "nhwc", ohw: int = 1, quant: dict | None = None):
    """(kernels, release) of one GEMM of this shape in variant ``v`` on zeroed scratch
    buffers (``a``, ``c``: the A and C buffers, the caller's, else ones of them; ``cmode``,
    ``ohw``: C's layout, as launch_gemm's, one image of ``ohw`` pixels per batch in NCHW;
    ``quant``: a quantized layer's :func:`quant_keys`, its bias and requantization on zeroed
    buffers too, an implicit GEMM in its geometry). Buffers hold 4 bytes an element whatever
    the type (a few bytes more than an 8-bit layer's)."""
    mr, nv, vw = v["tile"]
    nr = nv * vw
    taps = (quant or {}).get("taps")
    if taps is not None:  # the input's images (M / (oh * ow) of h x w x c)
        a_el = M // max(taps[4], 1) * taps[0] * taps[1] * taps[2]
    else:
        a_el = (_gemm.ceil_to(M, mr) if amode in PACKED else M) * K
    # "cols": A read by columns (an NCHW plane, A[m, k] at k * M + m), the kernel's "rows"
    sam, sak = (1, M) if amode == "cols" else (K, 1)
    b_el = _gemm.ceil_to(N, nr) * K
    mine = zeroed(device, [n * batches for n in ((a_el,) if a is None else ()) + (b_el,) +
                           ((M * N,) if c is None else ())])
    it = iter(mine)
    a_buf = a if a is not None else next(it)
    b_buf = next(it)
    c_buf = c if c is not None else next(it)
    rec = scratch_builder(device, 2.0 * M * N * K * batches)
    q, qbufs = _scratch_quant(device, N * batches, quant) if quant is not None else ({}, [])
    if q.get("ip"):  # (bytes by quads on the tiles the plan packs them for)
        q["ip"] = _gemm.scratch_pairs(device, quant.get("ip"), v["tile"],
                                      taps[2] if taps is not None else K)
    _gemm.launch_gemm(rec, dt=dt, a=a_buf, bpk=b_buf, c=c_buf, M=M, N=N, K=K,
                      tile=tuple(v["tile"]),
                      amode="taps" if taps is not None else
                      "packed" if amode in PACKED else "rows",
                      sam=sam, sak=sak, cmode=cmode,
                      ldc=N * ohw, ohw=ohw,
                      batch=(batches, 1), a_b=(a_el, 0), b_b=(b_el, 0), c_b=(M * N, 0),
                      wg=v["wg"], chrow=amode == "planes", **q)
    return rec.kernels(), releaser(mine + qbufs)


def _scratch_quant(device, channels: int, quant: dict):
    """(launch_gemm arguments, buffers) of a quantized scratch GEMM: a zero bias and
    requantization of ``channels`` output channels in the layer's form (``rq``), float
    accumulation where the layer's has it, an implicit GEMM's geometry."""
    bias, mult, shift = zeroed(device, (channels,) * 3)
    requant = _gemm.Requant([mult, shift])
    requant.rq = quant.get("rq")
    q = {"bias": bias, "requant": requant, "facc": bool(quant.get("facc")),
         "ip": quant.get("ip") or False}
    if quant.get("taps") is not None:
        q["taps"] = tuple(quant["taps"])
    return q, [bias, mult, shift]


#: the GEMM's tuning declaration (clnn.tuning.Family)
FAMILY = _family()
