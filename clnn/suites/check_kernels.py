"""``make check-kernels``: the conformance corpus on Oclgrind, the OpenCL device simulator that
reports out-of-bounds accesses, data races and barrier divergence in kernels.

Every kernel runs with ``--no-fallback`` on the simulated device, so each supported operation is
really executed by its OpenCL kernel. The corpus files are split into ``jobs`` parts (by size),
each run by one ``clnn cts`` process under ``oclgrind --data-races --log <part>.log``; the run
fails when any part fails a test or Oclgrind says anything: a diagnostic in its log, or a fatal
error (which it writes to stderr, not the log).

Oclgrind is reached only through its ``oclgrind`` wrapper (it preloads the simulator's OpenCL
runtime into the command), never through an ICD file in /etc/OpenCL/vendors, so every other
program on the machine keeps seeing PoCL. ``--check-api`` is left off: pyopencl itself probes
clGetDeviceInfo with parameters newer than OpenCL 1.2, which Oclgrind reports as API errors.

``--profile`` runs the corpus under simulated device limits (clnn.workgroups.PROFILES:
"device", Oclgrind's own; "desktop-gpu"; "small-gpu"; "all" runs each in turn): Oclgrind
simulates the work-group size and local memory (``--max-wgsize``, ``--local-mem-size``) and
clnn's device runs under the whole profile (``$CLNN_DEVICE_PROFILE``), per-dimension limits
and missing extensions included, so launches and support checks are tested against a GPU's
limits.

Oclgrind checks accesses against whole OpenCL buffers: an overrun that stays inside the plan's
pool buffer (where every tensor of a partition lives) reaches another tensor's bytes and is not
reported; only the corpus comparison can catch it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

#: what Oclgrind writes on stderr when it cannot run a kernel at all
FATAL = "OCLGRIND FATAL ERROR"
_KERNEL = re.compile(r"^\s+Kernel:\s*(\S+)")
_CLOSING = re.compile(r"(\d+) passed, (\d+) failed, (\d+) skipped")


def oclgrind_path() -> str | None:
    return shutil.which("oclgrind")


def log_messages(text: str) -> list[str]:
    """Oclgrind's diagnostics in a log: each begins with an unindented line (what went wrong),
    followed by indented details (kernel, work-item, instruction, source; a detail line may be
    a lone tab, so blank lines do not end a diagnostic)."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line[0] in " \t" and blocks:
            blocks[-1].append(line)
        else:
            blocks.append([line])
    return ["\n".join(b) for b in blocks]


def message_kernel(block: str) -> str:
    for line in block.splitlines():
        m = _KERNEL.match(line)
        if m:
            return m.group(1)
    return "?"


def split_corpus(corpus: Path, parts: int) -> list[list[Path]]:
    """The corpus files in ``parts`` groups of about equal size (compressed size standing in
    for the work), largest files first so they do not all end up in one group."""
    files = sorted(corpus.glob("*.json.gz"), key=lambda f: f.stat().st_size, reverse=True)
    groups: list[list[Path]] = [[] for _ in range(max(1, min(parts, len(files))))]
    sizes = [0] * len(groups)
    for f in files:
        k = sizes.index(min(sizes))
        groups[k].append(f)
        sizes[k] += f.stat().st_size
    return groups


def oclgrind_command(log: Path, max_wgsize: int | None = None,
                     local_mem_size: int | None = None) -> list[str]:
    cmd = [oclgrind_path() or "oclgrind", "--data-races", "--log", str(log)]
    if max_wgsize:
        cmd += ["--max-wgsize", str(max_wgsize)]
    if local_mem_size:
        cmd += ["--local-mem-size", str(local_mem_size)]
    return cmd


def profile_limits(name: str | None) -> tuple[int | None, int | None]:
    """(max work-group size, local memory) Oclgrind simulates for a device profile."""
    from clnn.workgroups import profile_named

    p = profile_named(name)
    return (p.max_work_group_size, p.local_mem_size) if p else (None, None)


def run_check(corpus: Path, pattern: str | None = None, jobs: int = 1, workdir: Path | None = None,
              max_wgsize: int | None = None, local_mem_size: int | None = None,
              out=sys.stdout, profile: str | None = None) -> dict:
    """Run the corpus (tests matching ``pattern``) on Oclgrind, under the device ``profile``
    (its limits also given to Oclgrind where ``max_wgsize`` / ``local_mem_size`` are None);
    returns counts and messages."""
    workdir = Path(workdir or tempfile.mkdtemp(prefix="clnn-oclgrind-"))
    procs = []
    started = time.monotonic()
    env = dict(os.environ, CLNN_DEVICE="oclgrind", CLNN_DEVICE_PROFILE=profile or "device")
    wg, mem = profile_limits(profile)
    max_wgsize, local_mem_size = max_wgsize or wg, local_mem_size or mem
    for k, files in enumerate(split_corpus(corpus, jobs)):
        part = workdir / f"part{k}"
        part.mkdir(parents=True, exist_ok=True)
        for f in files:
            link = part / f.name
            if not link.exists():
                link.symlink_to(f.resolve())
        log = workdir / f"part{k}.log"
        log.unlink(missing_ok=True)
        cmd = oclgrind_command(log, max_wgsize, local_mem_size) + [
            sys.executable, "-m", "clnn", "cts", str(part), "--device", "opencl",
            "--no-fallback", "-j", "1", "-v"] + (["-k", pattern] if pattern else [])
        stdout = open(workdir / f"part{k}.out", "w")
        stderr = open(workdir / f"part{k}.err", "w")
        procs.append((k, log, stdout, stderr, subprocess.Popen(
            cmd, stdout=stdout, stderr=stderr, env=env)))
    result = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0, "messages": [],
              "failures": [], "parts_failed": 0, "workdir": str(workdir),
              "profile": profile or "device"}
    try:
        for *_, proc in procs:
            proc.wait()
    finally:  # interrupted (Ctrl-C, a timeout's SIGTERM handled as an exception): no orphans
        for *_, proc in procs:
            if proc.poll() is None:
                proc.kill()
    for k, log, stdout, stderr, proc in procs:
        rc = proc.wait()
        stdout.close()
        stderr.close()
        text = Path(stdout.name).read_text()
        closing = _CLOSING.findall(text)
        if closing:
            for key, n in zip(("passed", "failed", "skipped"), closing[-1]):
                result[key] += int(n)
        result["failures"] += [line for line in text.splitlines()
                               if line.startswith(("FAILED", "ERROR"))]
        if rc != 0 or not closing:
            result["parts_failed"] += 1
            if not closing:  # the run itself broke: say why
                tail = Path(stderr.name).read_text().strip().splitlines()[-5:]
                result["failures"].append(f"part {k} exited with status {rc}: "
                                          + " / ".join(tail))
        messages = log_messages(log.read_text()) if log.exists() else []
        err_lines = Path(stderr.name).read_text().splitlines()
        for i, line in enumerate(err_lines):
            if FATAL in line:
                messages.append("\n".join(err_lines[i:i + 3]))
        result["messages"] += messages
    result["errors"] = len(result["messages"])
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def run_models(models: list[str], profile: str | None = None, workdir: Path | None = None,
               timeout: float = 3600) -> list[dict]:
    """Each model (a path or a name ``clnn models`` knows) run once by ``clnn run --compare
    litert`` on Oclgrind under the device ``profile``: a row per model with its outputs'
    largest error, whether all are within litert's tolerance, whether every operation ran on
    OpenCL, the wall time and Oclgrind's diagnostics."""
    import json

    workdir = Path(workdir or tempfile.mkdtemp(prefix="clnn-oclgrind-models-"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CLNN_DEVICE="oclgrind", CLNN_DEVICE_PROFILE=profile or "device")
    wg, mem = profile_limits(profile)
    rows = []
    for model in models:
        log = workdir / f"{Path(model).stem}.log"
        log.unlink(missing_ok=True)
        cmd = oclgrind_command(log, wg, mem) + [
            sys.executable, "-m", "clnn", "run", model, "--device", "opencl", "--compare",
            "litert", "--iterations", "1", "--warmup", "0", "--json"]
        started = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        row = {"model": model, "profile": profile or "device", "rc": r.returncode,
               "seconds": round(time.monotonic() - started, 1)}
        try:
            doc = json.loads(r.stdout[r.stdout.index("{"):])
        except ValueError:
            row["error"] = (r.stderr.strip().splitlines() or ["no output"])[-1]
            doc = None
        if doc is not None:
            outs = [o.get("compare", {}) for o in doc["outputs"]]
            row["max_abs_err"] = max((c.get("max_abs_err", 0.0) for c in outs), default=0.0)
            row["within_tolerance"] = bool(outs) and all(c.get("within_tolerance")
                                                         for c in outs)
            row["all_on_opencl"] = all(kind == "cl" for kind, *_ in
                                       doc["memory"]["partitions"])
        messages = log_messages(log.read_text()) if log.exists() else []
        messages += [line for line in r.stderr.splitlines() if FATAL in line]
        row["errors"] = len(messages)
        row["messages"] = messages[:3]
        rows.append(row)
    return rows


def models_ok(rows: list[dict]) -> bool:
    return all(r["rc"] == 0 and r.get("within_tolerance") and r.get("all_on_opencl")
               and not r["errors"] for r in rows)


def report_models(rows: list[dict], out=sys.stdout) -> None:
    for r in rows:
        state = "ok" if models_ok([r]) else "FAILED"
        detail = r.get("error") or (f"max abs err {r['max_abs_err']:.3g}, within litert's "
                                    f"tolerance {r['within_tolerance']}, every operation on "
                                    f"OpenCL {r['all_on_opencl']}")
        print(f"clnn check-kernels [profile {r['profile']}] {state:6} {r['model']}: {detail}; "
              f"Oclgrind reported {r['errors']} error(s); {r['seconds']} s", file=out)
        for m in r["messages"]:
            print("  " + m.replace("\n", "\n  "), file=out)


def report(result: dict, out=sys.stdout) -> None:
    print(f"clnn check-kernels [profile {result.get('profile', 'device')}]: "
          f"{result['passed']} passed, {result['failed']} failed, "
          f"{result['skipped']} skipped (unsupported on OpenCL) in {result['seconds']} s; "
          f"Oclgrind reported {result['errors']} error(s)", file=out)
    by_kernel = Counter(message_kernel(m) for m in result["messages"])
    if by_kernel:
        print("  errors by kernel: " + ", ".join(f"{k} {n}" for k, n in by_kernel.most_common()),
              file=out)
    shown = {}
    for m in result["messages"]:
        shown.setdefault((message_kernel(m), m.splitlines()[0]), m)
    for m in list(shown.values())[:10]:
        print("  " + m.replace("\n", "\n  "), file=out)
    for line in result["failures"][:20]:
        print("  " + line, file=out)
    print(f"  (logs: {result['workdir']})", file=out)


def _terminate_as_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None) -> int:
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    ap = argparse.ArgumentParser(prog="python -m clnn.suites.check_kernels", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", nargs="?", default=None,
                    help="directory of *.json.gz corpus files (not with --models)")
    ap.add_argument("-k", default=None,
                    help="only tests whose spec or name match (a clnn cts -k expression)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="parallel parts (default 2)")
    ap.add_argument("--workdir", default=None, help="where logs go (default: a new temp dir)")
    ap.add_argument("--max-wgsize", type=int, default=None,
                    help="simulate a device with this maximum work-group size")
    ap.add_argument("--local-mem-size", type=int, default=None,
                    help="simulate a device with this much local memory (bytes)")
    ap.add_argument("--models", nargs="+", default=None, metavar="MODEL",
                    help="instead of the corpus: run these .tflite models (paths or names "
                    "clnn models knows) once each, compared with litert")
    ap.add_argument("--profile", default="device",
                    help="simulated device limits: " + ", ".join(_profiles())
                    + ", or all (each in turn; default: device, Oclgrind's own)")
    args = ap.parse_args(argv)
    if not oclgrind_path():
        print("clnn check-kernels: oclgrind is not installed; install it with\n\n"
              "    sudo apt-get install -y oclgrind\n", file=sys.stderr)
        return 2
    names = _profiles() if args.profile == "all" else [args.profile]
    if any(n not in _profiles() for n in names):
        print(f"clnn check-kernels: unknown profile {args.profile!r}; known: "
              f"{', '.join(_profiles())}, all", file=sys.stderr)
        return 2
    if args.models:
        rows = [row for name in names for row in run_models(args.models, name, args.workdir)]
        report_models(rows)
        return 0 if models_ok(rows) else 1
    if args.corpus is None:
        print("clnn check-kernels: give a corpus directory or --models", file=sys.stderr)
        return 2
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        print(f"clnn check-kernels: corpus directory {corpus} does not exist", file=sys.stderr)
        return 2
    bad = 0
    for name in names:
        workdir = Path(args.workdir) / name if args.workdir else None
        result = run_check(corpus, args.k, args.jobs, workdir, args.max_wgsize,
                           args.local_mem_size, profile=name)
        report(result)
        bad += bool(result["errors"] or result["failed"] or result["parts_failed"])
    return 1 if bad else 0


def _profiles() -> list[str]:
    from clnn.workgroups import PROFILES

    return list(PROFILES)


if __name__ == "__main__":
    sys.exit(main())
