"""``clnn fuzz models``: VTS-style model mutants of corpus models, judged on the devices.

Case ``seed`` (``--seed`` up to ``--seed + --count - 1``) builds one mutant of one small
corpus model (clnn/suites/mutations.py) and judges it (clnn/suites/mutation_check.py) on the
reference device and, where OpenCL is available, on the OpenCL device too; every
REQUEST_EVERY-th seed also runs the request mutation suite (clnn/suites/request_mutations.py)
of one corpus test in every execution mode on each device. Prints the counts (clean
rejections, valid-and-matching, failures) and every failure with its seed and a one-line
reproducer; exits 1 if any case failed.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter

from clnn.suites.mutation_check import judge
from clnn.suites.mutations import default_corpus, eligible_tests, mutant_for_seed


def _devices(spec=None):
    """The reference device, and the OpenCL one unless ``spec`` (--device) is "reference";
    an OpenCL device asked for by name must open (the CLI checked it is there)."""
    from clnn.devices import open_device, parse_device_spec

    devices = {"reference": open_device("reference")}
    if spec is not None:
        if parse_device_spec(spec)[0] == "opencl":
            devices["opencl"] = open_device(spec)
        return devices
    try:
        devices["opencl"] = open_device("opencl")
    except Exception as e:  # no OpenCL platform: the reference device alone
        print(f"clnn fuzz models: OpenCL is not available ({e}); reference device only",
              file=sys.stderr)
    return devices


def run_cases(corpus, seeds, devices, progress=False):
    """[(seed, spec, test name, kind, detail, outcome, reason)] for each case seed."""
    from tqdm import tqdm

    tests = eligible_tests(str(corpus))
    rows = []
    for seed in tqdm(seeds, disable=not progress, unit="mutant", file=sys.stderr):
        spec, test, mu = mutant_for_seed(tests, seed)
        if mu is None:
            rows.append((seed, spec, test["name"], "-", "no kind applies", "skipped", ""))
            continue
        try:
            v = judge(mu, devices, test, seed)
        except Exception as e:  # the checker itself must not hide a case
            rows.append((seed, spec, test["name"], mu.kind, mu.detail, "failure",
                         f"checker raised {type(e).__name__}: {e}"))
            continue
        rows.append((seed, spec, test["name"], mu.kind, mu.detail, v.outcome, v.detail))
    return rows


#: every this many case seeds, a seed also runs the request mutation suite of one corpus test
REQUEST_EVERY = 50


def run_request_cases(corpus, seeds, devices, progress=False):
    """[(seed, test name, variant, device, mutant executions, [failures])] for the seeds that
    are multiples of REQUEST_EVERY: every request mutant in every execution mode."""
    import random

    from tqdm import tqdm

    from clnn.suites.request_mutations import run_request_suite

    tests = eligible_tests(str(corpus))
    rows = []
    chosen = [s for s in seeds if s % REQUEST_EVERY == 0]
    for seed in tqdm(chosen, disable=not progress, unit="request suite", file=sys.stderr):
        rng = random.Random(seed)
        _, test = tests[rng.randrange(len(tests))]
        dynamic = rng.random() < 0.5
        for name, device in devices.items():
            try:
                runs, failures = run_request_suite(device, test, dynamic=dynamic)
            except Exception as e:  # preparing the unmutated model must not fail
                runs, failures = 0, [f"the suite raised {type(e).__name__}: {e}"]
            rows.append((seed, test["name"], "dynamic" if dynamic else "static", name, runs,
                         failures))
    return rows


def main(args) -> int:
    corpus = args.corpus or default_corpus()
    if corpus is None:
        print("clnn fuzz models: no corpus (give --corpus DIR or set CLNN_CTS_CORPUS)",
              file=sys.stderr)
        return 2
    devices = _devices(getattr(args, "device", None))
    t0 = time.perf_counter()
    seeds = range(args.seed, args.seed + args.count)
    rows = run_cases(corpus, seeds, devices, progress=sys.stderr.isatty())
    requests = run_request_cases(corpus, seeds, devices, progress=sys.stderr.isatty())
    wall = time.perf_counter() - t0
    counts = Counter(r[5] for r in rows)
    by_kind: dict[str, Counter] = {}
    for r in rows:
        by_kind.setdefault(r[3], Counter())[r[5]] += 1
    failures = [r for r in rows if r[5] == "failure"]
    for seed, _spec, name, kind, detail, _, reason in failures:
        print(f"FAIL seed {seed}: {kind} of {name} ({detail}): {reason}\n"
              f"  reproduce: clnn fuzz models --count 1 --seed {seed} --corpus {corpus}")
    print(f"{len(rows)} mutants on {', '.join(devices)} in {wall:.0f} s: "
          f"{counts['rejected']} clean rejections, {counts['valid']} valid and matching, "
          f"{counts['failure']} failures, {counts['skipped']} skipped (no kind applies)")
    for kind in sorted(by_kind):
        c = by_kind[kind]
        print(f"  {kind:24} rejected {c['rejected']:5}  valid {c['valid']:5}  "
              f"failures {c['failure']:3}")
    bad_requests = [r for r in requests if r[5]]
    for seed, name, variant, dev, _, fails in bad_requests:
        print(f"FAIL seed {seed}: request mutants of {name} ({variant}) on {dev}: "
              f"{len(fails)} failures, first: {fails[0]}\n"
              f"  reproduce: clnn fuzz models --count 1 --seed {seed} --corpus {corpus}")
    print(f"request mutants: {len(requests)} suites (one corpus test on one device, every "
          f"execution mode), {sum(r[4] for r in requests)} mutant executions, "
          f"{sum(len(r[5]) for r in requests)} failures")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"devices": list(devices), "seconds": round(wall, 1),
                       "summary": {k: counts[k] for k in ("rejected", "valid", "failure",
                                                          "skipped")},
                       "by_kind": {k: dict(v) for k, v in by_kind.items()},
                       "cases": [dict(zip(("seed", "spec", "test", "kind", "detail",
                                           "outcome", "reason"), r)) for r in rows],
                       "requests": [dict(zip(("seed", "test", "variant", "device",
                                              "executions", "failures"), r))
                                    for r in requests]},
                      f, indent=1)
    return 1 if failures or bad_requests else 0
