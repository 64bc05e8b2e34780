"""A seeded slice of the conformance corpus through the runtime over {opencl, reference}
(the whole corpus: ``clnn cts CORPUS --runtime``). The OpenCL device's capabilities are given
(faster for float32 and quant8 asymm, slower for the rest), so the slice's operations are
placed on both devices."""

from __future__ import annotations

import random

import pytest

from clnn import nnapi
from clnn.nnapi.hal_adapter import RuntimeDevice
from clnn.suites.cts import iter_corpus, run_variant
from tests.kits.devices import open_or_skip
from tests.kits.paths import CORPUS
from tests.nnapi.kit import caps

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")

SLICE, SEED = 24, 39


@pytest.fixture(scope="module")
def runtime():
    cl = open_or_skip("opencl")
    figures = caps(3.0, TENSOR_FLOAT32=0.25, TENSOR_QUANT8_ASYMM=0.5)
    return RuntimeDevice([nnapi.Device("opencl", cl, figures),
                          nnapi.device_from_spec("reference")])


def _slice():
    tests = [(spec, t) for spec, _, t in iter_corpus(CORPUS)]
    return random.Random(SEED).sample(tests, SLICE)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_corpus_slice_through_the_runtime(runtime, dynamic):
    results = [run_variant(runtime, spec, t, dynamic) for spec, t in _slice()]
    bad = [(r.name, r.status, r.detail[:200]) for r in results if r.status != "passed"]
    assert not bad
    assert len(results) == SLICE


def test_zero_sized_tensor_between_steps_falls_back_to_one_device():
    """A tensor that turns out zero-sized between two steps cannot be a step's input (a
    request's dimension 0 means unknown): that execution runs the whole model on the last
    device that supports every operation, as Android's runtime falls back to its CPU."""
    cl = open_or_skip("opencl")
    runtime = RuntimeDevice([nnapi.Device("opencl", cl, caps(3.0, TENSOR_QUANT8_ASYMM_SIGNED=0.25)),
                             nnapi.device_from_spec("reference")])
    name = "bbox_graph_quant8_signed_zero_sized_quant8_signed"
    found = [(spec, t) for spec, _, t in iter_corpus(CORPUS, name) if t["name"] == name]
    if not found:
        pytest.skip(f"{name} is not in the corpus")
    spec, test = found[0]
    from clnn.suites.corpus import build_model

    prepared = runtime.prepare_model(build_model(test))
    assert len(prepared.plan().steps) >= 2  # split where the zero-sized tensor flows
    for dynamic in (False, True):
        r = run_variant(runtime, spec, test, dynamic)
        assert r.status == "passed", r.detail
