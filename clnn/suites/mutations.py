"""The model mutation engine the reliability tests and ``clnn fuzz models`` share.

A case is a seed: ``mutant_for_seed(pool, seed)`` picks a corpus test from ``pool`` and a
mutation kind from :data:`KINDS` with ``random.Random(seed)``, and builds the mutant, so a
failure is reproduced by its seed alone (``clnn fuzz models --count 1 --seed SEED``).
The kinds are those of AOSP's VTS ValidateModel (see clnn/suites/mutations_operands.py and
clnn/suites/mutations_graph.py); clnn/suites/mutation_check.py judges a mutant on the devices.
"""

from __future__ import annotations

import copy
import random
from functools import lru_cache
from pathlib import Path

from clnn.suites import mutations_graph as g
from clnn.suites import mutations_operands as o
from clnn.suites.cts import build_model, iter_corpus
from clnn.suites.mutations_operands import Mutant

#: kind name -> function(mutant, rng) -> description or None (not applicable to this model)
KINDS = {
    "operand_type_invalid": o.operand_type_invalid,
    "operand_type_valid": o.operand_type_valid,
    "operand_rank": o.operand_rank,
    "operand_dims": o.operand_dims,
    "operand_scale": o.operand_scale,
    "operand_zero_point": o.operand_zero_point,
    "operand_lifetime": o.operand_lifetime,
    "operand_location": o.operand_location,
    "operand_extra_params": o.operand_extra_params,
    "operand_make_io": o.operand_make_io,
    "operand_removed": o.operand_removed,
    "operation_type_invalid": g.operation_type_invalid,
    "operation_type_valid": g.operation_type_valid,
    "operation_operand_index": g.operation_operand_index,
    "operation_io_removed": g.operation_io_removed,
    "operation_io_added": g.operation_io_added,
    "operation_removed": g.operation_removed,
    "operation_order": g.operation_order,
    "cycle": g.cycle,
    "duplicate_writer": g.duplicate_writer,
    "remove_write": g.remove_write,
    "graph_io": g.graph_io,
    "pools": g.pools,
    "subgraph_reference": g.subgraph_reference,
    "prepare_arguments": g.prepare_arguments,
}


def default_corpus() -> Path | None:
    """$CLNN_CTS_CORPUS, else ../shared/cts/public from a source checkout (corpus_path.py);
    None if absent."""
    from clnn.suites.corpus_path import find_corpus

    return find_corpus()


def _small(test: dict, max_ops: int, max_elements: int) -> bool:
    sgs = [test["main"], *test.get("referenced", [])]
    if sum(len(s["operations"]) for s in sgs) > max_ops:
        return False
    n = sum(len(op["data"] or []) for s in sgs for op in s["operands"])
    return n <= max_elements


@lru_cache(maxsize=4)
def eligible_tests(corpus: str, max_ops: int = 4, max_elements: int = 4096):
    """(spec, test) of every corpus test a mutation may start from: a valid model (no
    expected failure), deterministic (no RANDOM_MULTINOMIAL), with at most ``max_ops``
    operations and ``max_elements`` values, sorted by name (a seed picks the same test on
    every machine)."""
    out = []
    for spec, _, t in iter_corpus(corpus):
        if t.get("expectFailure") or t.get("multinomialTolerance", 0) > 0:
            continue
        if _small(t, max_ops, max_elements):
            out.append((spec, t))
    out.sort(key=lambda st: (st[0], st[1]["name"]))
    return tuple(out)


def sample_tests(corpus, count: int, seed: int, **limits) -> list[tuple[str, dict]]:
    """``count`` eligible tests, one spec at most once while specs last (a spread over the
    operations rather than many variants of one)."""
    tests = eligible_tests(str(corpus), **limits)
    by_spec: dict[str, list] = {}
    for spec, t in tests:
        by_spec.setdefault(spec, []).append((spec, t))
    rng = random.Random(seed)
    specs = sorted(by_spec)
    rng.shuffle(specs)
    picked = [rng.choice(by_spec[s]) for s in specs[:count]]
    while len(picked) < count and len(picked) < len(tests):
        picked.append(rng.choice(tests))
    return picked


def mutate(model, kind: str, rng: random.Random) -> Mutant | None:
    """A ``kind`` mutant of (a deep copy of) ``model``; None when the kind does not apply."""
    mu = Mutant(kind, copy.deepcopy(model))
    try:
        detail = KINDS[kind](mu, rng)
    except (IndexError, ValueError):  # the model has nothing this kind can change
        return None
    if detail is None:
        return None
    mu.detail = detail
    return mu


def mutant_for_seed(tests, seed: int, kinds=None, tries: int = 8):
    """(spec, test, mutant) for case ``seed``: a test of ``tests`` and a kind of ``kinds``
    (default every kind), chosen by the seed; kinds that do not apply are re-drawn."""
    rng = random.Random(seed)
    kinds = list(kinds or KINDS)
    spec, test = tests[rng.randrange(len(tests))]
    model = build_model(test)
    for _ in range(tries):
        mu = mutate(model, rng.choice(kinds), rng)
        if mu is not None:
            return spec, test, mu
    return spec, test, None
