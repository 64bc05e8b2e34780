"""``clnn run MODEL --stream N``: a streaming model (TFLite resource variables: its state kept
on the device between executions, clnn/stream.py) fed N frames, each frame's outputs and
time, a summary; with ``--compare`` the peer (litert, its own state; or the reference device)
runs the same frames and every frame's outputs and state variables are compared (in LSB for
integer tensors).

Frames: ``--stream-input random`` (seeded, as ``clnn run``'s inputs, a new draw per frame) or
``features`` (a seeded spectrogram-like stream: clnn.stream.feature_frames), or
``--input NAME=FILE.npy`` with the frames along a first axis of N.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

SEED = 20240607
#: the per-frame lines printed in full; the rest are summarized
SHOWN_FRAMES = 20


class LiteRtStream:
    """ai-edge-litert on the model file: its own resource variables carry the state; with the
    built-in kernels (no XNNPACK) every tensor is kept, so the state values can be read."""

    def __init__(self, path: str, builtin: bool):
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        kw = {}
        if builtin:
            kw = dict(experimental_preserve_all_tensors=True,
                      experimental_op_resolver_type=(
                          OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES))
        self.builtin = builtin
        self.it = Interpreter(model_path=path, num_threads=1, **kw)
        self.it.allocate_tensors()

    def run(self, imported, arrays) -> tuple[list[np.ndarray], dict]:
        it = self.it
        for io, x in zip(imported.inputs, arrays):
            it.set_tensor(io.tensor, x)
        it.invoke()
        outputs = [np.array(it.get_tensor(io.tensor)) for io in imported.outputs]
        state = ({s.name: np.array(it.get_tensor(s.tensor)) for s in imported.states
                  if s.tensor >= 0} if self.builtin else {})
        return outputs, state


class ClnnStream:
    """A clnn.load model as a peer (the reference device)."""

    def __init__(self, model):
        self.model = model

    def run(self, imported, arrays):
        return self.model.run(arrays), self.model.state()


def frames_for(imported, kind: str, frames: int, seed: int, specs=()) -> list[list]:
    """Per frame, the model's input arrays."""
    from clnn.cli.errors import CliError
    from clnn.stream import feature_frames, random_frames

    make = feature_frames if kind == "features" else random_frames
    per_input = [make(io.shape, io.dtype, frames, seed + k)
                 for k, io in enumerate(imported.inputs)]
    names = [io.name for io in imported.inputs]
    for spec in specs or ():
        name, _, path = spec.partition("=")
        k = names.index(name) if name in names else int(name) if name.isdigit() else -1
        if not 0 <= k < len(names):
            raise CliError(f"--input {spec!r}: no input named {name!r}")
        try:
            arr = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise CliError(f"--input {spec!r}: cannot load {path}: {e}") from e
        if len(arr) < frames:
            raise CliError(f"--input {spec!r}: {len(arr)} frames along the first axis, "
                           f"--stream asks for {frames}")
        per_input[k] = [a.reshape(tuple(d or 1 for d in imported.inputs[k].shape)).astype(
            imported.inputs[k].dtype) for a in arr[:frames]]
    return [list(xs) for xs in zip(*per_input)]


def diff(a, b) -> float:
    """max |a - b| (for integer tensors: in LSB)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64).reshape(a.shape))))


def within(a, b) -> bool:
    """Integer tensors: equal; float ones: |a - b| <= 1e-4 + 1e-3 max |b| (as clnn run
    --compare)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iub":
        return diff(a, b) == 0
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    return diff(a, b) <= 1e-4 + 1e-3 * scale


def _peer(compare_with: str, path: str):
    import clnn

    if compare_with == "reference":
        return ClnnStream(clnn.load(path, device="reference", cache=False))
    return LiteRtStream(path, builtin=compare_with == "litert-builtin")


def run_stream(path: str, frames: int, device: str = "reference", kind: str = "random",
               seed: int = SEED, compare_with: str | None = None, input_specs=(),
               as_json: bool = False, use_cache: bool = True) -> int:
    import clnn
    from clnn.cli.errors import CliError

    model = clnn.load(path, device=device, cache=use_cache)
    imported = model._imported
    if not imported.states:
        raise CliError(f"--stream: {os.path.basename(path)} has no state variables (TFLite "
                       "resource variables); a stateless model runs without --stream")
    inputs = frames_for(imported, kind, frames, seed, input_specs)
    peer = _peer(compare_with, path) if compare_with else None
    rows, times = [], []
    for k, arrays in enumerate(inputs):
        t0 = time.perf_counter()
        outs = model.run(arrays)
        times.append(time.perf_counter() - t0)
        row = {"frame": k, "ms": times[-1] * 1e3,
               "outputs": [np.asarray(o).ravel()[:8].tolist() for o in outs]}
        if peer is not None:
            want, want_state = peer.run(imported, arrays)
            row["output_diff"] = [diff(a, b) for a, b in zip(outs, want)]
            state = model.state() if want_state else {}
            row["state_diff"] = {n: diff(state[n], v) for n, v in want_state.items()}
            row["within_tolerance"] = all(within(a, b) for a, b in zip(outs, want)) and all(
                within(state[n], v) for n, v in want_state.items())
        rows.append(row)
    report = _summary(model, path, frames, kind, seed, compare_with, rows, times)
    if as_json:
        print(json.dumps(report, indent=1))
    else:
        _print(report)
    return 0 if all(r.get("within_tolerance", True) for r in rows) else 1


def _summary(model, path, frames, kind, seed, compare_with, rows, times) -> dict:
    outs0 = [r["outputs"] for r in rows]
    report = {"model": os.path.basename(path),
              "device": getattr(model.device, "name", str(model.device)),
              "frames": frames, "inputs": kind, "seed": seed,
              "states": [{"name": s.name, "shape": list(s.shape), "dtype": str(s.dtype)}
                         for s in model.states],
              "state_on_device": model._stream.on_device,
              "frames_with_new_outputs": sum(1 for a, b in zip(outs0, outs0[1:]) if a != b),
              "latency": _latency(times),
              "per_frame": rows}
    if compare_with:
        report["compare_with"] = compare_with
        report["max_output_diff"] = max((max(r["output_diff"], default=0.0) for r in rows),
                                        default=0.0)
        report["max_state_diff"] = max((max(r["state_diff"].values(), default=0.0)
                                         for r in rows), default=0.0)
        report["frames_out_of_tolerance"] = sum(1 for r in rows if not r["within_tolerance"])
    return report


def _latency(times: list[float]) -> dict:
    ms = sorted(t * 1e3 for t in times[1:]) or [times[0] * 1e3]
    return {"first_ms": times[0] * 1e3, "mean_ms": float(np.mean(ms)),
            "p50_ms": float(np.percentile(ms, 50)), "p90_ms": float(np.percentile(ms, 90)),
            "max_ms": ms[-1]}


def _print(report: dict):
    print(f"{report['model']} on {report['device']}: {report['frames']} frames "
          f"({report['inputs']} inputs, seed {report['seed']}), "
          f"{len(report['states'])} state variables kept "
          f"{'in device memory' if report['state_on_device'] else 'on the host'}")
    rows = report["per_frame"]
    for r in rows[:SHOWN_FRAMES]:
        line = f"  frame {r['frame']:4d}  {r['ms']:7.2f} ms  outputs {r['outputs']}"
        if "output_diff" in r:
            line += (f"  diff {max(r['output_diff'], default=0):g}"
                     f" state diff {max(r['state_diff'].values(), default=0):g}")
        print(line)
    if len(rows) > SHOWN_FRAMES:
        print(f"  ... {len(rows) - SHOWN_FRAMES} more frames (--json lists every one)")
    lat = report["latency"]
    print(f"outputs changed on {report['frames_with_new_outputs']} of "
          f"{max(report['frames'] - 1, 0)} frames; per frame: first {lat['first_ms']:.2f} ms, "
          f"then mean {lat['mean_ms']:.2f} ms, p50 {lat['p50_ms']:.2f} ms, "
          f"p90 {lat['p90_ms']:.2f} ms, max {lat['max_ms']:.2f} ms")
    if "compare_with" in report:
        print(f"vs {report['compare_with']}: max output difference "
              f"{report['max_output_diff']:g}, max state difference "
              f"{report['max_state_diff']:g} (integer tensors: LSB), "
              f"{report['frames_out_of_tolerance']} of {report['frames']} frames out of "
              "tolerance (integers: exact; floats: 1e-4 + 1e-3 max |b|)")
    sys.stdout.flush()
