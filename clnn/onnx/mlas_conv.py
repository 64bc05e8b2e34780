"""onnxruntime's float Conv on x86 in the order MLAS sums it (``quantized="onnxruntime"``).

onnxruntime does not fuse a QDQ Conv unit whose activations are int8 on x86 (clnn.onnx.qdq:
QLinearConv takes uint8 activations there), so it runs DequantizeLinear -> float Conv ->
QuantizeLinear. The weights are then a DequantizeLinear's output, not an initializer, so its
NCHWc transformer leaves the Conv alone and the CPU provider's Conv calls MLAS's MlasConv
(onnxruntime/core/mlas/lib/convolve.cpp). Its sums, and so the requantized integers, depend
on MLAS's order, which this module reproduces with the org.clnn.onnx CONV_CHUNKED operation
(hal/operations/onnx_conv_chunked.py): sequential fused multiply-adds over k = (c KH + ky) KW
+ kx, restarted every S terms, the partial sums added in order, then the bias.

S, per output position, follows from how MLAS cuts the work (facts read from convolve.cpp and
sgemm.cpp; MLAS_SGEMM_STRIDEN = MLAS_SGEMM_STRIDEK = 128, MLAS_SGEMM_THREAD_COMPLEXITY =
64 Ki multiplies, MLAS_MAXIMUM_THREAD_COUNT = 16, MLAS_SGEMM_STRIDEN_THREAD_ALIGN = 16):

- a pointwise convolution (1 x 1, strides 1, no padding) is one SGEMM of the input itself
  (MlasConvAlgorithmGemmDirect), threaded over N (the output positions, in blocks of 16) when
  N > M (filters), else over M; a convolution with more filters than output positions is
  im2col of the whole input, then the same threaded SGEMM (MlasConvAlgorithmExpandThenGemm);
- any other is im2col + SGEMM in segments of the output positions, one per thread
  (MlasConvAlgorithmExpandThenGemmSegmented); each segment steps through K in panels of a
  stride that grows as the segment (or the N slice) shrinks, each panel an SGEMM that may cut
  K again by its own rule;
- within a panel, MLAS's AVX512F / FMA3 SGEMM kernels keep one accumulator lane per output,
  zeroed, fed by one vfmadd231ps per k in order, and add C to it (ZeroMode false) or store it.

The thread count is onnxruntime's intra-op thread count (:data:`ORT_THREADS`, as clnn's own
onnxruntime comparisons set it): with another count the panels, and the last bits, can
differ. Batches and groups (MLAS threads over them instead) and the cases of MLAS's M = 1 /
N = 1 kernels (:func:`single_row_kernel`) are left to CONV_2D.
"""

from __future__ import annotations

import numpy as np

from hal.types import OperandType

#: onnxruntime's intra-op threads assumed (clnn.cli.onnx_run's OrtRunner uses them)
ORT_THREADS = 2
STRIDE_N = STRIDE_K = 128
THREAD_COMPLEXITY = 64 * 1024
MAX_THREADS = 16
THREAD_ALIGN = 16


def sgemm_stride_k(n: int, k: int) -> int:
    """MlasSgemmOperation's K stride for an N x K panel (no transposed A)."""
    sn, sk = STRIDE_N, STRIDE_K
    if n >= k:
        while sk // 2 >= k:
            sk //= 2
    else:
        while sn > 16 and sn // 2 >= n:
            sk, sn = sk * 2, sn // 2
    return sk


def _sgemm_starts(n: int, k: int, k0: int = 0) -> list[int]:
    return [k0 + s for s in range(0, k, sgemm_stride_k(n, k))]


def _partition(i: int, count: int, total: int) -> tuple[int, int]:
    """MlasPartitionWork: (start, count) of part ``i`` of ``total`` in ``count`` parts."""
    per, extra = divmod(total, count)
    if i < extra:
        return (per + 1) * i, per + 1
    return per * i + extra, per


def _direct(m: int, n: int, k: int, threads: int) -> list[tuple[int, list[int]]]:
    """[(positions, K panel starts)] of a pointwise convolution (MlasGemm)."""
    target = min(int(m * n * k / THREAD_COMPLEXITY) + 1, threads)
    if n <= m:
        return [(n, _sgemm_starts(n, k))]
    blocks = -(-n // THREAD_ALIGN)
    parts = []
    count = min(target, blocks)
    for i in range(count):
        start, size = _partition(i, count, blocks)
        cols = min(n - start * THREAD_ALIGN, size * THREAD_ALIGN)
        parts.append((cols, _sgemm_starts(cols, k)))
    return parts


def _segment_starts(count: int, k: int) -> list[tuple[int, list[int]]]:
    """[(positions, K panel starts)] of one MlasConvOperation segment of ``count`` positions."""
    sn, sk = STRIDE_N, STRIDE_K
    if count >= k:
        while sk // 2 >= k:
            sn, sk = sn * 2, sk // 2
    else:
        while sn > 16 and sn // 2 >= count:
            sn, sk = sn // 2, sk * 2
    out = []
    for n0 in range(0, count, sn):
        cols = min(sn, count - n0)
        starts = [s for k0 in range(0, k, sk) for s in _sgemm_starts(cols, min(sk, k - k0), k0)]
        out.append((cols, starts))
    return out


def _expand(m: int, n: int, k: int, threads: int) -> list[tuple[int, list[int]]]:
    """[(positions, K panel starts)] of an im2col convolution (MlasConvPrepare's threads)."""
    work = m * n * k
    target = int(work / THREAD_COMPLEXITY) + 1 if work < THREAD_COMPLEXITY * MAX_THREADS \
        else MAX_THREADS
    target = min(target, threads)
    stride = -(-n // target)
    if target > 1:
        stride = -(-stride // THREAD_ALIGN) * THREAD_ALIGN
    if stride >= n:
        return _segment_starts(n, k)
    return [part for s in range(0, n, stride) for part in _segment_starts(min(stride, n - s), k)]


def single_row_kernel(m: int, n: int, k: int, pointwise: bool,
                      threads: int = ORT_THREADS) -> bool:
    """Whether MLAS hands some of the convolution to its M = 1 / N = 1 SGEMM kernels
    (MlasSgemmOperation's small-M and column-vector cases: AVX multiplies and adds, rounded
    apart), which CONV_CHUNKED does not reproduce: one filter, one output position, or a
    GEMM threaded over the filters that leaves a thread one filter."""
    if m == 1 or n == 1:
        return True
    if not (pointwise or m > n) or n > m:
        return False
    count = min(min(int(m * n * k / THREAD_COMPLEXITY) + 1, threads), m)
    return any(_partition(i, count, m)[1] == 1 for i in range(count))


def chunks(m: int, n: int, k: int, pointwise: bool, threads: int = ORT_THREADS) -> np.ndarray:
    """int32 [n]: the terms per partial sum at each of the ``n`` output positions of a
    convolution of ``m`` filters and ``k`` terms (CONV_CHUNKED's chunk input). Raises
    ValueError where MLAS's panels at a position are not all one length (never seen)."""
    parts = _direct(m, n, k, threads) if pointwise or m > n else _expand(m, n, k, threads)
    out = []
    for cols, starts in parts:
        size = starts[1] if len(starts) > 1 else k
        if starts != list(range(0, k, size)):
            raise ValueError(f"MLAS's K panels {starts} are not of one length")
        out += [size] * cols
    return np.asarray(out, np.int32)


def _producer(imp, name: str):
    return next((m for m in imp.nodes if name in m.outputs), None) if name else None


def ort_bias(imp, n, bias: np.ndarray) -> np.ndarray:
    """The bias onnxruntime's BiasQuantization transformer leaves a Conv whose input and
    weights are DequantizeLinear outputs and whose bias is a float initializer: s = x scale *
    w scale (float32; per channel with the weights'), round(bias / s) half to even as int32,
    dequantized again (q * s, float32). Other biases are returned as they are."""
    b_name = n.input(2)
    if not b_name or b_name not in {t.name for t in imp.graph.initializer}:
        return bias
    dqs = [_producer(imp, n.input(i)) for i in (0, 1)]
    if any(d is None or d.op_type != "DequantizeLinear" for d in dqs):
        return bias
    xs, ws = (imp.const(d.input(1)) for d in dqs)
    if xs is None or ws is None or xs.size != 1 or ws.size not in (1, bias.size):
        return bias
    s = (np.float32(xs.reshape(-1)[0]) * ws.astype(np.float32).reshape(-1)).astype(np.float32)
    q = np.rint((bias.astype(np.float32) / s).astype(np.float32))
    q = np.clip(q, -2.0 ** 31, 2.0 ** 31 - 128).astype(np.int32)
    return (q.astype(np.float32) * s).astype(np.float32)


def emit(imp, n, x: str, w: np.ndarray, bias: np.ndarray, pads, strides, dils):
    """Output 0 of the Conv node ``n`` as CONV_CHUNKED (``pads``: top, left, bottom, right;
    a float initializer bias as onnxruntime quantizes it, :func:`ort_bias`)."""
    from hal.operations._onnx_ext import NAME, OPERATION_IDS

    bias = ort_bias(imp, n, bias)

    out = n.outputs[0]
    shape = imp.static_shape(out)
    o, c, kh, kw = w.shape
    pointwise = kh == kw == 1 and not any(pads) and list(strides) == [1, 1]
    try:
        chunk = chunks(o, shape[2] * shape[3], c * kh * kw, pointwise)
    except ValueError as e:
        imp.fail(f"onnxruntime's summation order: {e}")
    kind = imp.b.get_extension_operation_type(NAME, OPERATION_IDS["CONV_CHUNKED"])
    ins = [imp.operand(x), imp.b.constant(np.ascontiguousarray(w, np.float32)),
           imp.b.constant(np.asarray(bias, np.float32).reshape(o)), imp.b.constant(chunk),
           *(imp.int32(int(v)) for v in (*pads, *strides, *dils))]
    imp.emit(kind, ins, [imp.output(out, like=x, shape=shape)])


def applies(imp, n, w: np.ndarray, group: int) -> bool:
    """Whether onnxruntime runs the Conv ``n`` through MlasConv as this module computes it:
    the "onnxruntime" mode, float32, 2-D, one group and one image, weights made by a
    DequantizeLinear (constant weights go through the NCHWc transformer instead)."""
    if imp.quantized != "onnxruntime" or w.ndim != 4 or group != 1:
        return False
    shape = imp.shape(n.input(0))
    if not shape or len(shape) != 4 or shape[0] != 1 or not imp.is_float(n.input(0)):
        return False
    if imp.operand_type(n.input(0)) != OperandType.TENSOR_FLOAT32:
        return False
    d = _producer(imp, n.input(1))
    if d is None or d.op_type != "DequantizeLinear":
        return False
    o, c, kh, kw = w.shape
    out = imp.shape(n.outputs[0])
    if not out or len(out) != 4 or 0 in out:
        return False
    pointwise = kh == kw == 1 and not any(n.attr("pads", [0] * 4)) and \
        list(n.attr("strides", [1, 1])) == [1, 1]
    return not single_row_kernel(o, out[2] * out[3], c * kh * kw, pointwise)
