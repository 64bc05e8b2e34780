"""Architecture conformance of hal/ (see docs/hal.md): one registration per operation type with
its spec table, validate, execute and (where the output shape does not depend on input values)
prepare; one family module per registration with its operand table; modules of a few hundred
lines; rejection reasons that name the operation and the operand."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import hal.operations as hal_operations
from hal.operations import registrations
from hal.operations.registry import register
from hal.types import OperandType, OperationType
from tests.kits.one_op_models import one_op_model, rejected, scalar, tensor

HAL = Path(hal_operations.__file__).resolve().parent.parent
#: modules of hal/operations that hold no operation (the op API itself, private helpers)
NOT_FAMILIES = {"common", "context", "registry"}
#: operations whose output shapes depend on input values (or on the branch/body taken), so
#: they have no prepare(); the executor takes the shapes from execute()
VALUE_DEPENDENT = {"IF", "WHILE", "GENERATE_PROPOSALS", "BOX_WITH_NMS_LIMIT"}
#: operations checked by validate() alone, against their referenced subgraphs
CUSTOM_SIGNATURE = {"IF", "WHILE"}
#: "modules of a few hundred lines": the largest, hal/types.py, is the spec's enum tables
MAX_LINES = 430

REGS = registrations()


def _family_modules():
    """Every module of hal/operations but the op API and private helpers (_name), as
    hal.operations imports them."""
    names = sorted(m.name for m in pkgutil.iter_modules(hal_operations.__path__)
                   if not m.name.startswith("_") and m.name not in NOT_FAMILIES)
    assert names == sorted(hal_operations.FAMILIES)
    return names


def test_every_operation_type_is_registered():
    missing = [op.name for op in OperationType if op not in REGS]
    assert not missing, f"operation types without a registration: {missing}"
    # the driver's own extensions (org.clnn.openvx) register extension operation types too
    assert {op for op in REGS if isinstance(op, OperationType)} == set(OperationType)


def test_a_second_registration_is_refused():
    before = REGS[OperationType.ADD]
    with pytest.raises(RuntimeError, match="ADD is registered twice"):
        register("ADD", lambda ctx: [], signatures=before.signatures, family="duplicate")
    assert registrations()[OperationType.ADD] is before


@pytest.mark.parametrize("op", sorted(o.name for o in OperationType))
def test_registration_is_complete(op):
    reg = REGS[OperationType[op]]
    assert callable(reg.execute)
    assert callable(reg.validate), f"{op} has no validate()"
    if op in CUSTOM_SIGNATURE:
        assert reg.custom_signature
    else:
        assert reg.signatures and not reg.custom_signature, f"{op} has no signatures"
        assert len(set(reg.signatures)) == len(reg.signatures), f"{op} repeats a signature"
    if op in VALUE_DEPENDENT:
        assert reg.prepare is None, f"{op} has a prepare(): take it off VALUE_DEPENDENT"
    else:
        assert callable(reg.prepare), f"{op} has no prepare() (shape inference)"


@pytest.mark.parametrize("op", sorted(o.name for o in OperationType))
def test_registration_lives_in_its_family_module(op):
    reg = REGS[OperationType[op]]
    assert reg.family in _family_modules(), f"{op}: family {reg.family!r} is no module"
    assert reg.execute.__module__ == f"hal.operations.{reg.family}"
    assert reg.validate.__module__.startswith("hal.operations.")


@pytest.mark.parametrize("name", _family_modules())
def test_family_module_has_operand_table_and_registrations(name):
    mod = importlib.import_module(f"hal.operations.{name}")
    doc = mod.__doc__ or ""
    assert re.search(r"^\|.*\|\s*$", doc, re.M) and re.search(r"^\|[-| ]+\|\s*$", doc, re.M), \
        f"hal/operations/{name}.py: the docstring has no operand table"
    assert any(r.family == name for r in REGS.values()), f"{name} registers no operation"


@pytest.mark.parametrize("path", sorted(str(p.relative_to(HAL.parent))
                                        for p in HAL.rglob("*.py")))
def test_module_size(path):
    n = len((HAL.parent / path).read_text().splitlines())
    assert n <= MAX_LINES, f"{path} has {n} lines; split it (same stem prefix)"


def _reasons(path: Path):
    src = path.read_text()
    for node in ast.walk(ast.parse(src)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("require", "fail") and node.args
                and isinstance(node.args[-1], (ast.Constant, ast.JoinedStr))):
            yield node.lineno, ast.get_source_segment(src, node.args[-1])


def test_rejection_reasons_name_an_operand():
    """ctx.fail prefixes the operation; the reason itself must say which operand."""
    names_operand = re.compile(r"input|output|operand|subgraph|\{what\}")
    bad = [f"{p.name}:{line}: {text}" for p in sorted((HAL / "operations").glob("*.py"))
           for line, text in _reasons(p) if not names_operand.search(text)]
    assert not bad, "reasons that name no operand:\n" + "\n".join(bad)


def _spec(t: OperandType):
    if t.name.startswith("TENSOR_"):
        cq = ((1.0,), 0) if t == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL else None
        scale = 1.0 if "QUANT" in t.name and cq is None else 0.0
        return tensor(t.name, [1], scale=scale, channel_quant=cq)
    return scalar(t.name, False if t == OperandType.BOOL else 0)


@pytest.mark.parametrize("op", sorted(o.name for o in OperationType
                                      if o.name not in CUSTOM_SIGNATURE))
def test_signature_mismatch_names_the_operation(op):
    """Output 0 of the first signature given a type no signature has there."""
    reg = REGS[OperationType[op]]
    s = reg.signatures[0]
    used = {g.outputs[0] for g in reg.signatures}
    wrong = next(t for t in (OperandType.TENSOR_BOOL8, OperandType.TENSOR_QUANT16_ASYMM,
                             OperandType.TENSOR_FLOAT32,
                             OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL) if t not in used)
    model = one_op_model(op, [_spec(t) for t in s.inputs],
                         [_spec(wrong)] + [_spec(t) for t in s.outputs[1:]])
    reason = rejected(model)
    assert reason.startswith(f"{op} (operation 0)") and "match no signature" in reason, reason


def test_family_index_is_current():
    """hal/operations/_families.py names the family of every operation (lookup imports that
    family alone); it is generated from the registrations."""
    from hal.operations._families import FAMILY_OF

    assert FAMILY_OF == hal_operations.family_index(), \
        "hal/operations/_families.py is stale: run python3 tools/family_index.py"


_ONE_FAMILY = """
import sys
from hal.types import OperationType
{imports}
assert {call}(OperationType.ADD) is not None
import {pkg}.lookup  # a family named like a function of the package leaves the function be
assert callable({pkg}.{call})
print(sorted(m for m in sys.modules if m.startswith("{pkg}.") and "._" not in m))
"""


@pytest.mark.parametrize("pkg, imports, call, expected", [
    ("hal.operations", "from hal.operations import lookup", "lookup",
     ["hal.operations.broadcast", "hal.operations.common", "hal.operations.context",
      "hal.operations.lookup", "hal.operations.registry"]),
    ("clnn.kernels", "from clnn.kernels import kernel_for", "kernel_for",
     ["clnn.kernels.broadcast", "clnn.kernels.lookup", "clnn.kernels.registry",
      "clnn.kernels.support"]),
])
def test_a_lookup_imports_one_family(pkg, imports, call, expected):
    """A fresh process that looks up ADD imports its family's module, not every family's."""
    import subprocess
    import sys

    code = _ONE_FAMILY.format(imports=imports, call=call, pkg=pkg)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=HAL.parent, check=True).stdout
    assert out.strip() == repr(expected)
