"""RANDOM_MULTINOMIAL on OpenCL: the reference's Philox4x32-10 draws (seeded samples agree with
the reference device), the distribution (chi-square over many samples), samples independent of
the work-group size, unseeded executions that differ, and rows without probability mass."""

from __future__ import annotations

import numpy as np
import pytest

import clnn.kernels.random_multinomial as family
from hal.errors import ErrorStatus
from tests.kits.cl_compare import run_cl, run_ref, status_of
from tests.kits.one_op_models import one_op_model, scalar, tensor

OP = "RANDOM_MULTINOMIAL"


def model(batches, classes, samples, t="TENSOR_FLOAT32"):
    return one_op_model(OP, [tensor(t, [batches, classes]), scalar("INT32", samples),
                             tensor("TENSOR_INT32", [2])],
                        [tensor("TENSOR_INT32", [batches, samples])])


@pytest.mark.parametrize("t,dt", [("TENSOR_FLOAT32", np.float32), ("TENSOR_FLOAT16", np.float16)])
def test_seeded_samples_agree_with_the_reference(cl_device, t, dt):
    logits = np.random.default_rng(3).standard_normal((3, 700)).astype(dt)
    m = model(3, 700, 1001, t)
    (got,) = run_cl(m, [logits, np.int32([37, 42])], cl_device)
    (want,) = run_ref(m, [logits, np.int32([37, 42])])
    # the same uniforms; a sample may differ only where float32 and float64 cumulative sums
    # put u * total on different sides of a class boundary (rare)
    assert np.mean(got == want) > 0.99


def test_distribution_chi_square(cl_device):
    p = np.array([0.05, 0.1, 0.2, 0.3, 0.15, 0.1, 0.05, 0.03, 0.015, 0.005])
    n = 50_000
    (got,) = run_cl(model(1, 10, n), [np.log(p)[None].astype(np.float32), np.int32([5, 9])],
                    cl_device)
    counts = np.bincount(got[0], minlength=10)
    chi2 = float(np.sum((counts - n * p) ** 2 / (n * p)))
    assert chi2 < 27.88  # 9 degrees of freedom, p = 0.001


def test_samples_do_not_depend_on_the_work_group_size(cl_device, monkeypatch):
    logits = np.random.default_rng(4).standard_normal((2, 999)).astype(np.float32)
    m = model(2, 999, 64)
    (wide,) = run_cl(m, [logits, np.int32([1, 2])], cl_device)
    monkeypatch.setattr(family, "_GROUP", 4)
    (narrow,) = run_cl(m, [logits, np.int32([1, 2])], cl_device)
    np.testing.assert_array_equal(wide, narrow)


def test_same_seeds_repeat_zero_seeds_differ(cl_device):
    from tests.kits.cl_compare import outputs_of

    logits = np.zeros((1, 50), np.float32)
    m = model(1, 50, 64)
    pm = cl_device.prepare_model(m)
    a, b = (outputs_of(m, pm, [logits, np.int32([8, 9])])[0] for _ in range(2))
    np.testing.assert_array_equal(a, b)
    c, d = (outputs_of(m, pm, [logits, np.int32([0, 0])])[0] for _ in range(2))
    assert not np.array_equal(c, d)
    assert c.min() >= 0 and c.max() < 50


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_row_without_probability_mass_fails(cl_device, reference, bad):
    ins = [tensor("TENSOR_FLOAT32", [2, 3]), scalar("INT32", 4), tensor("TENSOR_INT32", [2])]
    outs = [tensor("TENSOR_INT32", [2, 4])]
    logits = np.float32([[0, 1, 2], [0, bad, 1]])
    want = status_of(OP, ins, outs, [logits, np.int32([1, 1])], reference)
    assert want == ErrorStatus.GENERAL_FAILURE
    assert status_of(OP, ins, outs, [logits, np.int32([1, 1])], cl_device) == want
