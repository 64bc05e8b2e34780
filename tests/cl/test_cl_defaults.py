"""The device-class defaults as data (clnn/kernels/_defaults.py): the class of a device from
its queries, the row each family's default reads, and the CPU row giving the PoCL choices."""

from __future__ import annotations

from types import SimpleNamespace

from clnn.kernels import _conv_variants, _defaults, _depthwise_variants, _dwpw, _gemm_variants
from clnn.kernels._gemm_variants import Traits


def _limits(is_cpu: bool, vendor: str = ""):
    return SimpleNamespace(is_cpu=is_cpu, cl_device=SimpleNamespace(vendor=vendor))


def test_device_class_from_queries(cl_device):
    assert _defaults.device_class(_limits(True, "NVIDIA Corporation")) == "cpu"
    assert _defaults.device_class(_limits(False, "NVIDIA Corporation")) == "gpu/nvidia"
    assert _defaults.device_class(_limits(False, "Advanced Micro Devices, Inc.")) == "gpu/amd"
    assert _defaults.device_class(_limits(False, "Imagination")) == "gpu"
    assert _defaults.device_class(cl_device.limits) == \
        ("cpu" if cl_device.limits.is_cpu else _defaults.device_class(cl_device.limits))
    assert _gemm_variants.traits(cl_device.limits).device_class == \
        _defaults.device_class(cl_device.limits)


def test_every_row_is_complete_and_gpu_rows_fit_a_gpu_thread():
    for name, row in _defaults.TABLE.items():
        assert row.gemm_tiles and row.gemm_groups, name
        if name.startswith("gpu"):
            assert all(t[0] * t[1] <= 16 for t in row.gemm_tiles) and not row.dwpw
            assert row.gemm_tile in row.gemm_tiles


def test_defaults_read_the_row():
    gpu = Traits(cpu=False, max_wg=256, max_items=(1024, 1024, 64), local_mem=48 << 10,
                 device_class="gpu/nvidia")
    assert _gemm_variants.heuristic(gpu, 64) == {"tile": [4, 1, 4], "wg": [16, 8]}
    assert _gemm_variants.heuristic(gpu, 2) == {"tile": [4, 1, 2], "wg": [16, 8]}
    small = Traits(cpu=False, max_wg=64, max_items=(64, 64, 64), local_mem=16 << 10)
    assert _gemm_variants.heuristic(small, 64)["wg"] == [16, 4]  # the first that fits
    assert not _dwpw.fused_tiles(gpu, 24, 16)
    assert _depthwise_variants.heuristic(False, 24, 16, 3, 1, 1) == \
        {"vw": 4, "tx": 2, "rows": 0}
    assert _conv_variants.heuristic(False, 24, 16, 3, 1, 1)["rows"] == 0
    cpu = Traits(cpu=True, max_wg=4096, max_items=(4096,) * 3, local_mem=1 << 20,
                 device_class="cpu")
    # the CPU row is the PoCL-measured rule: on 16-wide vectors the 8 x 16 outer product, 8 x 32
    # on multiples of 32 columns (clnn.kernels._gemm.pick_tile)
    assert _gemm_variants.heuristic(cpu, 48, 4096, 64) == {"tile": [8, 1, 16], "wg": "auto"}
    assert _gemm_variants.heuristic(cpu, 64, 4096, 64) == {"tile": [8, 2, 16], "wg": "auto"}
    assert _gemm_variants.heuristic(cpu, 32, 1024, 64) == {"tile": [8, 2, 16], "wg": "auto"}
    assert _gemm_variants.candidates(cpu, 64)[0] == _gemm_variants.heuristic(cpu, 64)
