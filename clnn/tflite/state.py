"""TFLite resource variables (the state of streaming models) as NNAPI inputs and outputs.

A streaming model (microWakeWord's, Keras' streaming layers) keeps its state between invocations
in resource variables: VAR_HANDLE names a variable (by its shared name), READ_VARIABLE reads it,
ASSIGN_VARIABLE writes it, and CALL_ONCE runs an init subgraph on the first invocation whose
ASSIGN_VARIABLEs give the initial values. NNAPI has no variables: each becomes an extra model
input (its value before the step) and an extra output (its value after the step), after the
model's own, and the caller carries the output over to the next step's input (``clnn.load``
keeps it in device memory: clnn/stream.py).

At import the init subgraphs are evaluated (their assigned values must be constants); in the
main graph a READ_VARIABLE's output is the variable's current operand (the state input, or the
value assigned earlier in the step), an ASSIGN_VARIABLE makes its value the current operand,
and at the end each variable's current operand becomes its state output: through a RESHAPE
copy where it is not a computed operand of its own (a variable never assigned, a constant, a
model input or output, or another variable's value).
"""

from __future__ import annotations

import numpy as np

from clnn.importing import StateTensor

#: the operators this module converts (none of them becomes an NNAPI operation)
OPERATORS = ("CALL_ONCE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE")


def _options(op, imp, cls: str):
    """The operator's options table, checked to be a ``cls`` (a corrupted options type names
    another table)."""
    o = op.options
    if o is None or type(o).__name__ != cls:
        imp.fail(f"its options are {type(o).__name__ if o is not None else 'missing'}, "
                 f"not {cls}")
    return o


def _shared_name(op, imp) -> str:
    o = _options(op, imp, "VarHandleOptions")
    container = (o.Container() or b"").decode(errors="replace")
    name = (o.SharedName() or b"").decode(errors="replace")
    return f"{container}/{name}" if container else name


class Variables:
    """The resource variables of a model being imported (``Importer.variables``)."""

    def __init__(self, imp):
        self.imp = imp
        #: main-graph resource tensor -> variable name
        self.handles: dict[int, str] = {}
        #: variable name -> (initial value, the init subgraph's tensor holding it)
        self.initial: dict = {}
        #: variable names, in the order of their first VAR_HANDLE in the main graph
        self.names: list[str] = []
        self.input_operand: dict[str, int] = {}
        self.current: dict[str, int] = {}
        #: variable name -> the tensor it was last assigned
        self.assigned: dict[str, int] = {}

    # ------------------------------------------------------------------ before the operators
    def declare(self):
        """Evaluate the init subgraphs of the main graph's CALL_ONCEs and add a model input
        per variable (after the model's own inputs)."""
        imp = self.imp
        for op in imp.graph.operators:
            if op.name == "CALL_ONCE":
                imp.op = op
                self._run_init(op)
            elif op.name == "VAR_HANDLE":
                imp.op = op
                name = _shared_name(op, imp)
                if name not in self.names:
                    self.names.append(name)
        imp.op = None
        for name in self.names:
            if name not in self.initial:
                imp.fail(f"resource variable {name!r} has no initial value (no CALL_ONCE init "
                         "subgraph assigns it)")
            value, t = self.initial[name]
            ot, scale, zp, cq = imp.quant(t)
            if cq is not None:
                imp.fail(f"resource variable {name!r} has per-channel scales; a state operand "
                         "needs one scale")
            self.input_operand[name] = self.current[name] = imp.b.input(
                ot, tuple(value.shape), scale, zp)

    def _run_init(self, op):
        imp = self.imp
        k = _options(op, imp, "CallOnceOptions").InitSubgraphIndex()
        if not 0 < k < len(imp.tf.subgraphs):
            imp.fail(f"init subgraph {k} does not exist (the model has "
                     f"{len(imp.tf.subgraphs)} subgraphs)")
        g = imp.tf.subgraphs[k]
        handles = {}
        for init_op in g.operators:
            what = f"init subgraph {k}, operator {init_op.index} ({init_op.name})"
            if init_op.name == "VAR_HANDLE" and init_op.outputs:
                handles[init_op.outputs[0]] = _shared_name(init_op, imp)
            elif init_op.name == "ASSIGN_VARIABLE" and len(init_op.inputs) == 2:
                res, ti = init_op.inputs
                if ti < 0:
                    imp.fail(f"{what}: the initial value is omitted (tensor index -1)")
                t = g.tensors[ti]
                if res not in handles:
                    imp.fail(f"{what}: its resource (tensor {res}) is not a VAR_HANDLE's")
                if t.data is None:
                    imp.fail(f"{what}: the initial value (tensor {ti}) must be a constant")
                self.initial[handles[res]] = (t.data, t)
            else:
                imp.fail(f"{what}: an init subgraph may only hold VAR_HANDLE and "
                         "ASSIGN_VARIABLE of constants")

    # ------------------------------------------------------------------ the operators
    def convert(self, op):
        imp = self.imp
        if op.name == "VAR_HANDLE":
            if len(op.outputs) != 1:
                imp.fail(f"{len(op.outputs)} outputs; it needs 1")
            self.handles[op.outputs[0]] = _shared_name(op, imp)
        elif op.name == "READ_VARIABLE":
            if len(op.inputs) != 1 or len(op.outputs) != 1:
                imp.fail("it needs 1 input and 1 output")
            name = self._variable(op.inputs[0])
            self._check_like(name, op.outputs[0], "its output")
            imp.operands[op.outputs[0]] = self.current[name]
        elif op.name == "ASSIGN_VARIABLE":
            if len(op.inputs) != 2:
                imp.fail(f"{len(op.inputs)} inputs; it needs 2 (resource, value)")
            name = self._variable(op.inputs[0])
            self._check_like(name, op.inputs[1], "the value")
            self.current[name] = imp.operand(op.inputs[1])
            self.assigned[name] = op.inputs[1]
        # CALL_ONCE: its init subgraph was evaluated by declare()

    def _variable(self, ti: int) -> str:
        if ti not in self.handles:
            self.imp.fail(f"its resource (tensor {ti}) is not the output of a VAR_HANDLE "
                          "before it")
        return self.handles[ti]

    def _check_like(self, name: str, ti: int, what: str):
        """A variable's reads and writes must have its shape, type and quantization."""
        imp = self.imp
        value, t0 = self.initial[name]
        t = imp.tensor(ti)
        q0, q = imp.quant(t0), imp.quant(t)
        if imp.shape(ti) != tuple(value.shape) or q0[:3] != q[:3]:
            imp.fail(f"{what} (tensor {ti}: {list(imp.shape(ti))} {q[0].name} scale {q[1]} "
                     f"zero point {q[2]}) differs from resource variable {name!r} "
                     f"({list(value.shape)} {q0[0].name} scale {q0[1]} zero point {q0[2]})")

    # ------------------------------------------------------------------ after the operators
    def finish(self) -> list[StateTensor]:
        """Mark each variable's value after the step as a model output (after the model's
        own); the StateTensors in that order."""
        imp = self.imp
        computed = {o for op in imp.b._operations for o in op.outputs}
        taken = set(imp.b._pending_outputs)
        states = []
        for name in self.names:
            value, t = self.initial[name]
            out = self.current[name]
            if out not in computed or out in taken:
                ot, scale, zp, _ = imp.quant(t)
                copy = imp.b.tensor(ot, tuple(value.shape), scale, zp)
                imp.emit("RESHAPE", [out, imp.const(np.asarray(value.shape, np.int32))], [copy])
                out = copy
            taken.add(out)
            imp.b.mark_output(out)
            states.append(StateTensor(name, np.array(value), self.assigned.get(name, -1)))
        return states
