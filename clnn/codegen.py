"""A program's code generation out of Python's GIL.

An OpenCL implementation may generate a program's code long after clBuildProgram: PoCL does at
the program's first binary query or at a kernel's first launch (1.1-1.3 s of the chain program
of pose_landmark_full). pyopencl holds the GIL through a binary query, so every other Python
thread of the process (a progress bar, an application's own threads) stops meanwhile.
:func:`generate_code` asks for the binaries' sizes through ctypes, which leaves the GIL while
the implementation works; the binary query that follows (clnn.program_cache.ProgramCache
.save_binary) finds the binary made. An implementation that makes its binaries at build time
answers at once.
"""

from __future__ import annotations

import ctypes

#: clGetProgramInfo's CL_PROGRAM_BINARY_SIZES
BINARY_SIZES = 0x1165


def generate_code(program, lib) -> bool:
    """Have the implementation make ``program``'s binaries now (clGetProgramInfo of
    CL_PROGRAM_BINARY_SIZES), called through ``lib``, the process's OpenCL library (ctypes;
    None: nothing done). False where the query could not be made or failed: the code is then
    made at the next binary query or launch, as without it."""
    import pyopencl as cl

    if lib is None:
        return False
    try:
        n = len(program.get_info(cl.program_info.DEVICES))
        query = lib.clGetProgramInfo
        query.restype = ctypes.c_int32
        query.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t, ctypes.c_void_p,
                          ctypes.c_void_p]
        sizes = (ctypes.c_size_t * n)()
        return query(program.int_ptr, BINARY_SIZES, ctypes.sizeof(sizes), sizes, None) == 0
    except (AttributeError, TypeError, OSError, cl.Error):  # (a library without the function)
        return False
