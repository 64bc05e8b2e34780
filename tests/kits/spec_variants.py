"""Derive spec variations the public corpus lacks from its tests (read at run time from
``../shared/cts/public``; nothing of the corpus is stored here).

- :func:`to_signed`: a QUANT8_ASYMM test as QUANT8_ASYMM_SIGNED: every TENSOR_QUANT8_ASYMM
  operand gets zeroPoint - 128 and data - 128, goldens included. The spec defines the signed
  type as the unsigned one shifted by 128, so the shifted goldens stay correct (+-1).
- :func:`to_float16`: a TENSOR_FLOAT32 test as TENSOR_FLOAT16 (FLOAT32 scalars as FLOAT16),
  inputs and constants rounded to float16; the goldens stay (the CTS float16 tolerance).
- :func:`to_relaxed`: a float32 test with relaxComputationFloat32toFloat16 set.
- :func:`to_nchw`: an NHWC test of an operation with a layout flag as NCHW.
- :func:`to_per_channel`: a quant8 convolution with a symmetric filter in the per-channel form.
- :func:`to_layout_flag`, :func:`to_nchw_from_no_flag`: 1.0/1.1 layout-operation tests with
  the 1.2 layout flag (NHWC, NCHW).
- :func:`to_unsigned`: the inverse of :func:`to_signed`.
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache

import numpy as np

from tests.kits.paths import CORPUS

#: operations whose quantized operands are not "real value = scale * (q - zp)" data:
#: CAST converts raw values; RANDOM_MULTINOMIAL is random; LSH_PROJECTION hashes raw bytes.
NOT_SHIFT_INVARIANT = {"CAST", "RANDOM_MULTINOMIAL", "LSH_PROJECTION", "QUANTIZED_16BIT_LSTM",
                       "HASHTABLE_LOOKUP"}


def _copy(test):
    """A copy of a corpus test to change, its operands' ``data`` lists shared with the corpus
    (the transforms here replace an operand's data, never change it in place): the copy of
    every value's list was most of a kind's time."""
    if isinstance(test, dict):
        return {k: v if k == "data" else _copy(v) for k, v in test.items()}
    if isinstance(test, list):
        return [_copy(v) for v in test]
    return test


@lru_cache(maxsize=1)
def corpus_tests() -> tuple:
    """(spec, test) for every corpus test; empty when there is no corpus."""
    out = []
    if not CORPUS.is_dir():
        return ()
    for path in sorted(CORPUS.glob("*.json.gz")):
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
        out.extend((doc["spec"], t) for t in doc["tests"])
    return tuple(out)


def _subgraphs(test):
    return [test["main"], *test.get("referenced", [])]


def op_types(test) -> set[str]:
    return {op["type"] for sg in _subgraphs(test) for op in sg["operations"]}


def operand_types(test) -> set[str]:
    return {o["type"] for sg in _subgraphs(test) for o in sg["operands"]}


def to_signed(test: dict) -> dict | None:
    types = operand_types(test)
    if "TENSOR_QUANT8_ASYMM" not in types or "TENSOR_QUANT8_ASYMM_SIGNED" in types:
        return None
    if op_types(test) & NOT_SHIFT_INVARIANT:
        return None
    t = _copy(test)
    t["name"] = test["name"] + "__as_signed"
    for sg in _subgraphs(t):
        for o in sg["operands"]:
            if o["type"] != "TENSOR_QUANT8_ASYMM":
                continue
            o["type"] = "TENSOR_QUANT8_ASYMM_SIGNED"
            o["zeroPoint"] = int(o.get("zeroPoint", 0)) - 128
            if o.get("data") is not None and o["lifetime"] != "SUBGRAPH":
                o["data"] = [int(v) - 128 for v in o["data"]]
        for op in sg["operations"]:
            if op["type"] == "PAD_V2":  # the pad value is a quantized value of the tensor
                pad = sg["operands"][op["inputs"][2]]
                if pad.get("data") is not None:
                    pad["data"] = [int(v) - 128 for v in pad["data"]]
    return t


#: LSH_PROJECTION hashes the bytes of its float16 values (a different function of them)
NOT_FLOAT16_INVARIANT = {"LSH_PROJECTION", "RANDOM_MULTINOMIAL"}
_F16 = {"TENSOR_FLOAT32": "TENSOR_FLOAT16", "FLOAT32": "FLOAT16"}


def to_float16(test: dict) -> dict | None:
    types = operand_types(test)
    if "TENSOR_FLOAT32" not in types or "TENSOR_FLOAT16" in types or "FLOAT16" in types:
        return None
    if test.get("isRelaxed") or op_types(test) & NOT_FLOAT16_INVARIANT:
        return None
    t = _copy(test)
    t["name"] = test["name"] + "__as_float16"
    for sg in _subgraphs(t):
        opnds = sg["operands"]
        # FLOAT32 scalars become FLOAT16 only beside float tensors (quantized BOX_WITH_NMS_LIMIT
        # keeps FLOAT32 parameters)
        keep = {i for op in sg["operations"] for i in op["inputs"]
                if opnds[i]["type"] == "FLOAT32"
                and not any(opnds[j]["type"] == "TENSOR_FLOAT32"
                            for j in op["inputs"] + op["outputs"])}
        for i, o in enumerate(opnds):
            if o["type"] not in _F16 or i in keep:
                continue
            o["type"] = _F16[o["type"]]
            if o.get("data") is None or o["lifetime"] == "SUBGRAPH":
                continue
            vals = np.asarray(o["data"], dtype=np.float64)
            if np.any(np.abs(vals[np.isfinite(vals)]) > 65504):
                return None  # out of the float16 range
            if o["lifetime"] != "SUBGRAPH_OUTPUT":  # goldens keep their values
                o["data"] = [float(v) for v in vals.astype(np.float16)]
    return t


def to_relaxed(test: dict) -> dict | None:
    if "TENSOR_FLOAT32" not in operand_types(test) or test.get("isRelaxed"):
        return None
    t = _copy(test)
    t["name"] = test["name"] + "__as_relaxed"
    t["isRelaxed"] = True
    return t


#: operations with a layout flag (their first BOOL input): the inputs and outputs the flag
#: lays out as NCHW
LAYOUT_OPERANDS = {
    **{op: ((0,), (0,)) for op in (
        "CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D", "TRANSPOSE_CONV_2D",
        "AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D", "RESIZE_BILINEAR",
        "RESIZE_NEAREST_NEIGHBOR", "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "BATCH_TO_SPACE_ND",
        "SPACE_TO_BATCH_ND", "INSTANCE_NORMALIZATION", "ROI_ALIGN", "ROI_POOLING")},
    "HEATMAP_MAX_KEYPOINT": ((0,), ()),
    "GENERATE_PROPOSALS": ((0, 1), ()),
}


def _nchw(o):
    dims = o["dimensions"]
    if len(dims) != 4:
        return False
    if o.get("data") is not None:
        a = np.asarray(o["data"]).reshape(dims).transpose(0, 3, 1, 2)
        o["data"] = a.reshape(-1).tolist()
    o["dimensions"] = [dims[0], dims[3], dims[1], dims[2]]
    return True


#: input counts of the forms without the layout flag (1.0/1.1); the flag comes last (1.2)
NO_FLAG_COUNTS = {"CONV_2D": (7, 10), "DEPTHWISE_CONV_2D": (8, 11), "AVERAGE_POOL_2D": (7, 10),
                  "MAX_POOL_2D": (7, 10), "L2_POOL_2D": (7, 10), "RESIZE_BILINEAR": (3,),
                  "SPACE_TO_DEPTH": (2,), "DEPTH_TO_SPACE": (2,), "BATCH_TO_SPACE_ND": (2,),
                  "SPACE_TO_BATCH_ND": (3,)}


def to_layout_flag(test: dict) -> dict | None:
    """A test of a layout operation without the flag, with an explicit false flag (NHWC)."""
    t = _copy(test)
    changed = False
    for sg in _subgraphs(t):
        for op in sg["operations"]:
            if len(op["inputs"]) in NO_FLAG_COUNTS.get(op["type"], ()) and not any(
                    sg["operands"][i]["type"] == "BOOL" for i in op["inputs"]):
                sg["operands"].append({"type": "BOOL", "dimensions": [], "scale": 0.0,
                                       "zeroPoint": 0, "lifetime": "CONSTANT_COPY",
                                       "data": [False]})
                op["inputs"].append(len(sg["operands"]) - 1)
                changed = True
    if not changed:
        return None
    t["name"] = test["name"] + "__with_layout"
    return t


def to_nchw_from_no_flag(test: dict) -> dict | None:
    flagged = to_layout_flag(test)
    return to_nchw(flagged) if flagged is not None else None


def to_unsigned(test: dict) -> dict | None:
    """The inverse of :func:`to_signed`, for tests the corpus has only as signed."""
    types = operand_types(test)
    if "TENSOR_QUANT8_ASYMM_SIGNED" not in types or "TENSOR_QUANT8_ASYMM" in types:
        return None
    if op_types(test) & (NOT_SHIFT_INVARIANT | {"QUANTIZED_LSTM"}):  # signed-only operation
        return None
    t = _copy(test)
    t["name"] = test["name"] + "__as_unsigned"
    for sg in _subgraphs(t):
        for o in sg["operands"]:
            if o["type"] != "TENSOR_QUANT8_ASYMM_SIGNED":
                continue
            o["type"] = "TENSOR_QUANT8_ASYMM"
            o["zeroPoint"] = int(o.get("zeroPoint", 0)) + 128
            if o.get("data") is not None and o["lifetime"] != "SUBGRAPH":
                o["data"] = [int(v) + 128 for v in o["data"]]
        for op in sg["operations"]:
            if op["type"] == "PAD_V2":
                pad = sg["operands"][op["inputs"][2]]
                if pad.get("data") is not None:
                    pad["data"] = [int(v) + 128 for v in pad["data"]]
    return t


def to_nchw(test: dict) -> dict | None:
    """An NHWC test of a layout operation as NCHW: the flag set and the laid-out operands
    transposed, when those operands are model inputs, constants or model outputs used by this
    operation only."""
    sg = test["main"]
    if test.get("referenced"):
        return None
    uses = {}
    for op in sg["operations"]:
        for i in op["inputs"]:
            uses[i] = uses.get(i, 0) + 1
    t = _copy(test)
    t["name"] = test["name"] + "__as_nchw"
    opnds = t["main"]["operands"]
    changed = False
    for op in t["main"]["operations"]:
        if op["type"] not in LAYOUT_OPERANDS:
            continue
        flags = [i for i in op["inputs"] if opnds[i]["type"] == "BOOL"]
        if not flags or opnds[flags[0]].get("data") != [False] or uses[flags[0]] > 1:
            return None
        ins, outs = LAYOUT_OPERANDS[op["type"]]
        for k in ins:
            o = opnds[op["inputs"][k]]
            if o["lifetime"] == "TEMPORARY_VARIABLE" or uses[op["inputs"][k]] > 1:
                return None
        for k in outs:
            if opnds[op["outputs"][k]]["lifetime"] != "SUBGRAPH_OUTPUT":
                return None
        opnds[flags[0]]["data"] = [True]
        if op["type"] == "TRANSPOSE_CONV_2D" and opnds[op["inputs"][3]]["type"] == "TENSOR_INT32":
            shape = opnds[op["inputs"][3]]  # the output shape, in the output's layout
            if shape.get("data") is None or uses[op["inputs"][3]] > 1:
                return None
            n, h, w, c = shape["data"]
            shape["data"] = [n, c, h, w]
        for o in [opnds[op["inputs"][k]] for k in ins] + [opnds[op["outputs"][k]] for k in outs]:
            if not _nchw(o):
                return None
        changed = True
    return t if changed else None


#: convolutions and the channel dimension of their filter
PER_CHANNEL_DIM = {"CONV_2D": 0, "DEPTHWISE_CONV_2D": 3, "GROUPED_CONV_2D": 0,
                   "TRANSPOSE_CONV_2D": 0}


def to_per_channel(test: dict) -> dict | None:
    """A quant8 convolution test with a constant filter of zero point 0 and codes <= 127 as
    the per-channel form: the filter TENSOR_QUANT8_SYMM_PER_CHANNEL with every channel at the
    filter's scale, the bias scale 0 (each channel's is input scale * filter scale)."""
    t = _copy(test)
    t["name"] = test["name"] + "__as_per_channel"
    changed = False
    for sg in _subgraphs(t):
        opnds = sg["operands"]
        for op in sg["operations"]:
            if op["type"] not in PER_CHANNEL_DIM:
                continue
            f, b = opnds[op["inputs"][1]], opnds[op["inputs"][2]]
            if f["type"] != "TENSOR_QUANT8_ASYMM" or f.get("zeroPoint", 0) != 0:
                continue
            if f["lifetime"] not in ("CONSTANT_COPY", "CONSTANT_REFERENCE"):
                return None
            if max(f["data"]) > 127 or sum(1 for i in op["inputs"] if i == op["inputs"][1]) > 1:
                return None
            dim = PER_CHANNEL_DIM[op["type"]]
            f["type"] = "TENSOR_QUANT8_SYMM_PER_CHANNEL"
            f["channelQuant"] = {"scales": [f["scale"]] * f["dimensions"][dim], "channelDim": dim}
            f["scale"] = 0.0
            b["scale"] = 0.0
            changed = True
    return t if changed else None


def to_signed_per_channel(test: dict) -> dict | None:
    pc = to_per_channel(test)
    return to_signed(pc) if pc is not None else None
