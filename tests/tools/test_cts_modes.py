"""The conformance runner's execution modes (clnn/suites/cts_modes.py): a slice of the corpus passes
in every mode on every device, and the fenced mode counts unknown output dimensions as the HAL
says (INVALID_ARGUMENT first, then the request with the dimensions)."""

from __future__ import annotations

import functools

import pytest

from clnn.suites.cts import iter_corpus, run_variant
from clnn.suites.cts_modes import MODES, ModeRunner
from tests.kits.execution_models import make_request, relu, sample
from tests.kits.paths import CORPUS

#: quantized RELU1 with an internal input, zero-sized outputs, a WHILE loop, fp16, and tests
#: that must fail
SLICE = {"relu1_quant8_1_all_inputs_as_internal", "conv2d_v1_2_zero_sized_nhwc_quant8",
         "while_fib_n_1_unused_output_float16", "strided_slice_invalid_output_dims",
         "cast_mismatching_shapes"}


@functools.lru_cache(maxsize=1)
def _tests():
    if not CORPUS.is_dir():
        return []
    found = [(spec, t) for spec, _, t in iter_corpus(CORPUS) if t["name"] in SLICE]
    assert len(found) == len(SLICE)
    return found


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")
@pytest.mark.parametrize("mode", MODES)
def test_corpus_slice_passes_in_every_mode(device, mode):
    tests = _tests()
    assert tests
    bad = []
    for spec, t in tests:
        for dynamic in (False, True):
            r = run_variant(device, spec, t, dynamic, mode)
            if r.status != "passed":
                bad.append(f"{r.name} [{r.variant}]: {r.status} {r.detail[:200]}")
    assert not bad, bad[:5]


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")
def test_fenced_mode_counts_zero_sized_outputs_by_their_invalid_argument(device):
    spec, t = next((s, t) for s, t in _tests() if "zero_sized" in t["name"])
    r = run_variant(device, spec, t, False, "fenced")
    assert r.status == "passed" and "INVALID_ARGUMENT" in r.detail


def test_unknown_mode_is_refused(device):
    pm = device.prepare_model(relu())
    with pytest.raises(ValueError):
        ModeRunner(device, pm, "eventually")
    for mode in MODES:
        r = ModeRunner(device, pm, mode).execute(make_request(relu(), [sample()]))
        assert r.status == 0, (mode, r.message)
