"""Random graphs (clnn/suites/random_graphs.py, as the NNAPI CTS RandomGraph test): every
generated graph is valid; on OpenCL (fallback off where every operation has kernels) each
matches the reference within the CTS tolerances, and the fusion rules of clnn/fusion are
all exercised; a failure shrinks to a smaller graph printed as ModelBuilder code.
``clnn fuzz graphs --count N`` runs more."""

from __future__ import annotations

import argparse
import collections
import json
import os

import numpy as np
import pytest

from clnn.suites import fuzz_graphs
from clnn.suites.random_graphs import build, generate, to_python
from hal.builder import ModelBuilder, make_request, read_outputs
from hal.reference import ReferenceDevice

#: 1,000 graphs in chunks (the failures of one chunk do not hide another's): the first 100 in
#: make test (two chunks, one per worker process), the others under make test-full (slow)
CHUNKS = [range(k, k + 50) for k in range(0, 1000, 50)]
CHUNK_PARAMS = [pytest.param(r, marks=[pytest.mark.slow] if r.start >= 100 else [],
                             id=f"seeds{r.start}-{r.stop - 1}") for r in CHUNKS]


@pytest.fixture(scope="module")
def cl():
    from clnn.devices import open_device

    try:
        return open_device("opencl")
    except Exception as e:  # no pyopencl / no OpenCL platform on this machine
        pytest.skip(f"the OpenCL device is not available: {e}")


@pytest.fixture(scope="module")
def fusions_seen():
    return collections.Counter()


@pytest.fixture(scope="module")
def chunk_results(request, cl):
    """Every chunk this session selected, run in worker processes (one per core, at most 2):
    with an empty PoCL cache the graphs' ~400 programs build in parallel."""
    jobs = max(1, min(2, os.cpu_count() or 1))
    chunks = [r for r in CHUNKS if any(getattr(item, "callspec", None) is not None
                                       and item.callspec.params.get("seeds") == r
                                       for item in request.session.items)]
    return dict(zip(chunks, fuzz_graphs.run_parallel(chunks, jobs)))


def test_generated_graphs_are_valid():
    """finish() validates (hal.validation.validate_model); the reference runs each."""
    ref = ReferenceDevice()
    names = collections.Counter()
    for seed in range(5000, 5300):
        g = generate(seed)
        model, inputs = build(g)
        r = ref.prepare_model(model).execute_synchronously(make_request(model, inputs))
        assert r.status == 0, f"seed {seed}: {r.message}"
        names.update(g.op_names())
    # the generator reaches the families it is meant to
    for name in ("CONV_2D", "DEPTHWISE_CONV_2D", "PAD", "PAD_V2", "ADD", "PRELU",
                 "FULLY_CONNECTED", "SOFTMAX", "CONCATENATION", "SELECT", "MEAN"):
        assert names[name] > 0, f"no {name} in 300 graphs"


@pytest.mark.parametrize("seeds", CHUNK_PARAMS)
def test_random_graphs_match_the_reference(chunk_results, fusions_seen, seeds):
    counts, fusions, failures = chunk_results[seeds]
    fusions_seen.update(fusions)
    assert counts.get("match", 0) == len(seeds), "\n\n".join(failures[:3])


@pytest.mark.slow  # the rules need all 1,000 graphs
def test_every_fusion_rule_was_exercised(cl, fusions_seen):
    """After the chunks above: every rule of clnn/fusion fused in some graph."""
    if not fusions_seen:
        pytest.skip("run together with test_random_graphs_match_the_reference")
    clamps = ("RELU", "RELU1", "RELU6")
    wanted = {
        "PAD -> CONV_2D": [f"{p}->CONV_2D" for p in ("PAD", "PAD_V2")],
        "PAD -> DEPTHWISE_CONV_2D": [f"{p}->DEPTHWISE_CONV_2D" for p in ("PAD", "PAD_V2")],
        "CONV_2D -> ADD": ["ADD->CONV_2D"],
        "CONV_2D -> RELU*": [f"{a}->CONV_2D" for a in clamps],
        "CONV_2D -> PRELU": ["PRELU->CONV_2D"],
        "CONV_2D -> LOGISTIC": ["LOGISTIC->CONV_2D"],
        "CONV_2D -> HARD_SWISH": ["HARD_SWISH->CONV_2D"],
        "DEPTHWISE_CONV_2D -> RELU*": [f"{a}->DEPTHWISE_CONV_2D" for a in clamps],
        **{f"{b} -> RELU*": [f"{a}->{b}" for a in clamps] for b in ("ADD", "SUB", "MUL", "DIV")},
    }
    missing = [rule for rule, keys in wanted.items() if not any(fusions_seen[k] for k in keys)]
    assert not missing, f"never fused in 1,000 graphs: {missing}; seen {dict(fusions_seen)}"


def test_shrink_keeps_the_failure_and_prints_runnable_code():
    """A stand-in failure (any graph with a CONV_2D fails) shrinks to fewer operations that
    still hold a CONV_2D, and the printed ModelBuilder code builds the same model."""
    seed = next(s for s in range(100) if "CONV_2D" in generate(s).op_names()
                and len(generate(s).ops) >= 5)
    g = generate(seed)
    small = fuzz_graphs.shrink(g, lambda h: "CONV_2D" in h.op_names())
    assert "CONV_2D" in small.op_names() and len(small.ops) < len(g.ops)
    model, inputs = build(small)
    scope: dict = {}
    exec(to_python(small), scope)  # noqa: S102 - the printed reproducer is the product
    assert len(scope["model"].main.operations) == len(model.main.operations)
    ref = ReferenceDevice()
    outs = []
    for m, xs in ((model, inputs), (scope["model"], scope["inputs"])):
        req = make_request(m, xs)
        r = ref.prepare_model(m).execute_synchronously(req)
        outs.append(read_outputs(m, req, r.output_shapes))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


def test_compare_uses_the_cts_tolerances():
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", [1, 2])
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", [1, 2]))
    model = b.finish()
    want = [np.array([[1.0, -2.0]], np.float32)]
    assert fuzz_graphs.compare(model, [want[0] + 1e-5], want, False) is None
    assert "outside the tolerance" in fuzz_graphs.compare(model, [want[0] + 1e-4], want, False)
    # a model with a float16 operand compares its float32 outputs at 5 * 2^-10
    assert fuzz_graphs.compare(model, [want[0] + 4e-3], want, True) is None
    nan = [np.array([[np.nan, np.inf]], np.float32)]
    assert fuzz_graphs.compare(model, nan, nan, False) is None
    assert fuzz_graphs.compare(model, [want[0].reshape(2, 1)], want, False).startswith(
        "output 0 (TENSOR_FLOAT32) has shape")


def test_fuzz_graphs_cli_writes_a_report(cl, tmp_path):
    report = tmp_path / "graphs.json"
    args = argparse.Namespace(count=20, seed=7, json=str(report))
    assert fuzz_graphs.main(args) == 0
    data = json.loads(report.read_text())
    assert data["outcomes"]["match"] == 20 and data["failures"] == []
    assert sum(data["operations"].values()) >= 20


# ---------------------------------------------------------------------- bugs the graphs found
@pytest.mark.parametrize("qtype,zp", [("TENSOR_QUANT8_ASYMM_SIGNED", -18),
                                      ("TENSOR_QUANT8_ASYMM", 110)])
def test_quantized_resize_bilinear_rounds_half_up(cl, qtype, zp):
    """Seed 595 (RESIZE_BILINEAR -> BATCH_MATMUL, quant8 signed): the kernel rounded with
    trunc(r + 0.5), which rounds negative values up: 19 of 48 values one step off the
    reference's floor(r + 0.5), amplified to 2 steps by the BATCH_MATMUL after it. A lone
    resize is within the CTS tolerance of 1, so compare exactly."""
    b = ModelBuilder()
    x = b.input(qtype, [1, 3, 2, 4], 0.0086, zp)
    b.op("RESIZE_BILINEAR", [x, b.int32(4), b.int32(3)], b.output(qtype, [1, 3, 4, 4], 0.0086,
                                                                   zp))
    model = b.finish()
    rng = np.random.default_rng(595)
    lo, hi = (-128, 128) if qtype.endswith("SIGNED") else (0, 256)
    xs = [rng.integers(lo, hi, (1, 3, 2, 4)).astype(np.int8 if lo else np.uint8)]
    outs = []
    for device in (cl, ReferenceDevice()):
        req = make_request(model, xs)
        r = device.prepare_model(model).execute_synchronously(req)
        outs.append(read_outputs(model, req, r.output_shapes)[0])
    np.testing.assert_array_equal(outs[0], outs[1])


def test_quantized_resize_bilinear_is_bit_exact_on_ties(cl):
    """Seed 917 (... -> TANH -> RESIZE_BILINEAR, quant8 signed): 2 values one step off, within
    the CTS tolerance, from the kernel's contracted multiply-adds moving x.5 across the
    rounding; the kernel now turns FP_CONTRACT off for quantized types. TANH outputs (scale
    1/128) upscaled 2 x 1.33 land on such ties; compare exactly."""
    qtype = "TENSOR_QUANT8_ASYMM_SIGNED"
    b = ModelBuilder()
    x = b.input(qtype, [1, 2, 3, 4], 1 / 128, 0)
    b.op("RESIZE_BILINEAR", [x, b.int32(4), b.int32(6)], b.output(qtype, [1, 6, 4, 4],
                                                                   1 / 128, 0))
    model = b.finish()
    rng = np.random.default_rng(917)
    prepared = [d.prepare_model(model) for d in (cl, ReferenceDevice())]
    for _ in range(20):
        xs = [rng.integers(-128, 128, (1, 2, 3, 4)).astype(np.int8)]
        outs = []
        for pm in prepared:
            req = make_request(model, xs)
            r = pm.execute_synchronously(req)
            outs.append(read_outputs(model, req, r.output_shapes)[0])
        np.testing.assert_array_equal(outs[0], outs[1])
