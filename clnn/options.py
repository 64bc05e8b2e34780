"""What steers the OpenCL device: one frozen options object, and the one place that reads the
environment.

A :class:`DeviceOptions` is given to the device (``ClDevice(options=...)``) and travels down to
every pass of a prepare and to the execution; no device module reads ``os.environ``. The
environment is read here only, by :func:`from_environ` (and :func:`device_spec_from_environ`,
:func:`cache_root_from_environ`), which the entry points call (``open_device``, ``clnn.load``,
the CLI, the NNAPI device list; the first device listing, for ``CLNN_COMPANION``: clnn.device.
list_cl_devices); a ``ClDevice()`` made without options gets the defaults, and
without a device spec the default device, whatever the environment holds. The table of
variables is :data:`VARIABLES` (and the README's "Options" section).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass

TUNE_MODES = ("off", "cached", "fast", "full")
DWPW_MODES = ("off", "on", "all")
WINOGRAD_TILES = (0, 2, 4)


@dataclass(frozen=True)
class DeviceOptions:
    """How the OpenCL device prepares and runs models (defaults: what a user gets)."""

    #: kernel variants: "off" (the device-class defaults), "cached" (the tuning cache's choices,
    #: measured by ``clnn tune`` or a "fast" / "full" prepare; never a measurement at prepare,
    #: so a prepare's kernels are those of the one before), "fast" (measure at prepare, within
    #: ``tune_budget_s`` per model), "full" (every candidate, no bound)
    tune: str = "cached"
    #: measuring seconds per prepared model in "fast" mode (None: clnn.tuning's default)
    tune_budget_s: float | None = None
    #: run a plan's launches as one chained launch: None (the device-class default: CPU devices
    #: of at least the class's chain_min_units, one), True, False
    chains: bool | None = None
    #: the fewest consecutive chainable launches run as a chain (None: clnn.chain.MIN_LAUNCHES;
    #: tests chain short plans with 2)
    chain_min_launches: int | None = None
    #: build the kernels a prepare needs as one OpenCL program (False, the default: one program
    #: per kernel key, shared by every model that uses the kernel, its binary kept)
    combine: bool = False
    #: the depthwise -> pointwise fusion: "on" (where the tuner or the defaults pick it), "off",
    #: "all" (wherever a tile fits: tests, A/B measurements)
    dwpw: str = "on"
    #: Winograd output tile for eligible 3x3 convolutions: None (tuned / defaults), 0 (im2col
    #: GEMM), 2 or 4
    winograd: int | None = None
    #: read model inputs in place on devices that share the host's memory
    direct_inputs: bool = True
    #: let the kernels write model outputs into the request's memory on devices that share the
    #: host's memory
    direct_outputs: bool = True
    #: compile a cold prepare's kernels in helper processes too, one per other core (PoCL)
    compile_helper: bool = True
    #: write every rendered kernel source into this directory (None: not written)
    dump_cl: str | None = None
    #: clnn's cache root (programs, tuning, capabilities, models); None: the platformdirs user
    #: cache directory
    cache_dir: str | None = None
    #: full Mako tracebacks in kernel rendering errors
    debug: bool = False
    #: run under the limits of a smaller device (a name of clnn.workgroups.PROFILES, e.g.
    #: "small-gpu"; None: the device's own limits); ClDevice(profile=...) wins over it
    profile: str | None = None
    #: PoCL settings applied when a device is made (unless the user set them): worker threads
    #: pinned one per core (POCL_AFFINITY=1) and one generic work-group function per kernel
    #: (POCL_WORK_GROUP_SPECIALIZATION=0)
    pocl_settings: bool = True
    #: an IF / WHILE subgraph's scalar operations (a loop counter and its test) on the host
    #: (clnn.control_flow.host_scalar_ops): no launch for them, no condition read back
    host_scalars: bool = True
    #: run the models whose estimated work is small next to the launch latency on a
    #: low-latency companion device of the same platform (clnn/companion.py; on PoCL its
    #: "basic" device, listed for this when the user did not set ``POCL_DEVICES``): False off
    companion: bool = True

    def __post_init__(self):
        if self.tune not in TUNE_MODES:
            raise ValueError(f"tune={self.tune!r} is not one of {', '.join(TUNE_MODES)}")
        if self.dwpw not in DWPW_MODES:
            raise ValueError(f"dwpw={self.dwpw!r} is not one of {', '.join(DWPW_MODES)}")
        if self.winograd is not None and self.winograd not in WINOGRAD_TILES:
            raise ValueError(f"winograd={self.winograd!r} is not None, 0, 2 or 4")
        if self.chain_min_launches is not None and self.chain_min_launches < 1:
            raise ValueError(f"chain_min_launches={self.chain_min_launches!r} is not >= 1")
        if self.tune_budget_s is not None and not self.tune_budget_s >= 0:
            raise ValueError(f"tune_budget_s={self.tune_budget_s!r} is not >= 0 seconds")

    def replace(self, **changes) -> DeviceOptions:
        """A copy with ``changes`` (the options are frozen)."""
        return dataclasses.replace(self, **changes)


def _bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}={raw!r} is not 0 or 1")


def _seconds(name: str, raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number of seconds") from None


def _winograd(name: str, raw: str) -> int:
    if raw.strip() not in ("0", "2", "4"):
        raise ValueError(f"{name}={raw!r} is not 0, 2 or 4")
    return int(raw)


def _dwpw(name: str, raw: str) -> str:
    value = {"0": "off", "1": "on"}.get(raw.strip().lower(), raw.strip().lower())
    if value not in DWPW_MODES:
        raise ValueError(f"{name}={raw!r} is not 0, 1 or all")
    return value


def _tune(name: str, raw: str) -> str:
    value = raw.strip().lower()
    if value not in TUNE_MODES:
        raise ValueError(f"{name}={raw!r} is not one of {', '.join(TUNE_MODES)}")
    return value


#: environment variable -> (option field, parser, what it sets): the one table of them
VARIABLES: dict[str, tuple[str, object, str]] = {
    "CLNN_TUNE": ("tune", _tune, "off | cached | fast | full: kernel variants measured at prepare"),
    "CLNN_TUNE_BUDGET": ("tune_budget_s", _seconds, "seconds of measuring per model (fast)"),
    "CLNN_CHAIN": ("chains", _bool, "0 | 1: chained launches (default: CPU devices)"),
    "CLNN_COMBINE": ("combine", _bool, "1: a prepare's kernels as one OpenCL program"),
    "CLNN_DWPW": ("dwpw", _dwpw, "0 | 1 | all: the depthwise -> pointwise fusion"),
    "CLNN_WINOGRAD": ("winograd", _winograd, "0 | 2 | 4: force the 3x3 convolution tile"),
    "CLNN_DIRECT_INPUTS": ("direct_inputs", _bool, "0: copy inputs even on host memory"),
    "CLNN_DIRECT_OUTPUTS": ("direct_outputs", _bool, "0: read outputs back even on host memory"),
    "CLNN_HOST_SCALARS": ("host_scalars", _bool, "0: a loop's scalar operations on the device"),
    "CLNN_COMPANION": ("companion", _bool, "0: small models never on a low-latency companion"),
    "CLNN_COMPILE_HELPER": ("compile_helper", _bool, "0: compile in this process only"),
    "CLNN_DUMP_CL": ("dump_cl", lambda _n, raw: raw, "directory for rendered kernel sources"),
    "CLNN_CACHE_DIR": ("cache_dir", lambda _n, raw: raw, "clnn's cache root"),
    "CLNN_DEVICE_PROFILE": ("profile", lambda _n, raw: raw.strip(),
                            "run under a smaller device's limits (e.g. small-gpu)"),
    "CLNN_DEBUG": ("debug", lambda _n, raw: bool(raw.strip()), "full kernel rendering errors"),
}


def from_environ(environ: Mapping[str, str] | None = None,
                 base: DeviceOptions | None = None) -> DeviceOptions:
    """``base`` (default: the defaults) with the variables of :data:`VARIABLES` set (non-empty)
    in ``environ`` (default: ``os.environ``); a malformed value raises ValueError naming the
    variable."""
    environ = os.environ if environ is None else environ
    changes = {}
    for var, (field, parse, _doc) in VARIABLES.items():
        raw = environ.get(var, "")
        if raw.strip():
            changes[field] = parse(var, raw)
    return (base or DeviceOptions()).replace(**changes)


#: where the OpenCL device comes from when none is named, first set wins: clnn's own variable,
#: then pyopencl's (so that PYOPENCL_CTX=0:1 works as it does for every pyopencl program)
DEVICE_VARIABLES = ("CLNN_DEVICE", "PYOPENCL_CTX")


def device_spec_from_environ(environ: Mapping[str, str] | None = None
                             ) -> tuple[str | None, str | None]:
    """The OpenCL device named by the environment: the first of ``CLNN_DEVICE`` and
    ``PYOPENCL_CTX`` set, as (its value, "$" and its name), else (None, None)."""
    environ = os.environ if environ is None else environ
    for var in DEVICE_VARIABLES:
        value = environ.get(var, "").strip()
        if value:
            return value, f"${var}"
    return None, None


def profile_from_environ(environ: Mapping[str, str] | None = None) -> str | None:
    """``CLNN_DEVICE_PROFILE`` (a name of clnn.workgroups.PROFILES), else None."""
    environ = os.environ if environ is None else environ
    return environ.get("CLNN_DEVICE_PROFILE", "").strip() or None


def options_of(device) -> DeviceOptions:
    """The options of ``device`` (a ClDevice's ``options``), the defaults for a device without
    them (the reference device, a test's stand-in)."""
    options = getattr(device, "options", None)
    return options if isinstance(options, DeviceOptions) else DeviceOptions()


#: variable -> the value :func:`set_default_environ` gave it in this process
_DEFAULTED: dict = {}


def set_default_environ(name: str, value: str) -> None:
    """Set environment variable ``name`` to ``value`` unless the user set it: how a device
    applies the settings its driver reads from the environment (PoCL's), when it is made and
    only when ``DeviceOptions.pocl_settings`` holds (clnn.device.apply_pocl_settings)."""
    if name not in os.environ:
        os.environ[name] = _DEFAULTED[name] = value


def defaulted_environ(name: str) -> dict:
    """{``name``: the value :func:`set_default_environ` gave it} where it did (even if
    :func:`drop_default_environ` removed it since), else {}: for a subprocess that must see
    the driver as this process does (clnn.kernels._vnni's probe on a companion device)."""
    return {name: _DEFAULTED[name]} if name in _DEFAULTED else {}


def drop_default_environ(name: str, value: str) -> None:
    """Remove environment variable ``name`` where it still holds the ``value`` that
    :func:`set_default_environ` gave it: a setting the driver read once (PoCL's device list,
    at the first platform query) that this process's children must not inherit as the
    user's."""
    if os.environ.get(name) == value:
        del os.environ[name]


def environ_value(name: str) -> str | None:
    """The value of environment variable ``name`` (None: not set): how a device module asks
    what its driver reads from the environment (clnn.program_cache.CompileHelper: whether
    PoCL compiles generic work-group functions, ``POCL_WORK_GROUP_SPECIALIZATION``), never
    to steer clnn."""
    return os.environ.get(name)


def child_environ(**values: str) -> dict:
    """The environment of a subprocess a device module starts (clnn.kernels._vnni's probe):
    this process's, with ``values`` set, never read to steer clnn."""
    return dict(os.environ, **values)


def cache_root_from_environ(environ: Mapping[str, str] | None = None) -> str | None:
    """``CLNN_CACHE_DIR`` when set (non-empty), else None (clnn.paths: the user cache
    directory)."""
    environ = os.environ if environ is None else environ
    return environ.get("CLNN_CACHE_DIR") or None
