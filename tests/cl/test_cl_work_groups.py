"""Work-groups of launches left to the driver on a CPU device (clnn.launch.cpu_groups): a heavy
operation's grid is split into whole work-groups, several per compute unit, so that PoCL's
worker threads share it; a light operation keeps the driver's choice; results are unchanged."""

from __future__ import annotations

import math

import numpy as np
import pyopencl as cl
import pytest

from clnn import launch
from clnn.workgroups import DeviceLimits
from hal.builder import ModelBuilder
from tests.kits.cl_compare import assert_close, compare, outputs_of, run_ref
from tests.kits.cl_conv_cases import conv_operands, ints
from tests.kits.one_op_models import one_op_model


def _Cpu(units, cpu=True):  # noqa: N802  (device limits as a CPU's: clnn.workgroups)
    return DeviceLimits(max_work_group_size=4096, max_work_item_sizes=(4096, 4096, 4096),
                        local_mem_size=4 << 20, max_mem_alloc_size=1 << 30,
                        global_mem_size=1 << 32, max_compute_units=units, is_cpu=cpu)


def _Gpu(units):  # noqa: N802
    return _Cpu(units, cpu=False)


@pytest.mark.parametrize("grid", [(392, 9, 1), (25, 12, 1), (7, 12, 1), (784, 5, 1), (1000,),
                                  (6, 112, 112), (24, 56, 112), (13, 17), (4096, 3, 2)])
@pytest.mark.parametrize("units", [2, 8])
def test_split_groups_divide_the_grid(grid, units):
    local = launch.cpu_groups(grid, _Cpu(units))
    assert local is not None and len(local) == len(grid)
    assert all(g % v == 0 for g, v in zip(grid, local))  # whole work-groups (OpenCL 1.2)
    assert math.prod(local) <= launch.MAX_SPLIT_ITEMS
    groups = math.prod(grid) // math.prod(local)
    # as many groups as the aim where the grid has them, never one alone
    assert groups >= min(launch.GROUPS_PER_UNIT * units, math.prod(grid))
    assert groups >= 2


def test_split_only_on_cpus_and_real_grids():
    assert launch.cpu_groups((392, 9, 1), _Gpu(2)) is None  # a GPU driver's choice stands
    assert launch.cpu_groups((3,), _Cpu(2)) is None  # fewer work-items than 2 per unit
    assert launch.cpu_groups((1, 1, 1), _Cpu(2)) is None


def test_heavy_thresholds():
    assert launch.heavy(launch.SPLIT_FLOP, 0)
    assert not launch.heavy(launch.SPLIT_FLOP - 1, 10 * launch.SPLIT_BYTES)  # FLOP decide
    assert launch.heavy(0, launch.SPLIT_BYTES)  # memory-bound families: bytes decide
    assert not launch.heavy(0, launch.SPLIT_BYTES - 1)


def _conv_1x1(rng, h, w, c, o):
    xs, fs, bs, out, x = conv_operands("f32", rng, [1, h, w, c], [o, 1, 1, c])
    return one_op_model("CONV_2D", [xs, fs, bs, *ints(0, 0, 0, 0, 1, 1, 0)],
                        [out([1, h, w, o])]), [x]


def _gemm_launches(prepared):
    return [la for p in prepared.partitions for pl in p.plans.values() for la in pl.launches
            if la.name == "gemm.gemm"]


@pytest.mark.parametrize("shape", [(7, 7, 256, 192), (14, 14, 112, 80)])
def test_heavy_gemm_is_split_and_correct(cl_device, shape, monkeypatch):
    """pose_detection's 1x1 layers whose GEMM grid no family rule divides (7 or 25 row blocks):
    more than one work-group, all of them whole, and the reference's results."""
    cl_device = cl_device.with_options(tune="off")
    h, w, c, o = shape
    assert launch.heavy(2 * h * w * c * o, 0)
    m, x = _conv_1x1(np.random.default_rng(7), h, w, c, o)
    compare(m, x, cl_device, "f32")
    (la,) = _gemm_launches(cl_device.prepare_model(m))
    assert la.heavy
    if cl_device.cl_device.type & cl.device_type.CPU:  # (elsewhere: the results above)
        assert la.local_size is not None
        assert all(g % v == 0 for g, v in zip(la.global_size, la.local_size))
        assert math.prod(la.global_size) // math.prod(la.local_size) >= 2


def test_light_operation_keeps_the_drivers_choice(cl_device, monkeypatch):
    """A 1x1 layer of 0.1 MFLOP: waking a second worker costs more than it saves."""
    cl_device = cl_device.with_options(tune="off")
    m, x = _conv_1x1(np.random.default_rng(8), 5, 5, 24, 40)
    compare(m, x, cl_device, "f32")
    (la,) = _gemm_launches(cl_device.prepare_model(m))
    assert not la.heavy


@pytest.mark.parametrize("grid,local", [((8, 4, 1), (8, 4, 1)), ((32, 4, 1), (8, 4, 1)),
                                        ((16, 2, 12), (16, 1, 4)), ((54, 1, 8), (54, 1, 4))])
def test_a_familys_group_is_divided_when_it_leaves_few(grid, local):
    """An explicit work-group that leaves fewer groups than the aim is cut down inside itself
    (never wider than the family asked for)."""
    got = launch.cpu_groups(grid, _Cpu(2), local)
    assert all(g % v == 0 and v <= w for g, v, w in zip(grid, got, local))
    assert math.prod(grid) // math.prod(got) >= launch.GROUPS_PER_UNIT * 2


def test_a_familys_group_that_leaves_enough_stands():
    assert launch.cpu_groups((100, 100, 1), _Cpu(2), (10, 10, 1)) == (10, 10, 1)
    assert launch.cpu_groups((8, 4, 1), _Gpu(2), (8, 4, 1)) == (8, 4, 1)


def test_a_kernels_own_work_group_is_kept(cl_device):
    """INSTANCE_NORMALIZATION's kernel reduces over its work-group (local memory, barriers): a
    heavy one (512 KiB of tensors, 2 channels: 2 work-groups) keeps the family's group, which
    cpu_groups would otherwise divide, and the reference's results."""
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", [1, 128, 256, 2])
    b.mark_output(b.op("INSTANCE_NORMALIZATION",
                       [x, b.float32(1.5), b.float32(0.25), b.float32(1e-4), b.bool(False)],
                       b.tensor("TENSOR_FLOAT32", [1, 128, 256, 2])))
    m = b.finish()
    xv = np.random.default_rng(9).uniform(-1, 1, (1, 128, 256, 2)).astype(np.float32)
    pm = cl_device.prepare_model(m)
    assert_close(outputs_of(m, pm, [xv])[0], run_ref(m, [xv])[0], "f32")
    (la,) = [la for p in pm.partitions for pl in p.plans.values() for la in pl.launches]
    assert la.heavy and not la.flexible
    assert la.local_size is not None and la.local_size[0] * 2 == la.global_size[0]
