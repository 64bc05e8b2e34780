"""What an OpenCL device allows a launch, and the one function that gives every launch its
local size.

:class:`DeviceLimits` is the device as the kernels see it: its work-group limits, local
memory, largest allocation and extensions, read from the device and, under a
:class:`DeviceProfile`, lowered to a smaller device's (``clnn cts --device-profile small-gpu``
on Oclgrind checks the kernels under a GPU's limits on a machine that has none). A family
says what it *prefers* (a work-group shape measured fast, or the group its algorithm needs);
:func:`work_groups` says what the device and the compiled kernel *allow*
(``CL_DEVICE_MAX_WORK_GROUP_SIZE``, ``CL_DEVICE_MAX_WORK_ITEM_SIZES``,
``CL_KERNEL_WORK_GROUP_SIZE``, the local memory left): every model launch, tuner scratch
launch and benchmark launch goes through it.

A preferred group that does not fit is shrunk (whole divisors of each dimension, so it still
divides the global size) when the kernel computes alike under any work-groups; a kernel that
needs its group (barriers, local memory, a required size) and cannot have it is refused when
it is made, at prepare, with the limits named: never at an execution. Families whose
algorithm needs a group or local memory the device may not have size it from these limits,
and say so in their support check (``device_support`` of clnn.kernels.registry).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from hal.errors import GeneralFailure


@dataclass(frozen=True)
class DeviceProfile:
    """Limits of a smaller device to run under (None: the real device's)."""

    name: str
    max_work_group_size: int | None = None
    max_work_item_sizes: tuple[int, ...] | None = None
    local_mem_size: int | None = None
    max_mem_alloc_size: int | None = None
    #: OpenCL extensions the simulated device lacks (e.g. cl_khr_fp64)
    without: frozenset = frozenset()
    #: the limits Oclgrind can simulate itself (``oclgrind --max-wgsize --local-mem-size``)
    #: are also passed to it by clnn.suites.check_kernels
    doc: str = ""


#: the simulated devices of ``make check-kernels`` (``--device-profile``; "device": none)
PROFILES = {
    "device": DeviceProfile("device", doc="the device's own limits (Oclgrind: 1,024 "
                                          "work-items, 1024 x 1024 x 1024)"),
    "desktop-gpu": DeviceProfile("desktop-gpu", 256, (1024, 1024, 64), 32 << 10,
                                 doc="a desktop GPU: 256 work-items, 1024 x 1024 x 64, "
                                     "32 KiB local memory"),
    "small-gpu": DeviceProfile("small-gpu", 64, (64, 64, 64), 16 << 10,
                               without=frozenset({"cl_khr_fp64"}),
                               doc="a small GPU: 64 work-items, 64 x 64 x 64, 16 KiB local "
                                   "memory, no cl_khr_fp64"),
}


def profile_named(name: str | None) -> DeviceProfile | None:
    """The profile called ``name`` (None / "" / "device": none); ValueError naming the known
    ones otherwise."""
    if not name or name == "device":
        return None
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown device profile {name!r}; known: "
                         f"{', '.join(PROFILES)}") from None


def _low(real: int, simulated: int | None) -> int:
    return real if simulated is None else min(real, simulated)


@dataclass(frozen=True)
class DeviceLimits:
    """The limits launches and support checks read (device queries, under a profile)."""

    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    local_mem_size: int
    max_mem_alloc_size: int
    global_mem_size: int
    max_compute_units: int
    is_cpu: bool
    native_vector_width_float: int = 16
    extensions: frozenset = frozenset()
    profile: str = "device"
    #: the pyopencl device, for the queries of compiled kernels
    cl_device: object = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, cl_device, profile: DeviceProfile | None = None) -> DeviceLimits:
        import pyopencl as cl

        p = profile or DeviceProfile("device")
        items = tuple(int(v) for v in cl_device.max_work_item_sizes)
        if p.max_work_item_sizes is not None:
            items = tuple(min(a, b) for a, b in zip(items, p.max_work_item_sizes))
        return cls(
            max_work_group_size=_low(int(cl_device.max_work_group_size), p.max_work_group_size),
            max_work_item_sizes=items,
            local_mem_size=_low(int(cl_device.local_mem_size), p.local_mem_size),
            max_mem_alloc_size=_low(int(cl_device.max_mem_alloc_size), p.max_mem_alloc_size),
            global_mem_size=int(cl_device.global_mem_size),
            max_compute_units=int(cl_device.max_compute_units),
            is_cpu=bool(cl_device.type & cl.device_type.CPU),
            native_vector_width_float=int(cl_device.native_vector_width_float),
            extensions=frozenset(cl_device.extensions.split()) - p.without,
            profile=p.name, cl_device=cl_device)

    def with_profile(self, profile: DeviceProfile) -> DeviceLimits:
        """These limits lowered further by ``profile`` (tests of the support checks)."""
        items = self.max_work_item_sizes
        if profile.max_work_item_sizes is not None:
            items = tuple(min(a, b) for a, b in zip(items, profile.max_work_item_sizes))
        return replace(
            self, max_work_group_size=_low(self.max_work_group_size, profile.max_work_group_size),
            max_work_item_sizes=items,
            local_mem_size=_low(self.local_mem_size, profile.local_mem_size),
            max_mem_alloc_size=_low(self.max_mem_alloc_size, profile.max_mem_alloc_size),
            extensions=self.extensions - profile.without, profile=profile.name)

    @property
    def fp64(self) -> bool:
        return "cl_khr_fp64" in self.extensions

    def group_limit(self, dim: int = 0, local_bytes_per_item: int = 0) -> int:
        """The largest work-group a family may plan along dimension ``dim`` (the others 1),
        each work-item holding ``local_bytes_per_item`` bytes of local memory."""
        g = min(self.max_work_group_size, self.max_work_item_sizes[dim])
        if local_bytes_per_item:
            g = min(g, self.local_mem_size // local_bytes_per_item)
        return max(g, 0)

    def pow2_group(self, want: int, dim: int = 0, local_bytes_per_item: int = 0) -> int:
        """The largest power of two <= ``want`` and :meth:`group_limit` (at least 1)."""
        limit = min(want, self.group_limit(dim, local_bytes_per_item))
        p = 1
        while p * 2 <= limit:
            p *= 2
        return p


def fits(local, limit: int, per_dim) -> bool:
    return int(np.prod(local)) <= limit and all(v <= m for v, m in zip(local, per_dim))


def shrink(local, limit: int, per_dim) -> tuple:
    """``local`` made to fit: each dimension cut to a whole divisor of itself (so it still
    divides the global size) within its per-dimension limit, then the last dimensions halved
    (by their smallest factors) until the group holds at most ``limit`` work-items."""
    out = []
    for v, m in zip(local, per_dim):
        out.append(max(d for d in range(1, min(v, m) + 1) if v % d == 0))
    for d in reversed(range(len(out))):
        while int(np.prod(out)) > limit and out[d] > 1:
            f = next(k for k in range(2, out[d] + 1) if out[d] % k == 0)
            out[d] //= f
    return tuple(out)


def _kernel_limit(kernel, limits: DeviceLimits) -> int:
    import pyopencl as cl

    info = cl.kernel_work_group_info
    k = int(kernel.get_work_group_info(info.WORK_GROUP_SIZE, limits.cl_device))
    return min(k, limits.max_work_group_size)


def _needs_group(kernel, limits: DeviceLimits) -> tuple[int, ...] | None:
    """The group a kernel cannot run without (its required work-group size), or () for a
    kernel with local memory (its group size is part of its algorithm); None: any group."""
    import pyopencl as cl

    info = cl.kernel_work_group_info
    required = tuple(int(v) for v in kernel.get_work_group_info(info.COMPILE_WORK_GROUP_SIZE,
                                                                limits.cl_device))
    if any(required):
        return required
    if int(kernel.get_work_group_info(info.LOCAL_MEM_SIZE, limits.cl_device)) > 0:
        return ()
    return None


def fit_local_size(kernel, limits: DeviceLimits, name: str, local_size):
    """``local_size`` where the device (its limits) and this compiled kernel can run such
    work-groups; a kernel that computes alike under any groups gets the preference shrunk to
    fit (:func:`shrink`); one that needs its group and cannot have it is GENERAL_FAILURE naming
    the kernel and the limits (raised when the kernel is made, at prepare)."""
    if not local_size:
        return None
    local = tuple(int(v) for v in local_size)
    limit = _kernel_limit(kernel, limits)
    per_dim = limits.max_work_item_sizes
    if fits(local, limit, per_dim):
        return local
    needed = _needs_group(kernel, limits)
    if needed is not None:
        raise GeneralFailure(
            f"kernel {name} needs work-groups of {needed or local} work-items; "
            f"{limits.cl_device.name.strip()} (profile {limits.profile}) runs this kernel with "
            f"at most {limit} (per dimension {tuple(per_dim)})")
    return shrink(local, limit, per_dim)


#: an operation with at least this many FLOP (compute-bound families) or bytes (the others) is
#: spread over several work-groups on a CPU device (:func:`cpu_groups`); below them one
#: work-group on one core ran as fast (benchmarks: ``clnn bench models`` with and without)
SPLIT_FLOP = 1_000_000
SPLIT_BYTES = 128 << 10
#: work-groups per compute unit a split launch aims at (PoCL's worker threads take turns at
#: chunks of them: a worker that starts late still finds some), and the largest split group
GROUPS_PER_UNIT = 4
MAX_SPLIT_ITEMS = 256


def heavy(flop: float, nbytes_: float) -> bool:
    return flop >= SPLIT_FLOP if flop else nbytes_ >= SPLIT_BYTES


def work_groups(kernel, limits: DeviceLimits, name: str, global_size, local_size,
                heavy_: bool, flexible: bool):
    """The local size a launch runs with: ``local_size`` fitted to the device and kernel
    (:func:`fit_local_size`), then, for an operation that is :func:`heavy`, spread over a CPU's
    compute units (:func:`cpu_groups`) where it is the driver's choice or a ``flexible`` hint.
    The one choice of model launches, the tuner's scratch launches and ``clnn bench gemm``."""
    local = fit_local_size(kernel, limits, name, local_size)
    if heavy_ and (local is None or flexible):
        local = cpu_groups(global_size, limits, local, _kernel_limit(kernel, limits))
    return local


def cpu_groups(global_size, limits: DeviceLimits, local=None, kernel_limit: int | None = None):
    """The work-groups of a heavy operation's launch on a CPU device. PoCL runs a work-group on
    one worker thread, and its own choice for a launch left to it (``local`` None) packs a grid
    of up to 4096 work-items into one or two work-groups, so such a launch used one core; a
    family's explicit group can leave as few (such a group is passed as ``local`` only where
    the kernel computes alike under any whole work-groups, ``LaunchBuilder.launch(flexible=
    True)``). Returns work-groups (whole divisors of each dimension, each at most ``local``'s
    where one is given and within the device's limits, dimension 0 first: it is the contiguous
    one) of at most :data:`MAX_SPLIT_ITEMS` work-items that leave at least
    :data:`GROUPS_PER_UNIT` per compute unit; ``local`` itself where it leaves as many already,
    on other devices, or for a grid too small to split."""
    if not limits.is_cpu:
        return local
    dims = [int(g) for g in global_size]
    total = int(np.prod(dims))
    want = GROUPS_PER_UNIT * limits.max_compute_units
    if total < 2 * limits.max_compute_units or (
            local is not None and total // int(np.prod(local)) >= want):
        return local
    most = min(MAX_SPLIT_ITEMS, limits.max_work_group_size, kernel_limit or MAX_SPLIT_ITEMS)
    per_dim = list(limits.max_work_item_sizes) + [1] * len(dims)
    bound = list(local) if local is not None else [most] * len(dims)
    out = [1] * len(dims)
    for d, g in enumerate(dims):
        items = int(np.prod(out))
        top = min(g, bound[d], per_dim[d])
        out[d] = max(v for v in range(1, top + 1) if g % v == 0 and items * v <= most
                     and (total // (items * v) >= want or v == 1))
    return tuple(out)
