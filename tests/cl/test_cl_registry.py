"""The kernel registry and the template machinery: families share the HAL's stems, templates
render with strict undefined names (a missing parameter names template, def and parameters),
CLNN_DUMP_CL dumps rendered programs, the kernel key holds only source-changing choices."""

from __future__ import annotations

import os

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


#: families whose every launch is the shared GEMM (gemm.cl.mako, planned by kernels/_gemm.py)
GEMM_ONLY = {"batch_matmul", "fully_connected", "grouped_conv2d"}


def test_every_family_has_its_template():
    families = {r.family for r in kernel_registrations().values()}
    assert len(families) >= 30
    missing = [f for f in sorted(families - GEMM_ONLY)
               if not os.path.exists(os.path.join(TEMPLATES, f"{f}.cl.mako"))]
    assert not missing, f"kernel families without a template: {missing}"
    assert os.path.exists(os.path.join(TEMPLATES, "gemm.cl.mako"))


def test_strict_undefined_names_the_template_and_def():
    with pytest.raises(RuntimeError) as e:
        render("broadcast", "binary", {"op": "ADD", "dt": "f32"})  # bcast missing
    msg = str(e.value)
    assert "broadcast.cl.mako" in msg and "binary" in msg and "'op': 'ADD'" in msg


def test_rendered_source_has_common_helpers():
    src = render("activation", "unary", {"op": "RELU", "dt": "f16"})
    assert "clnn_mbqm" in src and "vload_half" in src and "vstore_half" in src


def test_dump_and_key_without_shapes(cl_device, tmp_path, monkeypatch):
    """Two shapes and two quantizations of one op share one program (one key); dumps land in
    CLNN_DUMP_CL."""
    from clnn import program_cache
    from clnn.device import ClDevice

    cl_device = ClDevice()  # a new context: its program cache starts empty
    monkeypatch.setenv("CLNN_DUMP_CL", str(tmp_path))
    before = dict(program_cache.STATS)
    for n, scale in ((3, 0.5), (7, 0.25)):
        q = dict(scale=scale, zero_point=3)
        m = one_op_model("ADD", [tensor("TENSOR_QUANT8_ASYMM", [n], **q),
                                 tensor("TENSOR_QUANT8_ASYMM", [n], **q), scalar("INT32", 1)],
                         [tensor("TENSOR_QUANT8_ASYMM", [n], **q)])
        pm = cl_device.prepare_model(m)
        x = np.arange(n, dtype=np.uint8)
        assert pm.execute_synchronously(make_request(m, [x, x])).status == 0
    assert program_cache.STATS["rendered"] - before["rendered"] == 1
    dumped = list(tmp_path.glob("broadcast.binary.*.cl"))
    assert len(dumped) == 1 and "__kernel void binary" in dumped[0].read_text()
