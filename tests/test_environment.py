"""The test session runs without the caller's device settings (tests/conftest.py), and the
device reads the environment in one module only (clnn/options.py), read from the source."""

import ast
import os
from pathlib import Path

from tests.conftest import KEPT, _caller_settings


def test_no_caller_setting_reaches_the_tests():
    assert _caller_settings(os.environ) == []


def test_which_variables_count_as_caller_settings():
    environ = {"CLNN_TUNE": "off", "CLNN_CTS_CORPUS": "/c", "CLNN_CACHE_DIR": "/d",
               "PYOPENCL_CTX": "0", "OPENBLAS_L2_SIZE": "1", "OPENBLAS_CORETYPE": "Haswell",
               "POCL_DEVICES": "pthread", "HOME": "/h"}
    assert _caller_settings(environ) == ["CLNN_TUNE", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                         "PYOPENCL_CTX"]
    assert set(KEPT) == {"CLNN_CTS_CORPUS", "CLNN_CACHE_DIR"}


# ------------------------------------------------- the environment is read in one module

ROOT = Path(__file__).resolve().parents[1]
#: the one device-side module that reads the environment (from_environ and its helpers)
ENVIRONMENT_MODULE = "clnn/options.py"
#: the lab around the device (the command line, benchmarks, test suites, model fetchers): entry
#: points and tools, which may read the environment
LAB = ("clnn/cli/", "clnn/bench/", "clnn/suites/", "clnn/models/")


def environment_reads(source: str) -> list[int]:
    """Lines of ``source`` that read or change the process environment: ``os.environ``,
    ``os.getenv`` / ``os.putenv`` / ``os.unsetenv``, or those names imported from ``os``."""
    names = {"environ", "getenv", "putenv", "unsetenv", "environb", "getenvb"}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in names and \
                isinstance(node.value, ast.Name) and node.value.id == "os":
            found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and \
                any(a.name in names for a in node.names):
            found.append(node.lineno)
    return found


def test_only_clnn_options_reads_the_environment():
    """No device module (clnn/ outside the lab, hal/) reads os.environ: options come from
    clnn.options.DeviceOptions, which the entry points make with from_environ."""
    offenders = []
    for pkg in ("clnn", "hal"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == ENVIRONMENT_MODULE or rel.startswith(LAB):
                continue
            offenders += [f"{rel}:{line}" for line in environment_reads(path.read_text())]
    assert offenders == [], f"environment read outside {ENVIRONMENT_MODULE}: {offenders}"
    assert environment_reads((ROOT / ENVIRONMENT_MODULE).read_text())  # (the rule's one place)


def test_the_environment_rule_finds_every_form():
    assert environment_reads("import os\nx = os.environ.get('A')\n") == [2]
    assert environment_reads("import os\nos.getenv('A')\n") == [2]
    assert environment_reads("from os import environ\n") == [1]
    assert environment_reads("import os\nos.path.join('a')\n") == []
