"""conv_tile's 8-bit first layers by quads of bytes (templates/conv2d.cl.mako ``conv_quads``).

A quantized ``conv_tile`` layer (clnn/kernels/conv2d.py _quant_tile: few input channels, a
filter exact in float) sums fw * cc float FMAs per pixel, filter row and vector of output
channels. Where a filter row's window is at most 16 contiguous bytes (dilation 1: fw pixels of
cc channels in NHWC), its bytes are instead Q = ceil(fw * cc / 4) quads, each multiplied with
16 output channels' quads of signed filter bytes by AVX512-VNNI's vpdpbusd (exact in int32):
the 3-channel 3x3 first layers take 3 instructions per pixel and filter row instead of 9 FMAs.
Taken where the device class says (``conv_quads``: the least bytes of a filter row's window;
one quad a row ran no faster than conv_tile) and the device passed the VNNI probe of
clnn/kernels/_vnni.py, the output channels are whole vectors of 16 and every w - zero point is
a signed byte; then the layer's requantization as conv_tile's (rq "upp" where the class's
``requant_pairs`` is 16).
"""

from __future__ import annotations

import numpy as np

#: output pixels of a row per work-item at most (the kernel's tx: :func:`tile`)
TX = 16
#: output channels per work-item (one vector of int32 sums)
LANES = 16


def quads(fw: int, c: int) -> int:
    """The quads of a filter row's window of fw pixels of c channels."""
    return -(-(fw * c) // 4)


def filter_for(device, fi, wz, c: int, o: int, fw: int, dil_w: int) -> np.ndarray | None:
    """The filter ``fi`` [O, fh, fw, C] less its zero point ``wz`` (int32, as :func:`pack`
    takes it) where the quantized conv_tile layer runs ``conv_quads`` on ``device``, else
    None."""
    from clnn.kernels import _defaults, _vnni

    limits = getattr(device, "limits", None)
    least = _defaults.defaults(_defaults.traits(limits)).conv_quads if limits else 0
    if not least or not least <= fw * c <= 16 or dil_w != 1 or o % LANES or fi.value is None:
        return None
    w = fi.value.astype(np.int32) - np.asarray(wz, np.int32).reshape(-1, 1, 1, 1)
    fits = int(w.min()) >= -128 and int(w.max()) <= 127 and _vnni.available(device)
    return w if fits else None


def pack(filt: np.ndarray, zu: int) -> np.ndarray:
    """The filter ``filt`` (int32 w - zero point, [O, fh, fw, C]) as conv_quads reads it:
    per vector of 16 output channels, per filter row its Q quads of signed bytes ([Q][16][4],
    bytes past fw * C zero) and then -``zu`` * its sum per channel (int32), then the whole
    filter's (``zu``: the input's zero point as the unsigned byte the kernel multiplies)."""
    o, fh, fw, c = filt.shape
    q = quads(fw, c)
    rows = np.zeros((o, fh, 4 * q), np.int32)
    rows[:, :, :fw * c] = filt.reshape(o, fh, fw * c)
    blocks = []
    for v in range(o // LANES):
        part = rows[v * LANES:(v + 1) * LANES]  # [16, fh, 4q]
        out = []
        for ty in range(fh):
            qb = part[:, ty].reshape(LANES, q, 4).transpose(1, 0, 2).astype(np.int8)
            share = (-zu * part[:, ty].sum(axis=1)).astype("<i4")
            out += [qb.reshape(-1), share.view(np.int8)]
        total = (-zu * part.sum(axis=(1, 2))).astype("<i4")
        blocks += out + [total.view(np.int8)]
    return np.ascontiguousarray(np.concatenate(blocks))


def launch(b, key: dict, geometry: tuple, args: list) -> None:
    """The layer's launch: ``key`` (conv_tile's: dt, fw, sw, cc, rq), ``geometry`` (n, o, oh,
    ow) and conv_tile's quantized arguments, the filter :func:`pack`'s."""
    n, o, oh, ow = geometry
    tx = tile(ow)
    qkey = {"dt": key["dt"], "tx": tx, "fw": key["fw"], "sw": key["sw"], "cc": key["cc"]}
    if key.get("rq"):
        qkey["rq"] = key["rq"]
    b.launch("conv2d", "conv_quads", qkey, (o // LANES, -(-ow // tx), n * oh), args,
             flexible=True)


def tile(ow: int) -> int:
    """Output pixels per work-item: a row of ``ow`` in the fewest tiles of at most :data:`TX`,
    as even as they come (a short row is one tile of its width, no pixel computed past it)."""
    return -(-ow // -(-ow // TX))
