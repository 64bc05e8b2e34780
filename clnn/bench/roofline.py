"""The roofline view of ``clnn run --profile``: FLOP and byte counts per operation, the rate
each operation ran at and its fraction of the device's peak (``clnn bench peak``).

The counts are defined once, per operation family (FLOP in clnn/kernels/_work.py, which the
launches read too; bytes here):

- compute-bound families (:data:`COMPUTE`): 2 FLOP per multiply-add of the mathematical
  operation (padding taps and the tiles' rounding not counted); the rate is GFLOP/s against
  the FMA peak;
- every other operation is memory-bound: the bytes of its non-scalar inputs (constants
  included) and outputs, each read or written once; the rate is GB/s against the copy
  bandwidth.

An operation fused into another (clnn/fusion) runs inside that one's kernels: its counts
are not added to it (the rate of a convolution with a fused ADD is that of the convolution).
"""

from __future__ import annotations

from clnn.kernels._work import COMPUTE, _elems, op_flop  # noqa: F401 (defined there)
from hal.types import NUMPY_DTYPE, OperandType


def _dims(sg, operand: int, shapes=None) -> tuple:
    """The operand's planned shape where ``shapes`` (operand -> shape, the plans') has one,
    else its dimensions in the model (a dynamic batch of an ONNX import is 0 there)."""
    if shapes and operand in shapes and shapes[operand] is not None:
        return tuple(int(d) for d in shapes[operand])
    return tuple(int(d) for d in sg.operands[operand].dimensions)


def _nbytes(sg, operand: int, shapes=None) -> int:
    o = sg.operands[operand]
    dims = _dims(sg, operand, shapes)
    if not dims or any(d == 0 for d in dims):
        return 0
    t = o.type if isinstance(o.type, OperandType) else OperandType(o.type)
    return _elems(dims) * NUMPY_DTYPE[t].itemsize


def op_bytes(sg, operation, shapes=None) -> int:
    """Bytes of the non-scalar inputs and the outputs of one operation."""
    return sum(_nbytes(sg, i, shapes) for i in operation.inputs if i >= 0) + \
        sum(_nbytes(sg, o, shapes) for o in operation.outputs)


def counts(sg, k: int, shapes=None) -> tuple[int, int]:
    """(FLOP, bytes) of operation ``k`` of the subgraph ``sg`` (at the planned ``shapes``
    where given: operand -> shape)."""
    op = sg.operations[k]
    ins = [_dims(sg, i, shapes) if i >= 0 else () for i in op.inputs]
    outs = [_dims(sg, o, shapes) for o in op.outputs]
    return op_flop(op.type.name, ins, outs), op_bytes(sg, op, shapes)


def annotate(rows: list[dict], sg, peak: tuple[float, float] | None,
             shapes: dict | None = None) -> list[dict]:
    """Add to each profile row with kernel time: ``flop``, ``bytes``, ``bound`` ("compute" or
    "memory"), ``rate`` (GFLOP/s or GB/s) and ``peak_fraction`` (of the FMA peak or the
    bandwidth; None without a peak), counted at the planned ``shapes`` (operand -> shape)
    where given. Returns the totals per operation type, by time."""
    per_type: dict[str, dict] = {}
    for r in rows:
        k = r.get("operation")
        if k is None or not r["ms"]:
            continue
        flop, nbytes = counts(sg, k, shapes)
        bound = "compute" if flop else "memory"
        r.update(flop=flop, bytes=nbytes, bound=bound, **_rate(bound, flop, nbytes, r["ms"], peak))
        t = per_type.setdefault(r["type"], {"type": r["type"], "count": 0, "ms": 0.0, "flop": 0,
                                            "bytes": 0, "bound": bound})
        t["count"] += 1
        t["ms"] += r["ms"]
        t["flop"] += flop
        t["bytes"] += nbytes
    totals = sorted(per_type.values(), key=lambda t: -t["ms"])
    for t in totals:
        t.update(_rate(t["bound"], t["flop"], t["bytes"], t["ms"], peak))
    return totals


def _rate(bound: str, flop: int, nbytes: int, ms: float, peak) -> dict:
    amount = flop if bound == "compute" else nbytes
    rate = amount / (ms * 1e-3) / 1e9 if ms > 0 else 0.0
    ref = None if peak is None else (peak[0] if bound == "compute" else peak[1])
    return {"rate": rate, "peak_fraction": rate / ref if ref else None}


def unit(bound: str) -> str:
    return "GFLOP/s" if bound == "compute" else "GB/s"


def _cell(r: dict) -> str:
    if "rate" not in r:
        return ""
    frac = "" if r["peak_fraction"] is None else f" {100 * r['peak_fraction']:5.1f}%"
    return f"{r['rate']:8.1f} {unit(r['bound']):7}{frac}"


def print_profile(report: dict, top: int):
    """The profile part of ``clnn run``'s report: operations by time with their rate and
    fraction of the peak, then the totals per operation type."""
    rows = report["profile"]
    total = sum(r["ms"] for r in rows)
    peak = report.get("peak")
    if peak:
        print(f"device peak ({peak['source']}): {peak['gflops']:.1f} GFLOP/s FMA, "
              f"{peak['gbs']:.1f} GB/s copy")
    chained = sum(1 for r in rows if r.get("chained"))
    how = (f"{chained} operations timed inside their chain by its cycle counters, the others "
           "by OpenCL profiling events" if chained else
           "each launch timed on its own by OpenCL profiling events")
    print(f"kernel time per run: {total:.3f} ms ({how}); top operations:")
    print(f"  {'op':>5}  {'type':24} {'ms':>9} {'share':>7}  {'rate':>16} {'peak':>6}  kernels")
    for r in rows[:top]:
        k = "" if r["operation"] is None else str(r["operation"])
        print(f"  {k:>5}  {r['type'][:24]:24} {r['ms']:9.3f} {100 * r['share']:6.1f}%  "
              f"{_cell(r):24}  {', '.join(r['kernels'])}")
    if rows and rows[-1]["operation"] is None and len(rows) > top:
        print(f"         {rows[-1]['type']}")
    totals = report.get("profile_totals")
    if totals:
        print("per operation type:")
        print(f"  {'type':24} {'ops':>4} {'ms':>9} {'share':>7}  {'rate':>16} {'peak':>6}")
        for t in totals:
            print(f"  {t['type'][:24]:24} {t['count']:4d} {t['ms']:9.3f} "
                  f"{100 * t['ms'] / (total or 1):6.1f}%  {_cell(t)}")


def profile_peak(device) -> dict | None:
    """The device's peak for the profile: cached by ``clnn bench peak``, else measured now
    (a few seconds) and cached. None for a device that is not OpenCL."""
    if not hasattr(device, "cl_device"):
        return None
    from clnn.bench.bench_peak import load_or_measure_peak, peak_figures

    rec = load_or_measure_peak(device)
    g, b = peak_figures(rec)
    return {"gflops": g, "gbs": b, "source": "cached by clnn bench peak" if rec["cached"]
            else "measured now", "load_average": rec.get("load_average")}
