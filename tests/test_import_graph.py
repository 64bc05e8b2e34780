"""The layout's import rules, read from the source (every import, function-level ones too):
no import cycle anywhere in ``hal/`` or ``clnn/``; ``hal`` never imports pyopencl or ``clnn``;
the OpenCL device (``clnn/`` outside ``clnn/tools/``) imports ``hal.reference`` only for the
fallback executor; ``clnn/``'s top level holds the device modules only."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hal", "clnn")
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


def _imports(path: Path, module: str, is_package: bool) -> set[str]:
    """Every name an import statement of the file imports (absolute): ``from a import b`` gives
    ``a.b`` (the module a.b when there is one, else the name b of module a)."""
    names = set()

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
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


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph = {}
    for name, path in mods.items():
        deps = set()
        for target in _imports(path, name, path.name == "__init__.py"):
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
        if not name.startswith("clnn") or name.split(".")[1:2] in (
                ["cli"], ["bench"], ["suites"], ["models"]):
            continue
        uses = {t for t in _imports(path, name, path.name == "__init__.py")
                if t == "hal.reference" or t.startswith("hal.reference.")}
        if uses:
            assert name in REFERENCE_ALLOWED, f"{name} imports {sorted(uses)}"


def test_clnn_top_level_holds_device_modules_only():
    top = sorted(p.stem for p in (ROOT / "clnn").glob("*.py"))
    # control_flow.py and tuning.py joined the device modules (../shared/ARCHITECTURE.md),
    # then chain.py (a plan's launches run as one), workgroups.py (what the device allows a
    # launch) and layout.py (NCHW operations run NHWC)
    assert len(top) <= 23, top
    programs = {"cli", "cts", "cts_modes", "run", "demo", "models", "bench",
                "bench_gemm", "bench_models", "bench_prepare", "device_cli", "fuzz"}
    assert not programs & set(top), sorted(programs & set(top))
