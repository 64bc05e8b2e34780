"""No function in clnn/ (outside the command line, clnn/cli) or hal/ longer than
:data:`MAX_LINES` lines, from its ``def`` to its last line, read from the source: a longer
one is split where it does two things."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 80
#: where long functions are allowed: the command line's argument parsers and reports
ALLOWED = ("clnn/cli/",)


def long_functions(source: str, limit: int = MAX_LINES) -> list[tuple[str, int, int]]:
    """(name, first line, lines) of every function (methods and nested ones too) of ``source``
    longer than ``limit`` lines."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                found.append((node.name, node.lineno, lines))
    return found


def test_no_function_longer_than_the_limit():
    offenders = []
    for pkg in ("clnn", "hal"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(ALLOWED):
                continue
            offenders += [f"{rel}:{line} {name} ({n} lines)"
                          for name, line, n in long_functions(path.read_text())]
    assert offenders == [], f"functions over {MAX_LINES} lines: {offenders}"


def test_the_rule_counts_from_def_to_the_last_line():
    lines = [f"    x{i} = {i}\n" for i in range(80)]
    assert long_functions("def f():\n" + "".join(lines)) == [("f", 1, 81)]
    assert long_functions("def f():\n" + "".join(lines[:-1])) == []
    method = "class C:\n    def m(self):\n" + "".join("    " + line for line in lines)
    assert long_functions(method) == [("m", 2, 81)]
