"""The kernel keys of the MediaPipe models: which families a new model compiles (issue #37).

    python3 benchmarks/kernel_keys.py [--json FILE] [MODEL ...]

Prepares every model (default: the 13 that need no MediaPipe custom operations) on the OpenCL
device in one process, with clnn's and PoCL's caches in a new temporary directory, and records
the kernel keys (family, kernel, parameters) each prepare asks for
(clnn.program_cache.recording). Reported, with no timing (the figures do not depend on the
machine's load):

- per family and kernel: its distinct keys over the models, the parameters in which they differ,
  and for each key the models that use it;
- per model: its keys and those no other model of the run uses, what the model compiles on a
  machine where clnn ran every other model (``clnn bench prepare --models`` "new" column), with
  their estimated compile cost (clnn.program_cache.CompileHelper.COST: a GEMM 8, a element-wise
  kernel 1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

WORKER = r"""
import json, sys
import clnn.tflite
from clnn import program_cache
from clnn.devices import open_cl_device
from clnn.models.mediapipe import fetch
device = open_cl_device()
out = {}
for name in sys.argv[1:]:
    imported = clnn.tflite.load(next(iter(fetch([name]).values())))
    with program_cache.recording() as keys:
        device.prepare_model(imported.model)
    # (a key recorded as (kind, family, kernel, parameters); chains' keys have no parameters)
    out[name] = [[key[-3], key[-2], [list(pv) for pv in key[-1]]] for key in keys
                 if isinstance(key[-1], tuple)]
print(json.dumps(out))
"""


def record_keys(names: list[str]) -> dict:
    """Model name -> its kernel keys ([family, kernel, [[parameter, value], ...]])."""
    with tempfile.TemporaryDirectory(prefix="clnn-kernel-keys-") as caches:
        env = dict(os.environ, CLNN_CACHE_DIR=os.path.join(caches, "clnn"),
                   POCL_CACHE_DIR=os.path.join(caches, "pocl"),
                   PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.run([sys.executable, "-c", WORKER, *names], env=env,
                              capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"kernel_keys: the worker failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.splitlines()[-1])


def census(keys: dict) -> dict:
    """Families, their keys and users; per model its keys and those only it uses."""
    from clnn.program_cache import CompileHelper

    users: dict[str, list] = {}
    for model, ks in keys.items():
        for k in ks:
            users.setdefault(json.dumps(k), []).append(model)
    families: dict[str, list] = {}
    for k, who in users.items():
        family, kernel, params = json.loads(k)
        families.setdefault(f"{family}.{kernel}", []).append({"params": dict(params),
                                                              "models": sorted(who)})
    out_fam = {}
    for name, entries in sorted(families.items(), key=lambda kv: -len(kv[1])):
        names = {p for e in entries for p in e["params"]}
        varying = sorted(p for p in names
                         if len({repr(e["params"].get(p)) for e in entries}) > 1)
        out_fam[name] = {"keys": len(entries), "varying": varying,
                         "users": [{**{p: e["params"].get(p) for p in varying},
                                    "models": e["models"]} for e in entries]}
    models = {}
    for model, ks in keys.items():
        own = [k for k in ks if len(users[json.dumps(k)]) == 1]
        models[model] = {"keys": len(ks), "own_keys": len(own),
                         "own_cost": sum(CompileHelper.COST.get(k[1], 1) for k in own),
                         "own": [f"{k[0]}.{k[1]} {dict(k[2])}" for k in own]}
    return {"distinct_keys": len(users), "keys_over_models": sum(len(v) for v in keys.values()),
            "own_keys_over_models": sum(m["own_keys"] for m in models.values()),
            "models_without_own_keys": sum(m["own_keys"] == 0 for m in models.values()),
            "families": out_fam, "models": models}


def main() -> int:
    from clnn.models.mediapipe import MODELS, NEEDS_MEDIAPIPE_OPS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None, help="write the census to FILE")
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    names = args.models or sorted(n for n in MODELS if n not in NEEDS_MEDIAPIPE_OPS)
    result = census(record_keys(names))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print(f"{result['distinct_keys']} distinct kernel keys over {len(names)} models "
          f"({result['keys_over_models']} per model in all); keys only one model uses: "
          f"{result['own_keys_over_models']}; models with none: "
          f"{result['models_without_own_keys']}")
    for name, fam in result["families"].items():
        print(f"  {name}: {fam['keys']} keys, differing in {', '.join(fam['varying']) or '-'}")
    for model, m in result["models"].items():
        print(f"  {model}: {m['keys']} keys, {m['own_keys']} its own (cost {m['own_cost']}): "
              + "; ".join(m["own"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
