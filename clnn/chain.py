"""Chains: consecutive kernel launches of a plan run as one launch of persistent work-groups.

Why: on a CPU device every kernel boundary puts PoCL's worker threads to sleep and wakes them
again (a condition variable): a worker sleeps as soon as no work-group of the running kernel is
left, and waking a sleeping core (a futex wake-up across cores) costs about as long as many of
a small model's launches take, where a spinning thread costs almost nothing. So the other cores
join few of the short launches, and the kernels of a model run at about one core's speed. The
rule: chain the launches of models of many short launches on CPU devices (the chained against
the one-by-one latency of the MediaPipe models: benchmarks/chain_rates.py, clnn bench models
with ``CLNN_CHAIN=0`` and ``=1``).

A chain runs launches 0..n-1 of a plan as one kernel of ``P`` work-groups (one work-item each;
P = the device's compute units), launch after launch. Each launch's work-items are cut into
*tasks* (contiguous ranges, :func:`tasks_per_unit` per unit) and the tasks into P blocks, one
per work-group: work-group w runs its own block first, claiming its tasks from a counter of its
own, then takes what is left of the others' blocks from their counters, then goes on to the
next launch once every task of this one is done (spinning). Owning the same block of every
launch keeps a work-group on the same rows of the image from one layer to the next, so what a
layer reads was written by the same core, in its caches (data another core wrote reads
several times slower than a core's own; benchmarks/chain_tasks.py). A GEMM's tasks split its
rows (dimension 0, :data:`ROWS_FIRST`), the other kernels' their dimension 0 innermost, so that
tasks follow the NHWC memory order. A work-group waits only after every task of the launch was
claimed, by running work-groups that finish them without waiting: no work-group waits for a
task that no one runs, whatever the order and concurrency the device gives work-groups (one
worker runs the whole chain alone, taking every block). The workers keep working from one
launch to the next instead of sleeping between kernels. A work-group that has polled for a
launch's last tasks longer than the device class allows (``chain_spin``: their worker
descheduled by other processes) leaves the chain, the others taking its blocks from then on,
so that its core is not spent spinning on a worker that waits for the other core. The last
work-group to leave resets the counters for the next run.

Each launch's kernel runs unchanged: its source becomes a function of the chain's program,
get_global_id / get_global_size reading the task loop's indices, its arguments read from a
table (buffers chosen among the chain's buffer arguments, scalars as 32-bit words). Each kernel's
task loop is a function of its own that the chain kernel calls (``noinline``), the kernel's
body inlined into it: the compiler then optimizes one kernel's loop at a time instead of one
function holding every kernel, which costs several times more to compile than its parts
(face_detection_short_range's chain of 16 kernels: 1.4 CPU-s against 6.7 inlined, and 3.7 for
its 16 kernels compiled one program each; one call per task, steady state alike:
benchmarks/results/issue37_cold-20261129-s22.json). The device class may have the task
function call a family's kernel per work-item instead (``chain_called``: a function of its
own, ``noinline``, where a work-item's work is large; benchmarks/chain_called_ab.py). A chain
program depends only on its Parts, in order, and its buffer arguments, which the class rounds
up (``chain_buffers``): two models of the same kernels share one program. Only
kernels that compute alike under any work-groups can be chained: no barriers, local memory or
work-group functions (a launch using them ends a chain), and only scalar arguments of 32 bits.

On by default on CPU devices of at least the class's ``chain_min_units`` compute units
(clnn/kernels/_defaults.py; ``DeviceOptions.chains``: False off, True on every device;
``CLNN_CHAIN`` at the entry points): across work-groups the tasks
see each other's writes through the atomic counters, which a CPU's coherent caches make
visible; a GPU gives no such guarantee in OpenCL 1.2. Not used by runs that collect profiling
events (``clnn run --profile`` times every launch on its own) or keep every intermediate.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import re
from pathlib import Path

import numpy as np

#: tasks per compute unit and launch (at most; None: the device class's, clnn/kernels/
#: _defaults.py ``chain_tasks``): a work-group that finishes its own block early takes the
#: others' leftovers, so the last task of a launch is what one core may wait for. Few large
#: tasks leave one work-group waiting for another at the end of each launch; many small ones
#: cost their entries, and the tasks taken from another's block are rows that the block's
#: owner reads from another core's caches in the next launch. The rule: the count whose
#: chained models run fastest, with the waits it leaves (benchmarks/chain_tasks.py: each
#: model's execution time at several counts, taking turns, and the chains' summed per-launch
#: waits from their profiled variant).
TASKS_PER_UNIT: int | None = None
#: a pointer argument's table word: the chain's buffer index in the low PACK_BITS bits, the
#: byte offset into it in units of 2^PACK_ALIGN_BITS above them (non-zero only in the buffer
#: of packed constants, :func:`pack_constants`)
PACK_BITS = 10
PACK_INDEX = (1 << PACK_BITS) - 1
PACK_ALIGN_BITS = 7
#: the most bytes of constants packed into one buffer (offsets of 2^21 units of 128 bytes)
PACK_MAX = 1 << (31 - PACK_BITS + PACK_ALIGN_BITS)
#: a constant buffer larger than this keeps its own argument (a plan's weight arena: copying
#: pose_landmark_full's 12.3 MB at prepare cost ~20 ms; the argument ~0.1 us an execution)
PACK_EACH_MAX = 1 << 20
#: device (its int_ptr) -> its class's defaults (clnn/kernels/_defaults.py: :func:`_class`)
_CLASSES: dict = {}
#: the fewest launches chained: a chain's program compiles its kernels again (seconds on a cold
#: PoCL cache), which the wake-up a chained launch saves repays only in models of many launches
#: run many times (a conformance test's model of one to five launches never; clnn bench
#: prepare for the compile, benchmarks/chain_rates.py for the saving)
MIN_LAUNCHES = 8
#: kernels whose dimension 0 walks the rows of an NHWC output and dimension 1 its columns
#: (the GEMM's row blocks and column panels): their tasks split dimension 0, so that a task
#: holds whole rows of the image as the others' do (their dimension 0 is the fastest in memory)
ROWS_FIRST = {("gemm", "gemm")}
#: header words per chained launch in the argument table (see :func:`source`)
HEADER = 8
#: ints between two counters of the sync buffer (each on a cache line of its own)
STRIDE = 16
#: source tokens of kernels that depend on their work-groups (never chained)
_GROUP_WORDS = (r"barrier|work_group_\w+|get_local_id|get_group_id|get_local_size|"
                r"get_num_groups|get_enqueued_local_size|__local|local|__constant|"
                r"sub_group_\w+|get_global_offset|get_work_dim")
_GROUP_BOUND = re.compile(rf"\b({_GROUP_WORDS})\b")
#: the words of :data:`_GROUP_BOUND` anywhere (a quick test first: a warm process makes every
#: Part, and the word-bounded pattern scans a kernel's source four times slower)
_GROUP_HINT = re.compile(_GROUP_WORDS)
#: a kernel declaration (:func:`_declaration`)
_DECLARATION = re.compile(r"(__kernel\b[^;{}]*?\bvoid\s+)(\w+)(\s*\()")
_SCALARS = {"int": "{a}", "uint": "(uint){a}", "unsigned int": "(uint){a}",
            "float": "as_float({a})"}
_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)", re.M)
#: a block of helpers defined once however often it is included (no nested conditionals)
_GUARDED = re.compile(r"^[ \t]*#ifndef[ \t]+(\w+)[ \t]*\n[ \t]*#define[ \t]+\1\b"
                      r".*?^[ \t]*#endif\b[^\n]*", re.M | re.S)
#: kernel key -> its Part, or why it cannot be chained (Unchainable): the source of a key
#: never changes
PARTS: dict = {}


def enabled(cl_device, options=None) -> bool:
    """Whether plans run their chains on this device: ``options.chains`` (clnn.options.
    DeviceOptions) when True or False, else (None, or no options) CPU devices of at least the
    CPU class's ``chain_min_units`` compute units (clnn/kernels/_defaults.py)."""
    import pyopencl as cl

    from clnn.kernels._defaults import TABLE

    chains = None if options is None else options.chains
    if chains is not None:
        return bool(chains)
    return bool(cl_device.type & cl.device_type.CPU) and \
        cl_device.max_compute_units >= TABLE["cpu"].chain_min_units


def tasks_per_unit(cl_device) -> int:
    """The tasks per compute unit of each chained launch on ``cl_device``
    (:data:`TASKS_PER_UNIT`)."""
    if TASKS_PER_UNIT is not None:
        return TASKS_PER_UNIT
    return _class(cl_device).chain_tasks


def _class(cl_device):
    """``cl_device``'s class defaults (clnn.kernels._defaults.ClassDefaults), once per device."""
    key = cl_device.int_ptr
    if key not in _CLASSES:
        from clnn.kernels import _defaults
        from clnn.workgroups import DeviceLimits

        _CLASSES[key] = _defaults.defaults(_defaults.traits(DeviceLimits.of(cl_device)))
    return _CLASSES[key]


def buffer_arguments(count: int, least: int, limit: int) -> int:
    """A chain program's buffer arguments for ``count`` buffers: ``count`` rounded up to a
    power of two of at least ``least`` (0: ``count``), no more than ``limit`` (the device's
    parameter space) nor fewer than ``count`` (the class's ``chain_buffers``)."""
    if least <= 0:
        return count
    return max(count, min(limit, max(least, 1 << max(count - 1, 0).bit_length())))


class Unchainable(Exception):
    """A kernel that cannot run in a chain (the reason)."""


def _balanced(src: str, start: int, open_: str, close: str) -> int:
    """Index just past the bracket closing the one at ``start`` (the brackets found by a
    regular expression, not character by character: a warm process makes every Part)."""
    depth = 0
    for m in _BRACKETS[open_ + close].finditer(src, start):
        depth += 1 if m.group() == open_ else -1
        if depth == 0:
            return m.end()
    raise Unchainable("unbalanced brackets")


_BRACKETS = {"()": re.compile(r"[()]"), "{}": re.compile(r"[{}]")}


def _split_params(text: str) -> list[str]:
    """A parameter list's parameters (commas inside brackets do not split)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _declaration(body: str, name: str):
    """The match of kernel ``name``'s declaration in ``body`` (as clnn.program_cache's
    ``_kernel_decl(name)`` finds it, without compiling a pattern per kernel name), or None."""
    for m in _DECLARATION.finditer(body):
        if m.group(2) == name:
            return m
    return None


class Part:
    """One kernel key's source as a function of a chain program."""

    def __init__(self, key: tuple, root: str | None = None):
        """``root``: the cache root of the store of rendered sources
        (clnn.program_cache.kernel_parts)."""
        from clnn.program_cache import kernel_parts

        family, name, frozen = key
        #: its kernel's family (a class's ``chain_called`` families are called, not inlined)
        self.family = family
        #: the common helpers the kernel was rendered with
        self.common, body = kernel_parts(family, name, dict(frozen), root)
        #: its tasks split dimension 0 (:data:`ROWS_FIRST`)
        self.rows_first = (family, name) in ROWS_FIRST and dict(frozen).get("cmode") == "nhwc"
        if _GROUP_HINT.search(body) and _GROUP_BOUND.search(body):
            raise Unchainable(f"{family}.{name} depends on its work-groups")
        m = _declaration(body, name)
        if m is None:
            raise Unchainable(f"{family}.{name}: no kernel declaration")
        open_paren = m.end() - 1
        close_paren = _balanced(body, open_paren, "(", ")")
        brace = body.index("{", close_paren)
        end = _balanced(body, brace, "{", "}")
        #: the kernel's parameters: (type text, is a pointer)
        self.params = []
        for p in _split_params(body[open_paren + 1:close_paren - 1]):
            pname = re.search(r"(\w+)\s*$", p)
            if pname is None:
                raise Unchainable(f"{family}.{name}: parameter {p!r}")
            ptype = p[:pname.start()].strip()
            if "*" in ptype:
                if "__global" not in ptype and "global" not in ptype.split():
                    raise Unchainable(f"{family}.{name}: parameter {p!r} is not global")
                self.params.append((ptype.replace("restrict", ""), True))
            elif " ".join(ptype.replace("const", "").split()) in _SCALARS:
                self.params.append((" ".join(ptype.replace("const", "").split()), False))
            else:
                raise Unchainable(f"{family}.{name}: parameter type {ptype!r}")
        #: text around the kernel (helper functions of the family), once per program
        self.helpers = body[:m.start()] + body[end:]
        #: no helpers that two variants of the kernel would define twice (helpers inside
        #: ``#ifndef G`` / ``#define G`` ... ``#endif`` guards are defined once whatever
        #: includes them: common.mako's clnn_mbqm<n>)
        self.pure = not _GUARDED.sub("", self.helpers).strip()
        if re.search(r"\bget_global_(id|size)\b", self.helpers):
            raise Unchainable(f"{family}.{name}: a helper function reads the work-item's id")
        decl = ("static @INLINE@ void @PART@(int clnn_x, int clnn_y, int clnn_z, int clnn_gx, "
                "int clnn_gy, int clnn_gz, ")
        undefs = "".join(f"#undef {d}\n" for d in dict.fromkeys(_DEFINE.findall(body)))
        self.function = f"{decl}{body[open_paren + 1:end]}\n{undefs}"

    def call(self, fn: str) -> tuple[str, str]:
        """(declarations of the arguments, read once per task from the table ``a``, buffers
        from the chain's buffer list ``b``; the call of this function for work-item x, y,
        z)."""
        decls, names = [], []
        for k, (ptype, pointer) in enumerate(self.params):
            value = f"({ptype})(a[{k}] < 0 ? 0 : b[a[{k}] & {PACK_INDEX}] + " \
                f"((size_t)(a[{k}] >> {PACK_BITS}) << {PACK_ALIGN_BITS}))" if pointer else \
                _SCALARS[ptype].format(a=f"a[{k}]")
            decls.append(f"{ptype} const v{k} = {value};")
            names.append(f"v{k}")
        return " ".join(decls), f"{fn}(x, y, z, g0, g1, g2, {', '.join(names)});"


def _task(j: int, p: Part, unroll: bool = True) -> str:
    """The chain's ``j``-th kernel as a task function: one task's loop over its work-items,
    the kernel's body inlined into it (see :func:`source`); ``unroll`` False: the loop over
    the work-items marked not to be unrolled."""
    decls, call = p.call(f"clnn_part{j}")
    pragma = "" if unroll else "#pragma clang loop unroll(disable)\n        "
    if p.rows_first:  # a task: a range of rows (dimension 0) x a range of dimensions 1-2,
        # rows innermost (a GEMM's column panel is read once for the task's row blocks)
        loop = f"""const int cols = h[5], R = tasks / cols, G = g1 * g2;
    const int r = task / cols, q0 = G * (task % cols) / cols;
    const int q1 = G * (task % cols + 1) / cols, x0 = g0 * r / R, x1 = g0 * (r + 1) / R;
    for (int q = q0; q < q1; ++q) {{
        const int y = q % g1, z = q / g1;
        {pragma}for (int x = x0; x < x1; ++x)
            {call}
    }}"""
    else:  # dimension 0 innermost, in runs (a loop the compiler may vectorize)
        loop = f"""const int e = min((task + 1) * h[6], g0 * g1 * g2);
    for (int i = task * h[6]; i < e; ) {{
        const int x0 = i % g0, r = i / g0, y = r % g1, z = r / g1;
        const int x1 = min(g0, x0 + e - i);
        {pragma}for (int x = x0; x < x1; ++x)
            {call}
        i += x1 - x0;
    }}"""
    return f"""static __attribute__((noinline)) void clnn_task{j}(const int task, const int tasks,
    const int g0, const int g1, const int g2, const __global int* h, const __global int* a,
    __global uchar* const* b)
{{
    {decls}
    {loop}
}}
"""


def _profiling(profiled: bool) -> tuple[str, str, str]:
    """The profiled variant's parameter, its start and its launch-end statements (empty
    strings where not ``profiled``: :func:`source`)."""
    if not profiled:
        return "", "", ""
    return (", __global ulong* clnn_prof",
            "\n    clnn_prof[w * (parts + 1)] = (ulong)__builtin_readcyclecounter();",
            "\n        clnn_prof[w * (parts + 1) + p + 1] = (ulong)__builtin_readcyclecounter();")


def _bounded_wait(limit: int) -> tuple[str, str, str]:
    """The poll counter's declaration, the poll loop's body and the leave after it, for a
    wait of at most ``limit`` polls (0: empty strings, no limit; :func:`source`)."""
    if not limit:
        return "", "", ""
    return ("\n            int spins = 0;", f"if (++spins > {limit}) break",
            f"\n            if (spins > {limit}) break;  // waited too long: leave")


def _pieces(parts: list[Part], called, unroll: bool) -> tuple[str, str, str, str]:
    """The chain source's helpers (each once), kernel functions, task functions and the
    switch's cases (:func:`source`)."""
    cases = [f"                case {j}: clnn_task{j}(task, tasks, g0, g1, g2, h, a, b); break;"
             for j in range(len(parts))]
    tasks = "".join(_task(j, p, unroll) for j, p in enumerate(parts))
    helpers = "".join(dict.fromkeys(p.helpers for p in parts))
    functions = "".join(p.function.replace("@PART@", f"clnn_part{j}").replace(
        "@INLINE@", "__attribute__((noinline))" if p.family in called else "inline")
        for j, p in enumerate(parts))
    return helpers, functions, tasks, "\n".join(cases)


def source(parts: list[Part], nbuf: int, profiled: bool = False, called=(), spin: int = 0,
           unroll: bool = True) -> str:
    """The chain program's source, of ``nbuf`` buffer arguments; ``profiled``: each
    work-group writes the cycle counter (clang's __builtin_readcyclecounter) when it starts
    and when it leaves each launch into ``clnn_prof`` ([work-group][1 + launches],
    clnn.bench.chain_profile); ``called``: the kernel families whose kernel the task
    function calls per work-item (``noinline``) rather than inlines (the device class's
    ``chain_called``); ``spin``: the most polls a work-group waits for a launch before it
    leaves the chain (the class's ``chain_spin``; 0 and the profiled variant: no limit);
    ``unroll`` False: the task loops marked not to be unrolled (the class's
    ``chain_no_unroll``)."""
    common = parts[0].common if parts else ""
    helpers, functions, tasks, case_text = _pieces(parts, called, unroll)
    prof_param, prof_start, prof_launch = _profiling(profiled)
    spin_decl, spin_body, spin_leave = _bounded_wait(0 if profiled else int(spin))
    return f"""// clnn chain of {len(parts)} kernels
{common}
{helpers}
#define get_global_id(d) ((size_t)((d) == 0 ? clnn_x : (d) == 1 ? clnn_y : clnn_z))
#define get_global_size(d) ((size_t)((d) == 0 ? clnn_gx : (d) == 1 ? clnn_gy : clnn_gz))
{functions}
{tasks}
#undef get_global_id
#undef get_global_size
// table: [parts, owners], then per part {HEADER} words: kernel, g0, g1, g2, tasks, column
// ranges (parts split by rows, else 0), work-items per task, argument words' offset.
// sync: per part its tasks done ({STRIDE} ints apart), the work-groups out, then per owner
// its parts' claimed tasks. Work-group w < owners owns the w-th of ``owners`` blocks of each
// launch's tasks (more work-groups than owners own none)
static __attribute__((noinline)) void clnn_run(__global uchar* const* b,
    __global const int* table, volatile __global int* sync, const int w,
    const int groups{prof_param})
{{
    const int parts = table[0], O = table[1];
    volatile __global int* claims = sync + {STRIDE} * (parts + 2);{prof_start}
    for (int p = 0; p < parts; ++p) {{
        const __global int* h = table + 2 + p * {HEADER};
        if (p > 0) {{  // the launch before done (plain loads while waiting: an atomic
            // read-modify-write would take the cache line from the core that finishes it)
            const int need = table[2 + (p - 1) * {HEADER} + 4];{spin_decl}
            while (sync[{STRIDE} * p] < need)
                {spin_body};{spin_leave}
            mem_fence(CLK_GLOBAL_MEM_FENCE);  // no load of the task's moves above (no RMW)
        }}
        const int g0 = h[1], g1 = h[2], g2 = h[3], tasks = h[4];
        const __global int* a = table + h[7];
        // owner v's tasks: the v-th of O contiguous blocks; a work-group runs its own block
        // first (the same part of every launch: what it wrote stays in its core's caches),
        // then takes what is left of the others'; ``done``: the tasks it ran, counted once
        int done = 0;
        for (int k = 0; k < O; ++k) {{
            const int v = (w + k) % O, lo = tasks * v / O, count = tasks * (v + 1) / O - lo;
            volatile __global int* claim = claims + v * (parts + {STRIDE}) + p;
            if (k > 0 && *claim >= count) continue;  // taken (read: its owner's line kept)
            for (int c = atomic_inc(claim); c < count; c = atomic_inc(claim)) {{
                const int task = lo + c;
                switch (h[0]) {{
{case_text}
                }}
                ++done;
            }}
        }}
        if (done) {{  // every task claimed: what it ran is done
            mem_fence(CLK_GLOBAL_MEM_FENCE);
            atomic_add(&sync[{STRIDE} * (p + 1)], done); }}{prof_launch}
    }}
    if (atomic_inc(&sync[{STRIDE} * (parts + 1)]) == groups - 1) {{
        for (int p = 0; p < parts; ++p)
            sync[{STRIDE} * (p + 1)] = 0;
        for (int v = 0; v < O; ++v)
            for (int p = 0; p < parts; ++p)
                claims[v * (parts + {STRIDE}) + p] = 0;
        sync[{STRIDE} * (parts + 1)] = 0;
    }}
}}
{_kernel(nbuf, prof_param)}"""


def _kernel(nbuf: int, prof_param: str) -> str:
    """The chain's kernel: its buffer arguments as the array ``b`` (the task functions pick
    theirs by index), then the chain's loop (``clnn_run``, a function of its own: the
    compiler's work-group wrappers of the kernel copy a call, not the loop)."""
    bufs = ", ".join(f"__global uchar* B{i}" for i in range(nbuf))
    blist = ", ".join(f"B{i}" for i in range(nbuf))
    prof_arg = ", clnn_prof" if prof_param else ""
    return f"""__kernel void clnn_chain({bufs}, __global const int* table,
    volatile __global int* sync{prof_param})
{{
    __global uchar* b[{max(nbuf, 1)}] = {{{blist or "0"}}};
    clnn_run(b, table, sync, get_group_id(0), get_num_groups(0){prof_arg});
}}
"""


#: 2 ** 32 and 2 ** 31: a table word from an integer argument (Chain)
_WORD, _HALF = 1 << 32, 1 << 31


class _Pointer(int):
    """A table word that is a buffer argument's index in the chain's list (until
    :func:`pack_constants` writes the words)."""


def pack_constants(buffers: list, words: list, context, cl_device) -> tuple[list, list]:
    """(buffers, words) with the read-only constants (created from host memory: weights,
    biases, requantization tables) copied into one buffer, each at an offset of 128-byte
    units that its pointer words carry (:data:`PACK_BITS`): PoCL's launch costs ~0.09 us a
    buffer argument (a model of 30 quantized layers has ~70 such buffers: ~11 us of its
    ~100, issue #36). Nothing is packed where fewer than two are packable, their bytes
    exceed :data:`PACK_MAX` or the buffers would not fit the words; other buffers (the
    request's inputs and outputs, pools, anything written) keep their own arguments. The
    contents are copied on the device once, here (a constant is never written after its
    creation: READ_ONLY | COPY_HOST_PTR)."""
    import pyopencl as cl

    mf = cl.mem_flags
    want = mf.READ_ONLY | mf.COPY_HOST_PTR
    packable = [k for k, b in enumerate(buffers)
                if int(b.flags) == want and int(b.size) <= PACK_EACH_MAX]
    offsets, at = {}, 0
    for k in packable:
        offsets[k] = at
        at += -(-int(buffers[k].size) // (1 << PACK_ALIGN_BITS)) << PACK_ALIGN_BITS
    kept = [k for k in range(len(buffers)) if k not in offsets]
    if len(packable) < 2 or at > PACK_MAX or len(kept) + 1 > PACK_INDEX:
        offsets, kept = {}, list(range(len(buffers)))
    new = {k: j for j, k in enumerate(kept)}
    out = [buffers[k] for k in kept]
    if offsets:
        packed = cl.Buffer(context, mf.READ_ONLY, at)
        queue = cl.CommandQueue(context, cl_device)
        for k, off in offsets.items():
            cl.enqueue_copy(queue, packed, buffers[k], dst_offset=off,
                            byte_count=int(buffers[k].size))
        queue.finish()
        for k in offsets:
            new[k] = len(out) | (offsets[k] >> PACK_ALIGN_BITS) << PACK_BITS
        out.append(packed)
    return out, [new[w] if isinstance(w, _Pointer) else w for w in words]


class Chain:
    """Launches of a plan run as one launch (see the module's docstring)."""

    def __init__(self, launches: list, parts: list[Part], kinds: list[int], cl_device, context):
        import pyopencl as cl

        self.launches = launches
        self.name = "chain"
        units = max(1, int(cl_device.max_compute_units))
        self.cl_device = cl_device  # built for it alone where its context holds others too
        buffers: list = []
        index: dict[int, int] = {}
        headers, words = [], []
        base = 2 + HEADER * len(launches)
        per_unit = tasks_per_unit(cl_device)
        for launch, kind in zip(launches, kinds):
            g = list(launch.global_size) + [1] * (3 - len(launch.global_size))
            items = g[0] * g[1] * g[2]
            cols = 0
            if parts[kind].rows_first:  # rows x columns tasks, the rows owned
                cols = min(per_unit, g[1] * g[2])
                tasks = min(g[0], units * (per_unit // cols)) * cols
                per = 0
            else:  # ranges of work-items
                tasks = min(items, per_unit * units)
                per = -(-items // tasks)
                tasks = -(-items // per)
            headers += [kind, *g, tasks, cols, per, base + len(words)]
            for (ptype, pointer), value in zip(parts[kind].params, launch.args):
                if pointer:
                    if value is None:
                        words.append(-1)
                        continue
                    k = index.setdefault(value.int_ptr, len(buffers))
                    if k == len(buffers):
                        buffers.append(value)
                    words.append(_Pointer(k))
                elif ptype == "float":
                    words.append(int(np.float32(value).view(np.int32)))
                else:  # (the low 32 bits, two's complement, as NumPy's int64 -> uint32 cast)
                    words.append((int(value) + _HALF) % _WORD - _HALF)
        cls = _class(cl_device)
        if cls.chain_pack_constants:
            buffers, words = pack_constants(buffers, words, context, cl_device)
        table = np.array([len(launches), units, *headers, *words], np.int32)
        self.buffers = buffers
        self.table = cl.Buffer(context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                               hostbuf=table)
        nsync = STRIDE * (len(launches) + 2) + units * (len(launches) + STRIDE)
        self.sync = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                              hostbuf=np.zeros(nsync, np.int32))
        self.global_size = (units,)
        self.local_size = (1,)
        self.kernel = None
        #: its program's kernel key (:func:`program_key`), once built
        self.key = None
        self.launched = False
        self.parts = parts
        #: its program's buffer arguments (the class's ``chain_buffers``: the buffers, then
        #: the table again for the unused ones) and the families it calls (``chain_called``)
        self.nbuf = buffer_arguments(len(buffers), cls.chain_buffers, _buffer_limit(cl_device))
        self.called = tuple(cls.chain_called)
        #: the most polls a work-group waits for a launch (the class's ``chain_spin``)
        self.spin = int(cls.chain_spin)
        #: whether its task loops may be unrolled (the class's ``chain_no_unroll`` off)
        self.unroll = not cls.chain_no_unroll
        self.source = source(parts, self.nbuf, called=self.called, spin=self.spin,
                             unroll=self.unroll)
        #: the profiled variant (clnn.bench.chain_profile): None not built, False not buildable
        self.profiled_kernel = None
        self.prof = None

    def build(self, context, cache_root: str | None = None, programs=None):
        """Build the chain's program (counted in clnn.program_cache.STATS) and set its
        arguments; ``cache_root``: the device's ``DeviceOptions.cache_dir``; ``programs``: the
        device's clnn.program_cache.ProgramCache (:func:`_program`)."""
        import time

        import pyopencl as cl

        from clnn.program_cache import STATS

        t0 = time.perf_counter()
        self.key = program_key(self.source)
        prg = _program(context, self.cl_device, self.source, cache_root, programs)
        STATS["chains_built"] += 1
        STATS["build_s"] += time.perf_counter() - t0
        self.kernel = cl.Kernel(prg, "clnn_chain")
        self.kernel.set_args(*self.arguments())

    def arguments(self) -> list:
        """The chain kernel's arguments: its buffers (the table for the unused ones), the
        table, the sync buffer."""
        pad = [self.table] * (self.nbuf - len(self.buffers))
        return [*self.buffers, *pad, self.table, self.sync]


def program_key(source: str) -> tuple:
    """The kernel key of a chain program of ``source``."""
    return ("chain", "clnn_chain", hashlib.sha256(source.encode()).hexdigest())


def _program(context, cl_device, source: str, root: str | None, device_programs=None):
    """The chain program of ``source``: the one ``device_programs`` (the device's
    clnn.program_cache.ProgramCache) holds under the chain's key (restored from a compilation
    cache), else built from its binary kept under the cache root ``root``
    (ProgramCache.save_binary: a warm process reads it in a few milliseconds, where PoCL takes
    tens to find the source in its own cache), else from the source (the binary then kept).
    The key is recorded where the programs asked for are (clnn.program_cache.recording: a
    compilation cache saves the chain's program with the kernels'), and the program kept in
    ``device_programs``."""

    from clnn.options import DeviceOptions
    from clnn.program_cache import ProgramCache, build_program, record

    key = program_key(source)
    record(key)
    prg = device_programs.get(key) if device_programs is not None else None
    if prg is not None:
        return prg
    programs = ProgramCache(context, cl_device, DeviceOptions(cache_dir=root))
    programs._binaries[key] = path = programs._binary_path(source)
    prg = device_programs.take_prefetched(path) if device_programs is not None else None
    prg = prg or programs._from_binary(path)
    if prg is None:
        prg = build_program(context, source, programs.devices, root)
        programs.save_binary(key, prg)
    if device_programs is not None:  # (its binary listed with the model's: prefetched next time)
        device_programs._binaries.setdefault(key, path)
        device_programs.adopt(key, prg)
    return prg


def part(key, root: str | None = None):
    """``key``'s Part (made once: :data:`PARTS`), or None where the kernel cannot be
    chained; ``root``: the device's ``DeviceOptions.cache_dir`` (its rendered sources)."""
    if key not in PARTS:
        try:
            PARTS[key] = Part(key, root)
        except Unchainable as e:
            PARTS[key] = e
    made = PARTS[key]
    return None if isinstance(made, Unchainable) else made


def make_chain(launches: list, cl_device, context, root: str | None = None) -> Chain:
    """A Chain (not built) of ``launches``, whose kernels can all be chained (:func:`part`)."""
    order = list(dict.fromkeys(la.key for la in launches))
    return Chain(launches, [part(k, root) for k in order], [order.index(la.key) for la in launches],
                 cl_device, context)


def _buffers(launch, part: Part) -> set:
    return {a.int_ptr for (_, pointer), a in zip(part.params, launch.args)
            if pointer and a is not None}


def _buffer_limit(cl_device) -> int:
    """The most buffer arguments of a chain program on ``cl_device`` (8 bytes each, the
    table and the sync buffer and room for a profiled variant's)."""
    return int(cl_device.max_parameter_size) // 8 - 4


def chain_plan(plan, cl_device, context, min_launches: int = MIN_LAUNCHES,
               cache_root: str | None = None) -> list:
    """The steps of a plan: its launches, runs of ``min_launches`` (:data:`MIN_LAUNCHES`) or
    more chainable ones as Chains (not built: :class:`Job`); ``cache_root``: the device's
    ``DeviceOptions.cache_dir`` (the kernels' rendered sources)."""
    if len(plan.launches) < min_launches:  # (no run long enough: no source read)
        return list(plan.launches)
    steps, run = [], []
    limit = _buffer_limit(cl_device)
    used: set = set()

    def close():
        if len(run) >= min_launches:
            steps.append(make_chain([la for la, _ in run], cl_device, context, cache_root))
        else:
            steps.extend(la for la, _ in run)
        run.clear()
        used.clear()

    for launch in plan.launches:
        key = getattr(launch, "key", None)
        made = part(key, cache_root) if key is not None and launch.args is not None else None
        bufs = _buffers(launch, made) if made is not None else set()
        if made is None or len(made.params) != len(launch.args):
            close()
            steps.append(launch)
            continue
        # a second variant of a family with helper functions would define them twice
        clash = not made.pure and any(k[:2] == key[:2] and k != key for _, k in run)
        if clash or len(used | bufs) > limit:
            close()
        run.append((launch, key))
        used.update(bufs)
    close()
    return steps


class Job:
    """The chains of a plan being made ready. A prepare builds them here at once
    (clnn.execution.Chained.build_chains: ``before`` True, no helpers). Otherwise (a plan made
    at an execution, whose kernels' own programs were built), where the chain was never built
    on this machine and PoCL can compile in another process
    (clnn.program_cache.CompileHelper), a helper process compiles it in the background, at a
    lower priority, into PoCL's and pyopencl's caches, and the plan runs its launches one by one
    until the program is ready (:meth:`poll`, at each execution, or blocking:
    clnn.execution.Chained). Chains built before (``before``: a marker in clnn's program cache,
    :func:`built_before`), or where no helper can compile, are built here at once. A chain that
    fails to build runs its launches one by one."""

    def __init__(self, plan, steps: list, context, before: bool, helpers: bool = True,
                 min_launches: int = MIN_LAUNCHES, cache_root: str | None = None,
                 programs=None):
        """``helpers``: the device's ``compile_helper`` option (False: built here);
        ``cache_root``: its ``cache_dir`` option; ``programs``: its ProgramCache (the chains'
        programs kept there: :func:`_program`)."""
        self.programs = programs
        from clnn.program_cache import CompileHelper

        self.plan = plan
        self.min_launches = min_launches
        self.cache_root = cache_root
        self.steps = steps
        self.context = context
        self.pending = []  # (chain, helper)
        for ch in (s for s in steps if isinstance(s, Chain)):
            helper = None
            if not before and helpers and CompileHelper.wanted(context,
                                                               CompileHelper.MIN_KERNELS):
                helper = CompileHelper.spawn(context, nice=10)
                if helper is not None and not helper.give(ch.source, ["clnn_chain"], cache_root):
                    helper = None
            self.pending.append((ch, helper))
            if helper is not None:
                _HELPERS.add(helper)
        self.poll()

    def poll(self, block: bool = False) -> bool:
        """Build the chains whose helper is done (all of them: ``block``); once none is left,
        the plan runs its steps. True when none is left."""
        left = []
        for ch, helper in self.pending:
            if helper is not None:
                if not block and helper.proc.poll() is None:
                    left.append((ch, helper))
                    continue
                helper.proc.wait()
                _HELPERS.discard(helper)
            try:
                ch.build(self.context, self.cache_root, self.programs)
            except Exception as e:  # noqa: BLE001 - a chain that does not build runs unchained
                ch.kernel = None
                reason = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
                LOG.warning("a chain of %d launches did not build; they run one by one "
                            "(%s)", len(ch.launches), reason)
        self.pending = left
        if left:
            return False
        marker = Path(_marker(self.plan, self.context, self.min_launches, self.cache_root))
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
        steps = []
        for st in self.steps:
            if isinstance(st, Chain) and st.kernel is None:
                for la in st.launches:  # (their kernels, before an execution binds inputs)
                    la.finish_deferred()
                steps.extend(st.launches)
                continue
            steps.append(st)
            if isinstance(st, Chain):
                # an execution points it at its input (or output: DirectOutput)
                for d in (*self.plan.direct.values(), *self.plan.direct_out.values()):
                    d.slots += [(st, k) for k, b in enumerate(st.buffers)
                                if b.int_ptr == d.buffer.int_ptr]
        if any(isinstance(st, Chain) for st in steps):
            self.plan.chained = steps
        return True


#: helper processes compiling chains: stopped when this process exits
_HELPERS: set = set()
LOG = logging.getLogger("clnn")


@atexit.register
def _stop_helpers():
    for h in list(_HELPERS):
        h.stop()


def built_before(plan, context, min_launches: int = MIN_LAUNCHES,
                 cache_root: str | None = None) -> bool:
    """Whether this plan's chains were built on this machine (they are in PoCL's and
    pyopencl's caches, and building them from there is quick). Known from the plan's kernel keys, so
    nothing is rendered to ask. ``cache_root``: the device's ``DeviceOptions.cache_dir``."""
    return os.path.exists(_marker(plan, context, min_launches, cache_root))


def _marker(plan, context, min_launches: int = MIN_LAUNCHES,
            cache_root: str | None = None) -> str:
    """A file named by the device, the kernels' code, this module's and the plan's launches
    (kernel keys, work sizes): written once its chains were built."""
    from clnn.program_cache import cache_dir, kernels_fingerprint

    dev = context.devices[0]
    h = hashlib.sha1(f"{dev.platform.version}|{dev.name}|{dev.driver_version}|"
                     f"{kernels_fingerprint()}|{_CODE}|{min_launches}|".encode())
    for la in plan.launches:
        h.update(repr((la.key, la.global_size)).encode())
    return os.path.join(cache_dir(cache_root), "chains", h.hexdigest())


#: this module's code (it writes the chains' source)
_CODE = hashlib.sha1(open(__file__, "rb").read()).hexdigest()[:16]
