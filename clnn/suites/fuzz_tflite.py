"""``clnn fuzz tflite``: malformed .tflite files must end in ``TfliteImportError`` or load and
run with a HAL status; never another exception, a crash, a hang or a memory blow-up.

Each case is a pure function of its seed: it picks a base model (the cached MediaPipe models
and two small synthetic ones, :mod:`clnn.suites.fuzz_tflite_bases`) and a mutation (byte
flips, 32-bit words overwritten with boundary values, a truncation, or a synthetic file with a
``TFL3`` header), mostly aimed at the flatbuffer's structure rather than the weight data. Cases
run in worker processes with a memory limit (RLIMIT_AS); a worker reports each case before it
starts it, so a crash or a hang names its seed, and the parent starts a new worker after it.
A model that loads runs on the reference device (and, for every ``opencl_every``-th seed, on
OpenCL). ``clnn fuzz tflite --count 1 --seed S`` reproduces case S.
"""

from __future__ import annotations

import faulthandler
import json
import os
import queue
import random
import re
import resource
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

import numpy as np
from tqdm import tqdm

#: real models used when they are in the model cache (small ones: fast to load and run)
REAL_BASES = ("hand_recrop.tflite", "face_detection_short_range.tflite",
              "face_detection_full_range_sparse.tflite")
KINDS = ("flip", "word", "truncate", "header")
_WEIGHTS = (4, 3, 2, 1)
_WORDS = (0, 1, 2, 3, 4, 8, 255, 256, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
          0xFFFFFFFE, 0x40000000)
MEMORY_LIMIT = 3 << 30
CASE_TIMEOUT = 30.0
#: import limits for fuzzed files, far above the bases' own tensors (at most 1.2 MiB each,
#: 40 MiB together) and far below the defaults: a mutated shape meets the memory guard
#: instead of making a case run for minutes on the reference device
FUZZ_TENSOR_BYTES = 8 << 20
FUZZ_MODEL_BYTES = 128 << 20


def load_bases(real=REAL_BASES) -> list[tuple[str, bytes]]:
    """The base models in a fixed order: synthetic ones, then those of the ``real`` models
    that are in the model cache."""
    from clnn.models import mediapipe as models
    from clnn.suites.fuzz_tflite_bases import synthetic_bases

    bases = sorted(synthetic_bases().items())
    if real:
        for name in real:
            path = os.path.join(models.cache_dir(), name)
            if os.path.exists(path):
                with open(path, "rb") as f:
                    bases.append((name, f.read()))
    return bases


def structure_positions(raw: bytes) -> np.ndarray:
    """Byte positions outside constant buffer data (where a mutation changes the graph)."""
    import tflite

    mask = np.ones(len(raw), bool)
    model = tflite.Model.GetRootAs(raw, 0)
    for i in range(model.BuffersLength()):
        buf = model.Buffers(i)
        n = buf.DataLength()
        if n:
            start = buf._tab.Vector(buf._tab.Offset(4))
            mask[start:start + n] = False
    return np.flatnonzero(mask)


def make_case(seed: int, bases, positions) -> tuple[bytes, str]:
    """(file bytes, one-line description) of case ``seed``."""
    rng = random.Random(seed)
    k = rng.randrange(len(bases))
    name, raw = bases[k]
    struct_pos = positions[k]
    kind = rng.choices(KINDS, _WEIGHTS)[0]
    data = bytearray(raw)

    def pick() -> int:
        if rng.random() < 0.85 and len(struct_pos):
            return int(struct_pos[rng.randrange(len(struct_pos))])
        return rng.randrange(len(data))

    if kind == "flip":
        at = sorted(pick() for _ in range(rng.randint(1, 6)))
        for p in at:
            data[p] ^= rng.randint(1, 255)
        return bytes(data), f"{name}: bytes flipped at {at}"
    if kind == "word":
        p = min(pick() & ~3, len(data) - 4)
        value = rng.choice(_WORDS) if rng.random() < 0.8 else rng.getrandbits(32)
        struct.pack_into("<I", data, p, value)
        return bytes(data), f"{name}: word at {p} set to {value:#x}"
    if kind == "truncate":
        cut = rng.choice([rng.randrange(len(data)), len(data) // 3, len(data) // 2,
                          rng.randrange(min(len(data), 64))])
        return bytes(data[:cut]), f"{name}: truncated to {cut} bytes"
    size = rng.choice([0, 4, 16, 64, 256, 1024])
    tail = bytes(rng.getrandbits(8) for _ in range(size))
    root = rng.choice([8, 12, 16, len(tail), rng.getrandbits(32)])
    return (struct.pack("<I", root) + b"TFL3" + tail,
            f"synthetic: root offset {root:#x}, {size} random bytes after 'TFL3'")


# ----------------------------------------------------------------------------- one case
def _run_on(device, imported, rng) -> str:
    """The HAL status of preparing and running ``imported`` (a HalError is a status)."""
    from hal.builder import make_request
    from hal.errors import HalError

    try:
        prepared = device.prepare_model(imported.model)
        inputs = []
        for io in imported.inputs:
            shape = tuple(d or 1 for d in io.shape)
            if np.dtype(io.dtype).kind == "f":
                inputs.append(rng.standard_normal(shape).astype(io.dtype))
            else:
                inputs.append(np.zeros(shape, io.dtype))
        result = prepared.execute_synchronously(make_request(imported.model, inputs))
    except HalError as e:
        return f"prepare:{e.status.name}"
    return result.status.name


def run_case(seed: int, bases, positions, devices: dict, opencl_every: int) -> dict:
    from clnn.tflite import TfliteImportError, load

    data, desc = make_case(seed, bases, positions)
    out = {"seed": seed, "case": desc}
    try:
        imported = load(data, FUZZ_TENSOR_BYTES, FUZZ_MODEL_BYTES)
    except TfliteImportError as e:
        out.update(outcome="rejected", message=str(e), guard=bool(getattr(e, "unexpected", 0)))
        return out
    except Exception as e:  # the defect this suite exists to catch
        out.update(outcome="failure", message=f"load raised {type(e).__name__}: {e}")
        return out
    statuses = {}
    for name in ("reference", "opencl"):
        if name == "opencl" and not (opencl_every and seed % opencl_every == 0):
            continue
        try:
            if name not in devices:
                from clnn.devices import open_device

                devices[name] = open_device(name)
            statuses[name] = _run_on(devices[name], imported, np.random.default_rng(seed))
        except Exception as e:
            out.update(outcome="failure",
                       message=f"{name} run raised {type(e).__name__}: {e}", statuses=statuses)
            return out
    out.update(outcome="ran", statuses=statuses)
    return out


def worker(config: dict) -> int:
    """Run seeds [start, stop) and print a line before and after each case."""
    limit = config.get("memory_limit")
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    bases = load_bases(config["real"])
    positions = [structure_positions(raw) for _, raw in bases]
    devices: dict = {}
    for seed in range(config["start"], config["stop"]):
        print(f"S {seed}", flush=True)
        # a hang dumps the stacks (to the parent's error file) before the parent's timeout
        faulthandler.dump_traceback_later(config["timeout"], exit=True)
        result = run_case(seed, bases, positions, devices, config["opencl_every"])
        faulthandler.cancel_dump_traceback_later()
        print("R " + json.dumps(result), flush=True)
    return 0


def _death(errors, returncode: int) -> str:
    """Why a worker died: where it hung (faulthandler's innermost frame) or its last line."""
    errors.seek(0)
    lines = errors.read().strip().splitlines()
    if any(line.startswith("Timeout (") for line in lines):
        frame = next((x.strip() for x in lines if x.strip().startswith("File ")), "")
        return f"hang: no result in time; innermost frame {frame}"
    return f"worker died (exit {returncode}) {lines[-1] if lines else ''}"


# ----------------------------------------------------------------------------- parent
def _pump(stream, lines: queue.Queue):
    for line in stream:
        lines.put(line)
    lines.put(None)


def _drive(start, stop, config, results, timeout, tick):
    """Run seeds [start, stop) through workers, restarting after a crash or a hang."""
    while start < stop:
        cfg = dict(config, start=start, stop=stop)
        # stderr to a file: a chatty worker must not block on a full pipe
        errors = tempfile.TemporaryFile("w+")
        proc = subprocess.Popen([sys.executable, "-m", "clnn.suites.fuzz_tflite", "--worker",
                                 json.dumps(cfg)], stdout=subprocess.PIPE, stderr=errors,
                                text=True)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        current = None
        while True:
            try:
                # the worker's own faulthandler fires at ``timeout``; this is the backstop
                line = lines.get(timeout=timeout + 10 if current is not None else 120)
            except queue.Empty:
                proc.kill()
                proc.wait()
                seed = current if current is not None else start
                results.append({"seed": seed, "outcome": "failure",
                                "message": f"hang: no result in {timeout:.0f} s"})
                tick()
                start = seed + 1
                break
            if line is None:
                proc.wait()
                # died in a case, or before its next one (at startup): either is a failure
                seed = current if current is not None else start
                if seed < stop:
                    results.append({"seed": seed, "outcome": "failure",
                                    "message": _death(errors, proc.returncode)})
                    tick()
                start = seed + 1
                break
            if line.startswith("S "):
                current = int(line[2:])
            elif line.startswith("R "):
                results.append(json.loads(line[2:]))
                tick()
                current = None
                start = results[-1]["seed"] + 1


def run_fuzz(count: int, seed: int = 0, real=REAL_BASES, workers: int | None = None,
             opencl_every: int = 0, timeout: float = CASE_TIMEOUT,
             memory_limit: int = MEMORY_LIMIT, progress: bool = False) -> dict:
    """Cases ``seed .. seed+count-1`` over the synthetic bases and the cached ``real`` models;
    returns {"counts", "statuses", "failures", "results"}."""
    workers = max(1, min(workers or os.cpu_count() or 1, count))
    config = {"timeout": timeout, "real": list(real), "opencl_every": opencl_every,
              "memory_limit": memory_limit}
    results: list[dict] = []
    bar = tqdm(total=count, disable=not progress, unit="case", smoothing=0.05)
    bounds = [seed + count * i // workers for i in range(workers + 1)]
    # OpenCL cases in the first worker only: with two workers building kernels at once on a
    # busy 2-core machine (cold PoCL cache), 3 of 300 cases once exceeded the 30 s timeout
    # (not reproduced with a warm cache)
    threads = [threading.Thread(target=_drive, args=(
        bounds[i], bounds[i + 1], dict(config, opencl_every=opencl_every if i == 0 else 0),
        results, timeout, bar.update)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bar.close()
    results.sort(key=lambda r: r["seed"])
    counts = {"rejected": 0, "rejected_by_guard": 0, "ran": 0, "failure": 0}
    statuses: dict[str, int] = {}
    for r in results:
        counts[r["outcome"]] += 1
        counts["rejected_by_guard"] += bool(r.get("guard"))
        for dev, status in r.get("statuses", {}).items():
            statuses[f"{dev}:{status}"] = statuses.get(f"{dev}:{status}", 0) + 1
    reasons = Counter(_reason(r["message"]) for r in results if r["outcome"] == "rejected")
    return {"counts": counts, "statuses": statuses, "reasons": dict(reasons.most_common()),
            "failures": [r for r in results if r["outcome"] == "failure"], "results": results}


def _reason(message: str) -> str:
    """A rejection message without its numbers and names: the kind of malformation."""
    message = re.sub(r"\([^)]*\)", "", re.sub(r"\d+", "#", message))
    return message.split(" at byte")[0][:90]


def main(args) -> int:
    t0 = time.perf_counter()
    bases = load_bases()
    print(f"bases: {', '.join(name for name, _ in bases)}")
    report = run_fuzz(args.count, args.seed, opencl_every=25, progress=sys.stderr.isatty())
    c = report["counts"]
    print(f"{args.count} cases in {time.perf_counter() - t0:.0f} s: {c['rejected']} rejected "
          f"with TfliteImportError ({c['rejected_by_guard']} only by the last-resort guard), "
          f"{c['ran']} loaded and ran, {c['failure']} failures")
    for key, n in sorted(report["statuses"].items()):
        print(f"  {key}: {n}")
    print("most frequent rejections:")
    for reason, n in list(report["reasons"].items())[:12]:
        print(f"  {n:6d}  {reason}")
    for f in report["failures"]:
        print(f"FAIL seed {f['seed']}: {f['message']} [{f.get('case', '')}]\n"
              f"  reproduce: clnn fuzz tflite --count 1 --seed {f['seed']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({k: v for k, v in report.items()}, f, indent=1)
    return 1 if report["failures"] else 0


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--worker":
    sys.exit(worker(json.loads(sys.argv[2])))
