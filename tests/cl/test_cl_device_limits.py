"""Launches that respect the device (clnn.workgroups): every local size within the device's and
the kernel's limits, simulated GPU profiles, and support checks that name a limit the device
cannot meet (so the operation goes to the fallback instead of failing at an execution)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from clnn.device import ClDevice
from clnn.kernels import _depthwise_variants, _gemm_variants
from clnn.kernels._tiles import tile_rows_group
from clnn.workgroups import (
    PROFILES,
    DeviceLimits,
    DeviceProfile,
    cpu_groups,
    fits,
    profile_named,
    shrink,
)
from hal.builder import ModelBuilder, make_request, read_outputs
from hal.errors import ErrorStatus

SMALL = PROFILES["small-gpu"]
DESKTOP = PROFILES["desktop-gpu"]


def _limits(profile: DeviceProfile, cpu: bool = False) -> DeviceLimits:
    real = DeviceLimits(max_work_group_size=4096, max_work_item_sizes=(4096, 4096, 4096),
                        local_mem_size=4 << 20, max_mem_alloc_size=1 << 30,
                        global_mem_size=1 << 32, max_compute_units=2, is_cpu=cpu,
                        native_vector_width_float=16,
                        extensions=frozenset({"cl_khr_fp64", "cl_khr_int64_base_atomics"}))
    return real.with_profile(profile)


@pytest.mark.parametrize("local", [(256, 1, 1), (30, 4), (250,), (16, 16, 4), (64, 1, 8),
                                   (1024, 1), (7, 9, 11), (96, 4, 2)])
@pytest.mark.parametrize("profile", [SMALL, DESKTOP])
def test_shrink_fits_and_divides(local, profile):
    """A preference cut to the profile's limits: each dimension a whole divisor of the
    preferred one (so it still divides the global size), within every limit."""
    lim = _limits(profile)
    got = shrink(local, lim.max_work_group_size, lim.max_work_item_sizes)
    assert fits(got, lim.max_work_group_size, lim.max_work_item_sizes)
    assert all(w % g == 0 for w, g in zip(local, got))
    if fits(local, lim.max_work_group_size, lim.max_work_item_sizes):
        assert got == local


@pytest.mark.parametrize("grid", [(36000,), (46800,), (52500,), (2990, 1), (392, 9, 1),
                                  (6, 112, 112), (4096, 3, 2)])
@pytest.mark.parametrize("profile", [SMALL, DESKTOP])
def test_cpu_split_stays_within_the_device(grid, profile):
    """The heavy-launch split of a CPU-like device (Oclgrind reports CPU) never asks for more
    than the device runs: the launches that failed with INVALID_WORK_ITEM_SIZE on a 64
    work-item device (pooling after an ADD, concatenation) split within 64."""
    lim = _limits(profile, cpu=True)
    got = cpu_groups(grid, lim)
    assert got is not None
    assert fits(got, lim.max_work_group_size, lim.max_work_item_sizes)
    assert all(g % v == 0 for g, v in zip(grid, got))


def test_profiles_and_their_names():
    assert profile_named(None) is None and profile_named("device") is None
    assert profile_named("small-gpu") is SMALL
    with pytest.raises(ValueError, match="desktop-gpu"):
        profile_named("tiny")
    lim = _limits(DESKTOP)
    assert lim.max_work_group_size == 256 and lim.max_work_item_sizes == (1024, 1024, 64)
    assert lim.local_mem_size == 32 << 10 and lim.fp64
    small = _limits(SMALL)
    assert small.max_work_group_size == 64 and small.local_mem_size == 16 << 10
    assert not small.fp64  # the small profile has no cl_khr_fp64
    assert small.pow2_group(1000, local_bytes_per_item=512) == 32  # 16 KiB / 512 B


def test_tuning_space_and_defaults_fit_the_small_gpu():
    """Every GEMM and depthwise variant a GPU-class device may be given (its candidates and
    the device-class default) launches within the small-GPU profile's limits: the GEMM's
    groups as they are (the family filters them by the limits), a tiled kernel's flexible
    group once fitted."""
    lim = _limits(SMALL)
    t = _gemm_variants.traits(lim)
    assert not t.cpu and t.max_wg == 64
    checked = 0
    for n, m, k in [(64, 64, 64), (24, 196, 96), (1000, 1, 1280), (3, 50, 7)]:
        for v in _gemm_variants.candidates(t, n, full=True, m=m, k=k, packed=False):
            if isinstance(v["wg"], list):
                assert fits(v["wg"], lim.max_work_group_size, lim.max_work_item_sizes), v
                checked += 1
    for cand in _depthwise_variants.candidates(False, 96, 56, 3, 1, 1, 4, 3):
        for grid in [(24, 14, 56), (6, 28, 112), (96, 1, 8)]:
            local = _depthwise_variants.local_for(cand["rows"], grid, lim.max_work_group_size)
            if local is not None:
                got = shrink(local, lim.max_work_group_size, lim.max_work_item_sizes)
                assert fits(got, lim.max_work_group_size, lim.max_work_item_sizes)
                checked += 1
    for grid in [(96, 14, 56), (6, 28, 112)]:
        local = tile_rows_group(grid)
        if local is not None:
            assert fits(shrink(local, 64, lim.max_work_item_sizes), 64, lim.max_work_item_sizes)
    assert checked > 10


def _add_model(shape):
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", shape)
    y = b.input("TENSOR_FLOAT32", shape)
    b.mark_output(b.op("ADD", [x, y, b.int32(0)], b.tensor("TENSOR_FLOAT32", shape)))
    return b.finish()


def test_support_names_a_tensor_larger_than_the_devices_largest_buffer(cl_device):
    """Under a profile whose largest buffer is 64 KiB, an ADD of two 128 KiB tensors is not
    supported, and the report names the operand, its shape and the limit (a runtime places
    it elsewhere); the device's own prepare is GENERAL_FAILURE with the same sentence (its
    fallback would hold the same tensors on the host), while a smaller model prepares and
    runs."""
    from hal.errors import HalError

    dev = ClDevice(None, fallback=True)
    dev.limits = dev.limits.with_profile(DeviceProfile("tiny-alloc",
                                                       max_mem_alloc_size=64 << 10))
    model = _add_model([1, 128, 64, 4])
    (row,) = dev.support_report(model)
    assert row[2] is False
    assert "input 0 (operand 0 of shape [1, 128, 64, 4]) needs 131072 bytes" in row[3]
    assert "MAX_MEM_ALLOC_SIZE 65536" in row[3] and "tiny-alloc" in row[3]
    assert dev.get_supported_operations(model) == [False]
    with pytest.raises(HalError) as e:
        dev.prepare_model(model)
    assert e.value.status == ErrorStatus.GENERAL_FAILURE and "65536" in e.value.reason
    small = _add_model([1, 8, 8, 4])
    assert dev.get_supported_operations(small) == [True]
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((1, 8, 8, 4)).astype(np.float32) for _ in range(2)]
    req = make_request(small, xs)
    r = dev.prepare_model(small).execute_synchronously(req)
    assert r.status == ErrorStatus.NONE
    np.testing.assert_array_equal(read_outputs(small, req, r.output_shapes)[0], xs[0] + xs[1])


def test_support_names_missing_local_memory(cl_device):
    """An LSTM cell keeps its reduction in local memory: a device without any is refused at
    support time with the bytes it needs."""
    from clnn.kernels.lstm import local_memory_support

    lim = _limits(DeviceProfile("no-local", local_mem_size=0))
    reason = local_memory_support(24)(None, lim)
    assert reason and "24 bytes of local memory" in reason and "has 0" in reason
    assert local_memory_support(24)(None, _limits(SMALL)) is None


@pytest.mark.parametrize("name", list(PROFILES))
def test_opencl_device_under_each_profile(name):
    """ClDevice(profile=...) reads the device and lowers it to the profile; an unknown name is
    DeviceUnavailable naming the known ones."""
    dev = ClDevice(None, profile=name)
    real = int(dev.cl_device.max_work_group_size)
    want = PROFILES[name].max_work_group_size
    assert dev.limits.max_work_group_size == (real if want is None else min(real, want))
    assert dev.limits.profile == name


def test_unknown_profile_is_an_error():
    from clnn.device import DeviceUnavailable

    with pytest.raises(DeviceUnavailable, match="small-gpu"):
        ClDevice(None, profile="huge-gpu")


def test_models_plan_within_the_small_gpu_profile():
    """A model's launches planned under the small-GPU profile on this device: every local
    size fits 64 work-items and 64 per dimension (the fitting is the device's, not PoCL's)."""
    from tests.kits.cl_conv_cases import conv_operands, ints
    from tests.kits.one_op_models import one_op_model

    dev = ClDevice(None, fallback=False, profile="small-gpu")
    rng = np.random.default_rng(5)
    cases = []
    for shape, filt in [([1, 28, 28, 32], [48, 1, 1, 32]), ([1, 14, 14, 16], [16, 3, 3, 16])]:
        xs, fs, bs, out, x = conv_operands("f32", rng, shape, filt)
        oh = shape[1] - filt[1] + 1
        cases.append((one_op_model("CONV_2D", [xs, fs, bs, *ints(0, 0, 0, 0, 1, 1, 0)],
                                   [out([1, oh, oh, filt[0]])]), [x]))
    cases.append((_add_model([5, 50, 70, 3]), [rng.standard_normal((5, 50, 70, 3)).astype(
        np.float32) for _ in range(2)]))
    for model, xs in cases:
        pm = dev.prepare_model(model)
        launches = [la for p in pm.partitions for pl in p.plans.values() for la in pl.launches]
        assert launches
        for la in launches:
            if la.local_size is not None:
                assert math.prod(la.local_size) <= 64, (la.name, la.local_size)
                assert all(v <= 64 for v in la.local_size)
        req = make_request(model, xs)
        assert pm.execute_synchronously(req).status == ErrorStatus.NONE


def test_every_profile_is_listed_once():
    assert len(PROFILES) == len(set(PROFILES)) >= 3
    for a, b in itertools.combinations(PROFILES.values(), 2):
        assert a.name != b.name
