"""The quantized GEMM's AVX512-VNNI form (gemm.cl.mako ``vnni``: B packed as signed bytes by
quads, the K loop in one noinline function compiled for the VNNI target) and its probe
(clnn/kernels/_vnni.py): bit-exact where the probe passed, the int16-pairs form where it did
not, the probe's answer kept per device."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.cl.test_cl_conv2d import INT_PAIRS, conv_model
from tests.kits.cl_conv_cases import ints


def _conv_case(case):
    name, x_shape, f_shape, pads, strides = INT_PAIRS[case]
    n, h, w, _ = x_shape
    o, fh, fw, _ = f_shape
    oh = (h + pads[2] + pads[3] - fh) // strides[1] + 1
    ow = (w + pads[0] + pads[1] - fw) // strides[0] + 1
    return conv_model(name, np.random.default_rng(90 + case), x_shape, f_shape,
                      [n, oh, ow, o], ints(*pads, *strides, 0))


def _gemm_keys(device, m, x):
    events = []
    device.prepare_model(m).run(x, events=events)
    return [dict(launch.key[2]) for launch, _ in events if launch.name == "gemm.gemm"]


@pytest.mark.parametrize("case", range(len(INT_PAIRS)))
def test_conv_vnni_bit_exact_where_the_probe_passed(cl_device, case):
    """Bit-exact with the reference; the per-channel filters (symmetric: signed bytes) of
    16-channel vectors take the VNNI form where the device's probe passed, none where not."""
    from clnn.kernels import _vnni
    from tests.kits.cl_compare import run_cl, run_ref

    m, x = _conv_case(case)
    (got,), (want,) = run_cl(m, x, cl_device), run_ref(m, x)
    assert np.array_equal(got, want), np.abs(got.astype(int) - want).max()
    keys = _gemm_keys(cl_device, m, x)
    if not _vnni.available(cl_device):
        assert keys and not any(k.get("vnni") for k in keys), keys
    elif INT_PAIRS[case][0].endswith("_pc"):
        assert keys and all(k.get("vnni") for k in keys), keys


# per-channel int8 filters (always signed bytes) through the implicit GEMM: padding on every
# side (the zero point's byte outside the input), vectors of 16, 8 and 4 channels, output
# channels across a 32-column panel's edge, batches
VNNI_TAPS = [  # (x shape, filter [o, fh, fw, c], pads l r t b, stride w h)
    ([1, 7, 6, 16], [40, 3, 3, 16], (1, 1, 1, 1), (1, 1)),
    ([2, 5, 5, 24], [48, 3, 3, 24], (1, 1, 1, 1), (2, 2)),
    ([1, 6, 7, 36], [33, 3, 2, 36], (0, 1, 2, 0), (1, 2)),
    # rows wide enough that work-items lie inside the input for every tap (the helper's
    # one-pointer path), 16 and 32 output channels, stride 1 and 2
    ([1, 5, 34, 16], [16, 3, 3, 16], (1, 1, 1, 1), (1, 1)),
    ([1, 6, 40, 16], [32, 3, 3, 16], (1, 1, 1, 1), (2, 2)),
    # work-items along one output row that touch a border: its taps inside the input through
    # one pointer, the others by each row's bounds (left / right / top / bottom, asymmetric
    # padding, stride 2, a 64-column panel)
    ([1, 4, 16, 16], [16, 3, 3, 16], (1, 1, 1, 1), (1, 1)),
    ([1, 5, 20, 16], [32, 3, 3, 16], (2, 0, 0, 2), (1, 1)),
    ([2, 7, 33, 32], [64, 3, 3, 32], (1, 1, 1, 1), (2, 2)),
]


@pytest.mark.parametrize("case", range(len(VNNI_TAPS)))
def test_conv_vnni_taps_bit_exact(cl_device, case):
    """Bit-exact with the reference, the VNNI kernel where the probe passed."""
    from clnn.kernels import _vnni
    from tests.kits.cl_compare import run_cl, run_ref

    x_shape, f_shape, pads, strides = VNNI_TAPS[case]
    n, h, w, _ = x_shape
    o, fh, fw, _ = f_shape
    oh = (h + pads[2] + pads[3] - fh) // strides[1] + 1
    ow = (w + pads[0] + pads[1] - fw) // strides[0] + 1
    m, x = conv_model("qs_pc", np.random.default_rng(7 + case), x_shape, f_shape,
                      [n, oh, ow, o], ints(*pads, *strides, 0))
    (got,), (want,) = run_cl(m, x, cl_device), run_ref(m, x)
    assert np.array_equal(got, want), np.abs(got.astype(int) - want).max()
    keys = _gemm_keys(cl_device, m, x)
    assert keys and all(bool(k.get("vnni")) == _vnni.available(cl_device) for k in keys), keys


@pytest.mark.parametrize("case", range(len(INT_PAIRS)))
def test_conv_int_pairs_without_vnni(cl_device, case, monkeypatch):
    """Where the probe says no (forced here), the layer keeps the int16-pairs GEMM, exact."""
    from clnn.kernels import _gemm, _vnni
    from tests.kits.cl_compare import run_cl, run_ref

    monkeypatch.setattr(_vnni, "available", lambda device: False)
    m, x = _conv_case(case)
    (got,), (want,) = run_cl(m, x, cl_device), run_ref(m, x)
    assert np.array_equal(got, want), np.abs(got.astype(int) - want).max()
    keys = _gemm_keys(cl_device, m, x)
    c = INT_PAIRS[case][1][3]
    assert keys and all(not k.get("vnni") and k.get("ip", False) == _gemm.int_pairs(
        cl_device, True, c) for k in keys), keys


@pytest.mark.parametrize("batch,units,size", [(5, 40, 64), (1, 24, 12), (9, 33, 16)])
def test_fully_connected_vnni_bit_exact(cl_device, batch, units, size):
    """An int8 FULLY_CONNECTED: bit-exact, the VNNI form only where the probe passed."""
    from clnn.kernels import _vnni
    from tests.cl.test_cl_fully_connected import fc_model
    from tests.kits.cl_compare import run_cl, run_ref

    m, x = fc_model("qs", np.random.default_rng(size), [batch, size], units, size, 0)
    (got,), (want,) = run_cl(m, x, cl_device), run_ref(m, x)
    assert np.array_equal(got, want), np.abs(got.astype(int) - want).max()
    keys = _gemm_keys(cl_device, m, x)
    assert keys and all(_vnni.available(cl_device) or not k.get("vnni") for k in keys), keys


def test_pack_weights_by_quads():
    """B by quads: per group and panel of nr columns, [K / 4, nr, 4] signed bytes (rows
    k .. k + 3 of a column side by side, zero past N), then each column's share of A's zero
    point (-a_zero * the column's sum) as an int32."""
    from clnn.kernels import _gemm

    rng = np.random.default_rng(3)
    bt = rng.integers(-100, 120, (2, 8, 20)).astype(np.int32)  # [groups, K, N]
    q = _gemm.pack_weights(bt, 16, True, 7, pairs="quads", a_zero=130)
    assert q.dtype == np.int8 and q.shape == (2, 2, 8 * 16 + 4 * 16)
    body = q[:, :, :8 * 16].reshape(2, 2, 2, 16, 4)
    for g, k, n in [(0, 0, 0), (1, 5, 19), (0, 7, 16), (1, 2, 3)]:
        assert body[g, n // 16, k // 4, n % 16, k % 4] == bt[g, k, n] - 7
    assert not body[:, 1, :, 4:, :].any()
    share = q[:, :, 8 * 16:].copy().view("<i4").reshape(2, 2, 16)
    cols = np.zeros((2, 32), np.int64)
    cols[:, :20] = (bt - 7).sum(axis=1)
    assert np.array_equal(share.reshape(2, 32), -130 * cols)


@pytest.mark.parametrize("quant,facc", [(False, False), (True, False), (True, True)])
def test_pack_weights_panels(quant, facc):
    """B [groups, K, N] -> [groups, ceil(N / nr), K, nr] panels: column p * nr + r of row k at
    [g, p, k, r], zero past N (quantized: w - zero point, short or float with ``facc``), from
    a strided B (the transposed filter a convolution passes) as from a contiguous one."""
    from clnn.kernels import _gemm

    rng = np.random.default_rng(5)
    for g, k, n, nr in [(1, 5, 16, 8), (2, 3, 19, 8), (1, 4, 3, 4), (3, 2, 0, 4), (1, 1, 1, 1)]:
        w = rng.integers(0, 256, (g, n, k)) if quant else rng.uniform(-1, 1, (g, n, k))
        for bt in (w.transpose(0, 2, 1), np.ascontiguousarray(w.transpose(0, 2, 1))):
            got = _gemm.pack_weights(bt.astype(np.uint8) if quant else bt, nr, quant, 7, facc)
            want = np.zeros((g, -(-max(n, 1) // nr), k, nr))
            for gg, kk, c in np.ndindex(g, k, n):
                want[gg, c // nr, kk, c % nr] = bt[gg, kk, c] - 7 if quant else bt[gg, kk, c]
            dtype = np.float32 if facc or not quant else np.int16
            assert got.dtype == dtype and got.flags.c_contiguous
            assert np.array_equal(got, want.astype(dtype))


def test_int_quads_needs_signed_bytes_16_lanes_and_the_probe(cl_device, monkeypatch):
    """int_quads: every w - zero point a signed byte, a tile of 16 lanes, vectors of A of a
    multiple of 4 channels, and the device's probe."""
    from clnn.kernels import _gemm, _vnni

    bt = np.full((1, 16, 8), 127, np.int32)
    bt[0, 0, 0] = -128
    monkeypatch.setattr(_vnni, "available", lambda device: True)
    assert _gemm.int_quads(cl_device, bt, 0, 16, (8, 1, 16))
    assert not _gemm.int_quads(cl_device, bt, -1, 16, (8, 1, 16))  # 128
    assert not _gemm.int_quads(cl_device, bt, 1, 16, (8, 1, 16))  # -129
    assert not _gemm.int_quads(cl_device, bt, 0, 16, (8, 2, 8))
    assert not _gemm.int_quads(cl_device, bt, 0, 6, (8, 1, 16))  # a vector of 2 or 6
    monkeypatch.setattr(_vnni, "available", lambda device: False)
    assert not _gemm.int_quads(cl_device, bt, 0, 16, (8, 1, 16))


def test_the_probe_runs_in_a_subprocess_and_is_kept(cl_device, tmp_path, monkeypatch):
    """The probe's answer for a device: from a subprocess, stored under the cache root and
    read back from there (no second subprocess); a device that does not exist answers no,
    with the reason."""
    from clnn.kernels import _vnni

    dev = cl_device.limits.cl_device
    ok, why = _vnni.run_probe(dev.platform.name, dev.name)
    assert isinstance(ok, bool) and (ok or why), why
    key = _vnni.device_key(dev)
    assert _vnni._cached_probe(dev, key, str(tmp_path)) == ok
    stored = json.loads((tmp_path / "probes" / f"vnni-{key}.json").read_text())
    assert stored["vnni"] == ok and stored["device"] == dev.name
    missing = _vnni.run_probe(dev.platform.name, "no such device")
    assert missing[0] is False and "no device" in missing[1]
    monkeypatch.setattr(_vnni, "run_probe", lambda *a: pytest.fail("probed again"))
    assert _vnni._cached_probe(dev, key, str(tmp_path)) == ok


def test_a_gpu_class_never_probes(monkeypatch):
    """The device classes: a CPU's probe decides, a GPU's row says no without probing."""
    from types import SimpleNamespace

    from clnn.kernels import _defaults, _vnni

    assert _defaults.TABLE["cpu"].gemm_vnni and not _defaults.TABLE["gpu"].gemm_vnni
    monkeypatch.setattr(_vnni, "run_probe", lambda *a: pytest.fail("a GPU probed"))
    limits = SimpleNamespace(is_cpu=False, max_work_group_size=256, max_work_item_sizes=(256,),
                             local_mem_size=65536, native_vector_width_float=1,
                             cl_device=SimpleNamespace(vendor="Some GPU vendor"))
    assert _vnni.available(SimpleNamespace(limits=limits)) is False


def test_the_tuner_times_the_form_the_plan_runs(cl_device):
    """A quantized layer's tuning signature says "quads" where its 16-lane tiles multiply
    bytes by quads (the probe passed, signed-byte filters), and a scratch layer of another
    tile runs the int16-pairs form its plan would pack."""
    from clnn.kernels import _gemm, _vnni

    bt = np.random.default_rng(4).integers(-127, 128, (1, 144, 16)).astype(np.int8)
    quads = _gemm.tuned_pairs(cl_device, True, bt, 0, 16)
    assert quads == ("quads" if _vnni.available(cl_device) else True)
    assert _gemm.tuned_pairs(cl_device, False, bt, 0, 16) is False
    assert _gemm.tuned_pairs(cl_device, True, None, 0, 16) is True
    assert _gemm.tuned_pairs(cl_device, True, bt.astype(np.int32) + 200, 0, 16) is True
    assert _gemm.scratch_pairs(cl_device, "quads", (8, 1, 16), 16) == "quads"
    assert _gemm.scratch_pairs(cl_device, "quads", (5, 2, 8), 16) is True
    assert _gemm.scratch_pairs(cl_device, True, (8, 1, 16), 16) is True


def test_vnni_helpers_leave_a_part_pure():
    """The VNNI function of each GEMM variant sits in a guard of its own: chains of several
    variants define each once."""
    from clnn import chain

    def key(amode, cv, mr):
        return ("gemm", "gemm", (("amode", amode), ("bias", True), ("cmode", "nhwc"),
                                 ("cv", cv), ("dt", "i8"), ("epi", "act"), ("facc", True),
                                 ("ip", True), ("lm", True), ("mr", mr), ("nv", 2),
                                 ("odt", "i8"), ("rq", "up"), ("vnni", True), ("vw", 16)))
    parts = [chain.Part(key("rows", 16, 4)), chain.Part(key("taps", 16, 8)),
             chain.Part(key("rows", 16, 4)), chain.Part(key("rows", 8, 4))]
    assert all(p.pure for p in parts) and "vpdpbusd" in parts[0].helpers
    src = chain.source(parts, 2)
    assert src.count("#ifndef CLNN_VK_ROWS_I8_4_2_16") == 1
    assert src.count("#ifndef CLNN_VK_TAPS_I8_8_2_16") == 1
