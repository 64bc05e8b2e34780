# Two commands on a fresh machine:  make demo  (the main job)   make test  (the tests)
# make test-full: the tests with the long suites whole (tests marked slow).
# Each sets up what is missing: a virtualenv with the packages (the kernel templates compiled
# beside them), and an OpenCL platform (PoCL).
# make check-kernels: the conformance corpus on Oclgrind, which reports out-of-bounds accesses,
# data races and barrier divergence in the kernels (slow: see docs/kernels-on-oclgrind.md).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CORPUS ?= ../shared/cts/public
CHECK_JOBS ?= 2
CHECK_ARGS ?=
CHECK_PROFILE ?= all

.PHONY: demo test test-full lint cts opencl oclgrind check-kernels bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m compileall -q clnn hal
	touch $@

# the kernel templates compiled to Python modules beside the installed packages (a process
# then compiles none: clnn.program_cache.compile_templates), again as a template changes
$(VENV)/.templates: $(VENV)/.installed $(wildcard clnn/templates/*.mako)
	$(PY) -c 'from clnn.program_cache import compile_templates; compile_templates()'
	touch $@

opencl:
	@scripts/ensure-opencl.sh

oclgrind:
	@scripts/ensure-oclgrind.sh

demo: $(VENV)/.templates opencl
	$(VENV)/bin/clnn demo

# pytest with a worker per core and one more, one test file each: a cold run is mostly
# single-threaded kernel compiles, which the workers overlap; the extra worker fills the time
# another waits (subprocesses, device waits)
test: $(VENV)/.templates opencl
	@scripts/ensure-oclgrind.sh --optional
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n $$(( $$(nproc) + 1 )) --dist loadfile

# everything make test runs, and the long suites whole (tests marked slow)
test-full: $(VENV)/.templates opencl
	@scripts/ensure-oclgrind.sh --optional
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n $$(( $$(nproc) + 1 )) --dist loadfile -m "slow or not slow"

cts: $(VENV)/.templates opencl
	$(VENV)/bin/clnn cts $(CORPUS) --device reference

check-kernels: $(VENV)/.templates opencl oclgrind
	$(PY) -m clnn.suites.check_kernels $(CORPUS) -j $(CHECK_JOBS) --profile $(CHECK_PROFILE) $(CHECK_ARGS)

bench: $(VENV)/.templates opencl
	$(PY) -m pip install -q -e '.[test,bench]'
	$(VENV)/bin/clnn bench gemm

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
