"""``clnn --version``: the package version, then the versions of what it runs on (the HAL,
pyopencl and the OpenCL platforms, e.g. PoCL), which a bug report needs."""

from __future__ import annotations

import argparse
import sys


def version_lines() -> list[str]:
    from clnn import __version__
    from hal import __version__ as hal_version

    lines = [f"clnn {__version__}"]
    parts = [f"hal {hal_version}"]
    try:
        import pyopencl as cl

        parts.append(f"pyopencl {cl.VERSION_TEXT}")
        platforms = [f"{p.name.strip()} ({p.version.strip()})" for p in cl.get_platforms()]
        parts.append("OpenCL " + (", ".join(platforms) if platforms else "none found"))
    except Exception as e:  # no pyopencl or no ICD loader: the version still prints
        parts.append(f"OpenCL unavailable ({type(e).__name__})")
    lines.append("; ".join(parts))
    return lines


class VersionAction(argparse.Action):
    """Like argparse's ``version`` action, but the text is built only when asked for (it
    imports pyopencl and lists the platforms, which every other command need not pay for)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="print clnn's version and the HAL, pyopencl and OpenCL platform versions"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print("\n".join(version_lines()), file=sys.stdout)
        parser.exit(0)
