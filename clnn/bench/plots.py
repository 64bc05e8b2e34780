"""Pictures of clnn's measurements (``--plot FILE`` of ``clnn run``, ``clnn bench models`` and
``clnn capabilities``), written as PNG or as one self-contained HTML file by the extension.

The figure functions take plain data (lists of seconds, lists of row dicts as the commands'
JSON reports hold them), not devices or runners, so they can be drawn from a saved report.
matplotlib is an optional dependency (the ``plot`` extra): it is imported on first use, with
the Agg backend so that no display is needed.
"""

from __future__ import annotations

import base64
import html
import io
import os

from clnn.cli.errors import CliError, UsageError

#: figure width in inches and resolution: a PNG is (WIDTH * DPI) pixels wide
WIDTH, DPI = 10.0, 100
PANEL_HEIGHT = 3.6
EXTENSIONS = (".png", ".html")


def pyplot():
    """matplotlib.pyplot on the Agg backend; a missing matplotlib is one clear error."""
    try:
        import matplotlib
    except ImportError:
        raise CliError("plotting needs matplotlib: pip install 'clnn[plot]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def check_plot_path(path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext not in EXTENSIONS:
        raise UsageError(f"--plot {path}: the file must end in .png or .html, not "
                         f"{ext or 'no extension'}")
    return ext


def save(fig, path: str, title: str, captions=()) -> None:
    """Write ``fig`` to ``path``: a PNG, or an HTML page with the figure as inline SVG (its
    text kept as text, so the page can be searched) and ``captions`` as paragraphs."""
    plt = pyplot()
    ext = check_plot_path(path)
    try:
        if ext == ".png":
            fig.savefig(path, format="png", dpi=DPI)
            return
        buf = io.StringIO()
        with plt.rc_context({"svg.fonttype": "none"}):
            fig.savefig(buf, format="svg")
        svg = buf.getvalue()
        svg = svg[svg.index("<svg"):]  # drop the XML prolog and DOCTYPE: inline in HTML
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=DPI)
        b64 = base64.b64encode(png.getvalue()).decode("ascii")
        paras = "\n".join(f"<p>{html.escape(c)}</p>" for c in captions)
        page = (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                f"<title>{html.escape(title)}</title></head>\n<body>\n"
                f"<h1>{html.escape(title)}</h1>\n{paras}\n{svg}\n"
                f"<details><summary>PNG</summary><img alt=\"{html.escape(title)}\" "
                f"src=\"data:image/png;base64,{b64}\"></details>\n</body></html>\n")
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror or e}") from e
    finally:
        plt.close(fig)


def _figure(panels: int):
    plt = pyplot()
    fig, axes = plt.subplots(panels, 1, figsize=(WIDTH, PANEL_HEIGHT * panels), dpi=DPI,
                             squeeze=False)
    return fig, [a[0] for a in axes]


def _op_label(row: dict) -> str:
    """A per-op report row: its operation index and type name."""
    return f"{row['index']} {row['operation']}"


# ------------------------------------------------------------------ clnn run
def latency_histogram(ax, times_s: list[float]) -> None:
    ms = [t * 1e3 for t in times_s]
    ax.hist(ms, bins=min(30, max(5, len(ms) // 2)), color="tab:blue", edgecolor="white")
    ms_sorted = sorted(ms)
    med = ms_sorted[len(ms) // 2] if len(ms) % 2 else \
        (ms_sorted[len(ms) // 2 - 1] + ms_sorted[len(ms) // 2]) / 2
    ax.axvline(med, color="tab:red", linestyle="--", label=f"median {med:.3f} ms")
    ax.set_xlabel("latency (ms)")
    ax.set_ylabel("runs")
    ax.set_title(f"latency of {len(ms)} timed runs")
    ax.legend()


def profile_bars(ax, rows: list[dict], top: int = 20) -> None:
    """Kernel time per operation (the ``profile`` rows of ``clnn run``), the ``top`` largest."""
    timed = [r for r in rows if r["operation"] is not None and r["ms"] > 0][:top]
    timed = sorted(timed, key=lambda r: r["ms"])
    labels = [f"{r['operation']} {r['type']}" for r in timed]
    ax.barh(range(len(timed)), [r["ms"] for r in timed], color="tab:green")
    ax.set_yticks(range(len(timed)), labels, fontsize=7)
    ax.set_xlabel("kernel time per run (ms)")
    ax.set_title(f"OpenCL kernel time per operation (top {len(timed)})")


def per_op_errors(ax, rows: list[dict], first_divergent=None) -> None:
    """Max |error| per operation on a log scale (the ``rows`` of
    ``clnn.suites.divergence.per_op_report``); the first divergent operation highlighted."""
    xs = list(range(len(rows)))
    # a log axis cannot show 0: exact operations sit at the smallest positive error / 10
    errs = [float(r.get("max_abs") or 0.0) for r in rows]  # None: not compared
    positive = [e for e in errs if e > 0]
    floor = min(positive) / 10 if positive else 1e-12
    ys = [e if e > 0 else floor for e in errs]
    # within None: the operation has no tensor of its own on the device (fused): not compared
    colors = [{True: "tab:blue", False: "tab:orange"}.get(r.get("within"), "lightgray")
              for r in rows]
    ax.bar(xs, ys, color=colors)
    if first_divergent is not None:
        k = next((i for i, r in enumerate(rows) if r["index"] == first_divergent), None)
        if k is not None:
            ax.bar([k], [ys[k]], color="tab:red",
                   label=f"first divergent: {_op_label(rows[k])}")
            ax.legend()
    ax.set_yscale("log")
    ax.set_xticks(xs, [_op_label(r) for r in rows], rotation=90,
                  fontsize=8 if len(rows) <= 40 else 5)
    ax.set_ylabel("max |error|")
    ax.set_title("per-operation error (orange: out of tolerance; grey: fused, not compared)")


def run_figure(path: str, model: str, device: str, times_s: list[float],
               profile_rows: list[dict] | None = None, per_op: dict | None = None) -> None:
    """``clnn run --plot``: the latency histogram, and the kernel time per operation and the
    per-operation error where the report has them."""
    panels = bool(times_s) + (profile_rows is not None) + (per_op is not None)
    fig, axes = _figure(max(panels, 1))
    captions = [f"{model} on {device}"]
    i = 0
    if times_s:  # a --per-op run is one debugging run: no latency histogram
        latency_histogram(axes[0], times_s)
        i = 1
    if profile_rows is not None:
        profile_bars(axes[i], profile_rows)
        captions.append("operations: " + ", ".join(
            f"{r['operation']} {r['type']}" for r in profile_rows if r["operation"] is not None))
        i += 1
    if per_op is not None:
        per_op_errors(axes[i], per_op["rows"], per_op.get("first_divergent"))
        captions.append("operations: " + ", ".join(
            f"{r['index']} {r['operation']}" for r in per_op["rows"]))
    fig.suptitle(f"{model} on {device}")
    fig.tight_layout()
    save(fig, path, f"clnn run {model}", captions)


# ------------------------------------------------------------ clnn bench models
def bench_figure(path: str, rows: list[dict], device: str = "", peer: str = "litert") -> None:
    """``clnn bench models --plot``: clnn and the peer's (litert, or onnxruntime with
    ``--onnx``: rows keyed ``<peer>_ms``) median latency per model, grouped bars labelled with
    the ratio clnn / peer; models that failed are left out."""
    key = f"{peer}_ms"
    ok = [r for r in rows if "clnn_ms" in r]
    if not ok:
        raise CliError(f"--plot {path}: no model was timed on both clnn and {peer}")
    fig, (ax,) = _figure(1)
    xs = range(len(ok))
    w = 0.4
    ax.bar([x - w / 2 for x in xs], [r["clnn_ms"] for r in ok], w, label=f"clnn {device}")
    ax.bar([x + w / 2 for x in xs], [r[key] for r in ok], w, label=peer)
    for x, r in zip(xs, ok):
        top = max(r["clnn_ms"], r[key])
        ax.annotate(f"{r['clnn_ms'] / r[key]:.2f}x", (x, top), ha="center",
                    va="bottom", fontsize=8)
    ax.set_xticks(list(xs), [os.path.splitext(r["model"])[0] for r in ok], rotation=30,
                  ha="right", fontsize=7)
    ax.margins(y=0.15)  # room for the ratio labels above the tallest bars
    ax.set_ylabel("median latency (ms)")
    title = "ai-edge-litert" if peer == "litert" else peer
    ax.set_title(f"clnn vs {title} per model (label: clnn / {peer})")
    ax.legend()
    fig.tight_layout()
    save(fig, path, "clnn bench models",
         [f"{r['model']}: clnn {r['clnn_ms']} ms, {peer} {r[key]} ms" for r in ok])


# ------------------------------------------------------------ clnn capabilities
def capabilities_figure(path: str, workloads: dict, device: str = "") -> None:
    """``clnn capabilities --plot``: exec_time (OpenCL time / reference time) per workload on
    a log scale; workloads that could not run (FLT_MAX) are listed in the title."""
    ok = {k: w for k, w in workloads.items() if "ratio" in w}
    if not ok:
        raise CliError(f"--plot {path}: no workload has a measured exec_time")
    fig, (ax,) = _figure(1)
    names = list(ok)
    ratios = [float(ok[k]["ratio"]) for k in names]
    ax.barh(range(len(names)), ratios,
            color=["tab:green" if r < 1 else "tab:orange" for r in ratios])
    ax.axvline(1.0, color="black", linewidth=0.8, label="reference device (1.0)")
    ax.set_xscale("log")
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.invert_yaxis()  # in the record's order, top down
    for y, r in enumerate(ratios):
        ax.annotate(f"{r:.3g}", (r, y), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=7)
    ax.set_xlabel("exec_time = OpenCL time / reference time (lower is better)")
    failed = [k for k, w in workloads.items() if "ratio" not in w]
    ax.set_title("clnn capabilities" + (f" {device}" if device else "")
                 + (f"; FLT_MAX: {', '.join(failed)}" if failed else ""), fontsize=9)
    ax.legend()
    fig.tight_layout()
    save(fig, path, "clnn capabilities",
         [f"{k}: exec_time {float(w['ratio']):.3g}" for k, w in ok.items()])


__all__ = ["bench_figure", "capabilities_figure", "check_plot_path", "latency_histogram",
           "per_op_errors", "profile_bars", "pyplot", "run_figure", "save"]
