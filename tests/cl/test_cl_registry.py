"""The kernel registry and the template machinery: families share the HAL's stems, templates
render with strict undefined names (a missing parameter names template, def and parameters),
DeviceOptions.dump_cl dumps rendered programs, the kernel key holds only source-changing choices."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from clnn.kernels import kernel_registrations
from clnn.program_cache import render
from hal.operations import registrations
from tests.kits.one_op_models import make_request, one_op_model, scalar, tensor
from tests.kits.paths import REPO

TEMPLATES = str(REPO / "clnn" / "templates")


def test_families_share_the_hal_stems():
    hal = registrations()
    for op, reg in kernel_registrations().items():
        assert op in hal, f"{op.name} has a kernel but no HAL registration"
        assert reg.family == hal[op].family, (op.name, reg.family, hal[op].family)


#: families whose every launch is a shared kernel: the GEMM (gemm.cl.mako, planned by
#: kernels/_gemm.py), the strided copy (strided_copy.cl.mako, support.launch_strided_copy) or,
#: for sequence_lstm, the LSTM cell of kernels/lstm.py (lstm.cl.mako)
SHARED_ONLY = {"batch_matmul", "fully_connected", "grouped_conv2d", "channel_shuffle",
               "concatenation", "depth_space", "reshape", "slice", "split", "sequence_lstm"}
KERNELS = os.path.join(REPO, "clnn", "kernels")


def _launched_templates(family: str) -> set[str]:
    """The templates a kernel family's module names in its b.launch(...) calls."""
    with open(os.path.join(KERNELS, f"{family}.py")) as f:
        return set(re.findall(r"\.launch\(\s*\"(\w+)\"", f.read()))


def test_every_family_has_its_template():
    families = {r.family for r in kernel_registrations().values()}
    assert len(families) >= 30
    missing = [f for f in sorted(families - SHARED_ONLY)
               if not os.path.exists(os.path.join(TEMPLATES, f"{f}.cl.mako"))]
    assert not missing, f"kernel families without a template: {missing}"
    # the shared-only list stays honest: each is a family, has no template of its own and
    # launches nothing itself
    assert SHARED_ONLY <= families
    for f in sorted(SHARED_ONLY):
        assert not os.path.exists(os.path.join(TEMPLATES, f"{f}.cl.mako")), f
        assert not _launched_templates(f), f
    for shared in ("gemm", "strided_copy"):
        assert os.path.exists(os.path.join(TEMPLATES, f"{shared}.cl.mako"))


def test_launches_name_existing_templates():
    for f in sorted({r.family for r in kernel_registrations().values()} | {"_gemm", "support"}):
        for t in _launched_templates(f):
            assert os.path.exists(os.path.join(TEMPLATES, f"{t}.cl.mako")), (f, t)


def test_strict_undefined_names_the_template_and_def():
    with pytest.raises(RuntimeError) as e:
        render("broadcast", "binary", {"op": "ADD", "dt": "f32"})  # bcast missing
    msg = str(e.value)
    assert "broadcast.cl.mako" in msg and "binary" in msg and "'op': 'ADD'" in msg


def test_rendered_source_has_common_helpers():
    src = render("activation", "unary", {"op": "RELU", "dt": "f16"})
    assert "clnn_mbqm" in src and "vload_half" in src and "vstore_half" in src


def test_dump_and_key_without_shapes(cl_device, tmp_path):
    """Two shapes and two quantizations of one op share one program (one key); dumps land in
    the ``dump_cl`` directory."""
    from clnn import program_cache
    from clnn.device import ClDevice
    from clnn.options import DeviceOptions

    # a new context: its program cache starts empty
    cl_device = ClDevice(options=DeviceOptions(dump_cl=str(tmp_path)))
    before = dict(program_cache.STATS)
    for n, scale in ((3, 0.5), (7, 0.25)):
        q = dict(scale=scale, zero_point=3)
        m = one_op_model("ADD", [tensor("TENSOR_QUANT8_ASYMM", [n], **q),
                                 tensor("TENSOR_QUANT8_ASYMM", [n], **q), scalar("INT32", 1)],
                         [tensor("TENSOR_QUANT8_ASYMM", [n], **q)])
        pm = cl_device.prepare_model(m)
        x = np.arange(n, dtype=np.uint8)
        assert pm.execute_synchronously(make_request(m, [x, x])).status == 0
    # (rendered, or read from the store of rendered sources: clnn.program_cache.kernel_parts)
    made = program_cache.STATS["rendered"] + program_cache.STATS["sources_read"]
    assert made - before["rendered"] - before["sources_read"] == 1
    dumped = list(tmp_path.glob("broadcast.binary.*.cl"))
    assert len(dumped) == 1 and "__kernel void binary" in dumped[0].read_text()


def test_data_movement_families_share_one_copy_program():
    """TRANSPOSE, RESHAPE, SLICE and CONCATENATION of float32 tensors launch the same strided
    copy: one program per vector width is rendered and built for all four (element by element:
    TRANSPOSE and SLICE; vectors of 4: RESHAPE's 24 contiguous elements and CONCATENATION's
    runs of 12, support.copy_vector), and each result is right."""
    pytest.importorskip("pyopencl")
    from clnn import program_cache
    from clnn.devices import open_device
    from hal.builder import ModelBuilder, make_request, read_outputs

    # a new context (its program cache starts empty), every operation on the kernels
    dev = open_device("opencl", fallback=False)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    cases = {
        "TRANSPOSE": (lambda b, i: [i, b.constant(np.array([2, 0, 1], np.int32))], [4, 2, 3],
                      x.transpose(2, 0, 1)),
        "RESHAPE": (lambda b, i: [i, b.constant(np.array([6, 4], np.int32))], [6, 4],
                    x.reshape(6, 4)),
        "SLICE": (lambda b, i: [i, b.constant(np.array([1, 1, 0], np.int32)),
                                b.constant(np.array([1, 2, 3], np.int32))], [1, 2, 3],
                  x[1:, 1:, :3]),
        "CONCATENATION": (lambda b, i: [i, i, b.int32(1)], [2, 6, 4],
                          np.concatenate([x, x], axis=1)),
    }
    def made():  # rendered, or read from the store of rendered sources
        return program_cache.STATS["rendered"] + program_cache.STATS["sources_read"]

    before = made()
    for op, (inputs, out_shape, want) in cases.items():
        b = ModelBuilder()
        i = b.input("TENSOR_FLOAT32", list(x.shape))
        b.op(op, inputs(b, i), b.output("TENSOR_FLOAT32", out_shape))
        m = b.finish()
        assert dev.get_supported_operations(m) == [True], op
        pm = dev.prepare_model(m)
        req = make_request(m, [x])
        r = pm.execute_synchronously(req)
        assert r.status == 0, (op, r)
        np.testing.assert_array_equal(read_outputs(m, req, r.output_shapes)[0], want, op)
    assert made() - before == 2
