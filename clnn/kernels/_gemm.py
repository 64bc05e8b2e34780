"""The shared GEMM of the convolution / matrix families (templates/gemm.cl.mako).

Not a kernel family itself (no operation registers here): conv2d, grouped_conv2d,
transpose_conv2d, fully_connected and batch_matmul plan their launches through
:func:`launch_gemm`, :func:`launch_im2col` and :func:`pack_weights`.

Weights are reordered once, when a plan is made (at prepare for static shapes): B = W^T is
packed into [ceil(N/nr), K, nr] panels (zero padded; quantized weights centered on their zero
point and stored as short) and placed in a device buffer of its own. The tile knobs (mr, nv,
vw) are in the kernel key; :data:`TILE` is the fastest on a CPU with native vectors of 16
floats in `clnn bench gemm --sweep`. Which tile and work-group shape a layer runs is chosen
per device and shape by clnn/kernels/_gemm_variants.py (tuned, or a heuristic from device
queries).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from clnn.kernels._defaults import im2col_vector
from clnn.kernels.support import FLOAT, f32, i32
from hal.operations.conv2d import is_quant, output_multipliers

#: the functions a float epilogue applies last, by their code in the ``post`` flags (0: none;
#: SILU: x * sigmoid(x), a LOGISTIC and a MUL fused in, clnn/fusion/)
FLEX_FUNCTIONS = (None, "LOGISTIC", "HARD_SWISH", "SILU")
#: (mr, nv, vw): rows per work-item, vectors per row, vector width
TILE = (8, 2, 16)
#: a CPU tile for outputs of 24 columns (:func:`pick_tile`), a tuner candidate too
#: (clnn/kernels/_gemm_variants.py CPU_TILES): 4 x 24, three vectors of 8, takes the
#: columns without the 8 x 8 tile's extra passes over A nor a partial vector of 16
NARROW24 = (4, 3, 8)

#: the multiply-adds up to which a GEMM's tile is the common one (:func:`pick_tile`; one to
#: four rows keep their own): the small heads of the MediaPipe models (pose_detection's
#: 49 x 6 x 288), launch-bound on a CPU
TINY = 3 << 17


def pick_tile(n: int, tile=None, m: int = 0, k: int = 0,
              packed: bool = False, vec: int = 16) -> tuple[int, int, int]:
    """The CPU tile for an M x N x K GEMM (m, k: 0 when unknown; ``packed``: A is an im2col
    panel, not rows of the input), from the kernel time of the float GEMM shapes of the
    benchmark models under each tile (`clnn bench gemm`; the ONNX models' shapes:
    benchmarks/results/gemm_tile_rule.json). For native vectors of 16 floats (``vec``, the
    device's CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT; narrower ones take
    :func:`narrow_vector_tile`):

    - a GEMM of one to four rows (a FULLY_CONNECTED of batch 1) and 32 columns or more: 2 or
      4 rows x 32 (8 rows would compute copies of the first; 2-5x faster);
    - packed A of 32 columns or more: the 8 x 32 outer product (its contiguous panel feeds
      the wider tile best);
    - up to 16 columns: 8 x 8 (below 16), 8 x 16 (16);
    - 17 to 31 columns: 8 x 16 where K >= 256 (the FMAs outweigh the partial vector's
      stores), else 4 x 24 on 24 columns (three vectors of 8, no partial vector: 1.4x on
      common_det's), 8 x 8 on the others;
    - wider: 8 x 32 on multiples of 32 (1.1-1.4x from 64 columns, the Winograd GEMMs' batches
      of small K included; 32 columns, one panel, in the chained MediaPipe models: iris_landmark's
      1024 x 32 x 64 layers 11.7-12.4 -> 10.0 us, the chains' per-launch fastest sums
      iris_landmark 269-272 -> 265-267 us, face_landmark 239-242 -> 228-234) and from 128
      columns where K >= 256 (a partial last panel: 2.2x on light_squeezenet's 169 x 1000 x
      512), else 8 x 16 (a partial last panel costs less than 8 x 8's two passes: 1.3-1.8x).

    A GEMM of :data:`TINY` multiply-adds or fewer (m and k known) runs in a few microseconds
    whatever its tile: it takes the tiles of wider layers (8 x 16 below 16 columns, 8 x 32
    from 32), whose kernels its model mostly compiles anyway (fewer kernel keys per chain, a
    cheaper cold compile: #37), but for one to four rows of 32 columns or more, which keep
    their 2 or 4 rows: 8 rows would run 2-8 times the multiply-adds through the whole of B
    (iris_landmark's 1 x 213 x 512 head 7.5-9.0 -> 4.1-4.6 us and its twelve 4 x 32 x 64
    layers 0.8-1.0 -> 0.5-0.6 us, hand_landmark_full's 1 x 63 x 1152 heads 5.9-8.7 -> 4.4-5.4
    us, launch by launch: benchmarks/results/mediapipe_ab-20261130-s24-mp.json)."""
    if tile is not None:
        return tuple(tile)
    if vec < 16:
        return narrow_vector_tile(n, vec)
    mr = TILE[0]
    tiny = m > 0 and k > 0 and m * n * k <= TINY
    if 0 < m <= 4 and n >= 32:
        return (2 if m <= 2 else 4, 2, 16)
    if tiny and n >= 32:
        return TILE
    if packed and n >= 32:
        return TILE
    if n < 16:
        return (mr, 1, 16 if tiny else 8)
    if n < 32 and n % 16:
        return (mr, 1, 16) if k >= 256 else NARROW24 if n == 24 else (mr, 1, 8)
    if (n >= 32 and n % 32 == 0) or (n >= 128 and k >= 256):
        return TILE
    return (mr, 1, 16)


#: a tile height other than the rule's is taken (:func:`fit_rows`) only where the rule's
#: would pad more than M / FIT_WASTE rows
FIT_WASTE = 16


def fit_rows(m: int, mr: int, heights) -> int:
    """The tile height for an M-row GEMM whose rule tile is ``mr`` rows high: ``mr``, or the
    first of ``heights`` (the device class's ``gemm_fit_rows``) lower than ``mr`` (fewer
    accumulators) that pads fewer rows where ``mr`` pads more than m / :data:`FIT_WASTE` (49
    rows: 8 pads 7, 7 none; 36: 8 pads 4, 6 none; 196: 8 pads 4 of 196, kept)."""
    pad = -(-m // mr) * mr - m
    if m <= 0 or pad * FIT_WASTE <= m:
        return mr
    best = mr
    for h in heights:
        p = -(-m // h) * h - m
        if h < mr and p < pad:
            best, pad = h, p
    return best


def wide_tile(n: int, tile: tuple, wide, vec: int = 16) -> tuple:
    """The tile for an N-column GEMM whose rule tile is ``tile``, on native vectors of
    ``vec`` floats: where that is one vector per row (mr x 1 x vec, or :data:`NARROW24`) and
    N whole vectors, or whole ones and a half (the kernel's ``half``: :func:`half_vector`),
    the first (rows, vectors) of ``wide`` (the device class's ``gemm_wide_rows``) whose
    vectors divide N's (144 columns, 9 vectors of 16: 8 x 3; 80: 4 x 5; 112: 4 x 7; 40, 2.5
    vectors: 8 x 3; 72: 4 x 5; 24: 8 x 2); else ``tile``. Narrower vectors than 16 (the
    rule's :func:`narrow_vector_tile`) keep theirs."""
    if vec < 16 or (tuple(tile[1:]) != (1, vec) and tuple(tile) != NARROW24):
        return tile
    v, part = divmod(n, vec)
    if part and part * 2 == vec and v >= 1:
        v += 1
    elif part:
        return tile
    for rows, vectors in wide:
        if v % vectors == 0:
            return (rows, vectors, vec)
    return tile


def narrow_vector_tile(n: int, vec: int) -> tuple[int, int, int]:
    """The CPU tile for native vectors of ``vec`` < 16 floats (CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT
    8: a CPU of 16 vector registers, where the 16 accumulators of 16 floats of the wide
    tile spill): 4 rows x 2 vectors' width (8 accumulator registers), 4 x 3 vectors where the
    output is a multiple of three vectors and not of two (24, 72 columns), 8 x 1 vector up to
    one vector of output. The rule that `clnn bench gemm` backs on such a CPU over the GEMM
    shapes of the benchmark models and the tuner's tiles (4 x 16 fastest or close on most,
    4 x 24 on the 24-column ones)."""
    w = max(4, vec)
    if n <= w:
        return (8, 1, w)
    if n % (3 * w) == 0 and n % (2 * w):
        return (4, 3, w)
    return (4, 1, 2 * w)


def ceil_to(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def device_buffer(b, arr: np.ndarray):
    """A read-only device buffer holding ``arr`` (made once per plan)."""
    import pyopencl as cl

    data = np.ascontiguousarray(arr)
    if data.nbytes == 0:
        data = np.zeros(1, np.int32)
    return cl.Buffer(b.device.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=data)


def packed_weights(b, arr: np.ndarray):
    """Packed weights ``arr`` (:func:`pack_weights`) for :func:`launch_gemm`'s ``bpk``: (the
    plan's arena, element offset) for float weights where the builder has a
    clnn.launch.WeightArena with room, else a buffer of their own (:func:`device_buffer`; the
    quantized packings' element types are the kernels' own: left apart)."""
    arena = getattr(b, "arena", None)
    placed = arena.place(arr) if arena is not None and arr.dtype == np.float32 else None
    return placed if placed is not None else device_buffer(b, arr)


def _packed_args(bpk) -> list:
    """The kernel arguments of :func:`launch_gemm`'s ``bpk``: a buffer, or (buffer, element
    offset) (:func:`packed_weights`), and the offset."""
    buf, off = bpk if isinstance(bpk, tuple) else (bpk, 0)
    return [buf, i32(off)]


def scratch(b, nbytes: int):
    """A device buffer private to one launch sequence of a plan (im2col, packed B, ...)."""
    import pyopencl as cl

    return cl.Buffer(b.device.context, cl.mem_flags.READ_WRITE, max(int(nbytes), 4))


def pack_weights(bt: np.ndarray, nr: int, quant: bool, zero_point: int = 0,
                 facc: bool = False, pairs: bool | str = False, a_zero: int = 0) -> np.ndarray:
    """bt: [groups, K, N] (B = W^T per group) -> [groups, ceil(N/nr), K, nr] panels
    (quantized: short w - zero point, or float with ``facc``, :func:`float_exact`);
    ``pairs`` (quantized, even K: :func:`int_pairs`): short [groups, ceil(N/nr), K / 2, nr, 2],
    rows k and k + 1 of each column side by side; ``pairs`` "quads" (:func:`int_quads`): signed
    bytes [groups, ceil(N/nr), K / 4 + 1, nr, 4], rows k .. k + 3 of each column side by side,
    then each column's -``a_zero`` * sum_k B as an int32 (``a_zero``: A's zero point as the
    unsigned byte gemm.cl.mako's vnni multiplies)."""
    if pairs == "quads":
        panels = pack_weights(bt, nr, quant, zero_point)
        g, p, k, _ = panels.shape
        quads = panels.reshape(g, p, k // 4, 4, nr).transpose(0, 1, 2, 4, 3).astype(np.int8)
        share = (-a_zero * panels.astype(np.int32).sum(axis=2)).astype("<i4")
        return np.ascontiguousarray(np.concatenate(
            [quads.reshape(g, p, k * nr), share.view(np.int8).reshape(g, p, 4 * nr)], axis=2))
    if pairs:
        panels = pack_weights(bt, nr, quant, zero_point)
        g, p, k, _ = panels.shape
        return np.ascontiguousarray(panels.reshape(g, p, k // 2, 2, nr).transpose(0, 1, 2, 4, 3))
    g, k, n = bt.shape
    npad = ceil_to(max(n, 1), nr)
    if quant:
        src = bt.astype(np.int32) - zero_point
        dtype = np.float32 if facc else np.int16
    else:  # (converted as it is written: one pass over the weights)
        src = bt
        dtype = np.float32
    # written in place into the panels' layout, seen as [groups, K, panels, nr]: the whole
    # panels, then the last one's columns (its padding zeros)
    panels = (np.empty if n == npad else np.zeros)((g, npad // nr, k, nr), dtype)
    view = panels.transpose(0, 2, 1, 3)
    whole = n // nr
    view[:, :, :whole] = src[:, :, :whole * nr].reshape(g, k, whole, nr)
    if n > whole * nr:
        view[:, :, whole, :n - whole * nr] = src[:, :, whole * nr:]
    return panels


#: the largest |a - zero point| of a quantized 8-bit A
A_RANGE = 255


def float_exact(bt: np.ndarray, zero_point: int) -> bool:
    """Whether a quantized GEMM of constant B (``bt``: [groups, K, N]) may accumulate in float
    (the ``facc`` kernel knob) with the integer result: every partial sum of a column's
    products (a - za) * (b - zb), |a - za| <= 255, is at most 255 * sum_k |b - zb| in
    magnitude, an integer below 2^24 for every column, which float32 holds exactly, so each
    FMA is exact whatever the order."""
    if bt.size == 0:
        return False
    col = np.abs(bt.astype(np.int64) - zero_point).sum(axis=1)  # [groups, N]
    return int(col.max()) * A_RANGE < 2 ** 24


#: added to a stored shift: that channel's final shift rounds ties upward (common.mako)
ROUND_UP = 256


class Requant(list):
    """[multiplier, shift] device buffers of a quantized epilogue (:func:`requant_buffers`);
    ``rq`` the kernels' requantization knob: "up" / "away" where every channel's shift is a
    right shift of at most 62 places rounding ties upward / away from zero alike (common.mako
    clnn_mbqm<rq><n>), None for the general clnn_mbqm<n>."""

    rq = None


def right_rounding(shift: np.ndarray, up: np.ndarray) -> str | None:
    """The ``rq`` knob of these shifts (before ROUND_UP is added) and upward flags: "up"
    for right shifts of at most 31 places (common.mako's one rounding shift), "away" of at
    most 62."""
    if shift.size == 0 or shift.max() > 0 or shift.min() < -62 or up.min() != up.max():
        return None
    if up.max():
        return "up" if shift.min() >= -31 else None
    return "away"


def rq_key(limits, rq: str | None, vw: int) -> str | None:
    """The ``rq`` knob of a kernel of ``vw`` lanes on a device of these limits: "upp" (the
    "up" form on lane pairs, common.mako mbqm_right_vector) where the device class's
    ``requant_pairs`` is ``vw``, else ``rq`` as it is."""
    from clnn.kernels import _defaults

    if rq == "up" and vw > 1 and \
            _defaults.defaults(_defaults.traits(limits)).requant_pairs == vw:
        return "upp"
    return rq


def requant_buffers(b, ctx, n_out: int, x_info, w_info, upward=False):
    """(multiplier, shift) int32 device buffers per output channel (reference
    QuantizeMultiplier of input_scale * filter_scale / output_scale); ``upward`` (a bool, or
    one per channel: hal.operations.conv2d.finish) marks the shifts that round ties upward.
    A :class:`Requant`, its ``rq`` set where the shifts allow the fast form."""
    mult, shift = output_multipliers(x_info, w_info, ctx.outputs[0], n_out)
    up = np.broadcast_to(np.asarray(upward, np.int64), shift.shape)
    out = Requant([device_buffer(b, mult.astype(np.int32)),
                   device_buffer(b, (shift + ROUND_UP * up).astype(np.int32))])
    out.rq = right_rounding(np.asarray(shift), up)
    return out


def requant_form(ctx, n_out: int, x_info, w_info, upward=False) -> str | None:
    """The ``rq`` knob :func:`requant_buffers` sets for this layer, without buffers (the
    quantized layers' tuning signatures: it changes the kernel's source)."""
    _, shift = output_multipliers(x_info, w_info, ctx.outputs[0], n_out)
    shift = np.asarray(shift)
    return right_rounding(shift, np.broadcast_to(np.asarray(upward, np.int64), shift.shape))


def tensor_arg(t):
    """In(k) / Out(k) as they are, a (buffer, element offset) pair (the recurrent families
    address one time step of a tensor), or a bare buffer at element offset 0."""
    from clnn.kernels.registry import In, Out

    if isinstance(t, tuple):
        return [t[0], i32(t[1])]
    return [t] if isinstance(t, In | Out) else [t, i32(0)]


def _table_residual(params: dict, qres, quant_act: bool, cmode: str, batch) -> list:
    """The arguments of launch_gemm's ``qres`` (its knob set in ``params``): (the (buffer,
    element offset) of an 8-bit tensor laid out like C, the device buffer of an ADD's terms
    (clnn/fusion/ AddFusion.quant)): C's byte's term and the tensor's byte's added and
    requantized, for a quantized "act" (``quant_act``) NHWC GEMM of one batch."""
    if qres is None:
        return []
    if not quant_act or cmode != "nhwc" or tuple(batch) != (1, 1):
        raise ValueError("a table-added residual needs one quantized NHWC GEMM")
    params["qres"] = True
    return [*qres[0], qres[1]]


def half_vector(n: int, nv: int, vw: int) -> bool:
    """Whether the last column panel of ``n`` columns in tiles of nv vectors of vw ends half
    way through its last vector (28 columns in panels of 8, 24 / 56 / 72 / 88 in vectors of
    16): a float NHWC epilogue then stores it in vectors (the kernel's ``half``,
    gemm.cl.mako half_consts / store_half), not element by element
    (face_detection_short_range's 28-column layer with its channel-padded residual 45.4 ->
    39.2 us in the chain, its 56 / 72 / 88-column ones 0.6-0.8 us each)."""
    return vw > 1 and n % (nv * vw) == nv * vw - vw // 2


def _float_accumulators(b, params: dict, taps, amode: str, sak: int, K: int, ip: bool = False):
    """The knobs of a quantized GEMM whose B is packed as float (float_exact): ``facc``,
    ``cv`` where A's taps or rows are contiguous (:func:`taps_cv`), and ``lm`` with those
    vectors where the device class says (:func:`lanes_from_memory`); ``ip``: B packed as short
    pairs instead (:func:`int_pairs`), the products summed in int32 (an even ``cv``); ``ip``
    "quads": B packed as signed bytes by quads (:func:`int_quads`), the kernel's ``vnni``."""
    params["facc"] = True
    if taps is not None and taps_cv(b, taps[2]) > 1:
        params["cv"] = taps_cv(b, taps[2])
    elif amode == "rows" and sak == 1 and taps_cv(b, K) > 1:  # contiguous rows of A
        params["cv"] = taps_cv(b, K)
    if params.get("cv", 1) > 1 and lanes_from_memory(b):
        params["lm"] = True
    if ip:
        if params.get("cv", 1) % 2:
            raise ValueError(f"int16 pairs need an even vector of A, not {params.get('cv', 1)}")
        params["ip"] = True
    if ip == "quads":
        if params["vw"] != 16 or amode not in ("rows", "taps") or params.get("cv", 1) % 4:
            raise ValueError(f"B packed by quads needs 16 lanes, rows or taps and a vector of A "
                             f"of a multiple of 4, not {params['vw']}, {amode!r}, "
                             f"{params.get('cv', 1)}")
        params["vnni"] = True


def launch_gemm(b, *, dt: str, a, bpk, c, M: int, N: int, K: int, tile, odt=None,
                amode="rows", sam=0, sak=1, cmode="nhwc", ldc=None, ohw=1, epi="act",
                bias=None, requant=(), batch=(1, 1), a_b=(0, 0), b_b=(0, 0), c_b=(0, 0),
                ch_b=(0, 0), za=0, zo=0, lo=None, hi=None, family="gemm", res=None,
                prelu=None, fn=None, wg="auto", res_cols=None, facc=False, taps=None,
                chrow=False, qres=None, ip=False, late=False, res_pool=None):
    """One GEMM launch (see gemm.cl.mako for the knobs). ``a`` / ``c`` are In/Out or buffers;
    ``bpk`` the packed B buffer; ``bias`` In(k) or None; ``requant`` [mult, shift] buffers
    of quantized "act" epilogues; lo / hi the activation clamp; ``res`` (buffer, element
    offset) of a float tensor laid out like C, added before the activation (``res_cols``:
    (row stride, columns) of a residual with fewer columns than C, NHWC, zero past them: the
    channel-padded residual of BlazeFace-style blocks); ``prelu`` that of
    a per-output-channel alpha applied after it, ``fn`` a function applied last (float "act"
    epilogues). ``wg``: the work-group shape of the variant (clnn/kernels/_gemm_variants.py):
    "auto" (:func:`local_size`), None (the driver's) or [rows, columns] (:func:`fit_group`).
    ``taps``: amode "taps" (:func:`taps_args`), the implicit GEMM's convolution geometry.
    ``chrow``: the output channel of C[m, n] is its row m (the bias and PRELU alpha per row:
    an NCHW 1x1 convolution, conv2d.py plan_conv_planes), float "act" only; ``qres``: a
    quantized ADD fused after the requantization (:func:`_table_residual`); ``late``,
    ``res_pool``: :func:`_flex_args`; ``ip``: see below."""
    mr, nv, vw = tile
    nr = nv * vw
    quant = dt in ("u8", "i8")
    odt = odt or dt
    if lo is None:
        lo, hi = (i32(-2**31), i32(2**31 - 1)) if quant else (f32(-np.inf), f32(np.inf))
    params = {"dt": dt, "odt": odt, "mr": mr, "nv": nv, "vw": vw, "amode": amode,
              "cmode": cmode, "epi": epi}
    if facc and quant:  # B packed as float (float_exact), or as short pairs (ip)
        _float_accumulators(b, params, taps, amode, sak, K, ip)
    if chrow and (quant or epi != "act"):
        raise ValueError(f"a {dt} GEMM with the {epi!r} epilogue has no channel per row")
    if chrow:  # (absent where false: the other kernels' keys)
        params["chrow"] = True
    args = [*tensor_arg(a), *_packed_args(bpk), *tensor_arg(c)]
    post = None
    if not quant and epi == "act":
        # one kernel for every float epilogue: bias, residual, PRELU and function are chosen
        # by the run-time ``post`` flags (fewer kernels to compile). A tensor a flag leaves
        # off is never read: a null buffer (a buffer argument costs PoCL bookkeeping at
        # every launch)
        params["flex"] = True
        if cmode == "nhwc" and not chrow and half_vector(N, nv, vw):
            params["half"] = True
        post = (bias is not None) | (res is not None) << 1 | (prelu is not None) << 2 | \
            (res is not None and late) << 3 | FLEX_FUNCTIONS.index(fn) << 4
        none = [None, i32(0)]
        args += none if bias is None else tensor_arg(bias)
        args += none if res is None else list(res)
        args += none if prelu is None else list(prelu)
    else:  # quantized epilogues and raw accumulators: a bias at most (fusions are float)
        if res is not None or prelu is not None or fn:
            raise ValueError(f"a {dt} GEMM with the {epi!r} epilogue fuses no residual, PRELU "
                             "or function")
        params["bias"] = bias is not None
        if bias is not None:
            args += tensor_arg(bias)
    if quant and epi == "act":
        args += list(requant)
        if getattr(requant, "rq", None):  # every shift a right shift (Requant)
            params["rq"] = rq_key(b.device.limits, requant.rq, params["vw"])
    args += _table_residual(params, qres, quant and epi == "act", cmode, batch)
    args += [i32(v) for v in (M, N, K, sam, sak, N if ldc is None else ldc, ohw, batch[1],
                              *a_b, *b_b, *c_b, *ch_b, za, zo)]
    args += [lo, hi]
    if post is None and (res_cols is not None or res_pool is not None):
        raise ValueError(f"a {dt} GEMM with the {epi!r} epilogue fuses no residual")
    if post is not None:
        res_n = res_cols[1] if res_cols is not None else N
        args += _flex_args(params, post, res is not None, res_cols, res_pool, cmode, batch,
                           chrow, N if ldc is None else ldc, N)
    if (amode == "taps") != (taps is not None):
        raise ValueError("amode 'taps' and its convolution geometry go together")
    if taps is not None:
        args += [i32(v) for v in taps]
    gsize = (-(-M // mr), -(-N // nr), batch[0] * batch[1])
    launch = b.launch(family, "gemm", params, gsize, args, local_size=local_for(wg, gsize),
                      flexible=True)
    if launch is not None and post is not None:
        launch.post, launch.narrow_res = post, res_n < N


def _flex_args(params: dict, post: int, res: bool, res_cols, res_pool, cmode: str, batch,
               chrow: bool, ldc: int, N: int) -> list:
    """The ``post``, ``res_ld``, ``res_n`` (and ``res_ow``: a pooled residual, the key's
    ``rpool``) arguments of a flex epilogue. launch_gemm's ``late``: ``res`` added after the
    clamp (clamp then add, ``post`` bit 3; lo / hi then the convolution's own clamp);
    ``res_pool``: C's columns per image row where ``res`` is the input of a 2x2 / stride 2
    MAX_POOL_2D (twice the rows and columns, the epilogue adding each window's maximum:
    ``rpool``; NHWC, one batch)."""
    if res_cols is not None and (cmode != "nhwc" or batch != (1, 1)):
        raise ValueError("a residual of fewer columns needs one NHWC GEMM")
    res_ld, res_n = res_cols or (ldc, N)
    args = [i32(post), i32(res_ld), i32(res_n)]
    if res_pool is not None:  # (a compile-time form: its key)
        if not res or cmode != "nhwc" or batch != (1, 1) or chrow:
            raise ValueError("a pooled residual needs one NHWC GEMM with a residual")
        params["rpool"] = True
        args.append(i32(res_pool))
    return args


def taps_args(h: int, w: int, c: int, oh: int, ow: int, fw: int, taps: int, stride, dil,
              pad) -> tuple:
    """The convolution geometry of an implicit GEMM (amode "taps", gemm.cl.mako): an NHWC
    float32 input of h x w x c, an output of oh x ow, taps = fh * fw filter taps, (stride_h,
    stride_w), (dil_h, dil_w), (pad_top, pad_left)."""
    return (h, w, c, ow, oh * ow, fw, taps, *stride, *dil, *pad)


def taps_cv(b, channels: int) -> int:
    """The input channels a quantized implicit GEMM (amode "taps", facc) loads as one vector
    per row and tap (gemm.cl.mako taps_chunk): the widest of 16, 8, 4, 3, 2 that divides
    the input's channels, at most the device class's gemm_taps_cv; 1 (channel by channel)
    when none does. (3: the RGB input of a first layer, 1.4x faster than one by one on
    image_classification's.)"""
    from clnn.kernels import _defaults

    limits = getattr(b.device, "limits", None)
    most = _defaults.defaults(_defaults.traits(limits)).gemm_taps_cv if limits else 1
    return next((v for v in (16, 8, 4, 3, 2) if v <= most and channels % v == 0), 1)


def int_pairs(device, facc: bool, channels: int) -> bool:
    """Whether a quantized GEMM accumulating exactly (``facc``) whose A vectors are of
    ``channels`` (a taps GEMM's input channels, a rows GEMM's K; :func:`taps_cv`) accumulates
    int16 pair products in int32 instead (gemm.cl.mako ``ip``, B packed by
    :func:`pack_weights` ``pairs``): the device class's gemm_int_pairs, an even vector."""
    from clnn.kernels import _defaults

    limits = getattr(device, "limits", None)
    if not (facc and limits and _defaults.defaults(_defaults.traits(limits)).gemm_int_pairs):
        return False
    return taps_cv(SimpleNamespace(device=device), channels) % 2 == 0


def unsigned_zero(dt: str, inp) -> int:
    """A's (the operand ``inp``'s) zero point as gemm.cl.mako's vnni takes A: unsigned bytes
    (int8 + 128); 0 for other types."""
    if dt not in ("u8", "i8"):
        return 0
    return zero_of(inp) + (128 if dt == "i8" else 0)


def pair_form(device, pairs, bt: np.ndarray, filt, channels: int, tile):
    """How a quantized GEMM of constant B (``bt``: [groups, K, N] of the operand ``filt``)
    packs it: "quads" where ``pairs`` (:func:`int_pairs`' answer) and :func:`int_quads`
    hold, else ``pairs``."""
    if pairs and int_quads(device, bt, zero_of(filt), channels, tile):
        return "quads"
    return pairs


def tuned_pairs(device, pairs: bool, bt, zero_point: int, channels: int) -> bool | str:
    """The ``ip`` of a quantized GEMM layer's tuning signature (_gemm_variants.quant_keys):
    "quads" where ``pairs`` (:func:`int_pairs`' answer) and its 16-lane tiles would multiply
    bytes by quads (:func:`int_quads` of a 16-lane tile), so that the tuner's scratch layers
    run the form the plan runs (their other tiles: pairs, as :func:`pair_form` packs them),
    else ``pairs``; ``bt``: the constant B ([groups, K, N]) or None."""
    if pairs and bt is not None and int_quads(device, bt, zero_point, channels, (1, 1, 16)):
        return "quads"
    return pairs


def scratch_pairs(device, ip, tile, channels: int) -> bool | str:
    """The ``ip`` a tuner's scratch GEMM of this ``tile`` runs for a signature's ``ip``
    (:func:`tuned_pairs`): "quads" on 16-lane tiles whose vectors of A (:func:`taps_cv` of
    ``channels``) are of a multiple of 4, else pairs."""
    if ip == "quads" and not (tile[2] == 16 and
                              taps_cv(SimpleNamespace(device=device), channels) % 4 == 0):
        return True
    return ip


def int_quads(device, bt: np.ndarray, zero_point: int, channels: int, tile) -> bool:
    """Whether an int16-pairs GEMM (:func:`int_pairs`) of constant B (``bt``: [groups, K, N])
    multiplies bytes by quads instead (gemm.cl.mako ``vnni``: AVX512-VNNI's vpdpbusd in one
    call per work-item, B packed by :func:`pack_weights` "quads"): the device runs it
    (clnn/kernels/_vnni.py: its class allows it and the probe passed), the tile is of 16
    lanes, A's vectors (:func:`taps_cv` of ``channels``) are of a multiple of 4 and every
    w - zero point is a signed byte."""
    from clnn.kernels import _vnni

    if tile[2] != 16 or taps_cv(SimpleNamespace(device=device), channels) % 4:
        return False
    w = bt.astype(np.int32) - zero_point
    return bool(w.size) and int(w.min()) >= -128 and int(w.max()) <= 127 and \
        _vnni.available(device)


def lanes_from_memory(b) -> bool:
    """Whether a quantized GEMM with vectors of A's channels (``cv`` > 1) takes its A values
    through private memory (gemm.cl.mako's ``lm``): the device class's gemm_lane_memory."""
    from clnn.kernels import _defaults

    limits = getattr(b.device, "limits", None)
    return bool(limits) and _defaults.defaults(_defaults.traits(limits)).gemm_lane_memory


def fit_group(gsize, wg):
    """(l0, l1, 1) dividing the global size (OpenCL 1.2 runs whole work-groups only), each
    the largest divisor at most ``wg``'s; None when that is 1 x 1."""
    dims = [max(v for v in range(1, min(g, w) + 1) if g % v == 0)
            for g, w in zip(gsize[:2], wg)]
    return None if dims == [1, 1] else (dims[0], dims[1], 1)


def local_for(wg, gsize):
    """The local size of a GEMM launch in work-group shape ``wg``."""
    if wg == "auto":
        return local_size(gsize)
    if wg is None:
        return None
    return fit_group(gsize, wg)


def local_size(gsize):
    """(8, 4) row blocks x column panels per work-group where it divides (fastest measured),
    else (16, 1), else the driver's choice."""
    if gsize[0] % 8 == 0 and gsize[1] % 4 == 0:
        return (8, 4, 1)
    if gsize[0] % 16 == 0:
        return (16, 1, 1)
    return None


def launch_im2col(b, *, dt: str, x, dst, mr: int, M: int, K: int, oh: int, ow: int, H: int,
                  W: int, cg: int, fw: int, stride=(1, 1), dil=(1, 1), pad=(0, 0),
                  strides_nyxc=(0, 0, 0, 1), groups: int = 1, padv=0):
    """Packed A of a convolution into ``dst`` (one [ceil(M/mr), K, mr] block per group)."""
    grp = ceil_to(max(M, 1), mr) * K
    pv = i32(padv) if dt in ("u8", "i8") else f32(padv)
    key = {"dt": dt, "mr": mr}
    cv = im2col_vector(getattr(b.device, "limits", None), dt, cg, strides_nyxc[3])
    if cv > 1:  # cv channels per vector load (the device class's im2col_cv)
        key["cv"] = cv
    b.launch("gemm", "im2col_pack", key,
             (ceil_to(M, mr) // mr, K // max(cg, 1), groups),
             [*tensor_arg(x), *tensor_arg(dst),
              *[i32(v) for v in (M, K, oh * ow, ow, H, W, cg, fw, stride[0], stride[1],
                                 dil[0], dil[1], pad[0], pad[1], *strides_nyxc, grp)], pv])
    return grp


def launch_pack_b(b, *, dt: str, y, N: int, K: int, nr: int, sk: int, sn: int,
                  batch=(1, 1), s_b=(0, 0), zb: int = 0, dst=None):
    """Pack a non-constant B (B[k, n] of batch z at z0 * s_b0 + z1 * s_b1 + k * sk + n * sn)
    on the device into a scratch buffer (or ``dst``) of [batches, ceil(N/nr), K, nr]; returns
    (buffer, elements per batch)."""
    per = ceil_to(max(N, 1), nr) * K
    nbatch = batch[0] * batch[1]
    buf = dst if dst is not None else scratch(b, nbatch * per * (2 if dt in ("u8", "i8") else 4))
    params = {"dt": dt, "nr": nr}
    if sn == 1 and nr % 4 == 0 and dt in ("f32", "f16"):  # (absent otherwise: the other keys)
        params["rows"] = True
    b.launch("gemm", "pack_b", params, (ceil_to(N, nr) // nr, K, nbatch),
             [*tensor_arg(y), buf, *[i32(v) for v in (N, K, sk, sn, batch[1], *s_b, zb)]])
    return buf, per


def zero_of(info) -> int:
    return int(info.zero_point) if is_quant(info.type) else 0


def is_float(info) -> bool:
    return info.type in FLOAT
