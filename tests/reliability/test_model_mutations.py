"""VTS-style model mutations (AOSP ValidateModel's kinds) of corpus models, on both devices.

Every mutant must be refused by get_supported_operations and prepare_model with
INVALID_ARGUMENT and a reason, or be accepted by both and then run with the same result on
every device (clnn/suites/mutation_check.py has the rules). ``clnn fuzz models`` runs more.
"""

import os
import random
from pathlib import Path

import pytest

from clnn.suites.cts import build_model
from clnn.suites.mutation_check import Verdict, crash_in_disguise, judge
from clnn.suites.mutations import KINDS, eligible_tests, mutate, sample_tests
from hal.errors import ErrorStatus, HalError
from hal.reference import ReferenceDevice
from hal.types import OperandLifeTime

CORPUS = Path(os.environ.get("CLNN_CTS_CORPUS",
                             Path(__file__).resolve().parents[2].parent / "shared/cts/public"))
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")
#: corpus models per kind: on the reference device alone, and on both devices
REFERENCE_MODELS = 80
OPENCL_MODELS = 20


def _sample(count: int, seed: int):
    """``count`` small corpus tests, spread over specs, plus control-flow (IF / WHILE) ones so
    that subgraph-reference mutations have something to change."""
    tests = sample_tests(CORPUS, count, seed)
    flow = [st for st in eligible_tests(str(CORPUS)) if st[1].get("referenced")]
    return tests + random.Random(seed).sample(flow, 3)


def _judge_kind(kind: str, tests, devices) -> tuple[dict, list[str]]:
    counts = {"rejected": 0, "valid": 0, "failure": 0}
    failures = []
    for n, (_, test) in enumerate(tests):
        mu = mutate(build_model(test), kind, random.Random(f"{kind}:{n}"))
        if mu is None:
            continue
        v = judge(mu, devices, test, seed=n)
        counts[v.outcome] += 1
        if v.outcome == "failure":
            failures.append(f"{test['name']}: {mu.detail}: {v.detail}")
    return counts, failures


@pytest.fixture(scope="module")
def reference_only():
    return {"reference": ReferenceDevice()}


@pytest.fixture(scope="module")
def both_devices():
    from clnn.devices import open_device

    try:
        cl = open_device("opencl")
    except Exception as e:
        pytest.skip(f"no OpenCL device: {e}")
    return {"reference": ReferenceDevice(), "opencl": cl}


@needs_corpus
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_mutants_on_the_reference_device(kind, reference_only):
    counts, failures = _judge_kind(kind, _sample(REFERENCE_MODELS, 0), reference_only)
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:10])
    assert counts["rejected"] + counts["valid"] > 0, f"{kind} applied to no sampled model"


@needs_corpus
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_mutants_on_both_devices(kind, both_devices):
    counts, failures = _judge_kind(kind, _sample(OPENCL_MODELS, 1), both_devices)
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:10])
    assert counts["rejected"] + counts["valid"] > 0, f"{kind} applied to no sampled model"


@needs_corpus
def test_the_suite_sees_both_outcomes(reference_only):
    """Not a suite of trivial rejections: some mutants stay valid and are run and compared."""
    tests = _sample(REFERENCE_MODELS, 0)
    valid = rejected = 0
    for kind in ("operand_make_io", "operand_dims", "operand_type_invalid"):
        counts, _ = _judge_kind(kind, tests, reference_only)
        valid += counts["valid"]
        rejected += counts["rejected"]
    assert valid >= 10 and rejected >= 10, (valid, rejected)


# ------------------------------------------------------------------------------ the rules

class _Accepting(ReferenceDevice):
    """A device that skips validation: what the judge must catch."""

    def get_supported_operations(self, model):
        return [True] * len(model.main.operations)

    def prepare_model(self, model, *args, **kwargs):
        from hal.reference import ReferencePreparedModel

        return ReferencePreparedModel(model)


class _Raising(ReferenceDevice):
    def prepare_model(self, model, *args, **kwargs):
        raise TypeError("unexpected operand")


class _WrongStatus(ReferenceDevice):
    def get_supported_operations(self, model):
        try:
            return super().get_supported_operations(model)
        except HalError as e:
            raise HalError(e.reason, ErrorStatus.GENERAL_FAILURE) from None


def _a_mutant(kind: str):
    test = next(t for _, t in eligible_tests(str(CORPUS)) if t["name"] == "add")
    return test, mutate(build_model(test), kind, random.Random(0))


@needs_corpus
@pytest.mark.parametrize("device_class,why", [
    (_Accepting, "rejected"), (_Raising, "TypeError"), (_WrongStatus, "GENERAL_FAILURE")])
def test_the_judge_catches_a_bad_device(device_class, why):
    test, mu = _a_mutant("operand_type_invalid")
    v = judge(mu, {"reference": ReferenceDevice(), "other": device_class()}, test)
    assert v.outcome == "failure" and why in v.detail, v


@needs_corpus
def test_the_judge_passes_a_clean_rejection():
    test, mu = _a_mutant("operand_type_invalid")
    v = judge(mu, {"reference": ReferenceDevice()}, test)
    assert v == Verdict("rejected", v.detail) and "invalid operand type" in v.detail


def test_crash_in_disguise():
    assert crash_in_disguise("IndexError: list index out of range")
    assert not crash_in_disguise("ADD (operation 0): output 0 has shape [2]")


# ------------------------------------------------------------------------------ fixes

@needs_corpus
def test_dimensions_above_uint32_are_invalid():
    """A dimension is a uint32 in the HAL: 2**32 is no size, and must not reach a planner."""
    test = next(t for _, t in eligible_tests(str(CORPUS)) if t["name"] == "add")
    model = build_model(test)
    out = model.main.output_indexes[0]
    model.main.operands[out].dimensions = (2**32,) + tuple(model.main.operands[out].dimensions)
    with pytest.raises(HalError) as e:
        ReferenceDevice().prepare_model(model)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT
    assert "[0, 4294967295]" in e.value.reason
    assert model.main.operands[out].lifetime == OperandLifeTime.SUBGRAPH_OUTPUT


@needs_corpus
def test_run_time_input_an_operation_rejects_is_general_failure_on_both(both_devices):
    """Paddings given at execution that the block size does not divide: the operation fails
    (OP_FAILED, GENERAL_FAILURE) on both devices; the OpenCL planner used to let the
    operation's INVALID_ARGUMENT through, so the devices disagreed."""
    import copy

    from clnn.suites.cts import build_request

    test = copy.deepcopy(next(t for _, t in eligible_tests(str(CORPUS)) if t["name"]
                              == "space_to_batch_float_2_all_tensors_as_inputs"))
    test["main"]["operands"][2]["data"] = [1, 1, 2, 0]  # height 5 + 2 is no multiple of 3
    model = build_model(test)
    for name, device in both_devices.items():
        request, _ = build_request(test)
        r = device.prepare_model(model).execute_synchronously(request)
        assert r.status == ErrorStatus.GENERAL_FAILURE, (name, r)
        assert "not multiples of input 1 (block sizes)" in r.message, (name, r.message)


def test_a_model_too_large_for_the_device_is_valid_not_a_failure(both_devices):
    """A valid model whose tensors exceed the OpenCL device's largest buffer: prepare is
    GENERAL_FAILURE there (a resource limit, naming it), the reference accepts it; the judge
    calls that valid (found by ``clnn fuzz models --seed 4519``: a dimension set to 2^31-1)."""
    from clnn.suites.mutations_operands import Mutant
    from hal.builder import ModelBuilder

    cl = both_devices["opencl"]
    n = int(cl.cl_device.max_mem_alloc_size) // 4 + 1
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", (1, n))
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", (1, n)))
    model = b.finish()
    mu = Mutant("operand_dims", model, "a dimension too large for the device")
    v = judge(mu, both_devices)
    assert v.outcome == "valid" and "too large for opencl" in v.detail, v
    assert str(int(cl.cl_device.max_mem_alloc_size)) in v.detail


@needs_corpus
def test_clnn_fuzz_models(tmp_path, capsys):
    """The program: counts on stdout, a JSON report, exit 0 when nothing failed."""
    import json

    from clnn.cli.main import main

    report = tmp_path / "fuzz.json"
    rc = main(["fuzz", "models", "--count", "60", "--seed", "0", "--corpus", str(CORPUS),
               "--json", str(report)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "60 mutants on reference" in out and "0 failures" in out
    doc = json.loads(report.read_text())
    assert sum(doc["summary"].values()) == 60
    assert len({c["seed"] for c in doc["cases"]}) == 60
    assert doc["requests"] and all(r["executions"] > 0 for r in doc["requests"])


@needs_corpus
def test_an_empty_convolution_window_at_run_time_is_a_sentence_on_both(both_devices):
    """Input dimensions given at execution that the 2x2 filter does not fit: GENERAL_FAILURE
    naming the operation on both devices (the OpenCL planner used to pass the bare
    ValueError of the shape inference through)."""
    from clnn.suites.cts import build_request
    from hal.types import DataLocation, HostMemory, RequestArgument

    test = next(t for _, t in eligible_tests(str(CORPUS)) if t["name"] == "conv_float")
    model = build_model(test)
    model.main.operands[0].dimensions = (1, 0, 0, 1)
    model.main.operands[6].dimensions = (1, 0, 0, 1)
    for name, device in both_devices.items():
        request, _ = build_request(test)
        request.pools[0] = HostMemory(b"\0" * 4)
        request.inputs[0] = RequestArgument(False, DataLocation(0, 0, 4), (1, 1, 1, 1))
        r = device.prepare_model(model).execute_synchronously(request)
        assert r.status == ErrorStatus.GENERAL_FAILURE, (name, r)
        assert "CONV_2D (operation 0)" in r.message, (name, r.message)
        assert not crash_in_disguise(r.message), (name, r.message)
