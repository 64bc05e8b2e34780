"""Compile cost of the chain programs (issue #37): per model, what each chained kernel adds.

For each model (a .tflite path), prepared with chains in a process of its own (clnn's cache
under ``--cache``: rendering only, nothing timed there), the chain programs' Parts are built
in a fresh process, each source made new to PoCL's cache by a comment (a cache miss), and the
process's CPU seconds (all threads: getrusage) of clBuildProgram (``build_s``) and of the first
binary query (PoCL's work-group function and code generation: ``codegen_s``) recorded for:
the chain of no kernel (the chain's frame and common helpers), each distinct kernel key alone
in a chain (its cost over the empty one: what it adds), and the whole chain. A warm-up build
first (PoCL loads its kernel library once per process). Launches against distinct kernels per
model. Prints one JSON document.

    PYTHONPATH=. python benchmarks/chain_compile_profile.py MODEL.tflite ... > out.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile


def _collect(model: str, cache: str) -> dict:
    """The model's chains: per chain its Parts' sources and keys, the launches' keys."""
    import clnn
    from clnn import chain

    m = clnn.load(model, cache=False)
    m.prepared.wait_chains()
    out = []
    for ch in m.prepared.chains():
        parts = [{"key": repr(la_key), "family": la_key[0], "name": la_key[1],
                  "source": chain.source([p], ch.nbuf, called=ch.called, unroll=ch.unroll),
                  "lines": p.function.count("\n")}
                 for la_key, p in zip(dict.fromkeys(la.key for la in ch.launches), ch.parts)]
        out.append({"launches": len(ch.launches), "kernels": len(ch.parts),
                    "nbuf": ch.nbuf, "source": ch.source,
                    "empty": chain.source([], ch.nbuf, called=ch.called, unroll=ch.unroll),
                    "launch_keys": [repr(la.key) for la in ch.launches], "parts": parts})
    return {"model": os.path.basename(model), "chains": out}


def _build(cl, ctx, src: str, nonce: list) -> tuple[float, float]:
    """CPU seconds (process, all threads) of building ``src`` (new to PoCL's cache) and of its
    first binary query."""
    import resource

    from clnn.program_cache import BUILD_OPTIONS

    nonce[0] += 1
    src = f"__constant int clnn_nonce_{os.getpid()}_{nonce[0]} = 1;\n{src}"

    def cpu():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    t0 = cpu()
    prg = cl._cl._Program(ctx, src)
    prg.build(" ".join(BUILD_OPTIONS).encode(), ctx.devices)
    t1 = cpu()
    prg.get_info(cl.program_info.BINARIES)
    return t1 - t0, cpu() - t1


def _measure(collected: dict) -> dict:
    import pyopencl as cl

    ctx = cl.Context([d for p in cl.get_platforms() for d in p.get_devices()
                      if d.type & cl.device_type.CPU][:1])
    nonce = [0]
    _build(cl, ctx, "__kernel void k(__global float* a) { a[0] = 1.0f; }", nonce)
    for ch in collected["chains"]:
        b, c = _build(cl, ctx, ch["empty"], nonce)
        ch["empty_cpu"] = {"build_s": round(b, 3), "codegen_s": round(c, 3)}
        b, c = _build(cl, ctx, ch["source"], nonce)
        ch["whole_cpu"] = {"build_s": round(b, 3), "codegen_s": round(c, 3)}
        for p in ch["parts"]:
            b, c = _build(cl, ctx, p.pop("source"), nonce)
            p["alone_cpu"] = {"build_s": round(b, 3), "codegen_s": round(c, 3)}
            p["adds_s"] = round(b + c - sum(ch["empty_cpu"].values()), 3)
            p["uses"] = ch["launch_keys"].count(p["key"])
        for k in ("source", "empty", "launch_keys"):
            ch.pop(k)
    return collected


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "clnn-cprof"),
                    help="clnn's cache root for the prepares (rendering only)")
    ap.add_argument("--child", choices=("collect", "measure"))
    a = ap.parse_args()
    if a.child == "collect":
        json.dump(_collect(a.models[0], a.cache), sys.stdout)
        return
    if a.child == "measure":
        json.dump(_measure(json.load(open(a.models[0]))), sys.stdout)
        return
    env = dict(os.environ, CLNN_CACHE_DIR=a.cache, PYOPENCL_NO_CACHE="1",
               POCL_WORK_GROUP_SPECIALIZATION="0")
    rows = []
    for model in a.models:
        got = subprocess.run([sys.executable, __file__, model, "--child", "collect"], env=env,
                             check=True, capture_output=True, text=True).stdout
        with tempfile.TemporaryDirectory() as pocl, \
                tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write(got)
            f.flush()
            out = subprocess.run([sys.executable, __file__, f.name, "--child", "measure"],
                                 env=dict(env, POCL_CACHE_DIR=pocl), check=True,
                                 capture_output=True, text=True).stdout
        rows.append(json.loads(out))
        print(json.dumps(_summary(rows[-1])), file=sys.stderr)
    json.dump({"load_average": os.getloadavg(), "models": rows}, sys.stdout, indent=1)


def _summary(row: dict) -> dict:
    return {"model": row["model"],
            "chains": [{"launches": c["launches"], "kernels": c["kernels"],
                        "whole_s": round(sum(c["whole_cpu"].values()), 2),
                        "empty_s": round(sum(c["empty_cpu"].values()), 2),
                        "parts_s": round(sum(p["adds_s"] for p in c["parts"]), 2)}
                       for c in row["chains"]]}


if __name__ == "__main__":
    main()
