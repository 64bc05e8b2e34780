"""How a prepare's kernels are built: by default one OpenCL program per kernel key, its
binary kept for later processes (a binary that does not load: built from source); with
``combine`` as one program (each kernel renamed by its key), with the same outputs as one
program per kernel, a macro of one kernel not reaching the next, and each kernel built alone
where the combined program does not build."""

from __future__ import annotations

import os

import numpy as np
import pytest

from clnn import program_cache
from clnn.cli.demo import build_model, demo_input
from clnn.options import DeviceOptions
from clnn.program_cache import ProgramCache, rendering
from hal.builder import make_request, read_outputs
from tests.kits.devices import open_or_skip


def _outputs(device, model, x):
    req = make_request(model, [x])
    r = device.prepare_model(model).execute_synchronously(req)
    assert r.status == 0, r.message
    return read_outputs(model, req, r.output_shapes)


def test_combined_programs_compute_what_separate_ones_do():
    from clnn.device import ClDevice

    open_or_skip("opencl")
    model, x = build_model(seed=11), demo_input(seed=11)
    outs = {}
    for combine in (False, True):
        before = program_cache.build_stats()
        # a fresh program cache
        device = ClDevice(fallback=False, options=DeviceOptions(combine=combine))
        outs[combine] = _outputs(device, model, x)
        after = program_cache.build_stats()
        built = after["built"] - before["built"]
        combined = after["combined_kernels"] - before["combined_kernels"]
        if combine:
            assert combined >= 2 and built == 1, (built, combined)
        else:
            assert combined == 0 and built >= 2
    for a, b in zip(outs[False], outs[True]):
        np.testing.assert_array_equal(a, b)  # the same code, compiled the same way


def _synthetic(bodies):
    def render_parts(family, name, params, debug=False, root=None):
        return "", bodies[params["v"]]
    return render_parts


def _value(cache, device, key):
    import pyopencl as cl

    kernel = cache.kernel(key[0], key[1], dict(key[2]))
    y = cl.Buffer(device.context, cl.mem_flags.READ_WRITE, 4)
    kernel.set_args(y)
    cl.enqueue_nd_range_kernel(device.queue, kernel, (1,), None)
    out = np.zeros(1, np.int32)
    cl.enqueue_copy(device.queue, out, y)
    return int(out[0])


@pytest.mark.parametrize("bodies,built_together,want", [
    # a macro of the first kernel would turn the second's declaration into "int 5 = 7"
    ({1: "#define W 5\n__kernel void k(__global int* y) { y[0] = W; }",
      2: "__kernel void k(__global int* y) { int W = 7; y[0] = W; }"}, True, {1: 5, 2: 7}),
    # the same helper function in both: the combined program does not build
    ({1: "inline int h(int x) { return x + 1; }\n"
         "__kernel void k(__global int* y) { y[0] = h(1); }",
      2: "inline int h(int x) { return x + 2; }\n"
         "__kernel void k(__global int* y) { y[0] = h(1); }"}, False, {1: 2, 2: 3}),
    # the same helper under an ONCE_ guard (quantized_lstm's fixed-point helpers): defined
    # once, the guard kept across the kernels, one program
    ({v: "#ifndef ONCE_H\n#define ONCE_H\ninline int h(int x) { return x + 1; }\n"
         f"#endif\n__kernel void k(__global int* y) {{ y[0] = h({v}); }}" for v in (1, 2)},
     True, {1: 2, 2: 3}),
])
def test_build_together(monkeypatch, tmp_path, bodies, built_together, want):
    device = open_or_skip("opencl")
    monkeypatch.setattr(rendering, "_render_parts", _synthetic(bodies))
    # (a cache root of its own: the store of rendered sources holds this case's bodies only)
    cache = ProgramCache(device.context, options=DeviceOptions(cache_dir=str(tmp_path),
                                                               combine=True))
    keys = [("synthetic", "k", (("v", v),)) for v in (1, 2)]
    before = program_cache.build_stats()["combined_kernels"]
    cache.build_together(keys)
    assert (program_cache.build_stats()["combined_kernels"] - before == 2) == built_together
    assert {v: _value(cache, device, key) for v, key in zip((1, 2), keys)} == want


def test_a_kernel_that_does_not_render_is_left_to_its_plan(monkeypatch, tmp_path):
    """build_together never raises: a rendering error is the plan's to report, as before."""
    device = open_or_skip("opencl")

    def render_parts(family, name, params, debug=False, root=None):
        raise RuntimeError(f"rendering {family}.cl.mako def {name}: broken")

    monkeypatch.setattr(rendering, "_render_parts", render_parts)
    for combine in (True, False):
        cache = ProgramCache(device.context, options=DeviceOptions(cache_dir=str(tmp_path),
                                                                   combine=combine))
        cache.build_together([("synthetic", "k", (("v", v),)) for v in (1, 2)])
        with pytest.raises(RuntimeError, match="broken"):
            cache.kernel("synthetic", "k", {"v": 1})


def test_one_program_per_kernel_key_and_its_binary_kept(monkeypatch, tmp_path):
    """The default: each kernel key its own program (kernels whose helpers clash build), its
    binary kept under the cache root; another program cache on that root (a later process)
    builds every program from its binary, and the kernels compute the same."""
    device = open_or_skip("opencl")
    bodies = {1: "inline int h(int x) { return x + 1; }\n"
                 "__kernel void k(__global int* y) { y[0] = h(1); }",
              2: "inline int h(int x) { return x + 2; }\n"
                 "__kernel void k(__global int* y) { y[0] = h(1); }"}
    monkeypatch.setattr(rendering, "_render_parts", _synthetic(bodies))
    keys = [("synthetic", "k", (("v", v),)) for v in (1, 2)]
    got = []
    for _ in range(2):
        cache = ProgramCache(device.context, options=DeviceOptions(cache_dir=str(tmp_path)))
        before = program_cache.build_stats()
        cache.build_together(keys)
        after = program_cache.build_stats()
        got.append({k: after[k] - before[k] for k in ("built", "combined_kernels",
                                                       "from_binary")})
        assert {v: _value(cache, device, key) for v, key in zip((1, 2), keys)} == {1: 2, 2: 3}
        assert cache.get(keys[0]) is not cache.get(keys[1])
    assert got == [{"built": 2, "combined_kernels": 0, "from_binary": 0},
                   {"built": 2, "combined_kernels": 0, "from_binary": 2}]
    assert len(list((tmp_path / "programs" / "binaries").glob("*.bin"))) == 2


def test_a_binary_that_does_not_load_is_built_from_source(monkeypatch, tmp_path):
    device = open_or_skip("opencl")
    monkeypatch.setattr(rendering, "_render_parts", _synthetic(
        {1: "__kernel void k(__global int* y) { y[0] = 4; }"}))
    key = ("synthetic", "k", (("v", 1),))
    ProgramCache(device.context, options=DeviceOptions(cache_dir=str(tmp_path))
                 ).build_together([key])
    (kept,) = (tmp_path / "programs" / "binaries").glob("*.bin")
    kept.write_bytes(b"not a binary")
    cache = ProgramCache(device.context, options=DeviceOptions(cache_dir=str(tmp_path)))
    before = program_cache.build_stats()["from_binary"]
    assert _value(cache, device, key) == 4
    assert program_cache.build_stats()["from_binary"] == before



def test_an_incomplete_pocl_binary_is_removed_and_built_from_source(monkeypatch, tmp_path):
    """PoCL hands out a binary without the program's bitcode when its kernel cache lost the
    bitcode as the binary was taken, and aborts the process on loading one: such a kept
    binary is removed and the program built from source, and none is kept in its place."""
    device = open_or_skip("opencl")
    if not program_cache.is_pocl(device.cl_device.platform):
        pytest.skip("PoCL's binary format")
    monkeypatch.setattr(rendering, "_render_parts", _synthetic(
        {1: "__kernel void k(__global int* y) { y[0] = 5; }"}))
    key = ("synthetic", "k", (("v", 1),))
    ProgramCache(device.context, options=DeviceOptions(cache_dir=str(tmp_path))
                 ).build_together([key])
    (kept,) = (tmp_path / "programs" / "binaries").glob("*.bin")
    good = kept.read_bytes()
    assert program_cache.binary_usable(device.cl_device.platform, good)
    bad = good.replace(b"/program.bc", b"/programXbc")
    assert not program_cache.binary_usable(device.cl_device.platform, bad)
    kept.write_bytes(bad)
    cache = ProgramCache(device.context, options=DeviceOptions(cache_dir=str(tmp_path)))
    before = program_cache.build_stats()["from_binary"]
    assert _value(cache, device, key) == 5
    assert program_cache.build_stats()["from_binary"] == before
    assert not kept.exists() or program_cache.binary_usable(device.cl_device.platform,
                                                            kept.read_bytes())


def test_binary_usable_checks_pocl_binaries_only():
    class Platform:
        def __init__(self, name, version):
            self.name, self.version = name, version

    pocl = Platform("Portable Computing Language", "OpenCL 3.0 PoCL 3.1")
    other = Platform("NVIDIA CUDA", "OpenCL 3.0 CUDA 12.4")
    assert not program_cache.binary_usable(pocl, b"poclbin\0 kernels only")
    assert program_cache.binary_usable(pocl, b"poclbin\0 /program.bc ...")
    assert program_cache.binary_usable(other, b"ptx")
    assert not program_cache.binary_usable(other, b"")


def test_kept_binaries_build_on_several_threads(monkeypatch, tmp_path):
    """A later process builds the programs of its kept binaries on several threads
    (ProgramCache._from_binaries); one whose binary does not load is built from source, and
    every kernel computes what it did."""
    device = open_or_skip("opencl")
    monkeypatch.setattr(rendering, "_render_parts", _synthetic(
        {v: f"__kernel void k(__global int* y) {{ y[0] = {10 * v}; }}" for v in (1, 2, 3)}))
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    keys = [("synthetic", "k", (("v", v),)) for v in (1, 2, 3)]
    ProgramCache(device.context, options=DeviceOptions(cache_dir=str(tmp_path))
                 ).build_together(keys)
    first = ProgramCache(device.context, options=DeviceOptions(cache_dir=str(tmp_path)))
    first._binary_path(first.source(*keys[0][:2], dict(keys[0][2]))).write_bytes(b"broken")
    threads = []
    import concurrent.futures

    real = concurrent.futures.ThreadPoolExecutor

    def counting(n):
        threads.append(n)
        return real(n)

    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", counting)
    cache = ProgramCache(device.context, options=DeviceOptions(cache_dir=str(tmp_path)))
    before = program_cache.build_stats()
    cache.build_together(keys)
    after = program_cache.build_stats()
    assert threads == [3]  # (the broken binary is tried there too)
    assert {k: after[k] - before[k] for k in ("built", "from_binary")} == \
        {"built": 3, "from_binary": 2}
    assert [_value(cache, device, key) for key in keys] == [10, 20, 30]


def test_invoker_lookups_are_kept_in_memory(monkeypatch):
    """pyopencl's argument-setter lookup (an on-disk read per new kernel) is answered from
    memory for a key asked before, wrapped once however often kernels are made."""
    invoker = pytest.importorskip("pyopencl.invoker")
    calls = []

    def lookup(name, n_args, *rest, devs=()):
        calls.append(name)
        return (f"enqueue {name}", f"set_args {name}")

    monkeypatch.setattr(invoker, "generate_enqueue_and_set_args", lookup)
    program_cache.memoize_invokers()
    program_cache.memoize_invokers()
    memo = invoker.generate_enqueue_and_set_args
    assert memo is not lookup and memo.clnn_memo
    first = memo("gemm", 3, devs=["cpu"])
    assert memo("gemm", 3, devs=["cpu"]) is first and calls == ["gemm"]
    assert memo("pool", 3, devs=["cpu"]) == ("enqueue pool", "set_args pool")
    assert calls == ["gemm", "pool"]
    assert memo("gemm", {"unhashable": 1}) == ("enqueue gemm", "set_args gemm")
    assert calls == ["gemm", "pool", "gemm"]
