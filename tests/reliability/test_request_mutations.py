"""VTS-style request mutations on every execution path (sync, async, fenced, burst, device
memories), on both devices: each mutant ends in its status with a reason (INVALID_ARGUMENT; a
too-small output buffer: OUTPUT_INSUFFICIENT_SIZE with every output's shape, or
INVALID_ARGUMENT at the launch of a fenced execution; an empty device memory read as an input:
GENERAL_FAILURE), and the prepared model then runs a valid request correctly."""

import os
from pathlib import Path

import pytest

from clnn.suites.cts import build_model, build_request, run_variant
from clnn.suites.mutations import eligible_tests, sample_tests
from clnn.suites.request_mutations import (
    check_request_mutant,
    request_mutants,
    required_input,
    run_request_suite,
)
from hal.errors import ErrorStatus
from hal.reference import ReferenceDevice
from hal.types import DataLocation, RequestArgument

CORPUS = Path(os.environ.get("CLNN_CTS_CORPUS",
                             Path(__file__).resolve().parents[2].parent / "shared/cts/public"))
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")
MODES = ("sync", "async", "fenced", "burst", "device-memory")
REFERENCE_MODELS = 16
OPENCL_MODELS = 8


@pytest.fixture(scope="module")
def opencl():
    from clnn.devices import open_device

    try:
        return open_device("opencl")
    except Exception as e:
        pytest.skip(f"no OpenCL device: {e}")


def _suite(device, count, seed, mode, dynamic=False):
    runs, failures = 0, []
    for _, test in sample_tests(CORPUS, count, seed):
        n, bad = run_request_suite(device, test, (mode,), dynamic)
        runs += n
        failures += [f"{test['name']}: {b}" for b in bad]
    return runs, failures


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("mode", MODES)
def test_request_mutants_on_the_reference_device(mode, dynamic):
    runs, failures = _suite(ReferenceDevice(), REFERENCE_MODELS, 3, mode, dynamic)
    assert runs > (40 if mode == "device-memory" else 200)
    assert not failures, f"{len(failures)} of {runs}:\n" + "\n".join(failures[:10])


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("mode", MODES)
def test_request_mutants_on_opencl(mode, dynamic, opencl):
    runs, failures = _suite(opencl, OPENCL_MODELS, 4, mode, dynamic)
    assert runs > (20 if mode == "device-memory" else 100)
    assert not failures, f"{len(failures)} of {runs}:\n" + "\n".join(failures[:10])


def _test(name):
    return next(t for _, t in eligible_tests(str(CORPUS)) if t["name"] == name)


def test_every_mutant_kind_is_made():
    test = _test("conv_float")
    model = build_model(test)
    request, _ = build_request(test)
    shapes = [tuple(test["main"]["operands"][i]["dimensions"])
              for i in test["main"]["outputIndexes"]]
    kinds = {m.kind for m in request_mutants(model, request, shapes)}
    assert kinds == {"input_count", "output_count", "pools", "pool_index", "offset", "length",
                     "has_no_value", "dims_rank", "dims_value", "dims_unknown", "too_small"}


def test_a_too_small_output_gives_every_shape():
    test = _test("add")
    model = build_model(test)
    prepared = ReferenceDevice().prepare_model(model)
    request, _ = build_request(test)
    shapes = [tuple(test["main"]["operands"][i]["dimensions"])
              for i in test["main"]["outputIndexes"]]
    short = [m for m in request_mutants(model, request, shapes) if m.kind == "too_small"
             and m.short_output == 0]
    assert short
    from clnn.suites.cts_modes import ModeRunner

    r = ModeRunner(ReferenceDevice(), prepared, "sync").execute(short[0].request)
    assert r.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert [tuple(s.dimensions) for s in r.output_shapes] == shapes
    assert check_request_mutant(ModeRunner(ReferenceDevice(), prepared, "sync"), "sync",
                                short[0], shapes) is None


def test_a_required_input_without_a_value_is_invalid_argument():
    """Before the fix the execution reached the operation and failed with GENERAL_FAILURE."""
    test = _test("add")
    model = build_model(test)
    assert required_input(model, 0)
    prepared = ReferenceDevice().prepare_model(model)
    request, _ = build_request(test)
    request.inputs[0] = RequestArgument(True, DataLocation(), ())
    r = prepared.execute_synchronously(request)
    assert r.status == ErrorStatus.INVALID_ARGUMENT
    assert "has no value" in r.message and "ADD (operation 0)" in r.message


def test_optional_inputs_may_still_be_omitted():
    """LSTM's optional inputs (CIFG, peephole, projection) come without a value in the corpus:
    the required-input check must leave them alone."""
    test = _test("lstm2")
    model = build_model(test)
    omitted = [k for k, i in enumerate(test["main"]["inputIndexes"])
               if test["main"]["operands"][i]["data"] == []]
    assert omitted and not any(required_input(model, k) for k in omitted)
    assert run_variant(ReferenceDevice(), "lstm2", test, False).status == "passed"
