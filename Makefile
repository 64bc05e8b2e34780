# Two commands on a fresh machine:  make demo  (the main job)   make test  (the tests)
# Each sets up what is missing: a virtualenv with the packages, and an OpenCL platform (PoCL).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CORPUS ?= ../shared/cts/public

.PHONY: demo test lint cts opencl bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

opencl:
	@scripts/ensure-opencl.sh

demo: $(VENV)/.installed opencl
	$(VENV)/bin/clnn demo

test: $(VENV)/.installed opencl
	$(VENV)/bin/ruff check .
	$(PY) -m pytest

cts: $(VENV)/.installed opencl
	$(VENV)/bin/clnn cts $(CORPUS) --device reference

bench: $(VENV)/.installed opencl
	$(PY) -m pip install -q -e '.[test,bench]'
	$(VENV)/bin/clnn bench gemm

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
