"""The machine-readable reports of ``clnn cts``: what the JSON report records about the run
(:func:`run_metadata`) and JUnit XML for CI systems (:func:`write_junit`).

JUnit shape (the common schema CI systems read): ``<testsuites>`` with one ``<testsuite>`` per
spec (corpus file), one ``<testcase classname=SPEC name="TEST [VARIANT]" time=S>`` per
test-variant; a failed one holds ``<failure>``, a crashed one ``<error>``, an unsupported one
``<skipped>``, each with the detail as message and text.
"""

from __future__ import annotations

import datetime
import os
import re
import socket
import xml.etree.ElementTree as ET
from collections import defaultdict

# characters XML 1.0 cannot hold at all; a driver's message may carry them
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_CHILD = {"failed": "failure", "error": "error", "unsupported": "skipped"}


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("?", text)


def run_metadata(corpus, device, mode: str) -> dict:
    """Where and how a run happened: the device (name and version string), mode, fallback
    (None for a device without one: the reference), corpus path, clnn version and the date
    (UTC, ISO 8601)."""
    from clnn import __version__

    return {"clnn_version": __version__,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "corpus": os.path.abspath(corpus),
            "device": {"name": device.name, "version": device.get_version_string()},
            "mode": mode, "fallback": getattr(device, "fallback", None)}


def junit_tree(summary, run: dict | None = None) -> ET.ElementTree:
    """The JUnit XML document of a :class:`clnn.suites.cts.Summary`."""
    by_spec = defaultdict(list)
    for r in summary.results:
        by_spec[r.spec].append(r)
    root = ET.Element("testsuites", name="clnn cts")
    totals = defaultdict(int)
    for spec in sorted(by_spec):
        results = by_spec[spec]
        counts = defaultdict(int)
        for r in results:
            counts[r.status] += 1
        attrs = {"name": spec, "tests": str(len(results)), "failures": str(counts["failed"]),
                 "errors": str(counts["error"]), "skipped": str(counts["unsupported"]),
                 "time": f"{sum(r.seconds for r in results):.6f}"}
        if run:
            attrs |= {"timestamp": run["date"], "hostname": socket.gethostname()}
        suite = ET.SubElement(root, "testsuite", attrs)
        if run:
            props = ET.SubElement(suite, "properties")
            for key in ("clnn_version", "mode", "fallback", "corpus"):
                ET.SubElement(props, "property", name=key, value=str(run[key]))
            ET.SubElement(props, "property", name="device", value=run["device"]["version"])
        for r in results:
            case = ET.SubElement(suite, "testcase", classname=spec,
                                 name=f"{r.name} [{r.variant}]", time=f"{r.seconds:.6f}")
            child = _CHILD.get(r.status)
            if child:
                detail = _xml_text(r.detail or r.status)
                el = ET.SubElement(case, child, message=detail.splitlines()[0] if detail else "")
                if child != "skipped":
                    el.set("type", r.status)
                    el.text = detail
        for key in ("tests", "failures", "errors", "skipped"):
            totals[key] += int(attrs[key])
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(totals[key]))
    root.set("time", f"{summary.seconds:.6f}")
    return ET.ElementTree(root)


def write_junit(summary, path, run: dict | None = None) -> None:
    tree = junit_tree(summary, run)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
