"""Heavy imports stay off the commands that do not need them: ``import clnn`` / ``import hal``
and ``clnn run --help`` import neither NumPy nor pyopencl; ``clnn devices`` (clnn.device)
imports neither the kernels, the prepared model nor the HAL's operations."""

import os
import subprocess
import sys

from tests.kits.paths import REPO


def _modules_after(code: str) -> set:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    code += "\nimport sys\nprint(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True).stdout
    return set(out.split())


def test_import_clnn_and_hal_is_light():
    mods = _modules_after("import clnn, hal\nassert hal.__version__ and clnn.__version__")
    assert not {"numpy", "pyopencl", "hal.builder", "hal.types"} & mods


def test_hal_names_still_resolve():
    mods = _modules_after("from hal import ModelBuilder, OperandType\nimport hal\n"
                          "assert hal.validation.validate_model and ModelBuilder and OperandType")
    assert {"hal.builder", "hal.types", "hal.validation"} <= mods


def test_run_help_is_light():
    mods = _modules_after("from clnn.cli.main import main\n"
                          "import contextlib, io\n"
                          "with contextlib.redirect_stdout(io.StringIO()):\n"
                          "    assert main(['run', '--help']) == 0")
    assert not {"numpy", "pyopencl"} & mods


def test_device_module_leaves_the_kernels_alone():
    mods = _modules_after("import clnn.device")
    assert not {"clnn.kernels", "clnn.prepared_model", "hal.operations", "hal.validation",
                "clnn.compilation_cache"} & mods
