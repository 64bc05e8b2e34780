"""The task grid of chained GEMM launches (clnn/chain_balance.py): a grid that ends the launch
sooner than the rows-first grid of before where that one cuts unevenly (the 7x7 layers' 7 row
blocks cut 3 / 4), the grid of before elsewhere, never more tasks; and a chained model of
such layers computes what its launches compute one by one."""

from __future__ import annotations

import numpy as np
import pytest

from clnn import chain
from clnn.chain_balance import grid, makespan, rows_first_grid
from clnn.options import DeviceOptions
from hal.builder import ModelBuilder
from tests.kits.cl_compare import assert_close, outputs_of, run_ref
from tests.kits.devices import open_or_skip

F32 = "TENSOR_FLOAT32"
#: (row blocks, column panels) of the MediaPipe models' chained GEMMs
SHAPES = [(7, 6), (7, 36), (7, 7), (7, 21), (25, 21), (25, 7), (25, 6), (25, 2), (25, 12),
          (1, 1), (1, 7), (128, 2), (32, 4), (2, 4), (8, 4), (196, 3), (3, 1), (1, 2)]


def test_makespan_of_even_and_uneven_grids():
    assert makespan(7, 6, 1, 6, 2) == 21  # three tasks of 7 each
    # rows 3 | 4 x panels 1, 2, 1, 2: the second work-group's block is 24 of 42
    assert makespan(7, 6, 2, 4, 2) == 24
    assert makespan(4, 4, 2, 2, 1) == 16  # one work-group runs it all


@pytest.mark.parametrize("g0,panels", SHAPES)
@pytest.mark.parametrize("units", [2, 4])
def test_grid_never_ends_later_nor_has_more_tasks(g0, panels, units):
    base = rows_first_grid(g0, panels, 4, units)
    rows, cols = grid(g0, panels, 4, units)
    assert 1 <= rows <= g0 and 1 <= cols <= panels
    assert rows * cols <= base[0] * base[1]
    assert makespan(g0, panels, rows, cols, units) <= makespan(g0, panels, *base, units)
    if (rows, cols) != base:  # changed only for a launch that ends sooner
        assert makespan(g0, panels, rows, cols, units) < makespan(g0, panels, *base, units)
        assert rows * cols >= min(base[0] * base[1], 2 * units)


def test_the_7x7_layers_cut_by_columns():
    assert rows_first_grid(7, 6, 4, 2) == (2, 4)
    assert grid(7, 6, 4, 2) == (1, 6)
    assert grid(7, 36, 4, 2) == (1, 8)
    assert grid(25, 21, 4, 2) == rows_first_grid(25, 21, 4, 2)  # as even as it gets
    assert grid(5, 3, 4, 1) == rows_first_grid(5, 3, 4, 1)


def pointwise_model(seed=0):
    """Two 1x1 convolutions on a 7x7 image (49 rows: 7 row blocks of 8) of 96 and 192
    columns, the second with a residual ADD."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input(F32, [1, 7, 7, 32])

    def const(*shape):  # (small: 192-deep sums within the CTS tolerance of the reference)
        return b.constant(rng.uniform(-0.1, 0.1, shape).astype(np.float32), F32)

    def conv(t, cin, cout):
        return b.op("CONV_2D", [t, const(cout, 1, 1, cin), const(cout), b.int32(1),
                                b.int32(1), b.int32(1), b.int32(0), b.bool(False)],
                    b.tensor(F32, [1, 7, 7, cout]))

    y = conv(conv(x, 32, 96), 96, 192)
    z = conv(y, 192, 192)
    s = b.op("ADD", [z, y, b.int32(0)], b.tensor(F32, [1, 7, 7, 192]))
    b.mark_output(b.op("RELU", [s], b.tensor(F32, [1, 7, 7, 192])))
    return b.finish(), [rng.uniform(-1, 1, (1, 7, 7, 32)).astype(np.float32)]


def test_chained_7x7_gemms_equal_their_launches_one_by_one():
    options = DeviceOptions(chains=True, chain_min_launches=2)
    dev = open_or_skip("opencl", fallback=False, options=options)
    model, inputs = pointwise_model()
    pm = dev.prepare_model(model)
    pm.wait_chains()
    found = [s for p in pm.partitions for pl in p.plans.values() if pl is not None
             for s in (pl.chained or ()) if isinstance(s, chain.Chain)]
    (ch,) = found
    assert all(la.name == "gemm.gemm" for la in ch.launches)
    if chain._class(dev.cl_device).chain_balance:  # a launch cut otherwise than before
        import pyopencl as cl

        table = np.empty(ch.table.size // 4, np.int32)
        cl.enqueue_copy(dev.queue, table, ch.table)
        units, per_unit = int(table[1]), chain.tasks_per_unit(dev.cl_device)
        cut = []
        for j, la in enumerate(ch.launches):
            h = table[2 + j * chain.HEADER:2 + (j + 1) * chain.HEADER]
            g = list(la.global_size) + [1] * (3 - len(la.global_size))
            cut.append((h[4] // h[5], h[5]) != rows_first_grid(g[0], g[1] * g[2], per_unit,
                                                              units))
        assert any(cut) or units < 2
    got = outputs_of(model, pm, inputs)
    plain = open_or_skip("opencl", fallback=False,
                         options=options.replace(chains=False)).prepare_model(model)
    for g, w, r in zip(got, outputs_of(model, plain, inputs), run_ref(model, inputs)):
        np.testing.assert_array_equal(g, w)  # the same kernels: bit for bit
        assert_close(g, r, "f32")


def test_work_groups_that_leave_the_chain_leave_the_results_alone(monkeypatch):
    """A work-group that polls longer than the class's ``chain_spin`` leaves its blocks to
    the others: with a limit of a few polls most waits end so, and every run (the counters
    reset by the last to leave) computes what the launches compute one by one."""
    from clnn.kernels import _defaults
    from tests.cl.test_cl_chain import block_model, chains

    options = DeviceOptions(chains=True, chain_min_launches=2)
    dev = open_or_skip("opencl", fallback=False, options=options)
    cls = chain._class(dev.cl_device)
    monkeypatch.setitem(chain._CLASSES, dev.cl_device.int_ptr,
                        _defaults.ClassDefaults(**{**cls.__dict__, "chain_spin": 3}))
    plain = open_or_skip("opencl", fallback=False, options=options.replace(chains=False))
    for model, inputs in (block_model(seed=1), pointwise_model(seed=1)):
        pm = dev.prepare_model(model)
        (ch,) = chains(pm)
        assert ch.spin == 3 and "if (++spins > 3) break" in ch.source
        want = outputs_of(model, plain.prepare_model(model), inputs)
        for _ in range(20):
            for g, w in zip(outputs_of(model, pm, inputs), want):
                np.testing.assert_array_equal(g, w)


def test_the_cpu_class_bounds_the_wait_and_profiled_chains_do_not():
    from clnn.kernels._defaults import TABLE

    assert TABLE["cpu"].chain_spin > 0 and TABLE["gpu"].chain_spin == 0
    assert "spins" in chain.source([], 1, spin=7) and "spins" not in chain.source([], 1)
    assert "spins" not in chain.source([], 1, profiled=True, spin=7)
