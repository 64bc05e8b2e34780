"""The compilation cache: save at prepare, restore (here and in a new process), and every way a
cache can be wrong (flipped, appended, truncated bytes, another token, mixed saves, file
counts, token length), each with its exact status."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hal.errors import ErrorStatus, HalError
from tests.kits.execution_models import chain, expected_chain, make_request, outputs, sample
from tests.kits.paths import REPO

TOKEN = bytes(range(32))


def _files(device, tmp_path, tag="a"):
    n_model, n_data = device.get_number_of_cache_files_needed()
    return ([str(tmp_path / f"{tag}.model{k}") for k in range(n_model)],
            [str(tmp_path / f"{tag}.data{k}") for k in range(n_data)])


def _save(device, tmp_path, model=None, tag="a", token=TOKEN):
    mc, dc = _files(device, tmp_path, tag)
    device.prepare_model(model or chain(), model_cache=mc, data_cache=dc, token=token)
    return mc, dc


def _check_runs(prepared, model=None):
    m = model or chain()
    x = sample(m.main.operands[m.main.input_indexes[0]].dimensions, seed=3)
    req = make_request(m, [x])
    for got, want in zip(outputs(m, req, prepared.execute_synchronously(req)),
                         expected_chain(x)):
        np.testing.assert_allclose(got, want)


def _restore_status(device, mc, dc, token=TOKEN) -> ErrorStatus:
    with pytest.raises(HalError) as e:
        device.prepare_model_from_cache(model_cache=mc, data_cache=dc, token=token)
    assert e.value.reason
    return e.value.status


def test_cache_files_are_needed(device):
    n_model, n_data = device.get_number_of_cache_files_needed()
    assert n_model > 0 and n_data >= 0


def test_round_trip(device, tmp_path):
    mc, dc = _save(device, tmp_path)
    assert all(os.path.getsize(f) > 0 for f in mc + dc)
    prepared = device.prepare_model_from_cache(model_cache=mc, data_cache=dc, token=TOKEN)
    _check_runs(prepared)
    _check_runs(device.prepare_model_from_cache(model_cache=mc, data_cache=dc, token=TOKEN))


def test_round_trip_with_open_file_objects(device):
    n_model, n_data = device.get_number_of_cache_files_needed()
    mc, dc = [io.BytesIO() for _ in range(n_model)], [io.BytesIO() for _ in range(n_data)]
    device.prepare_model(chain(), model_cache=mc, data_cache=dc, token=TOKEN)
    _check_runs(device.prepare_model_from_cache(model_cache=mc, data_cache=dc, token=TOKEN))


def _mutate(path, how):
    data = bytearray(Path(path).read_bytes())
    if how == "flip":
        data[len(data) // 2] ^= 0x01
    elif how == "flip-header":
        data[20] ^= 0x80
    elif how == "append":
        data += b"\0"
    elif how == "truncate":
        data = data[:-1]
    elif how == "empty":
        data = bytearray()
    Path(path).write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["flip", "flip-header", "append", "truncate", "empty"])
def test_corrupt_cache_is_a_general_failure(device, tmp_path, how):
    """Every file the device uses, damaged in turn, is refused."""
    n_model, n_data = device.get_number_of_cache_files_needed()
    for which in range(n_model + n_data):
        mc, dc = _save(device, tmp_path, tag=f"t{which}")
        _mutate((mc + dc)[which], how)
        assert _restore_status(device, mc, dc) == ErrorStatus.GENERAL_FAILURE, which


def test_another_token_is_a_general_failure(device, tmp_path):
    mc, dc = _save(device, tmp_path)
    other = bytes(31) + b"\1"
    assert _restore_status(device, mc, dc, other) == ErrorStatus.GENERAL_FAILURE


def test_files_of_two_saves_do_not_mix(device, tmp_path):
    mc_a, dc_a = _save(device, tmp_path, tag="a")
    mc_b, dc_b = _save(device, tmp_path, model=chain((3, 3)), tag="b")
    if dc_a:
        assert _restore_status(device, mc_a, dc_b) == ErrorStatus.GENERAL_FAILURE
    # a file copied over another one of the same kind is still checked as a whole
    Path(mc_a[0]).write_bytes(Path(mc_b[0]).read_bytes())
    if dc_a:
        assert _restore_status(device, mc_a, dc_a) == ErrorStatus.GENERAL_FAILURE
    else:  # the model file alone is a complete cache of model b
        _check_runs(device.prepare_model_from_cache(model_cache=mc_a, data_cache=dc_a,
                                                    token=TOKEN), chain((3, 3)))


def test_missing_file_is_a_general_failure(device, tmp_path):
    mc, dc = _files(device, tmp_path)
    assert _restore_status(device, mc, dc) == ErrorStatus.GENERAL_FAILURE


def test_wrong_file_counts_and_tokens_are_invalid(device, tmp_path):
    mc, dc = _files(device, tmp_path)
    m = chain()
    for kwargs in ({"model_cache": mc + mc, "data_cache": dc, "token": TOKEN},
                   {"model_cache": [], "data_cache": dc + [mc[0]], "token": TOKEN},
                   {"model_cache": mc, "data_cache": dc, "token": TOKEN[:31]},
                   {"model_cache": mc, "data_cache": dc, "token": None}):
        with pytest.raises(HalError) as e:
            device.prepare_model(m, **kwargs)
        assert e.value.status == ErrorStatus.INVALID_ARGUMENT, kwargs
        with pytest.raises(HalError) as e:
            device.prepare_model_from_cache(**kwargs)
        assert e.value.status == ErrorStatus.INVALID_ARGUMENT, kwargs
    # no cache files at all: prepare without caching
    _check_runs(device.prepare_model(m, token=TOKEN))


def test_restore_in_a_new_process(device, tmp_path):
    mc, dc = _save(device, tmp_path)
    name = "reference" if device.name == "reference" else "opencl"
    script = f"""
import json, sys
import numpy as np
from clnn.devices import open_device
from hal.builder import make_request, read_outputs
from tests.kits.execution_models import chain, sample
dev = open_device({name!r})
pm = dev.prepare_model_from_cache(model_cache={mc!r}, data_cache={dc!r}, token={TOKEN!r})
m = chain()
req = make_request(m, [sample(seed=3)])
r = pm.execute_synchronously(req)
print(json.dumps([o.tolist() for o in read_outputs(m, req, r.output_shapes)]))
"""
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    for g, want in zip(got, expected_chain(sample(seed=3))):
        np.testing.assert_allclose(np.array(g, np.float32), want)


def test_bench_prepare_restores_without_building(capsys):
    """``clnn bench prepare``: the warm phase builds no program and computes the same outputs
    (the speed figures are reported, not asserted)."""
    from tests.kits.devices import open_or_skip

    open_or_skip("opencl")
    from clnn.bench.bench_prepare import run_prepare_bench

    assert run_prepare_bench(as_json=True) == 0
    result = json.loads(capsys.readouterr().out)
    cold, save, warm = result["phases"]
    assert (cold["phase"], save["phase"], warm["phase"]) == ("cold", "save", "warm")
    assert cold["programs_built"] > 0 and warm["programs_built"] == 0
    assert warm["programs_rendered"] == 0
    assert all(p["max_abs_error"] < 1e-3 for p in result["phases"])
    assert result["cache_bytes"]["model.cache"] > 0 and result["speedup"] > 0
