"""Kernels on a second OpenCL implementation: Oclgrind, the device simulator that reports
out-of-bounds accesses, data races and barrier divergence (``make check-kernels`` runs the whole
corpus; here a few corpus files of several kernel families). Oclgrind is reached only through
its ``oclgrind`` wrapper command, so the tests running beside these keep seeing PoCL.
Skipped when oclgrind is not installed or the corpus is absent."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clnn.suites import check_kernels
from clnn.suites.check_kernels import FATAL, log_messages, message_kernel, split_corpus

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("CLNN_CTS_CORPUS", ROOT.parent / "shared/cts/public"))
OCLGRIND = shutil.which("oclgrind")
ICD_LIBRARY = Path("/usr/lib/oclgrind/liboclgrind-rt-icd.so")

needs_oclgrind = pytest.mark.skipif(OCLGRIND is None, reason="oclgrind is not installed "
                                    "(apt-get install oclgrind; make test installs it as root)")

#: one or two small corpus files per kernel family: convolutions (direct and depthwise),
#: the GEMM of fully connected, pooling, softmax / log-softmax and the
#: normalizations (work-group reductions), resize, the data movers (concatenation, gather,
#: transpose, pad, strided slice, split, space-to-batch), reduce, argmax, select, tile, prelu,
#: quantized add, int32 abs
FILES = ["V1_0__conv_float.json.gz", "V1_0__depthwise_conv2d_float.json.gz",
         "V1_0__fully_connected_float.json.gz",
         "V1_0__max_pool_float_1.json.gz", "V1_0__avg_pool_quant8_4.json.gz",
         "V1_0__softmax_float_1.json.gz", "V1_2__log_softmax.json.gz",
         "V1_0__l2_normalization_2.json.gz", "V1_0__local_response_norm_float_4.json.gz",
         "V1_0__resize_bilinear.json.gz", "V1_0__concat_float_1.json.gz",
         "V1_2__gather_higher_rank.json.gz", "V1_1__transpose.json.gz", "V1_1__pad.json.gz",
         "V1_1__strided_slice.json.gz", "V1_2__split_float_1.json.gz",
         "V1_1__space_to_batch.json.gz", "V1_1__mean.json.gz", "V1_3__argmax_quant8_signed.json.gz",
         "V1_2__select_v1_2.json.gz", "V1_3__tile_quant8_signed.json.gz", "V1_2__prelu.json.gz",
         "V1_0__add_quant8.json.gz", "V1_3__abs_int32.json.gz"]


#: the slice of each simulated GPU profile (clnn.workgroups.PROFILES): a pooling of an
#: internal 5x50x70x3 tensor (a heavy launch, once split into groups of 250 on a 64 work-item
#: device), kernels that reduce over a work-group in local memory (softmax, L2 normalization,
#: top-k) and the convolutions; small files, as Oclgrind interprets every work-item
#: (``make check-kernels`` runs the whole corpus under each profile); the int8 depthwise
#: kernels' vector requantization (NHWC and NCHW, channel vectors of 2 and 4)
GPU_FILES = ["V1_0__max_pool_float_2.json.gz", "V1_0__softmax_float_1.json.gz",
             "V1_0__l2_normalization_2.json.gz", "V1_0__conv_float.json.gz",
             "V1_0__depthwise_conv2d_float.json.gz", "V1_2__topk_v2.json.gz",
             "V1_3__depthwise_conv2d_quant8_signed.json.gz"]


def _oclgrind(log: Path, *command, env=None, timeout=300):
    return subprocess.run([OCLGRIND, "--data-races", "--log", str(log), *command],
                          capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})))


_OUT_OF_BOUNDS = """
__kernel void shifted(__global const float *x, __global float *y)
{
    int i = get_global_id(0);
    y[i] = x[i + 1];   /* the last work-item reads one past the end */
}
"""


@needs_oclgrind
def test_oclgrind_reports_an_out_of_bounds_read(tmp_path):
    """The positive control: a kernel reading past the end of its OpenCL buffer is reported,
    with its name, in the log the checks scan; without it a clean run would prove nothing."""
    script = tmp_path / "oob.py"
    script.write_text(f"""
import numpy as np, pyopencl as cl
ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
q = cl.CommandQueue(ctx)
prg = cl.Program(ctx, '''{_OUT_OF_BOUNDS}''').build()
x = cl.Buffer(ctx, cl.mem_flags.COPY_HOST_PTR, hostbuf=np.arange(8, dtype=np.float32))
y = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 32)
prg.shifted(q, (8,), None, x, y)
q.finish()
print(cl.get_platforms()[0].name)
""")
    log = tmp_path / "oob.log"
    r = _oclgrind(log, sys.executable, str(script), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "Oclgrind"  # the wrapper hides every other platform
    messages = log_messages(log.read_text())
    assert messages, "Oclgrind did not report the out-of-bounds read"
    assert "Invalid read" in messages[0] and message_kernel(messages[0]) == "shifted"


@needs_oclgrind
@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"conformance corpus not found at {CORPUS}")
def test_corpus_kernels_clean_on_oclgrind(tmp_path):
    """Several kernel families run the corpus on the simulated device without fallback: every
    test passes and Oclgrind reports nothing (no invalid access, data race, divergence)."""
    part = tmp_path / "corpus"
    part.mkdir()
    for name in FILES:
        assert (CORPUS / name).exists(), f"corpus file {name} is missing from {CORPUS}"
        (part / name).symlink_to(CORPUS / name)
    log = tmp_path / "cts.log"
    r = _oclgrind(log, sys.executable, "-m", "clnn", "cts", str(part), "--device", "opencl",
                  "--no-fallback", "-j", "1", "-v", env={"CLNN_DEVICE": "oclgrind"})
    closing = re.search(r"(\d+) passed, (\d+) failed, (\d+) skipped", r.stdout)
    assert closing, f"clnn cts did not finish: {r.stdout[-2000:]} {r.stderr[-2000:]}"
    passed, failed, _ = map(int, closing.groups())
    assert failed == 0 and r.returncode == 0, r.stdout[-3000:]
    assert passed >= 2 * len(FILES)  # each file: at least one test, static and dynamic shapes
    assert FATAL not in r.stderr, r.stderr[-3000:]
    messages = log_messages(log.read_text())
    assert not messages, f"Oclgrind reported {len(messages)} error(s):\n" + "\n\n".join(
        messages[:5])


@needs_oclgrind
@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"conformance corpus not found at {CORPUS}")
@pytest.mark.parametrize("profile", ["desktop-gpu", "small-gpu"])
def test_corpus_slice_on_simulated_gpus(tmp_path, profile):
    """``make check-kernels``' GPU profiles on a slice: Oclgrind simulates the profile's
    work-group size and local memory, clnn's device runs under its whole profile (per-dimension
    limits, no fp64 on the small GPU); every test passes and Oclgrind reports nothing."""
    part = tmp_path / "corpus"
    part.mkdir()
    for name in GPU_FILES:
        assert (CORPUS / name).exists(), f"corpus file {name} is missing from {CORPUS}"
        (part / name).symlink_to(CORPUS / name)
    result = check_kernels.run_check(part, None, 1, tmp_path / "work", profile=profile)
    assert result["profile"] == profile
    assert result["failed"] == 0 and result["parts_failed"] == 0, result["failures"][:5]
    assert result["passed"] >= 2 * len(GPU_FILES)
    assert not result["messages"], "\n\n".join(result["messages"][:5])


@needs_oclgrind
@pytest.mark.skipif(not ICD_LIBRARY.exists() or not list(Path("/etc/OpenCL/vendors").glob(
    "*.icd")), reason="needs Oclgrind's ICD library and a registered ICD such as PoCL")
def test_simulator_is_never_the_default_device(tmp_path):
    """With Oclgrind listed first beside the real ICDs (a private vendors directory, not
    /etc/OpenCL/vendors), the default device is still a real one; by name Oclgrind is chosen."""
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "0-oclgrind.icd").write_text(f"{ICD_LIBRARY}\n")
    for icd in Path("/etc/OpenCL/vendors").glob("*.icd"):
        shutil.copy(icd, vendors / icd.name)
    code = ("from clnn.device import select_device, is_simulator\n"
            "p, d = select_device(None)\n"
            "print(p.name.strip(), is_simulator(p, d))\n"
            "p, d = select_device('oclgrind')\n"
            "print(p.name.strip(), is_simulator(p, d))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT), OCL_ICD_VENDORS=str(vendors)))
    assert r.returncode == 0, r.stderr
    default, named = r.stdout.splitlines()
    assert default.endswith("False") and "Oclgrind" not in default
    assert named == "Oclgrind True"


_SMALL_DEVICE = """
import numpy as np
from hal.builder import ModelBuilder, make_request, read_outputs
from hal.errors import ErrorStatus
from clnn.devices import open_device

b = ModelBuilder()
x = b.input("TENSOR_FLOAT32", [16, 16])
bias = b.constant(np.arange(16, dtype=np.float32))
y = b.op("ADD", [x, bias, b.int32(0)], b.tensor("TENSOR_FLOAT32", [16, 16]))
b.mark_output(y)
model = b.finish()
device = open_device("opencl", fallback=False)
pm = device.prepare_model(model)
xs = np.linspace(-4, 4, 256, dtype=np.float32).reshape(16, 16)
req = make_request(model, [xs])
r = pm.execute_synchronously(req)
assert r.status == ErrorStatus.NONE, r
np.testing.assert_array_equal(read_outputs(model, req, r.output_shapes)[0], xs + bias_values)
print(device.cl_device.max_work_group_size, "ok")
""".replace("bias_values", "np.arange(16, dtype=np.float32)")


@needs_oclgrind
def test_work_groups_fit_a_small_device(tmp_path):
    """A per-channel ADD asks for 16x16 work-groups (the fastest on PoCL); on a simulated
    device that runs at most 8 work-items per group the launch leaves the choice to the driver
    instead of failing, and the result is right."""
    script = tmp_path / "small.py"
    script.write_text(_SMALL_DEVICE)
    log = tmp_path / "small.log"
    r = subprocess.run([OCLGRIND, "--max-wgsize", "8", "--data-races", "--log", str(log),
                        sys.executable, str(script)], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["8", "ok"]
    assert not log_messages(log.read_text())


_INT8_GEMM = """
import numpy as np
from clnn.devices import open_device
from tests.cl.test_cl_fully_connected import fc_model
from tests.kits.cl_compare import compare

device = open_device("opencl", fallback=False)
for name in ("qs", "qa"):
    model, inputs = fc_model(name, np.random.default_rng(1), [6, 20], 45, 20, 1)
    compare(model, inputs, device, "quant")
print("ok")
"""


@needs_oclgrind
def test_int8_gemm_vector_requantization(tmp_path):
    """The int8 GEMM's full column panels requantize a vector at a time (gemm.cl.mako
    quant_full_panel); no corpus file has the output channels for a full panel, so a
    FULLY_CONNECTED of 45 units (int8 and uint8) against the reference: with the scalar-bound
    integer clamp, which Oclgrind computes wrongly past lane 0, its outputs were garbage."""
    script = tmp_path / "gemm.py"
    script.write_text(_INT8_GEMM)
    log = tmp_path / "gemm.log"
    r = _oclgrind(log, sys.executable, str(script), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["ok"]
    assert not log_messages(log.read_text())


_LOG = """
Invalid read of size 4 at global memory address 0x1000000000020
\tKernel: shifted
\tEntity: Global(7,0,0) Local(7,0,0) Group(0,0,0)
\t  %5 = load float, float addrspace(1)* %4, align 4
\t

\tAt line 1 of input.cl:

Read-write data race at local memory address 0x0
\tKernel: instance_normalization
\tFirst entity:  Global(1,0,0) Local(1,0,0) Group(0,0,0)
"""


def test_log_parsing_and_corpus_split(tmp_path):
    """What the checks count: each diagnostic block with its kernel; the corpus parts hold
    every file exactly once."""
    blocks = log_messages(_LOG)
    assert [message_kernel(b) for b in blocks] == ["shifted", "instance_normalization"]
    assert blocks[1].startswith("Read-write data race") and "input.cl" in blocks[0]
    for k, size in enumerate([900, 10, 500, 300, 20, 700, 5]):
        (tmp_path / f"f{k}.json.gz").write_bytes(b"x" * size)
    parts = split_corpus(tmp_path, 3)
    names = sorted(f.name for part in parts for f in part)
    assert len(parts) == 3 and names == sorted(f"f{k}.json.gz" for k in range(7))
    assert max(sum(f.stat().st_size for f in p) for p in parts) <= 900  # balanced by size


def test_missing_oclgrind_is_named(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(check_kernels, "oclgrind_path", lambda: None)
    assert check_kernels.main([str(tmp_path)]) == 2
    assert "apt-get install -y oclgrind" in capsys.readouterr().err
