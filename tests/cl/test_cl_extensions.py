"""Extension models on the OpenCL device, with the test-only extension org.clnn.test
(tests/kits/extension_kit.py): NEGATE on its OpenCL kernel (fallback off), ADD_PARAM on the
reference fallback, per-operation support, the extensions the device lists, an unknown
extension, a prefix other than the builder's, and the compilation cache."""

from __future__ import annotations

import numpy as np
import pytest

from hal.errors import InvalidArgument
from tests.kits import extension_kit as kit
from tests.kits.devices import open_or_skip


@pytest.fixture(scope="module")
def test_extension():
    kit.unregister()
    ext = kit.register(with_kernels=True)
    yield ext
    kit.unregister()


@pytest.fixture(scope="module")
def with_fallback():
    return open_or_skip("opencl")


X = np.array([[0, 1, -2], [2**31 - 1, -(2**31), 7]], np.int32)


def test_kernel_runs_without_fallback(test_extension, cl_device):
    model = kit.chain_model(("NEGATE", "NEGATE", "NEGATE"))
    assert cl_device.get_supported_operations(model) == [True] * 3
    np.testing.assert_array_equal(kit.run(cl_device, model, X), np.negative(X))


def test_any_prefix_finds_the_kernel(test_extension, cl_device):
    model = kit.chain_model(("NEGATE",))
    kit.renumber(model, 0xBEEF)
    np.testing.assert_array_equal(kit.run(cl_device, model, X), np.negative(X))


def test_operation_without_kernel_falls_back(test_extension, with_fallback, cl_device):
    model = kit.chain_model(("NEGATE", "ADD_PARAM", "NEGATE"), param=3)
    assert with_fallback.get_supported_operations(model) == [True, False, True]
    rows = with_fallback.support_report(model)
    assert [r[1] for r in rows] == ["org.clnn.test:NEGATE", "org.clnn.test:ADD_PARAM",
                                    "org.clnn.test:NEGATE"]
    assert "no OpenCL kernel for org.clnn.test:ADD_PARAM" in rows[1][3]
    np.testing.assert_array_equal(kit.run(with_fallback, model, X), X - 3)
    with pytest.raises(InvalidArgument, match="org.clnn.test:ADD_PARAM .operation 1. is not "
                                              "supported"):
        cl_device.prepare_model(model)


def test_supported_extensions(test_extension, with_fallback, cl_device):
    listed = {e.name: e for e in with_fallback.get_supported_extensions()}
    info = listed[kit.NAME].operand_types[0]
    assert (info.type, info.is_tensor, info.byte_size) == (kit.TENSOR, True, 4)
    # without fallback only extensions whose every operation has kernels: not ADD_PARAM's
    assert kit.NAME not in {e.name for e in cl_device.get_supported_extensions()}


def test_unknown_extension(test_extension, with_fallback):
    model = kit.mixed_model("com.example.unknown")
    rows = with_fallback.support_report(model)
    assert [r[2] for r in rows] == [True, False]
    assert "extension this driver does not support" in rows[1][3]
    with pytest.raises(InvalidArgument, match="com.example.unknown"):
        with_fallback.prepare_model(model)


def test_compilation_cache_round_trip(test_extension, with_fallback, tmp_path):
    model = kit.chain_model(("NEGATE", "ADD_PARAM"), param=-9)
    kit.renumber(model, 0x51)
    n_model, n_data = with_fallback.get_number_of_cache_files_needed()
    model_cache = [tmp_path / f"m{k}" for k in range(n_model)]
    data_cache = [tmp_path / f"d{k}" for k in range(n_data)]
    token = bytes(range(32))
    with_fallback.prepare_model(model, model_cache=model_cache, data_cache=data_cache,
                                token=token)
    restored = with_fallback.prepare_model_from_cache(model_cache=model_cache,
                                                      data_cache=data_cache, token=token)
    from hal.builder import make_request, read_outputs

    req = make_request(model, [X])
    result = restored.execute_synchronously(req)
    assert result.status == 0, result.message
    out = read_outputs(model, req, result.output_shapes)[0]
    np.testing.assert_array_equal(out, (np.negative(X).astype(np.int64) - 9).astype(np.int32))


def test_support_lists_extension_operations_by_name(test_extension, capsys):
    from clnn.cli.support_extensions import run_extensions_cli

    assert run_extensions_cli(None) == 0
    out = capsys.readouterr().out
    assert "org.clnn.test (listed by: reference, opencl)" in out
    assert "org.clnn.test:NEGATE  OpenCL kernel" in out
    assert "org.clnn.test:ADD_PARAM  reference only (fallback)" in out
    assert "org.clnn.test:TENSOR_INT32  (tensor, element of 4 bytes)" in out
    import json

    assert run_extensions_cli(None, as_json=True) == 0
    (row,) = [r for r in json.loads(capsys.readouterr().out)["extensions"]
              if r["name"] == kit.NAME]
    assert [(op["name"], op["opencl_kernel"]) for op in row["operations"]] == [
        ("org.clnn.test:NEGATE", True), ("org.clnn.test:ADD_PARAM", False)]


def test_support_without_model_is_a_usage_error():
    import subprocess
    import sys

    from tests.kits.paths import REPO

    r = subprocess.run([sys.executable, "-m", "clnn", "support"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "support needs a model (or --extensions)" in r.stderr


@pytest.mark.parametrize("name", sorted(kit.MUTATIONS))
def test_mutation_is_invalid_argument_on_opencl(test_extension, with_fallback, name):
    mutate, message = kit.MUTATIONS[name]
    model = kit.chain_model(("NEGATE", "ADD_PARAM"))
    mutate(model)
    with pytest.raises(InvalidArgument, match=message) as e:
        with_fallback.prepare_model(model)
    assert e.value.status == 4  # INVALID_ARGUMENT


@pytest.mark.parametrize("name", ["reference", "opencl"])
def test_device_memories_of_extension_operands(test_extension, name):
    """A device memory (memory domains) for an extension input and output: allocated from
    the roles, filled, named by a request, read back."""
    from hal.errors import ErrorStatus
    from hal.types import BufferDesc, BufferRole, DataLocation, HostMemory, Request
    from hal.types import RequestArgument as Arg

    device = open_or_skip(name)
    model = kit.chain_model(("NEGATE", "ADD_PARAM"), param=1)
    prepared = device.prepare_model(model)
    x_mem = device.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    y_mem = device.allocate(BufferDesc(), [prepared], [], [BufferRole(0, 0)])
    assert x_mem.copy_from(HostMemory(X.tobytes())) == ErrorStatus.NONE
    result = prepared.execute_synchronously(
        Request([Arg(False, DataLocation(0, 0, 0))], [Arg(False, DataLocation(1, 0, 0))],
                [x_mem, y_mem]))
    assert result.status == ErrorStatus.NONE, result.message
    host = HostMemory(X.nbytes)
    assert y_mem.copy_to(host) == ErrorStatus.NONE
    got = np.frombuffer(bytes(host.view()), np.int32).reshape(X.shape)
    np.testing.assert_array_equal(got, (np.negative(X).astype(np.int64) + 1).astype(np.int32))
