"""The conformance corpus on the reference device and on OpenCL (when ../shared/cts/public
exists): a seeded slice of its spec files in make test, the whole corpus under make test-full
(marked slow; ``clnn cts CORPUS`` runs it too)."""

import json
import os
import random

import pytest

from clnn.suites.cts import run_corpus
from tests.kits.paths import CORPUS, REPO

REPORTS = REPO / "reports"

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")


#: the slice make test runs: SLICE_FILES spec files drawn with SLICE_SEED
SLICE_SEED, SLICE_FILES = 35, 30


@pytest.fixture(scope="module")
def corpus_slice(tmp_path_factory):
    """A directory of links to a seeded sample of the corpus's spec files."""
    files = sorted(CORPUS.glob("*.json.gz"))
    folder = tmp_path_factory.mktemp("cts-slice")
    for f in random.Random(SLICE_SEED).sample(files, min(SLICE_FILES, len(files))):
        (folder / f.name).symlink_to(f)
    return folder


def test_slice_reference_and_opencl_pass(corpus_slice):
    jobs = max(2, os.cpu_count() or 1)
    ref = run_corpus(corpus_slice, "reference", jobs=jobs, progress=False)
    assert ref.counts["error"] == 0 and ref.counts["failed"] == 0, ref.closing_line()
    assert ref.counts["passed"] > 0
    for options in ({}, {"fallback": False}):
        cl = run_corpus(corpus_slice, "opencl", jobs=jobs, progress=False,
                        device_options=options)
        print(f"opencl {options}: {cl.closing_line()}")
        assert cl.counts["error"] == 0 and cl.counts["failed"] == 0, cl.closing_line()
        assert cl.counts["passed"] == ref.counts["passed"], (options, cl.closing_line())


@pytest.fixture(scope="module")
def reference_summary():
    summary = run_corpus(CORPUS, "reference", jobs=max(2, os.cpu_count() or 1), progress=False)
    REPORTS.mkdir(exist_ok=True)
    (REPORTS / "cts-reference.json").write_text(json.dumps(summary.to_json(), indent=1))
    return summary


@pytest.mark.slow
def test_reference_no_errors(reference_summary):
    errors = [f"{r.name} [{r.variant}]: {r.detail.splitlines()[0]}"
              for r in reference_summary.results if r.status == "error"]
    assert not errors, "\n".join(errors[:20])


@pytest.mark.slow
def test_reference_pass_rate(reference_summary):
    c = reference_summary.counts
    total = sum(c.values())
    assert total > 13000
    rate = c["passed"] / total
    print(f"reference device: {reference_summary.closing_line()} ({rate:.4f} of {total})")
    assert rate >= 0.995, reference_summary.closing_line()


def _opencl_summary(name, **options):
    summary = run_corpus(CORPUS, "opencl", jobs=max(2, os.cpu_count() or 1), progress=False,
                         device_options=options)
    REPORTS.mkdir(exist_ok=True)
    (REPORTS / f"cts-{name}.json").write_text(json.dumps(summary.to_json(), indent=1))
    return summary


@pytest.mark.slow
def test_opencl_passes_what_the_reference_passes(reference_summary):
    summary = _opencl_summary("opencl")
    ref_passed = {(r.name, r.variant) for r in reference_summary.results if r.status == "passed"}
    cl_passed = {(r.name, r.variant) for r in summary.results if r.status == "passed"}
    print(f"opencl device (fallback on): {summary.closing_line()}")
    assert summary.counts["error"] == 0
    assert len(cl_passed & ref_passed) >= 0.99 * len(ref_passed)


@pytest.mark.slow
def test_opencl_claimed_operations_pass():
    from clnn.suites.cts import iter_corpus

    summary = _opencl_summary("opencl-no-fallback", fallback=False)
    failed = [f"{r.name} [{r.variant}]: {r.detail.splitlines()[0]}"
              for r in summary.results if r.status in ("failed", "error")]
    assert not failed, "\n".join(failed[:20])
    ops = {t["name"]: {o["type"] for sg in [t["main"], *t["referenced"]]
                       for o in sg["operations"]} for _, _, t in iter_corpus(CORPUS)}
    claimed = set().union(*(ops[r.name] for r in summary.results if r.status == "passed"))
    print(f"opencl device (no fallback): {summary.closing_line()}; "
          f"{len(claimed)} operations run on OpenCL")
    assert len(claimed) >= 40
