"""The cold-start machinery of clnn/program_cache and clnn/device.py: PoCL's generic
work-group functions, the helper process that compiles half of a model's kernels, and the
warm-up that meets it from the other end."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clnn import program_cache
from clnn.device import POCL_SPECIALIZATION
from clnn.program_cache import CompileHelper

ROOT = Path(__file__).resolve().parents[2]


def _key(name, n):
    return ("fam", name, (("n", n),))


def test_split_balances_by_cost_and_keeps_order():
    keys = [_key("gemm", i) for i in range(4)] + [_key("binary", i) for i in range(8)]
    mine, theirs = CompileHelper.split(keys)
    assert sorted(mine + theirs) == sorted(keys) and not set(mine) & set(theirs)
    cost = [sum(CompileHelper.COST.get(k[1], 1) for k in side) for side in (mine, theirs)]
    assert abs(cost[0] - cost[1]) <= max(CompileHelper.COST.values())
    for side in (mine, theirs):  # each side in the order the keys came
        assert side == [k for k in keys if k in side]


def test_order_launches_own_kernels_first_then_the_helpers_from_the_last():
    h = CompileHelper(None, ["k0", "k1", "k2"])
    names = ["k1", "x", "k0", "k2", "y"]
    assert sorted(names, key=h.order) == ["x", "y", "k2", "k1", "k0"]


def test_wanted_only_on_pocl_with_generic_work_groups(cl_device, monkeypatch):
    pocl = "pocl" in cl_device.platform.version.lower()
    monkeypatch.setenv(POCL_SPECIALIZATION, "0")
    assert CompileHelper.wanted(cl_device.context, CompileHelper.MIN_KERNELS) == pocl
    assert not CompileHelper.wanted(cl_device.context, CompileHelper.MIN_KERNELS - 1)
    monkeypatch.setenv(POCL_SPECIALIZATION, "1")  # per-size compiles: binaries do not hold them
    assert not CompileHelper.wanted(cl_device.context, 100)


def test_a_helper_without_a_job_is_stopped_at_once(cl_device):
    h = CompileHelper.spawn(cl_device.context)
    assert h is not None
    h.stop()
    assert h.proc.poll() is not None  # ended, not left starting PoCL's compiler


# a cold prepare in a fresh process (empty PoCL and clnn caches): the helper gets half of the
# kernels, the first execution compiles nothing and matches the reference; run again on the
# caches it left, no helper starts
_CHILD = """
import json, sys
from clnn import launch, program_cache
from clnn.device import ClDevice
from clnn.options import DeviceOptions
from clnn.tflite import load
from clnn.cli.run import ClnnRunner, compare, random_inputs
from hal.reference import ReferenceDevice

given, stopped, spawned = [], [], []
give, stop = program_cache.CompileHelper.give, program_cache.CompileHelper.stop
spawn = program_cache.CompileHelper.spawn.__func__
def spawn_(cls, context, nice=0):
    spawned.append(nice)
    return spawn(cls, context, nice)
program_cache.CompileHelper.spawn = classmethod(spawn_)
def give_(self, source, names, *cache_root):
    ok = give(self, source, names, *cache_root)
    given.append(len(names) if ok else -1)
    return ok
give_queue = program_cache.CompileHelper.give_queue
def give_queue_(self, sources, claims, *cache_root):
    ok = give_queue(self, sources, claims, *cache_root)
    given.append(len(sources) if ok else -1)
    return ok
program_cache.CompileHelper.give_queue = give_queue_
def stop_(self):
    stop(self)
    stopped.append(self.proc.poll())
program_cache.CompileHelper.give, program_cache.CompileHelper.stop = give_, stop_
imported = load(sys.argv[1])
inputs = random_inputs(imported)
runner = ClnnRunner(imported, ClDevice(options=DeviceOptions(
    tune="off", cache_dir=sys.argv[2], chains=sys.argv[3] == "chains")))
first = launch.STATS["first_launches"]
got, _ = runner.run(inputs)
at_execution = launch.STATS["first_launches"] - first
ref, _ = ClnnRunner(imported, ReferenceDevice()).run(inputs)
ok = all(e["within_tolerance"] for e in compare(got, ref))
stats = program_cache.build_stats()
print(json.dumps({"given": given, "stopped": stopped, "within_tolerance": ok,
                  "chains_built": stats["chains_built"],
                  "spawned": spawned, "compiled": stats["compiled"],
                  "queued": stats["queued"], "here": stats["compiled_here"],
                  "from_binary": stats["from_binary"], "prefetched": stats["prefetched"],
                  "first_launches_at_execution": at_execution}))
"""


def _child_of(tmp_path, chains: bool):
    """One prepare and execution of face_detection_short_range in a fresh process on the
    caches under ``tmp_path``, chains on or off: what it compiled, and how."""
    from clnn.models import mediapipe as models

    path = models.fetch(["face_detection_short_range.tflite"])[
        "face_detection_short_range.tflite"]
    env = {k: v for k, v in os.environ.items() if k != POCL_SPECIALIZATION}
    env.update(POCL_CACHE_DIR=str(tmp_path / "pocl"), PYTHONPATH=str(ROOT))

    def child():
        out = subprocess.run([sys.executable, "-c", _CHILD, path, str(tmp_path / "clnn"),
                              "chains" if chains else "one-by-one"],
                             env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    return child


def test_cold_prepare_builds_its_chain_without_helpers(cl_device, tmp_path):
    """With chains, a cold prepare builds the model's chain itself (one program: no kernel
    of its own compiled, no helper process); a second process builds it from its binary."""
    if "pocl" not in cl_device.platform.version.lower():
        pytest.skip("the helper compiles into PoCL's kernel cache: PoCL only")
    child = _child_of(tmp_path, chains=True)
    for _ in range(2):
        r = child()
        assert r["within_tolerance"] and r["spawned"] == [] and r["given"] == [], r
        assert r["chains_built"] == 1 and r["compiled"] == 0, r
        assert r["first_launches_at_execution"] == 0


def test_cold_prepare_with_the_helper(cl_device, tmp_path):
    """Without chains, a cold prepare compiles the kernels' own programs in this process and
    a helper process, from one queue."""
    if "pocl" not in cl_device.platform.version.lower():
        pytest.skip("the helper compiles into PoCL's kernel cache: PoCL only")
    child = _child_of(tmp_path, chains=False)
    r = child()
    assert r["within_tolerance"]
    # the helper got the queue of every kernel compiled (one execution: no chain compiled in
    # the background), and this process compiled part of them
    assert r["given"] == [r["queued"]] and r["queued"] == r["compiled"] >= 2, r
    assert 0 < r["here"] <= r["queued"], r
    # the helper kept the binaries of the kernels it compiled: built from them here
    assert r["from_binary"] == r["queued"] - r["here"] and r["prefetched"] == 0, r
    assert r["stopped"] and all(code is not None for code in r["stopped"])  # never left running
    assert r["first_launches_at_execution"] == 0
    assert any(p.is_file() for p in (tmp_path / "pocl").rglob("*"))
    # a second process: built here before (clnn.program_cache.model_marker, the kept
    # binaries): nothing compiled, no helper
    r = child()
    assert r["within_tolerance"] and r["spawned"] == [] and r["given"] == []
    assert r["compiled"] == 0 and r["first_launches_at_execution"] == 0
    # every program from its binary, built on a thread while the plans were made (the
    # binaries the first process's prepare used, listed by its model marker)
    assert r["prefetched"] == r["from_binary"] > 0, r


# one prepare of a model in a fresh process: the kernels it compiled (no binary kept)
_MODEL_CHILD = """
import sys
from clnn import program_cache
from clnn.cli.demo import build_model
from clnn.device import ClDevice
from clnn.options import DeviceOptions

ClDevice(options=DeviceOptions(tune="off", cache_dir=sys.argv[2], chains=False)).prepare_model(
    build_model(seed=int(sys.argv[1])))
print(program_cache.build_stats()["compiled"])
"""


def test_a_new_model_compiles_only_the_kernels_no_model_compiled_before(cl_device, tmp_path):
    """One program per kernel key (the kernels that run on their own: chains off here): the
    same kernels in another model (the demo model with other weights) come from the binaries
    the first model's process kept."""
    env = dict(os.environ, POCL_CACHE_DIR=str(tmp_path / "pocl"), PYTHONPATH=str(ROOT))

    def compiled(seed):
        out = subprocess.run([sys.executable, "-c", _MODEL_CHILD, str(seed),
                              str(tmp_path / "clnn")], env=env, capture_output=True,
                             text=True, timeout=600, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        return int(out.stdout.split()[-1])

    assert compiled(1) >= 2
    assert compiled(2) == 0


def test_generic_work_groups_set_on_pocl_unless_the_user_chose(cl_device, monkeypatch):
    from clnn.device import pocl_generic_work_groups

    monkeypatch.delenv(POCL_SPECIALIZATION, raising=False)
    pocl_generic_work_groups(cl_device.platform)
    pocl = "pocl" in cl_device.platform.version.lower()
    assert (os.environ.get(POCL_SPECIALIZATION) == "0") == pocl
    monkeypatch.setenv(POCL_SPECIALIZATION, "1")
    pocl_generic_work_groups(cl_device.platform)
    assert os.environ[POCL_SPECIALIZATION] == "1"
    assert program_cache.BUILD_OPTIONS == ["-cl-std=CL1.2"]


def test_the_compile_helper_option_turns_it_off(cl_device, monkeypatch):
    """``DeviceOptions(compile_helper=False)``: no helper, wherever one would be wanted."""
    from clnn.cli.demo import build_model

    def no_spawn(cls, context, nice=0):
        raise AssertionError("a helper was started")

    monkeypatch.setattr(CompileHelper, "wanted", classmethod(lambda cls, ctx, n: True))
    monkeypatch.setattr(CompileHelper, "spawn", classmethod(no_spawn))
    pm = cl_device.with_options(compile_helper=False).prepare_model(build_model(seed=5))
    assert pm.planner.compile_helper is None


def test_a_helper_that_took_no_job_is_not_waited_for(cl_device, tmp_path):
    """The queue's jobs all taken by this process: a helper still starting up is stopped at
    once, not waited for; one that took a job is waited for until it marks it done."""
    import time

    h = CompileHelper.spawn(cl_device.context)
    assert h is not None and h.give_queue(["__kernel void k(__global int* y) { y[0] = 1; }"],
                                          str(tmp_path), None)
    assert program_cache.claim(str(tmp_path), 0)  # this process took the only job
    t0 = time.monotonic()
    CompileHelper.wait_for([h], str(tmp_path), [])
    assert time.monotonic() - t0 < 1.0 and h.proc.poll() is not None
    assert not program_cache.claim(str(tmp_path), 0)  # taken once only
    (tmp_path / "q").mkdir()
    h = CompileHelper.spawn(cl_device.context)
    assert h is not None and h.give_queue(["__kernel void k(__global int* y) { y[0] = 2; }"],
                                          str(tmp_path / "q"), None)
    CompileHelper.wait_for([h], str(tmp_path / "q"), [0])
    assert (tmp_path / "q" / "0.done").exists()


class _Unread:
    """A helper process that never reads its input (one still starting its compiler)."""

    def __init__(self):
        r, w = os.pipe()
        self.reader = os.fdopen(r, "rb")
        self.stdin = os.fdopen(w, "wb")

    def poll(self):
        return None


def test_a_job_larger_than_the_pipe_never_holds_the_caller_up():
    import threading

    proc = _Unread()
    helper = CompileHelper(proc, [])
    source = "// " + "x" * (4 << 20)  # (a pipe holds 64 KiB)
    done = threading.Event()
    threading.Thread(target=lambda: (helper.give(source, ["k"]), done.set()),
                     daemon=True).start()
    assert done.wait(10), "give waited for the helper to read its job"
    assert helper.names == ["k"]
    job = json.loads(proc.reader.read())  # (the helper reads it once started)
    assert job["source"] == source
    gone = CompileHelper(type("Gone", (), {"poll": lambda self: 0})(), [])
    assert not gone.give_queue(["src"], "/nonexistent")


def test_warm_up_compiles_and_links_without_warnings(cl_device, recwarn, monkeypatch):
    """The compiler warm-up compiles and links its program through ctypes (PoCL loads its
    kernel library at a link, cached program or not), says nothing to the user, and finds
    whether the device builds programs without its builtin header (PoCL: it does)."""
    from clnn.program_cache import compiler, is_pocl

    monkeypatch.setattr(compiler, "_SHORT", {})
    compiler.warm_up(cl_device.context)
    found = list(compiler._SHORT.values())
    assert found == [True] if is_pocl(cl_device.context.devices[0].platform) else len(found) == 1
    assert not [w for w in recwarn if "Pre-build" in str(w.message)]
    ctx = cl_device.context
    assert program_cache.compile_and_link(ctx, compiler._WARM_SOURCE) == "linked"
    assert program_cache.compile_and_link(ctx, compiler._WARM_SOURCE,
                                          list(ctx.devices)) == "linked"
    assert program_cache.compile_and_link(ctx, "__kernel void k() { nope(); }") == "failed"
