"""Signature coverage of a conformance corpus, and spec forms with no signature.

    python3 tools/coverage.py ../shared/cts/public [--spec SEED003] [--tests] [--json OUT]

1. For every registered signature (operation, input/output types, HAL version) count the corpus
   tests whose operations match it (the first matching signature, as validation picks it), and
   list the signatures no test exercises.
2. Read the OperationCode documentation (seed 003) and list the spec forms that have no
   signature: a tensor type an operation supports (since an API level) that no signature takes,
   a signature introduced at another HAL version than the spec says, and an input count (with
   or without the optional trailing inputs) that no signature accepts. Those are validation
   bugs: a valid model would be rejected (or a form is labelled with the wrong version).
3. With ``--tests``, also count the signatures that the unit tests in tests/ exercise (every
   model the reference device validates while pytest runs ``tests/**/test_spec_*.py``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hal.operations import registrations  # noqa: E402
from hal.types import HalVersion, OperandType, OperationType  # noqa: E402

DEFAULT_SPEC = ROOT.parent / "shared" / "seeds" / "003_ff06d50c13e9e6e5.txt"
API_TO_HAL = {27: HalVersion.V1_0, 28: HalVersion.V1_1, 29: HalVersion.V1_2,
              30: HalVersion.V1_3, 31: HalVersion.AIDL_V2}


# ------------------------------------------------------------------------- corpus coverage

def signature_of(reg, in_types, omitted, out_types):
    for k, s in enumerate(reg.signatures):
        if s.matches(in_types, omitted, out_types):
            return k
    return None


def count_operations(operations, regs, counts: Counter, unmatched: Counter, key):
    """operations: iterable of (op type name, [input (type, omitted)], [output type])."""
    for name, ins, outs in operations:
        reg = regs.get(OperationType[name])
        if reg is None or reg.custom_signature:
            continue
        k = signature_of(reg, [OperandType[t] for t, _ in ins], [o for _, o in ins],
                         [OperandType[t] for t in outs])
        if k is None:
            unmatched[(name, key)] += 1
        else:
            counts[(reg.type, k)] += 1


def corpus_operations(corpus):
    """Yield (test name, expectFailure, [(op, ins, outs)]) for every corpus test."""
    for path in sorted(Path(corpus).glob("*.json.gz")):
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
        for t in doc["tests"]:
            ops = []
            for sg in [t["main"]] + list(t.get("referenced", [])):
                opnds = sg["operands"]
                for op in sg["operations"]:
                    ins = [(opnds[i]["type"], opnds[i]["lifetime"] == "NO_VALUE")
                           for i in op["inputs"]]
                    outs = [opnds[i]["type"] for i in op["outputs"]]
                    ops.append((op["type"], ins, outs))
            yield t["name"], bool(t.get("expectFailure")), ops


def corpus_coverage(corpus, regs):
    counts, unmatched = Counter(), Counter()
    for name, expect_failure, ops in corpus_operations(corpus):
        if expect_failure:  # a rejected model does not exercise a form's computation
            continue
        count_operations(ops, regs, counts, unmatched, name)
    return counts, unmatched


def model_operations(model):
    """(op, ins, outs) of every operation of a hal.types.Model (for the unit-test hook)."""
    from hal.types import OperandLifeTime

    out = []
    for sg in [model.main] + list(model.referenced):
        for op in sg.operations:
            ins = [(OperandType(sg.operands[i].type).name,
                    sg.operands[i].lifetime == OperandLifeTime.NO_VALUE) for i in op.inputs]
            outs = [OperandType(sg.operands[i].type).name for i in op.outputs]
            out.append((OperationType(op.type).name, ins, outs))
    return out


def unit_test_coverage(regs, paths):
    """Run pytest on ``paths`` in-process, counting the signatures of every prepared model."""
    import pytest

    from hal.reference import ReferenceDevice

    counts, unmatched = Counter(), Counter()
    original = ReferenceDevice.prepare_model

    def hooked(self, model, *a, **kw):
        prepared = original(self, model, *a, **kw)  # only models that validate count
        count_operations(model_operations(model), regs, counts, unmatched, "unit")
        return prepared

    ReferenceDevice.prepare_model = hooked
    try:
        rc = pytest.main(["-q", "-p", "no:cacheprovider", *paths])
    finally:
        ReferenceDevice.prepare_model = original
    if rc != 0:
        print(f"warning: pytest exited with {rc}", file=sys.stderr)
    return counts


# ------------------------------------------------------------------------- spec forms

_SECTION = re.compile(r"^ANEURALNETWORKS_([A-Z0-9_]+) = (\d+)\s*$", re.M)
_TYPE = re.compile(r"ANEURALNETWORKS_(TENSOR_[A-Z0-9_]+)")
_SINCE = re.compile(r"since API level (\d+)", re.I)
_AVAILABLE = re.compile(r"Available since API level (\d+)")
_BULLET = re.compile(r"^\s*•\s*(\d+)(?:\s*~\s*\w+(?:-1)?)?\s*:(.*)$")


def parse_spec(text: str) -> dict[str, dict]:
    """Per operation: ``types`` {type: api level}, ``forms`` [([input counts], variadic)],
    ``level`` (the operation's API level)."""
    marks = list(_SECTION.finditer(text))
    ops = {}
    for m, nxt in zip(marks, marks[1:] + [None]):
        body = text[m.end(): nxt.start() if nxt else len(text)]
        levels = [int(x) for x in _AVAILABLE.findall(body)]
        op_level = levels[-1] if levels else 27
        lines = body.splitlines()
        types: dict[str, int] = {}
        forms = []
        i, in_types, cur_level, block_level = 0, False, op_level, op_level
        while i < len(lines):
            line = lines[i]
            s = line.strip()
            if s.startswith("Supported tensor {@link OperandCode}") or \
                    s.startswith("Supported tensor {@link OperandCode} configurations"):
                in_types, cur_level, block_level = True, op_level, op_level
            elif s.startswith("Supported tensor rank") or s.startswith("Inputs"):
                in_types = False
            if in_types:
                cur_level, block_level = _type_line(s, types, cur_level, block_level)
            if s.startswith("Inputs"):
                forms.append(_input_form(lines, i + 1))
            i += 1
        ops[m.group(1)] = {"types": types, "forms": forms, "level": op_level}
    return ops


def _type_line(s, types, cur_level, block_level):
    """One line of a "Supported tensor" list: record its types, return the levels in force.
    "Available since API level N:" opens a block; a heading such as "Quantized signed (since
    API level 30):" sets the level of its bullets; "(since API level N)" right after a type is
    that type's level; a sentence "Since API level N, ..." applies to the lines after it."""
    am = re.match(r"Available since API level (\d+):", s)
    if am:
        return int(am.group(1)), int(am.group(1))
    found = list(_TYPE.finditer(s))
    if not found:
        if s.rstrip().endswith(":"):
            sm = _SINCE.search(s)
            return (int(sm.group(1)) if sm else block_level), block_level
        return cur_level, block_level
    for tm in found:
        after = re.match(r"\}?\s*\(since API level (\d+)\)", s[tm.end():])
        lv = int(after.group(1)) if after else cur_level
        if tm.group(1) not in types or lv < types[tm.group(1)]:
            types[tm.group(1)] = lv
    tail = s[found[-1].end():]
    sm = re.search(r"(?<!\()(?<!full support )\bsince API level (\d+),", tail, re.I)
    if sm:
        cur_level = int(sm.group(1))
    return cur_level, block_level


def _input_form(lines, j):
    """(counts allowed, variadic) of one "Inputs" list: trailing inputs documented as optional
    and added at a later API level make shorter forms valid; an input that needs the next one
    ("input 12 ... must be specified as well") ends no form."""
    bullets, indent = [], None
    while j < len(lines) and not lines[j].strip().startswith(("Output", "Inputs")):
        bm = _BULLET.match(lines[j])
        ind = len(lines[j]) - len(lines[j].lstrip())
        if bm and indent is None:
            indent = ind
        if bm and ind == indent:  # deeper bullets list values, not inputs
            if bullets and int(bm.group(1)) <= bullets[-1][2]:
                break  # numbering restarts: the outputs (after an inline "Outputs:")
            bullets.append((lines[j].split(":")[0], bm.group(2), int(bm.group(1))))
        j += 1
    variadic = any("~" in head for head, _, _ in bullets)
    n = len(bullets)
    first_trailing = n
    for k in range(n - 1, -1, -1):
        text = bullets[k][1]
        if re.search(r"\boptional\b", text, re.I) and "since API level" in text:
            first_trailing = k
        else:
            break
    counts = [first_trailing]
    for k in range(first_trailing, n):
        text = bullets[k][1]
        pair = re.search(r"input (\d+) \([^)]*\) must be specified as well", text)
        if pair and int(pair.group(1)) > bullets[k][2]:
            continue
        counts.append(k + 1)
    return counts, variadic


def spec_gaps(spec: dict[str, dict], regs) -> list[str]:
    gaps = []
    for name, info in sorted(spec.items()):
        try:
            op = OperationType[name]
        except KeyError:
            continue
        reg = regs.get(op)
        if reg is None:
            gaps.append(f"{name}: not registered")
            continue
        if reg.custom_signature:
            continue
        for t, lv in sorted(info["types"].items()):
            try:
                ot = OperandType[t]
            except KeyError:
                continue
            with_t = [s for s in reg.signatures if ot in s.inputs or ot in s.outputs]
            want = API_TO_HAL.get(lv, HalVersion.V1_0)
            if not with_t:
                gaps.append(f"{name}: no signature takes {t} (spec: since API {lv})")
            elif min(s.version for s in with_t) != want:
                got = min(s.version for s in with_t).name
                gaps.append(f"{name}: {t} first allowed at {got}, spec says {want.name}")
        counts = {len(s.inputs) for s in reg.signatures}
        variadic = any(s.variadic_inputs for s in reg.signatures)
        for allowed, var in info["forms"]:
            if var or variadic:
                continue
            for n in allowed:
                if n not in counts:
                    gaps.append(f"{name}: no signature with {n} inputs (spec forms: "
                                f"{allowed} inputs)")
                    continue
                for t in info["types"]:  # every supported type in every input-count form
                    ot = OperandType.__members__.get(t)
                    if ot is not None and not any(
                            len(s.inputs) == n and (ot in s.inputs or ot in s.outputs)
                            for s in reg.signatures):
                        gaps.append(f"{name}: no {n}-input signature takes {t}")
    return gaps


# ------------------------------------------------------------------------- report

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("corpus")
    p.add_argument("--spec", default=str(DEFAULT_SPEC), help="OperationCode doc (seed 003)")
    p.add_argument("--tests", nargs="*", default=None, metavar="PATH",
                   help="also count signatures the unit tests exercise (default: "
                        "tests/**/test_spec_*.py)")
    p.add_argument("--json", default=None, help="write the figures as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="figures only, no lists")
    args = p.parse_args(argv)

    regs = registrations()
    all_sigs = [(op, k, s) for op, reg in sorted(regs.items())
                for k, s in enumerate(reg.signatures)]
    counts, unmatched = corpus_coverage(args.corpus, regs)
    unit = None
    if args.tests is not None:
        paths = args.tests or sorted(str(x) for x in (ROOT / "tests").rglob("test_spec_*.py"))
        unit = unit_test_coverage(regs, paths)

    uncovered = [(op, k, s) for op, k, s in all_sigs if counts[(op, k)] == 0]
    by_op = defaultdict(list)
    for op, k, s in uncovered:
        by_op[op].append((k, s))
    if not args.quiet:
        print("# Signatures no public corpus test exercises")
        for op, items in by_op.items():
            for k, s in items:
                mark = ""
                if unit is not None:
                    mark = f"  [unit tests: {unit[(op, k)]}]"
                print(f"{op.name}[{k}] {s.describe()}{mark}")
        if unmatched:
            print("\n# Corpus operations matching no signature (should be none)")
            for (name, test), n in sorted(unmatched.items()):
                print(f"{name} in {test}: {n}")
    spec = parse_spec(Path(args.spec).read_text()) if Path(args.spec).exists() else {}
    gaps = spec_gaps(spec, regs)
    if not args.quiet:
        print("\n# Spec forms without a signature" + ("" if spec else " (no spec file)"))
        for g in gaps:
            print(g)
    covered = len(all_sigs) - len(uncovered)
    print(f"\nsignatures: {len(all_sigs)} total, {covered} covered by the corpus, "
          f"{len(uncovered)} uncovered")
    figures = {"total": len(all_sigs), "corpus": covered, "uncovered": len(uncovered),
               "spec_gaps": gaps}
    if unit is not None:
        by_unit = sum(1 for op, k, _ in uncovered if unit[(op, k)])
        both = sum(1 for op, k, _ in all_sigs if counts[(op, k)] or unit[(op, k)])
        print(f"unit tests cover {by_unit} of the {len(uncovered)} uncovered; "
              f"{both}/{len(all_sigs)} covered by corpus or unit tests")
        figures.update(unit_of_uncovered=by_unit, covered_total=both)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
