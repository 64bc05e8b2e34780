"""Packaging: pyproject.toml's dependencies and extras match the imports of the sources (both
ways), the license metadata, and an installed clnn (not this checkout) that runs ``clnn demo``
and never looks for the corpus beside site-packages."""

from __future__ import annotations

import ast
import functools
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10 (the test extra installs tomli there)
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("CLNN_CTS_CORPUS", REPO.parent / "shared/cts/public"))
FIRST_PARTY = {"clnn", "hal", "tests", "benchmarks", "tools"}
#: listed packages that are used but never imported: where, and the text that uses them (ruff
#: is run by make test; setuptools>=77 is the build backend the install below runs in-process)
NOT_IMPORTED = {"ruff": ("Makefile", "ruff check ."),
                "setuptools": ("tests/tools/test_packaging.py", "--no-build-isolation"),
                "pytest-xdist": ("Makefile", "--dist loadfile")}


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req_name(req: str) -> str:
    return _norm(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req).group(1))


def _extra(project: dict, name: str, seen=()) -> set[str]:
    """The distributions an extra brings, self-references (``clnn[litert]``) followed."""
    out = set()
    for req in project["optional-dependencies"][name]:
        ref = re.fullmatch(r"\s*clnn\[([a-z0-9,-]+)\]\s*", req)
        if ref:
            for sub in ref.group(1).split(","):
                if sub not in seen:
                    out |= _extra(project, sub, (*seen, name))
        else:
            out.add(_req_name(req))
    return out


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(top-level module, eager) of each import in a file: eager when it runs on import of the
    module (module level, not under ``try``); function-level ones, ``importlib`` calls with a
    literal name and the imports of scripts held in strings (run with ``python -c``, as
    clnn/bench/bench_gemm.py does) count too, as lazy."""
    return _imports_of(ast.parse(path.read_text(), str(path)))


def _script_imports(text: str) -> list[tuple[str, bool]]:
    if "\n" not in text or not re.search(r"^\s*(import|from) \w", text, re.M):
        return []
    try:
        tree = ast.parse(text)
    except SyntaxError:  # prose that mentions an import
        return []
    return [(mod, False) for mod, _ in _imports_of(tree)]


def _imports_of(tree) -> list[tuple[str, bool]]:
    out = []

    def visit(node, eager):
        for child in ast.iter_child_nodes(node):
            lazy_here = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Try,
                                           ast.Lambda))
            if isinstance(child, ast.Import):
                out.extend((a.name.split(".")[0], eager) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                out.append((child.module.split(".")[0], eager))
            elif isinstance(child, ast.Call) and child.args and (
                    getattr(child.func, "attr", None) == "import_module"
                    or getattr(child.func, "id", None) == "__import__"):
                arg = child.args[0]
                if isinstance(arg, ast.JoinedStr) and arg.values:
                    arg = arg.values[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value:
                    out.append((arg.value.split(".")[0], False))
            elif isinstance(child, ast.Constant) and isinstance(child.value, str):
                out.extend(_script_imports(child.value))
            visit(child, eager and not lazy_here)

    visit(tree, True)
    return out


def _third_party(roots) -> dict[str, dict[str, bool]]:
    """{import name: {file: eager}} of the modules under ``roots`` that are neither the
    standard library nor this repository's."""
    found: dict[str, dict[str, bool]] = {}
    for root in roots:
        for path in sorted((REPO / root).rglob("*.py")):
            for mod, eager in _imports(path):
                if mod in sys.stdlib_module_names or mod in FIRST_PARTY or mod == "__future__":
                    continue
                files = found.setdefault(mod, {})
                rel = str(path.relative_to(REPO))
                files[rel] = files.get(rel, False) or eager
    return found


def _dist(module: str) -> set[str]:
    """The installed distributions that provide an import name; for one not installed here
    (tomli, on Python >= 3.11), the distribution of the same name."""
    return {_norm(d) for d in _installed().get(module, [module])}


@functools.lru_cache(maxsize=1)
def _installed() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def test_license_metadata_is_spdx_with_the_license_file():
    project = _pyproject()["project"]
    assert project["license"] == "Apache-2.0"  # an SPDX expression, not the deprecated table
    assert project["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert not any(c.startswith("License ::") for c in project["classifiers"])  # PEP 639
    requires = _pyproject()["build-system"]["requires"]
    assert any(re.fullmatch(r"setuptools>=(\d+)", r) and int(r.split(">=")[1]) >= 77
               for r in requires), requires
    assert set(project["urls"]) >= {"Homepage", "Source", "Issues"}


def test_every_third_party_import_is_a_listed_dependency():
    project = _pyproject()["project"]
    core = {_req_name(r) for r in project["dependencies"]}
    extras = {name: _extra(project, name) for name in project["optional-dependencies"]}
    anywhere = core.union(*extras.values())
    problems = []
    # the package: what runs on import must be a dependency; lazy imports may be an extra's
    for mod, files in _third_party(["clnn", "hal"]).items():
        need = core if any(files.values()) else anywhere
        if not _dist(mod) & need:
            problems.append(f"{mod} ({', '.join(files)}) is in neither the dependencies "
                            f"{'' if need is core else 'nor an extra'}")
    # what the tests, the dev tools and the benchmarks import comes with their extra
    for roots, extra in ((["tests", "tools"], "test"), (["benchmarks"], "bench")):
        for mod, files in _third_party(roots).items():
            if not _dist(mod) & (core | extras[extra]):
                problems.append(f"{mod} ({', '.join(files)}) is not in the {extra} extra")
    for name, files in _third_party(["clnn/bench"]).items():
        if any(f.startswith("clnn/bench/bench_") for f in files) and not (
                _dist(name) & (core | extras["bench"])):
            problems.append(f"{name}, imported by clnn bench, is not in the bench extra")
    assert not problems, "\n".join(problems)


def test_every_listed_package_is_imported_somewhere():
    project = _pyproject()["project"]
    listed = {_req_name(r) for r in project["dependencies"]}
    for name in project["optional-dependencies"]:
        listed |= _extra(project, name)
    imported = set()
    for mod in _third_party(["clnn", "hal", "tests", "tools", "benchmarks"]):
        imported |= _dist(mod)
    for name, (where, use) in NOT_IMPORTED.items():
        assert use in (REPO / where).read_text(), (name, where, use)
    unused = listed - imported - set(NOT_IMPORTED)
    assert not unused, f"listed but imported nowhere: {sorted(unused)}"


def test_the_import_scan_sees_lazy_and_dynamic_imports(tmp_path, monkeypatch):
    # the checks above are only as good as the scan: a control file of each kind
    src = tmp_path / "m.py"
    src.write_text("import numpy\ntry:\n    import rich\nexcept ImportError:\n    rich = None\n"
                   "def f():\n    import tqdm.auto\n    from mako import template\n"
                   "    importlib.import_module(f'tflite.{x}')\n"
                   "SCRIPT = 'import os\\nfrom pooch import retrieve\\n'\n"
                   "DOC = 'Say\\nimport what you need, from where\\n'\n")
    assert sorted(_imports(src)) == [("mako", False), ("numpy", True), ("os", False),
                                     ("pooch", False), ("rich", False), ("tflite", False),
                                     ("tqdm", False)]


# --- an installed clnn, in a fresh virtual environment ---------------------------------------

SOURCES = ["clnn", "hal", "pyproject.toml", "README.md", "LICENSE"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with clnn installed from a copy of the sources (``pip install .``, no
    network: the dependencies and setuptools come from the running environment's
    site-packages, added by a .pth file; its own .pth files, such as an editable install of
    this checkout, are not read)."""
    base = tmp_path_factory.mktemp("install")
    src = base / "src"
    src.mkdir()
    for name in SOURCES:
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy2)(
            REPO / name, src / name,
            **({"ignore": shutil.ignore_patterns("__pycache__")} if (REPO / name).is_dir()
               else {}))
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; "
                              "print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "zz_parent_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                           "-q", "--no-build-isolation", "--no-deps", "--no-index", str(src)],
                          capture_output=True, text=True, env=_clean_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the build's warnings (license format and the like) come back with -v only: build once
    # more, verbosely, into a wheel directory, and keep the text for the test below
    wheel = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-build-isolation",
                            "--no-deps", "--no-index", "-w", str(base / "wheel"), str(src)],
                           capture_output=True, text=True, env=_clean_env())
    assert wheel.returncode == 0, wheel.stderr[-3000:]
    return {"venv": venv, "clnn": venv / "bin" / "clnn", "purelib": Path(purelib),
            "work": _workdir(base), "build_log": wheel.stdout + wheel.stderr}


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "CLNN_CTS_CORPUS", "VIRTUAL_ENV"}}
    env.update(extra)
    return env


def _workdir(base: Path) -> Path:
    """A directory outside the repository with a ``../shared/cts/public`` beside it, so that an
    installed clnn that looked there would be caught."""
    work = base / "elsewhere"
    work.mkdir()
    (base / "shared" / "cts" / "public").mkdir(parents=True)
    return work


def _run(installed, *args, **env):
    return subprocess.run([str(installed["clnn"]), *args], cwd=installed["work"],
                          env=_clean_env(CLNN_CACHE_DIR=str(installed["work"] / "cache"), **env),
                          capture_output=True, text=True, timeout=300)


def test_the_installed_package_is_a_copy_with_its_templates(installed):
    proc = subprocess.run([str(installed["venv"] / "bin" / "python"), "-c",
                           "import clnn, hal; print(clnn.__file__); print(hal.__file__)"],
                          cwd=installed["work"], env=_clean_env(), capture_output=True,
                          text=True, check=True)
    for line in proc.stdout.split():
        assert Path(line).is_relative_to(installed["purelib"]), line
    assert list((installed["purelib"] / "clnn" / "templates").glob("*.cl.mako"))
    meta = next(installed["purelib"].glob("clnn-*.dist-info"))
    text = (meta / "METADATA").read_text()
    assert "License-Expression: Apache-2.0" in text
    assert (meta / "licenses" / "LICENSE").is_file()


def test_the_build_gives_no_setuptools_warning(installed):
    log = installed["build_log"]
    assert "Created wheel for clnn" in log
    bad = [line for line in log.splitlines()
           if re.search(r"Warning|deprecat|!!", line) and "byte-compil" not in line]
    assert not bad, "\n".join(bad)


def test_clnn_demo_runs_from_outside_the_repository(installed):
    proc = _run(installed, "demo")
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())
    assert "7/7" in out and "ms" in out


def test_installed_support_never_looks_for_the_corpus_beside_the_package(installed):
    proc = _run(installed, "support", "add")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "not run from a source checkout" in proc.stderr and "CLNN_CTS_CORPUS" in proc.stderr
    assert "site-packages" not in proc.stderr


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")
def test_installed_support_uses_the_corpus_named_by_the_environment(installed):
    proc = _run(installed, "support", "add", CLNN_CTS_CORPUS=str(CORPUS))
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"\bADD\b.*\byes\b", proc.stdout), proc.stdout
