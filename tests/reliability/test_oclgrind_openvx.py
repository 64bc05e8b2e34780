"""The org.clnn.openvx kernels on Oclgrind (out-of-bounds accesses, data races): one case of
every kernel and storage type of tests/cl/test_cl_openvx_ops.py, run in a child pytest under
the ``oclgrind`` wrapper with CLNN_DEVICE=oclgrind, must pass with an empty Oclgrind log.
Skipped when oclgrind is not installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clnn.suites.check_kernels import log_messages

ROOT = Path(__file__).resolve().parents[2]
OCLGRIND = shutil.which("oclgrind")

#: test ids: convolution (float, int8 int accumulator, int16 long, unshared and no bias),
#: deconvolution, fully connected, both pools, ROI pooling, softmax, LRN, every activation path
CASES = ["conv-f32-00-1", "conv-i8-10-0", "conv-i16-11-1", "conv-u8-01-2", "deconv-u8-01-0",
         "deconv-i16-10-1", "fc-i8-11", "pool-i16-avg-ceil", "pool-u8-max-floor", "roi-i8",
         "softmax-i16-rank4", "lrn-i16-same-7", "lrn-u8-across-3", "act-i8-ABS",
         "act-u8-SQUARE", "act-i16-BRELU", "act-i16-LOGISTIC", "act-f32-SOFTRELU"]


@pytest.mark.skipif(OCLGRIND is None, reason="oclgrind is not installed")
def test_openvx_kernels_are_clean_on_oclgrind(tmp_path):
    log = tmp_path / "oclgrind.log"
    selected = [f"tests/cl/test_cl_openvx_ops.py::test_matches_header_equation[{c}]"
                for c in CASES]
    run = subprocess.run(
        [OCLGRIND, "--data-races", "--log", str(log), sys.executable, "-m", "pytest", "-q",
         "-p", "no:cacheprovider", *selected],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, PYTHONPATH=str(ROOT), CLNN_DEVICE="oclgrind"))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert f"{len(CASES)} passed" in run.stdout, run.stdout[-2000:]
    messages = log_messages(log.read_text()) if log.exists() else []
    assert not messages, "\n\n".join(messages)
