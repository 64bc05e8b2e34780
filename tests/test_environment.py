"""The test session runs without the caller's device settings (tests/conftest.py)."""

import os

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
