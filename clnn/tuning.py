"""Kernel tuning per device and per layer: a cache of measured choices and the tuner.

A kernel family exposes a small space of variants (for the GEMM: the tile and the work-group
shape, clnn/kernels/_gemm_variants.py). The select pass (clnn/passes/select.py) gives each
layer its device-class default (a :class:`Choice`); the tune pass (clnn/passes/tune.py,
:func:`tune_choice`), the only place that measures, replaces it: with the device's ``tune``
option (clnn.options.DeviceOptions) ``fast`` or ``full``, the tuner measures the
candidates of a layer's shape on the device with OpenCL profiling events (a few repetitions,
median, on scratch layers built through clnn.launch.LaunchBuilder.scratch_layer) and stores
the choice in the tuning cache:

    <cache dir>/tuning/<hash of the device identity>.json

keyed inside by ``family|shape signature``. The file records the identity it was measured on
(platform name and version, device name, driver version) and is only used when that identity is
the current device's, so an entry from another device or driver is never used. It is plain JSON
(no pickle): a corrupt or foreign file is ignored and written again.

``tune``: ``off`` (heuristic only: neither read nor measure), ``cached`` (the default: the
cache's choices, as ``fast`` reads them, and the heuristic's elsewhere; never a measurement, so
a prepare picks the kernels the one before picked, and a second process finds them compiled),
``fast`` (reuse the cache; measure uncached layers worth tuning until the model's budget,
``tune_budget_s`` seconds, default :data:`FAST_BUDGET_S`, is spent; few candidates, 3
repetitions) or ``full`` (every candidate, 5 repetitions, no budget). ``clnn tune MODEL...``
tunes ahead of time. Measuring at a prepare costs a cold prepare the candidates' compiles
(seconds on PoCL) for the few layers the budget allows.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from clnn import paths
from clnn.options import options_of

#: 2: work-groups of heavy launches on CPUs are split (clnn.launch.cpu_groups), so the times
#: and choices measured before are not those of the launches made now; 3: the GEMM and
#: depthwise kernels store full tiles with compiled epilogues (fast_stores in gemm.cl.mako, the
#: full-tile block of depthwise_tile), faster on some layers (clnn bench gemm,
#: benchmarks/depthwise_roofline.py): the tiles and the fused-or-not choices of dwpw measured
#: before favour the old kernels
SCHEMA = 3
MODES = ("off", "cached", "fast", "full")
#: the modes that read an entry cut short by a budget (``full`` measures it again)
REUSING = ("cached", "fast")
#: seconds of measuring per prepared model in ``fast`` mode (balanced with the cold start: on
#: a cold PoCL cache most of it compiles the candidates; ``clnn tune`` does the rest)
FAST_BUDGET_S = 0.5
#: layers with less work than this (FLOP) are not worth a measurement at prepare (``fast``:
#: the budget goes to the big layers) or ahead of time (``full``): the heuristic runs them
MIN_TUNE_FLOP = {"fast": 4e6, "full": 2.5e5}
#: layers whose scratch buffers would take more bytes than this per candidate are not
#: measured (every candidate holds its own while the candidates take turns)
MAX_SCRATCH_BYTES = 64 << 20
_LOCK = threading.Lock()
#: clnn's log (clnn.program_cache.LOG): a line per layer measured at a prepare
LOG = logging.getLogger("clnn")


def mode(options=None) -> str:
    """The tuning mode of ``options`` (clnn.options.DeviceOptions; None: the defaults)."""
    from clnn.options import DeviceOptions

    return (options or DeviceOptions()).tune


def budget_s(options=None) -> float | None:
    """Measuring seconds per model of ``options``: None (no bound) in ``full`` mode, else
    ``tune_budget_s`` (at least 0), :data:`FAST_BUDGET_S` when that is None."""
    from clnn.options import DeviceOptions

    options = options or DeviceOptions()
    if options.tune == "full":
        return None
    if options.tune_budget_s is not None:
        return max(0.0, float(options.tune_budget_s))
    return FAST_BUDGET_S


def device_identity(platform, cl_device) -> dict:
    """What a measured choice holds for: the platform, the device and its driver."""
    return {"platform": platform.name.strip(), "platform_version": platform.version.strip(),
            "device": cl_device.name.strip(), "driver_version": cl_device.driver_version.strip()}


def identity_hash(ident: dict) -> str:
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


class TuningCache:
    """Choices measured on one device identity, persisted as JSON under ``directory``."""

    def __init__(self, identity: dict, directory: Path | None = None):
        self.identity = dict(identity)
        # (directory None: the user cache directory; tuner_for passes the device's cache_dir)
        self.path = Path(directory or paths.cache_dir("tuning")) / \
            f"{identity_hash(self.identity)}.json"
        self.entries: dict[str, dict] = {}
        self._load()

    @staticmethod
    def key(family: str, signature) -> str:
        return f"{family}|{json.dumps(signature, sort_keys=True, separators=(',', ':'))}"

    def _load(self):
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return
        # another identity (a hash collision, a copied file) or another schema: never used
        if isinstance(data, dict) and data.get("schema") == SCHEMA and \
                data.get("identity") == self.identity and isinstance(data.get("entries"), dict):
            self.entries = {k: v for k, v in data["entries"].items() if isinstance(v, dict)}

    def get(self, family: str, signature) -> dict | None:
        return self.entries.get(self.key(family, signature))

    def put(self, family: str, signature, entry: dict):
        self.entries[self.key(family, signature)] = entry

    def save(self):
        """Merged with what another process wrote meanwhile; written atomically."""
        with _LOCK:
            mine = dict(self.entries)
            self.entries = {}
            self._load()
            self.entries.update(mine)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"schema": SCHEMA, "identity": self.identity,
                                       "entries": self.entries}, indent=1, sort_keys=True))
            os.replace(tmp, self.path)


@dataclass
class Record:
    """One tuned layer, for ``clnn tune``'s report."""
    op_index: int
    family: str
    signature: object
    choice: object
    default: object
    default_ms: float | None
    best_ms: float | None
    cached: bool

    @property
    def gain(self) -> float | None:
        if not self.default_ms or not self.best_ms:
            return None
        return self.default_ms / self.best_ms


@dataclass
class Tuner:
    """The tuning state of one device: its cache, the mode, the budget of the model being
    prepared (:meth:`start_model`), and the records of what it chose."""
    device: object
    mode: str
    cache: TuningCache | None
    budget: float | None = None
    spent: float = 0.0
    #: the plan owner (clnn.plan.Planner, one per prepared model) the budget is counted for
    owner: object = None
    #: measure again even where the cache has an entry (``clnn tune --retune``)
    retune: bool = False
    #: no budget whatever the mode (``clnn tune``)
    unbounded: bool = False
    #: the families measured (``clnn tune --family``); the others take the cache or their
    #: default, never a measurement. None: every family
    families: frozenset | None = None
    measured: int = 0
    records: list[Record] = field(default_factory=list)
    #: entries put without a save (layers the budget left to the heuristic)
    _unsaved: bool = False
    #: the programs of the candidates measured (:func:`scratch_programs`; None: none yet)
    programs: object = None

    def start_model(self, owner=None):
        self.budget = None if self.unbounded else budget_s(options_of(self.device))
        self.spent, self.owner = 0.0, owner

    def flush(self):
        """Save the entries of layers the budget left unmeasured (once per prepared model)."""
        if self._unsaved and self.cache is not None:
            self._unsaved = False
            try:
                self.cache.save()
            except OSError:  # a read-only cache: measured again next time
                pass

    def can_measure(self) -> bool:
        return self.mode != "off" and (self.budget is None or self.spent < self.budget)

    def choose(self, op_index: int, family: str, signature, candidates: list, default,
               run_candidate, flop: float = 0.0, owner=None, space: list | None = None,
               scratch_bytes: int = 0, measure: bool = True):
        """The variant for one layer: the cached choice (when it is in ``space``, the whole
        variant space; default ``candidates``), else (budget allowing) the fastest of
        ``candidates`` measured by ``run_candidate(c) -> (kernels, release)``, else
        ``default``. Candidates and choices are JSON values (lists, not tuples). ``owner``:
        the plan owner; a new one (a new model) starts a new budget. ``measure=False``: the
        cache or ``default``, never a measurement."""
        if self.mode == "off" or self.cache is None:
            return default
        if owner is not None and owner is not self.owner:
            self.start_model(owner)
        entry = self.cache.get(family, signature)
        if entry is not None and entry.get("measured") is False:
            # left unmeasured when a prepare's budget was spent: the heuristic's choice (today's
            # heuristic: the entry holds none) until clnn tune measures it
            if self.mode in REUSING and not self.unbounded and not self.retune:
                self.records.append(Record(op_index, family, signature, default, default,
                                           None, None, True))
                return default
            entry = None
        # an entry cut short by the budget is reused at prepare (clnn tune completes it) where
        # it measured today's default
        usable = entry is not None and reusable(entry, default, self.mode, chaining(self.device))
        if usable and not self.retune and entry.get("choice") in (space or candidates):
            self.records.append(Record(op_index, family, signature, entry["choice"], default,
                                       entry.get("default_ms"), entry.get("best_ms"), True))
            return entry["choice"]
        if self.mode == "cached":  # (never a measurement at a prepare)
            return default
        if not measure or flop < MIN_TUNE_FLOP[self.mode] or len(candidates) < 2 \
                or scratch_bytes > MAX_SCRATCH_BYTES or not self.measures(family):
            return default
        if not self.can_measure():
            if entry is None:  # the budget is spent: the heuristic's, until clnn tune
                self.cache.put(family, signature, {"complete": False, "measured": False})
                self._unsaved = True
            return default
        t0 = time.perf_counter()
        reps = 5 if self.mode == "full" else 3
        LOG.info("tuning (tune=%s): measuring up to %d variants of the %s layer %s%s", self.mode,
                 len(candidates), family, json.dumps(signature, sort_keys=True),
                 "" if self.budget is None else f" (within {self.budget:g} s for the model)")
        order = sorted(candidates, key=lambda c: c != default)  # the default first
        how: dict = {}
        times, tried = measure_candidates(self.device, run_candidate, order, reps,
                                          lambda: self.can_measure_now(t0), how=how)
        self.spent += time.perf_counter() - t0
        self.measured += 1
        if not times:
            return default
        best = min(times, key=times.get)
        choice = json.loads(best)
        d_ms = times.get(_key(default))
        entry = {"choice": choice, "best_ms": times[best], "default_ms": d_ms,
                 "times_ms": times, "complete": tried == len(candidates),
                 "measured_as": how.get("as", "launches")}
        self.cache.put(family, signature, entry)
        self.cache.save()
        self.records.append(Record(op_index, family, signature, choice, default, d_ms,
                                   times[best], False))
        return choice

    def measures(self, family: str) -> bool:
        """Whether layers of ``family`` may be measured (:attr:`families`)."""
        return self.families is None or family in self.families

    def can_measure_now(self, t0: float) -> bool:
        return self.budget is None or self.spent + (time.perf_counter() - t0) < self.budget


def _key(candidate) -> str:
    return json.dumps(candidate, sort_keys=True)


def reusable(entry: dict, default, mode_: str, chaining: bool = False) -> bool:
    """Whether a cache entry's choice stands against ``default``, the family's default
    today: a complete entry (every candidate measured), or in the reusing modes one cut short
    by a budget that measured that default among its candidates. An incomplete entry that did
    not (a default of an earlier heuristic, the only candidate its budget allowed) holds no
    evidence against today's default, which is taken until clnn tune measures the layer.
    ``chaining``: the device runs chains, where only entries measured as it runs them count
    (:data:`MEASURED_AS`)."""
    if chaining and entry.get("measured_as") not in MEASURED_AS and "chain_ms" not in entry:
        return False  # (``chain_ms``: clnn tune's check in the model's chains, tune_chain.py)
    if entry.get("complete"):
        return True
    return mode_ in REUSING and _key(default) in (entry.get("times_ms") or {})


#: how an entry's candidates were measured (its ``measured_as``): in a chain (a device whose
#: plans run chains, :func:`chained_kernels`) or launch by launch (a device that does not
#: chain, or a layer whose kernels cannot be chained: as its plans run it). On a chaining
#: device an entry without it (measured launch by launch before the tuner chained) is not
#: reused: its ranking is not the chain's (iris_landmark's tuned 1x1 convolutions ran 1.4x
#: slower in the model than the heuristic's tiles;
#: benchmarks/results/mediapipe_op_profile-20261129-s22.json)
MEASURED_AS = ("chain", "launches")


def chaining(device) -> bool:
    """Whether ``device``'s plans run chains (clnn/chain.py; False for no device)."""
    from clnn import chain

    cl_device = getattr(device, "cl_device", None)
    return cl_device is not None and chain.enabled(cl_device, options_of(device))


#: copies of a candidate's launches in the chain that measures it (:func:`chained_kernels`):
#: enough that the chain's start and end weigh little against the launches
CHAIN_REPEATS = 8


def chained_kernels(device, kernels):
    """``kernels`` (a scratch layer's, clnn.launch.ScratchKernels) as the plans run them where
    the device runs chains (clnn/chain.py): one chain of :data:`CHAIN_REPEATS` copies of the
    layer's launches, as [(kernel, global, local)] with the copies' count; else ``kernels``
    and 1. In a chain a launch's work-items are cut into tasks that the device's compute units
    claim, whatever its work-group shape, and no launch wakes the workers: a tile measured by
    a launch of its own ranks otherwise (iris_landmark's 1x1 convolution of K 64, N 32: the 2 x
    32 tile measured fastest alone, 1.4x slower than 8 x 16 in the model's chain:
    benchmarks/results/mediapipe_op_profile-20261129-s22.json)."""
    from clnn import chain

    launches = getattr(kernels, "launches", None)
    opts = options_of(device)
    if not launches or not chain.enabled(device.cl_device, opts):
        return kernels, 1
    root = opts.cache_dir
    for la in launches:
        made = chain.part(la.key, root) if la.key is not None and la.args is not None else None
        if made is None or len(made.params) != len(la.args):
            return kernels, 1
    import pyopencl as cl

    from clnn.program_cache import BUILD_OPTIONS, cache_dir

    ch = chain.make_chain(launches * CHAIN_REPEATS, device.cl_device, device.context, root)
    # built as clnn.bench.chain_profile builds its variants: no binary of a scratch chain in
    # the program cache
    prg = cl.Program(device.context, ch.source).build(
        options=BUILD_OPTIONS, devices=[device.cl_device], cache_dir=cache_dir(root))
    ch.kernel = cl.Kernel(prg, "clnn_chain")
    ch.kernel.set_args(*ch.arguments())
    out = _ChainRun([(ch.kernel, ch.global_size, ch.local_size)])
    out.chain = ch  # (its buffers: set_args keeps no reference)
    # what the chain runs: its source and the launches' sizes and scalars (a chain has no
    # work-groups of the launches: variants that differ only in them run the same chain)
    out.identity = (ch.source, repr([(la.global_size, [a for a in la.args
                                                       if isinstance(a, (int, float))])
                                     for la in launches]))
    return out, CHAIN_REPEATS


class _ChainRun(list):
    """A measuring chain's launch, holding the chain; ``identity``: what it runs."""

    chain = None
    identity = None


def measure_candidates(device, run_candidate, candidates: list, reps: int, may_continue,
                       how: dict | None = None):
    """({candidate key: median kernel ms}, candidates tried): every candidate that builds and
    runs is prepared (built, bound to scratch buffers, chained as the device's plans run it:
    :func:`chained_kernels`, run once to warm) while ``may_continue()`` holds (the first
    always), then the prepared ones take turns ``reps`` times, in a rotating order, so that a
    change of load on the machine hits them alike; each timed run follows an untimed one (warm
    caches, as in a model). Kernel times from profiling events (a chain's divided by its
    copies of the layer); candidates whose chains run the same (variants of work-groups
    alone) are measured once and given the first one's time. ``how["as"]``: "chain" where
    every candidate measured ran chained, else "launches" (:data:`MEASURED_AS`)."""
    import pyopencl as cl

    q = device.timing_queue()
    ready, tried, copies, same, seen = [], 0, {}, {}, {}
    try:
        for n, c in enumerate(candidates):
            if n and not may_continue():
                break
            tried += 1
            try:
                kernels, release = run_candidate(c)
            except Exception:  # a variant the device cannot build is not a choice
                continue
            try:
                kernels, copies[_key(c)] = chained_kernels(device, kernels)
            except Exception:  # (a chain that does not build: the launches on their own)
                copies[_key(c)] = 1
            ident = getattr(kernels, "identity", None)
            if ident is not None and ident in seen:  # the same chain as an earlier candidate's
                same[_key(c)] = seen[ident]
                release()
                continue
            if ident is not None:
                seen[ident] = _key(c)
            ready.append((c, kernels, release))
            try:
                for k, g, l in kernels:
                    cl.enqueue_nd_range_kernel(q, k, g, l)
                q.finish()
            except Exception:  # nor one it cannot run
                ready.pop()
                release()
        samples = {_key(c): [] for c, _, _ in ready}
        for r in range(reps):
            for c, kernels, _ in ready[r % max(len(ready), 1):] + ready[:r % max(len(ready), 1)]:
                # one untimed run first: in a model a layer reads what the previous kernel
                # just wrote, in the caches; the other candidates' runs evicted this one's data
                for k, g, l in kernels:
                    cl.enqueue_nd_range_kernel(q, k, g, l)
                evs = [cl.enqueue_nd_range_kernel(q, k, g, l) for k, g, l in kernels]
                q.finish()
                samples[_key(c)].append(sum(e.profile.end - e.profile.start for e in evs) *
                                        1e-6 / copies[_key(c)])
        if how is not None:
            how["as"] = "chain" if ready and all(copies[_key(c)] > 1 for c, _, _ in ready) \
                else "launches"
        import statistics  # (measuring only: not imported by a prepare that measures nothing)

        times = {k: statistics.median(v) for k, v in samples.items()}
        # (after the one measured: ``min`` keeps the first of equal times, the measured one)
        times.update({k: times[first] for k, first in same.items() if first in times})
        return times, tried
    finally:
        for _, _, release in ready:
            release()


#: every tunable family declared, by name (Family registers itself when its module,
#: clnn/kernels/_*variants.py or _winograd.py, is imported)
FAMILIES: dict = {}


@dataclass(frozen=True)
class Family:
    """A tunable kernel family, declared once (clnn/kernels/_*variants.py, _winograd.py): what
    it supplies; :func:`tune_choice` does the rest (the cache, the budget, measuring the
    candidates on scratch layers, the records). Variants and signatures are JSON values."""

    #: the family's name in the tuning cache (``family|signature``)
    name: str
    #: (traits, signature) -> the variant the device class runs untuned (clnn/kernels/
    #: _gemm_variants.traits: the device's class)
    default: Callable
    #: (traits, signature, full) -> the candidates: those measured (``full``: every variant,
    #: the space a cached choice must belong to); the constraints (a tile that fits the
    #: output, the registers, the work-group limits) are the family's
    space: Callable
    #: (device, tuner, variant, signature) -> (kernels, release): one layer of the signature
    #: in the variant on zeroed scratch buffers
    scratch: Callable
    #: signature -> the layer's FLOP (layers below MIN_TUNE_FLOP are not measured)
    flop: Callable
    #: signature -> the bytes one candidate's scratch buffers take
    scratch_bytes: Callable
    #: measured at a prepare in "fast" mode (False: candidates that compile for seconds on a
    #: cold PoCL cache: measured by clnn tune and in "full" mode only; the cache otherwise)
    fast_measure: bool = True

    def __post_init__(self):
        FAMILIES[self.name] = self


@dataclass
class Choice:
    """One layer's variant of a tuned family: what the select pass (clnn.passes.select) chose
    from the device-class defaults, with why, and what the tune pass (clnn.passes.tune) put
    in its place. The kernel plans read ``variant`` (:func:`chosen`)."""

    op: int
    #: the family's name in the tuning cache (Family.name)
    family: str
    signature: object
    variant: object
    reason: str
    #: the Family the tune pass may measure this choice in (None: a fixed choice: an option,
    #: a layer type the family does not tune)
    tunable: Family | None = None
    flop: float | None = None
    #: the select pass's variant and reason (``variant`` / ``reason`` are the tune pass's)
    selected: object = None
    selected_reason: str = ""

    @cached_property
    def key(self) -> str:
        """The tuning cache's key of the layer (kept: a plan asks for it a thousand times, and
        a choice's family and signature never change; dataclasses.replace makes a new one)."""
        return TuningCache.key(self.family, self.signature)


def class_name(traits) -> str:
    """The device class a variant default is read for (clnn/kernels/_defaults.py)."""
    return getattr(traits, "device_class", "") or ("cpu" if traits.cpu else "gpu")


def default_choice(family: Family, traits, sig: dict, op: int = -1,
                   flop: float | None = None) -> Choice:
    """The family's default for a layer of signature ``sig`` on a device of ``traits``, which
    the tune pass may replace."""
    v = family.default(traits, sig)
    why = f"the {class_name(traits)} class default"
    return Choice(op, family.name, sig, v, why, family, flop, v, why)


def fixed_choice(family: str, sig: dict, variant, reason: str, op: int = -1) -> Choice:
    """A choice the tune pass keeps (``reason``: why it is not tuned)."""
    return Choice(op, family, sig, variant, reason, None, None, variant, reason)


def tune_choice(choice: Choice, device, traits, owner=None) -> Choice:
    """``choice`` with the variant the tuner gives its layer: cached, measured now (budget
    allowing) or the selected default (Tuner.choose); fixed choices unchanged."""
    family = choice.tunable
    if family is None:
        return choice
    tuner = tuner_for(device)
    sig, seen = choice.signature, len(tuner.records)
    v = tuner.choose(choice.op, family.name, sig,
                     family.space(traits, sig, tuner.mode == "full"), choice.selected,
                     lambda cand: family.scratch(device, tuner, cand, sig),
                     flop=family.flop(sig) if choice.flop is None else choice.flop,
                     owner=owner, space=family.space(traits, sig, True),
                     scratch_bytes=family.scratch_bytes(sig),
                     measure=family.fast_measure or tuner.mode != "fast" or tuner.unbounded)
    return replace(choice, variant=v, reason=_why(tuner, tuner.records[seen:], choice))


def _why(tuner, records: list, choice: Choice) -> str:
    if tuner.mode == "off" or tuner.cache is None:
        return f"{choice.selected_reason} (tune off)"
    if not records and tuner.mode == "cached" and _unchained_entry(tuner, choice):
        return f"{choice.selected_reason} (the cache's entry was measured launch by launch, " \
            "not in a chain as this device runs it: clnn tune measures it again)"
    if not records and tuner.mode == "cached":
        return f"{choice.selected_reason} (no tuning cache entry: tune=cached measures nothing)"
    if not records:
        return f"{choice.selected_reason} (not measured: below the tuning threshold, no " \
            "cache entry or the budget spent)"
    r = records[-1]
    if r.cached:
        return "the tuning cache" if r.choice != r.default or r.best_ms else \
            f"{choice.selected_reason} (the cache holds no measurement)"
    return f"measured now ({r.best_ms:.3f} ms against {r.default_ms or 0:.3f} ms)"


def _unchained_entry(tuner, choice: Choice) -> bool:
    """Whether the cache holds an entry for ``choice``'s layer that a chaining device does not
    reuse (:func:`reusable`)."""
    entry = tuner.cache.get(choice.family, choice.signature)
    return entry is not None and "choice" in entry and chaining(tuner.device) and \
        not reusable(entry, choice.selected, tuner.mode, True) and \
        reusable(entry, choice.selected, tuner.mode, False)


#: lookups of a variant no select pass chose (the plan then takes the default, never measuring)
MISSES = {"count": 0}


def chosen(b, choice: Choice):
    """The variant a kernel plan runs for the layer of ``choice`` (its default): the one the
    select and tune passes put on the builder ``b`` (clnn.launch.LaunchBuilder.choices) for
    that family and signature; else ``choice``'s own (counted in :data:`MISSES`) with the
    tuning cache's entry where it has one, never a measurement."""
    found = getattr(b, "choices", {}).get(choice.key)
    if found is not None:
        return found.variant
    MISSES["count"] += 1
    if choice.tunable is None or getattr(b.device, "tuner", None) is None:
        return choice.variant
    tuner = b.device.tuner
    entry = tuner.cache.get(choice.family, choice.signature) if tuner.cache else None
    space = choice.tunable.space(_traits(b.device), choice.signature, True)
    ok = entry is not None and entry.get("choice") in space and \
        reusable(entry, choice.variant, tuner.mode, chaining(b.device))
    return entry["choice"] if ok else choice.variant


def _traits(device):
    from clnn.kernels._defaults import traits  # (clnn.kernels' package imports the families)

    return traits(device.limits)


def scratch_programs(device):
    """The program cache the scratch layers of ``device``'s tuner build their candidates in:
    the tuner's own, not the device's (clnn.program_cache.ProgramCache). A prepare builds the
    kernels of its plans not built yet as one program (ProgramCache.build_together); were the
    candidates measured at the first prepare built in the device's cache, that program would
    lack them, and a second process, which measures nothing (the tuning cache), would build
    another source, found in no kernel cache: it would compile the model again."""
    tuner = tuner_for(device)
    if tuner.programs is None:
        from clnn.program_cache import ProgramCache

        tuner.programs = ProgramCache(device.context, device.cl_device, options_of(device))
    return tuner.programs


def tuner_for(device, mode_: str | None = None, **options) -> Tuner:
    """The device's tuner (``device.tuner``), made once per device object in ``mode_``
    (default: the device's ``tune`` option); ``options``: Tuner fields (retune,
    unbounded)."""
    t = getattr(device, "tuner", None)
    if t is None:
        m = mode_ or mode(options_of(device))
        root = options_of(device).cache_dir
        cache = None if m == "off" else TuningCache(
            device_identity(device.platform, device.cl_device),
            paths.cache_dir("tuning", root=root))
        t = Tuner(device, m, cache, **options)
        t.start_model()
        device.tuner = t
    return t
