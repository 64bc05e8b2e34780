"""Declarations of the OpenCL C builtins clnn's kernels call, for builds without the
implementation's builtin header.

Why: PoCL 3.1 includes clang's opencl-c.h (895 KB of declarations) in every program and
preprocesses it twice (its cache key, then the compile): 70 ms of CPU per program, a one-line
program's whole front end (83 ms, 11 ms without it), 0.07-0.12 s of a chain program's 0.5 s
build (benchmarks/results/issue37_build-20261129-s23.json). clang skips that header where its
include guard ``_OPENCL_H_`` is defined; a program built so declares the builtins it calls
itself. :func:`declarations` writes those of a source's calls (every overload clang's header
has for them in OpenCL C 1.2 on the types clnn uses), :func:`covers` says whether a source can
be built so. Whether a device builds such programs at all is found at run time
(clnn.program_cache.short_builds); a program that does not build so is built the usual way.

What keeps the results those of the usual build: every function declared here has its whole
overload set on char..ulong and float, scalar and vector, so a call resolves to the overload
the header's declarations would pick; calls that could reach the header's ``double`` or
``half`` overloads (a source naming either type, or an unsuffixed floating literal) are not
covered, nor any call of a builtin not declared here.
"""

from __future__ import annotations

import functools
import re

_INTS = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong")
_WIDTHS = ("", "2", "3", "4", "8", "16")
_SIGNED = {"char": "char", "uchar": "char", "short": "short", "ushort": "short", "int": "int",
           "uint": "int", "long": "long", "ulong": "long", "float": "int"}
_CONST = "__attribute__((overloadable, const))"
_PURE = "__attribute__((overloadable, pure))"
_PLAIN = "__attribute__((overloadable))"
_SPACES = ("__global", "__local", "__constant", "__private")
#: float functions of one, two and three floatn arguments
_FLOAT1 = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "floor", "ceil", "round",
           "trunc", "rint", "fabs", "sin", "cos")
_FLOAT2 = ("pow", "fmod")
_FLOAT3 = ("fma", "mad")
#: work-item functions (uint) -> size_t
_WORK_ITEM = ("get_global_id", "get_global_size", "get_local_id", "get_local_size",
              "get_group_id", "get_num_groups", "get_global_offset")


def _family(types, n: int, name: str, scalar_variant: bool = False) -> list[str]:
    """gentype name(gentype x n) for each type and width; ``scalar_variant``: and the vector
    forms whose other arguments are scalars (min, max, clamp, fmin, fmax)."""
    out = []
    for t in types:
        for w in _WIDTHS:
            g = t + w
            out.append(f"{g} {_CONST} {name}({', '.join([g] * n)});")
            if scalar_variant and w:
                out.append(f"{g} {_CONST} {name}({g}, {', '.join([t] * (n - 1))});")
    return out


def _select() -> list[str]:
    return [f"{t}{w} {_CONST} select({t}{w}, {t}{w}, {c}{_SIGNED[t]}{w});"
            for t in (*_INTS, "float") for w in _WIDTHS for c in ("", "u")]


def _vload(n: str) -> list[str]:
    return [f"{t}{n} {_PURE} vload{n}(size_t, const {sp} {t}*);"
            for t in (*_INTS, "float") for sp in _SPACES]


def _vstore(n: str) -> list[str]:
    return [f"void {_PLAIN} vstore{n}({t}{n}, size_t, {sp} {t}*);"
            for t in (*_INTS, "float") for sp in _SPACES if sp != "__constant"]


def _atomic(op: str) -> list[str]:
    args = {"inc": "", "dec": "", "cmpxchg": ", {t}, {t}"}.get(op, ", {t}")
    return [f"{t} {_PLAIN} atomic_{op}(volatile {sp} {t}*{args.format(t=t)});"
            for t in ("int", "uint") for sp in ("__global", "__local")]


@functools.cache
def _table() -> dict[str, str]:
    """builtin name -> its declarations."""
    every = (*_INTS, "float")
    table: dict[str, list[str]] = {}
    for f in _FLOAT1:
        table[f] = _family(("float",), 1, f)
    for f in _FLOAT2:
        table[f] = _family(("float",), 2, f)
    for f in _FLOAT3:
        table[f] = _family(("float",), 3, f)
    for f in ("fmin", "fmax"):
        table[f] = _family(("float",), 2, f, scalar_variant=True)
    for f in ("min", "max"):
        table[f] = _family(every, 2, f, scalar_variant=True)
    table["clamp"] = _family(every, 3, "clamp", scalar_variant=True)
    table["dot"] = [f"float {_CONST} dot(float{w}, float{w});" for w in ("", "2", "3", "4")]
    table["select"] = _select()
    for n in ("2", "3", "4", "8", "16"):
        table[f"vload{n}"] = _vload(n)
        table[f"vstore{n}"] = _vstore(n)
    for op in ("add", "sub", "xchg", "min", "max", "and", "or", "xor", "inc", "dec",
               "cmpxchg"):
        table[f"atomic_{op}"] = _atomic(op)
    for f in ("mem_fence", "barrier"):
        table[f] = [f"void __attribute__((overloadable, convergent)) {f}(cl_mem_fence_flags);"]
    for f in _WORK_ITEM:
        table[f] = [f"size_t {_CONST} {f}(uint);"]
    table["get_work_dim"] = [f"uint {_CONST} get_work_dim(void);"]
    return {name: "\n".join(lines) + "\n" for name, lines in table.items()}


#: names followed by "(" that are no builtin calls: keywords, attributes, clang's builtins
_NOT_CALLS = frozenset((
    "if", "for", "while", "switch", "return", "sizeof", "defined", "__attribute__",
    "vec_type_hint", "reqd_work_group_size", "work_group_size_hint", "aligned", "noinline",
    "always_inline", "unroll", "pragma", "_Pragma"))
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
#: a function defined in the source: its name, its parameters (brackets one deep), its body
_DEFINED = re.compile(r"\b([A-Za-z_]\w*)\s*\((?:[^;{}()]|\([^;{}()]*\))*\)\s*\{")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.M)
#: what could pick a double or half overload: the types, an unsuffixed floating literal
_WIDE = re.compile(r"\b(double|half)\d*\b|(?<![\w.])(\d+\.\d*|\.\d+|\d+[eE][-+]?\d+)"
                   r"([eE][-+]?\d+)?(?![\w.])")


def builtin_calls(source: str) -> set[str] | None:
    """The builtins ``source`` calls (names followed by "(" that it neither defines as a
    function or macro nor are keywords or clang's ``__builtin``s / ``as_`` casts), or None
    where it names ``double`` or ``half`` or holds an unsuffixed floating literal."""
    source = _COMMENT.sub(" ", source)
    if _WIDE.search(source):
        return None
    own = set(_DEFINED.findall(source)) | set(_MACRO.findall(source)) | _NOT_CALLS
    return {n for n in _CALL.findall(source) if n not in own and
            not n.startswith(("__builtin_", "as_"))}


def covers(source: str) -> bool:
    """Whether every builtin ``source`` calls is declared here (:func:`declarations`)."""
    calls = builtin_calls(source)
    return calls is not None and calls <= _table().keys()


def declarations(source: str) -> str:
    """The declarations of the builtins ``source`` calls (those declared here)."""
    table = _table()
    return "".join(table[n] for n in sorted(builtin_calls(source) or ()) if n in table)


#: a program that builds only where the builtin header is left out and these declarations
#: are taken: it defines cbrt, which the header declares overloadable (a clash there)
PROBE = ("float cbrt(float x) { return x; }\n"
         "__kernel void clnn_probe(__global float* x) "
         "{ x[get_global_id(0)] = cbrt(fma(x[1], x[2], x[3])); }\n")
