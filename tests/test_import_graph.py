"""The layout's import rules, read from the source (every import, function-level ones too):
no import cycle anywhere in ``hal/`` or ``clnn/``; ``hal`` never imports pyopencl or ``clnn``;
the OpenCL device (``clnn/`` outside the lab packages) imports ``hal.reference`` only for the
fallback executor; ``clnn/``'s top level holds the device modules, the public API
(``clnn.api``, ``clnn.devices``) and the options; the device imports none of the lab: the
command line (``clnn.cli``), the benchmarks (``clnn.bench``), the test suites
(``clnn.suites``) and the model fetchers (``clnn.models``), which may import the device."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hal", "clnn")
#: the programs around the device: they import the device, the device never imports them
LAB = ("clnn.cli", "clnn.bench", "clnn.suites", "clnn.models")
#: the entry point of ``python -m clnn``: the command line
ENTRY_POINTS = {"clnn.__main__"}
#: what the public API imports from the lab, inside Model's methods only (never at import, never
#: on the way of load and run), and why
API_LAB_ALLOWED = {
    "clnn.cli.run": "Model.profile and Model.compare: the run command's profile, comparison and "
                    "seeded inputs, and ai-edge-litert as the reference (LiteRtRunner)",
    "clnn.cli.onnx_run": "Model.compare against onnxruntime (OrtRunner)",
    "clnn.suites.divergence": "Model.compare(per_op=True): the per-operation divergence report",
}
#: device modules that may import hal.reference, and why
REFERENCE_ALLOWED = {
    "clnn.plan": "the fallback: partitions without kernels run on the reference executor",
    "clnn.capabilities": "capabilities are ratios to the reference device on the same workload",
    "clnn.api": "Model.compare checks against the reference device",
    "clnn.devices": "open_device('reference') is the reference device",
}


def _modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(path: Path, module: str, is_package: bool, at_import: bool = False) -> set[str]:
    """Every name an import statement of the file imports (absolute): ``from a import b`` gives
    ``a.b`` (the module a.b when there is one, else the name b of module a). ``at_import``: only
    the imports that run when the module is imported (none inside a function)."""
    names = set()
    functions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            if at_import and isinstance(child, functions):
                continue
            if isinstance(child, ast.Import):
                names.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    pkg = module.split(".") if is_package else module.split(".")[:-1]
                    pkg = pkg[: len(pkg) - (child.level - 1)]
                    base = ".".join(pkg + ([base] if base else []))
                names.update(f"{base}.{a.name}" if a.name != "*" else base for a in child.names)
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return names


def import_graph(at_import: bool = False) -> dict[str, set[str]]:
    mods = _modules()
    graph = {}
    for name, path in mods.items():
        deps = set()
        for target in _imports(path, name, path.name == "__init__.py", at_import):
            # "from a.b import c": the module a.b.c when it is one, else a.b
            while target and target not in mods:
                target = target.rpartition(".")[0]
            if target and target != name:
                deps.add(target)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_import_cycles():
    cycles = _cycles(import_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_hal_imports_neither_pyopencl_nor_clnn():
    for name, path in _modules().items():
        if not name.startswith("hal"):
            continue
        bad = {t for t in _imports(path, name, path.name == "__init__.py")
               if t.split(".")[0] in ("pyopencl", "clnn")}
        assert not bad, f"{name} imports {sorted(bad)}"


def test_device_imports_reference_only_for_fallback():
    for name, path in _modules().items():
        if not name.startswith("clnn") or _in_lab(name):
            continue
        uses = {t for t in _imports(path, name, path.name == "__init__.py")
                if t == "hal.reference" or t.startswith("hal.reference.")}
        if uses:
            assert name in REFERENCE_ALLOWED, f"{name} imports {sorted(uses)}"


def _in_lab(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in LAB)


def test_device_imports_none_of_the_lab():
    """The device (every clnn module outside the lab, the API's methods aside) imports neither
    the command line, nor the benchmarks, nor the test suites, nor the model fetchers."""
    bad = {}
    for name, deps in import_graph().items():
        if not name.startswith("clnn") or _in_lab(name) or name in ENTRY_POINTS:
            continue
        lab = {d for d in deps if _in_lab(d)}
        if name == "clnn.api":
            lab -= set(API_LAB_ALLOWED)
        if lab:
            bad[name] = sorted(lab)
    assert not bad, f"device modules import the lab: {bad}"


def test_api_imports_the_lab_only_inside_model_methods():
    assert not {d for d in import_graph(at_import=True)["clnn.api"] if _in_lab(d)}


def test_lab_rule_finds_a_device_import_of_the_lab():
    assert _in_lab("clnn.cli.main") and _in_lab("clnn.models") and not _in_lab("clnn.modelsx")
    assert not _in_lab("clnn.device") and not _in_lab("clnn.api")


def test_clnn_top_level_holds_device_modules_only():
    top = sorted(p.stem for p in (ROOT / "clnn").glob("*.py"))
    # control_flow (a package) and tuning.py joined the device modules (../shared/ARCHITECTURE.md),
    # then chain.py (a plan's launches run as one), workgroups.py (what the device allows a
    # launch) and layout.py (NCHW operations run NHWC); the public API is api.py (clnn.load)
    # and devices.py (open_device), with stream.py (a streaming model's state between runs)
    # and prepare_cached.py (prepare through the compilation cache); execution.py (one
    # request, and how a plan's launches run); companion.py (small models on a low-latency
    # device of the same platform)
    assert len(top) <= 25, top
    assert {"api", "devices", "options"} <= set(top)
    programs = {"cli", "cts", "cts_modes", "run", "demo", "models", "bench", "bench_gemm",
                "bench_models", "bench_prepare", "device_cli", "fuzz", "tools", "suites"}
    assert not programs & set(top), sorted(programs & set(top))
    packages = {p.name for p in (ROOT / "clnn").iterdir() if (p / "__init__.py").exists()}
    assert "tools" not in packages and set(LAB) <= {f"clnn.{p}" for p in packages}
