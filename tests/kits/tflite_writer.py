"""Writing small .tflite models for tests, with the builder half of the ``tflite`` schema
package (flatbuffers generated code).

    g = Graph()
    x = g.tensor([1, 4, 4, 2], name="x")                       # an input
    w = g.tensor([3, 1, 1, 2], data=weights)                   # a constant
    y = g.tensor([1, 4, 4, 3])
    g.op("CONV_2D", [x, w, -1], [y], "Conv2DOptions", Padding=0, StrideW=1, StrideH=1)
    raw = g.write(inputs=[x], outputs=[y])

Tensor types: "float32", "float16", "int32", "int64", "uint8", "int8", "int16", "bool".
Options are scalar fields of the named options table (``Add<Field>``); ``vectors`` gives its
int32 vector fields (e.g. ``SqueezeDims``); a str field is written as a string
(``SharedName``). :func:`write_model` writes several subgraphs (CALL_ONCE's init subgraph,
IF / WHILE bodies). ``sparsity`` (see :meth:`Graph.tensor`) stores a
constant in TFLite's sparse format.
"""

from __future__ import annotations

import flatbuffers
import numpy as np
import tflite
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions

TYPES = {"float32": 0, "float16": 1, "int32": 2, "uint8": 3, "int64": 4, "bool": 6,
         "int16": 7, "int8": 9, "resource": 13}


def _int_vector(b, values, start, elem=4, prepend=None):
    values = list(values)
    start(b, len(values))
    for v in reversed(values):
        if prepend is None:
            b.PrependInt32(int(v))
        else:
            prepend(v.item() if hasattr(v, "item") else v)
    return b.EndVector()


def write_model(graphs) -> bytes:
    """A model of several subgraphs: ``graphs`` holds (Graph, inputs, outputs) or (Graph,
    inputs, outputs, name) tuples, the main subgraph first (CALL_ONCE, IF, WHILE name the
    others by their position)."""
    b = flatbuffers.Builder(1024)
    codes: list[str] = []
    for g, *_ in graphs:
        for name, *_ in g.ops:
            if name not in codes:
                codes.append(name)
    buffers = [Graph._buffer(b, None)]
    subgraphs = [g._subgraph(b, buffers, codes, *rest) for g, *rest in graphs]
    code_offsets = [Graph._opcode(b, name) for name in codes]
    tflite.ModelStartSubgraphsVector(b, len(subgraphs))
    for o in reversed(subgraphs):
        b.PrependUOffsetTRelative(o)
    subgraphs_vec = b.EndVector()
    tflite.ModelStartOperatorCodesVector(b, len(code_offsets))
    for o in reversed(code_offsets):
        b.PrependUOffsetTRelative(o)
    codes_vec = b.EndVector()
    tflite.ModelStartBuffersVector(b, len(buffers))
    for o in reversed(buffers):
        b.PrependUOffsetTRelative(o)
    buffers_vec = b.EndVector()
    desc = b.CreateString("clnn test model")
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes_vec)
    tflite.ModelAddSubgraphs(b, subgraphs_vec)
    tflite.ModelAddDescription(b, desc)
    tflite.ModelAddBuffers(b, buffers_vec)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


class Graph:
    def __init__(self):
        self.tensors: list[dict] = []
        self.ops: list[tuple] = []

    def tensor(self, shape, type="float32", data=None, name=None, scale=None, zero_point=None,
               quantized_dimension=0, sparsity=None, signature=None) -> int:
        """A tensor; ``data`` makes it a constant (stored as given, or ``sparsity``:
        dict(traversal_order, block_map, dims=[(format, dense_size, segments, indices)]) with
        ``data`` the flat stored values)."""
        self.tensors.append(dict(shape=list(shape), type=type, data=data,
                                 name=name or f"t{len(self.tensors)}", scale=scale,
                                 zero_point=zero_point, qdim=quantized_dimension,
                                 sparsity=sparsity, signature=signature))
        return len(self.tensors) - 1

    def op(self, name, inputs, outputs, options=None, vectors=None, custom_options=None,
           **fields):
        self.ops.append((name, list(inputs), list(outputs), options, vectors or {},
                         custom_options, fields))

    # ------------------------------------------------------------------ writing
    def write(self, inputs, outputs) -> bytes:
        return write_model([(self, inputs, outputs)])

    def _subgraph(self, b, buffers, codes, inputs, outputs, name=None):
        """This graph as a SubGraph table; its constants are appended to ``buffers``."""
        tensor_offsets = []
        for t in self.tensors:
            buf_index = 0
            if t["data"] is not None:
                buffers.append(self._buffer(b, np.asarray(t["data"])))
                buf_index = len(buffers) - 1
            tensor_offsets.append(self._tensor(b, t, buf_index))
        op_offsets = [self._operator(b, codes.index(op[0]), *op[1:]) for op in self.ops]
        tflite.SubGraphStartTensorsVector(b, len(tensor_offsets))
        for o in reversed(tensor_offsets):
            b.PrependUOffsetTRelative(o)
        tensors_vec = b.EndVector()
        tflite.SubGraphStartOperatorsVector(b, len(op_offsets))
        for o in reversed(op_offsets):
            b.PrependUOffsetTRelative(o)
        ops_vec = b.EndVector()
        in_vec = _int_vector(b, inputs, tflite.SubGraphStartInputsVector)
        out_vec = _int_vector(b, outputs, tflite.SubGraphStartOutputsVector)
        name_str = b.CreateString(name) if name else None
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tensors_vec)
        tflite.SubGraphAddOperators(b, ops_vec)
        tflite.SubGraphAddInputs(b, in_vec)
        tflite.SubGraphAddOutputs(b, out_vec)
        if name_str is not None:
            tflite.SubGraphAddName(b, name_str)
        return tflite.SubGraphEnd(b)

    @staticmethod
    def _buffer(b, arr):
        data = None
        if arr is not None:
            raw = np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
            b.StartVector(1, len(raw), 16)
            for v in reversed(raw.tolist()):
                b.PrependUint8(v)
            data = b.EndVector()
        tflite.BufferStart(b)
        if data is not None:
            tflite.BufferAddData(b, data)
        return tflite.BufferEnd(b)

    def _tensor(self, b, t, buf_index):
        name = b.CreateString(t["name"])
        shape = _int_vector(b, t["shape"], tflite.TensorStartShapeVector)
        sig = (_int_vector(b, t["signature"], tflite.TensorStartShapeSignatureVector)
               if t["signature"] is not None else None)
        quant = None
        if t["scale"] is not None:
            scales = np.atleast_1d(np.asarray(t["scale"], np.float32))
            zps = np.atleast_1d(np.asarray(0 if t["zero_point"] is None else t["zero_point"]))
            zps = np.broadcast_to(zps, scales.shape)
            s_vec = _int_vector(b, scales, tflite.QuantizationParametersStartScaleVector,
                                prepend=b.PrependFloat32)
            z_vec = _int_vector(b, zps, tflite.QuantizationParametersStartZeroPointVector,
                                prepend=b.PrependInt64)
            tflite.QuantizationParametersStart(b)
            tflite.QuantizationParametersAddScale(b, s_vec)
            tflite.QuantizationParametersAddZeroPoint(b, z_vec)
            tflite.QuantizationParametersAddQuantizedDimension(b, t["qdim"])
            quant = tflite.QuantizationParametersEnd(b)
        sparsity = self._sparsity(b, t["sparsity"]) if t["sparsity"] else None
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        if sig is not None:
            tflite.TensorAddShapeSignature(b, sig)
        tflite.TensorAddType(b, TYPES[t["type"]])
        tflite.TensorAddBuffer(b, buf_index)
        tflite.TensorAddName(b, name)
        if quant is not None:
            tflite.TensorAddQuantization(b, quant)
        if sparsity is not None:
            tflite.TensorAddSparsity(b, sparsity)
        return tflite.TensorEnd(b)

    @staticmethod
    def _sparsity(b, sp):
        dims = []
        for fmt, dense_size, segments, indices in sp["dims"]:
            arrays = []
            for values in (segments, indices):
                if values is None:
                    arrays.append(None)
                    continue
                vec = _int_vector(b, values, tflite.Int32VectorStartValuesVector)
                tflite.Int32VectorStart(b)
                tflite.Int32VectorAddValues(b, vec)
                arrays.append(tflite.Int32VectorEnd(b))
            tflite.DimensionMetadataStart(b)
            tflite.DimensionMetadataAddFormat(b, fmt)
            tflite.DimensionMetadataAddDenseSize(b, dense_size)
            if arrays[0] is not None:
                tflite.DimensionMetadataAddArraySegmentsType(b, 1)
                tflite.DimensionMetadataAddArraySegments(b, arrays[0])
                tflite.DimensionMetadataAddArrayIndicesType(b, 1)
                tflite.DimensionMetadataAddArrayIndices(b, arrays[1])
            dims.append(tflite.DimensionMetadataEnd(b))
        order = _int_vector(b, sp["traversal_order"],
                            tflite.SparsityParametersStartTraversalOrderVector)
        block_map = (_int_vector(b, sp["block_map"], tflite.SparsityParametersStartBlockMapVector)
                     if sp.get("block_map") else None)
        tflite.SparsityParametersStartDimMetadataVector(b, len(dims))
        for o in reversed(dims):
            b.PrependUOffsetTRelative(o)
        dim_vec = b.EndVector()
        tflite.SparsityParametersStart(b)
        tflite.SparsityParametersAddTraversalOrder(b, order)
        if block_map is not None:
            tflite.SparsityParametersAddBlockMap(b, block_map)
        tflite.SparsityParametersAddDimMetadata(b, dim_vec)
        return tflite.SparsityParametersEnd(b)

    @staticmethod
    def _operator(b, code_index, inputs, outputs, options, vectors, custom, fields):
        in_vec = _int_vector(b, inputs, tflite.OperatorStartInputsVector)
        out_vec = _int_vector(b, outputs, tflite.OperatorStartOutputsVector)
        custom_vec = b.CreateByteVector(bytes(custom)) if custom is not None else None
        opts = None
        if options:
            vec_offsets = {k: _int_vector(b, v, getattr(tflite, f"{options}Start{k}Vector"))
                           for k, v in vectors.items()}
            # string fields (VarHandleOptions' SharedName): created before the table
            vec_offsets.update({k: b.CreateString(v) for k, v in fields.items()
                                if isinstance(v, str)})
            fields = {k: v for k, v in fields.items() if not isinstance(v, str)}
            getattr(tflite, f"{options}Start")(b)
            for k, v in fields.items():
                getattr(tflite, f"{options}Add{k}")(b, v)
            for k, off in vec_offsets.items():
                getattr(tflite, f"{options}Add{k}")(b, off)
            opts = getattr(tflite, f"{options}End")(b)
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, code_index)
        tflite.OperatorAddInputs(b, in_vec)
        tflite.OperatorAddOutputs(b, out_vec)
        if opts is not None:
            tflite.OperatorAddBuiltinOptionsType(b, getattr(BuiltinOptions, options))
            tflite.OperatorAddBuiltinOptions(b, opts)
        if custom_vec is not None:
            tflite.OperatorAddCustomOptions(b, custom_vec)
        return tflite.OperatorEnd(b)

    @staticmethod
    def _opcode(b, name):
        custom = None
        if name.startswith("CUSTOM:"):
            custom = b.CreateString(name[len("CUSTOM:"):])
            code = BuiltinOperator.CUSTOM
        else:
            code = getattr(BuiltinOperator, name)
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        tflite.OperatorCodeAddBuiltinCode(b, code)
        tflite.OperatorCodeAddVersion(b, 1)
        if custom is not None:
            tflite.OperatorCodeAddCustomCode(b, custom)
        return tflite.OperatorCodeEnd(b)
