"""Where a depthwise convolution runs fused into the 1x1 convolution after it
(clnn/kernels/_dwpw.py), and in which tile: measured per layer by the tuner (clnn/tuning.py,
family "dwpw") against the two launches, as clnn/kernels/_gemm_variants.py does for the GEMM.
"""

from __future__ import annotations

from clnn.kernels import _defaults, _depthwise_variants, _gemm, _gemm_variants
from clnn.kernels._dwpw import _args, _key, _local, fused_tiles, tile_pixels


def select(device, op_index: int, sig: dict):
    """Whether a depthwise -> 1x1 layer (``sig``: its shapes, see clnn/fusion/) runs fused,
    and in which tile (a clnn.tuning.Choice of ``{"fuse": False}`` or ``{"fuse": True,
    "tile": tile}``). The tuner measures both ways (the two launches in the variants the
    unfused plan would run) and keeps the faster: fused, a launch and the depthwise output's
    round trip through memory are saved, but the depthwise work runs inside the GEMM's
    work-items, without the depthwise kernel's own tiling, so which wins depends on the layer
    and no simple rule held (benchmarks/kernel_rates_ab.py, kernel time fused against two
    launches: either way ahead by a wide margin on some layer shapes, even on most others).
    Measured by ``clnn tune`` and in tune "full", not at a prepare in the default fast mode,
    which reuses what the cache holds (measuring would compile the fused kernel's candidates,
    seconds each on a cold PoCL cache). Without a measurement (no tuning entry, tune "off"):
    the device class's rule (:func:`class_rule`: fused where the layer is small enough that
    the saved launch wins in the models' chains); float16: two launches. The device's
    ``dwpw`` option (clnn.options.DeviceOptions): "off" never fused, "all" fused wherever a
    tile fits (tests)."""
    from clnn import tuning
    from clnn.options import options_of

    two = {"fuse": False}
    forced = options_of(device).dwpw
    if forced == "off" or getattr(device, "limits", None) is None:
        return tuning.fixed_choice("dwpw", sig, two, "the dwpw option is off" if
                                   forced == "off" else "no device limits", op_index)
    m = sig["n"] * sig["oh"] * sig["ow"]
    traits = _gemm_variants.traits(device.limits)
    tiles = fused_tiles(traits, sig["N"], sig["c"], m, sig["fh"] * sig["fw"])
    if not tiles:
        return tuning.fixed_choice("dwpw", sig, two, "no fused tile fits", op_index)
    if forced == "all":
        return tuning.fixed_choice("dwpw", sig, {"fuse": True, "tile": list(tiles[0])},
                                   "the dwpw option is all", op_index)
    if sig["dt"] != "f32" or not hasattr(device, "platform"):
        return tuning.fixed_choice("dwpw", sig, two, "float32 layers only", op_index)
    return tuning.default_choice(FAMILY, traits, sig, op_index)


def class_rule(traits, s: dict) -> dict:
    """The device class's untuned choice for a float32 depthwise -> 1x1 layer (``s``: its
    dwpw signature): fused in the first tile :func:`fused_tiles` gives where the class's
    dwpw_least_pixels, dwpw_pixels, dwpw_taps, dwpw_weights and dwpw_stride hold it and the
    1x1 convolution has at least as many outputs as channels (clnn/kernels/_defaults.py),
    else the two launches."""
    d = _defaults.defaults(traits)
    m = s["n"] * s["oh"] * s["ow"]
    if not d.dwpw_least_pixels <= m <= d.dwpw_pixels or s["fh"] * s["fw"] > d.dwpw_taps or \
            s["c"] * s["N"] > d.dwpw_weights or s["N"] < s["c"] or \
            max(s["sh"], s["sw"]) > d.dwpw_stride:
        return {"fuse": False}
    tiles = fused_tiles(traits, s["N"], s["c"], m, s["fh"] * s["fw"])
    return {"fuse": True, "tile": list(tiles[0])} if tiles else {"fuse": False}


def tile_of(v) -> list | None:
    """The fused tile of a dwpw variant, None for two launches."""
    return v["tile"] if v.get("fuse") else None


def scratch_layer(device, tuner, v: dict, s: dict):
    """(kernels, release) of one float32 depthwise -> 1x1 layer on zeroed scratch buffers:
    fused in tile ``v["tile"]``, or (``v["fuse"]`` false) as the depthwise and GEMM launches
    in their cached (else heuristic) variants."""
    import numpy as np

    from clnn.launch import ScratchKernels

    m = s["n"] * s["oh"] * s["ow"]
    n_out, c = s["N"], s["c"]
    traits = _gemm_variants.traits(device.limits)
    if not v["fuse"]:
        dsig = _depthwise_variants.signature(o=c, **{k: s[k] for k in (
            "dt", "n", "h", "w", "oh", "ow", "fh", "fw", "sh", "sw", "dh", "dw")})
        dv = _cached(tuner, "depthwise", dsig, _depthwise_variants.heuristic(
            traits.cpu, c, s["ow"], s["fw"], s["sw"], s["dw"], traits.vec, s["fh"],
            _depthwise_variants.row_stride(s), s["oh"]))
        gsig = {"dt": "f32", "amode": "rows", "M": m, "N": n_out, "K": c, "batches": 1}
        gv = _cached(tuner, "gemm", gsig, _gemm_variants.heuristic(traits, n_out, m, c))
        # the GEMM reads what the depthwise kernel wrote (in the caches, as in a model)
        (mid,) = _gemm_variants.zeroed(device, (m * c,))
        k1, r1 = _depthwise_variants.scratch_depthwise(device, dv, dsig, out=mid)
        k2, r2 = _gemm_variants.scratch_gemm(device, gv, "f32", "rows", m, n_out, c, 1, a=mid)
        release_mid = _gemm_variants.releaser([mid])
        # one ScratchKernels of both launches, so that the tuner chains them as it chains the
        # fused kernel (a plain list ran them as two launches of their own, each paying a
        # launch's start, which the chain does not: the fused kernel looked faster than it runs)
        both = ScratchKernels([*getattr(k1, "launches", []), *getattr(k2, "launches", [])])
        kernels = both if len(both) == len(k1) + len(k2) else k1 + k2
        return kernels, lambda: (r1(), r2(), release_mid())
    mr, nv, vw = v["tile"][:3]
    nr = nv * vw
    bufs = _gemm_variants.zeroed(device, (s["n"] * s["h"] * s["w"] * c, s["fh"] * s["fw"] * c,
                                          c, _gemm.ceil_to(n_out, nr) * c, m * n_out, n_out))
    src, wd, bd, bpk, out, bias = bufs
    rec = _gemm_variants.scratch_builder(device, 2.0 * m * c * (s["fh"] * s["fw"] + n_out))
    gsize = (-(-m // tile_pixels(v["tile"])), 1, 1)
    rec.launch("gemm", "dwpw", _key("f32", v["tile"], c, traits.cpu, s["fw"], s["sw"], s["dw"],
                                    s["fh"]),
               gsize, _args(src, wd, bd, bpk, out, bias, None, None, m, n_out, c, s["h"],
                            s["w"], s["oh"], s["ow"], s["fh"], s["sh"], s["dh"], s["pt"],
                            s["pl"], 0, -np.inf, np.inf, 1, n_out, n_out),
               local_size=_local(traits, n_out, m, c, gsize), flexible=True)

    return rec.kernels(), _gemm_variants.releaser(bufs)


def _cached(tuner, family: str, sig: dict, default: dict) -> dict:
    entry = tuner.cache.get(family, sig) if tuner.cache is not None else None
    return entry["choice"] if entry and isinstance(entry.get("choice"), dict) else default


def _space(traits, s: dict, full: bool) -> list[dict]:
    """The two launches first (the default), then every fused tile that fits."""
    m = s["n"] * s["oh"] * s["ow"]
    return [{"fuse": False}, *({"fuse": True, "tile": list(t)}
                               for t in fused_tiles(traits, s["N"], s["c"], m,
                                                    s["fh"] * s["fw"]))]


def _family():
    from clnn import tuning

    return tuning.Family(
        "dwpw", default=class_rule, space=_space, scratch=scratch_layer,
        flop=lambda s: 2.0 * s["n"] * s["oh"] * s["ow"] * s["c"] * (s["fh"] * s["fw"] + s["N"]),
        scratch_bytes=lambda s: 4 * (s["n"] * s["h"] * s["w"] * s["c"] +
                                     2 * s["n"] * s["oh"] * s["ow"] * max(s["c"], s["N"])),
        fast_measure=False)


#: the depthwise -> pointwise fusion's tuning declaration (clnn.tuning.Family)
FAMILY = _family()
