"""--plot (clnn/bench/plots.py) and --trace (clnn/bench/trace.py), from real runs of small
models: the PNG opens at the size the figure asks for, the HTML page holds the image and the
operation names, the trace parses with one event per kernel launch."""

import json
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from clnn.bench import plots
from clnn.bench.trace import trace_events
from clnn.cli.main import main
from clnn.cli.run import ClnnRunner
from clnn.models.mediapipe import fetch
from clnn.tflite import load
from hal.builder import ModelBuilder
from tests.kits.devices import open_or_skip
from tests.kits.png import png_size
from tests.kits.tflite_writer import Graph

pytest.importorskip("matplotlib", reason="the plot extra (pip install 'clnn[plot]')")

RNG = np.random.default_rng(13)
OPS = ["CONV_2D", "ADD", "LOGISTIC"]
PX_W = int(plots.WIDTH * plots.DPI)
PX_PANEL = int(plots.PANEL_HEIGHT * plots.DPI)


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    """CONV_2D 3x3 -> ADD of a constant -> LOGISTIC, as a .tflite file."""
    g = Graph()
    x = g.tensor([1, 8, 8, 3], name="x")
    w = g.tensor([4, 3, 3, 3], data=RNG.standard_normal((4, 3, 3, 3)).astype(np.float32))
    b = g.tensor([4], data=RNG.standard_normal(4).astype(np.float32))
    y1 = g.tensor([1, 8, 8, 4])
    g.op("CONV_2D", [x, w, b], [y1], "Conv2DOptions", Padding=0, StrideW=1, StrideH=1,
         DilationWFactor=1, DilationHFactor=1)
    c = g.tensor([1, 8, 8, 4], data=RNG.standard_normal((1, 8, 8, 4)).astype(np.float32))
    y2 = g.tensor([1, 8, 8, 4])
    g.op("ADD", [y1, c], [y2], "AddOptions")
    y = g.tensor([1, 8, 8, 4], name="y")
    g.op("LOGISTIC", [y2], [y])
    path = tmp_path_factory.mktemp("plots") / "small.tflite"
    path.write_bytes(g.write([x], [y]))
    return str(path)


@pytest.fixture(scope="module")
def cl_profiling():
    return open_or_skip("opencl", profiling=True, fallback=False)


def test_run_plot_png_has_latency_and_kernel_panels(small_model, cl_profiling, tmp_path):
    out = tmp_path / "run.png"
    assert main(["run", small_model, "--device", "opencl", "--iterations", "6",
                 "--plot", str(out)]) == 0
    assert png_size(out) == (PX_W, 2 * PX_PANEL)  # histogram + kernel time per operation


def test_run_plot_html_embeds_the_figure_and_names_the_operations(small_model, cl_profiling,
                                                                  tmp_path):
    out = tmp_path / "run.html"
    assert main(["run", small_model, "--device", "opencl", "--iterations", "4",
                 "--plot", str(out)]) == 0
    page = out.read_text()
    assert "<svg" in page and "data:image/png;base64," in page
    assert "src=\"http" not in page and "<script" not in page  # self-contained
    for name in OPS:
        assert name in page
    assert "small.tflite" in page


def test_run_plot_on_the_reference_device_is_the_histogram(small_model, tmp_path):
    out = tmp_path / "ref.png"
    assert main(["run", small_model, "--iterations", "5", "--plot", str(out)]) == 0
    assert png_size(out) == (PX_W, PX_PANEL)


def _per_op_rows(cl_device, reference):
    """Per operation of a small HAL graph, the error of the OpenCL device against the
    reference: every operation's output is a model output, so both devices report it."""
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", [1, 6, 6, 3])
    w = b.constant(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32))
    bias = b.constant(RNG.standard_normal(4).astype(np.float32))
    conv = b.op("CONV_2D", [x, w, bias, b.int32(1), b.int32(1), b.int32(1), b.int32(0)],
                b.tensor("TENSOR_FLOAT32", [1, 6, 6, 4]))
    act = b.op("TANH", [conv], b.tensor("TENSOR_FLOAT32", [1, 6, 6, 4]))
    soft = b.op("SOFTMAX", [act, b.float32(1.0)], b.tensor("TENSOR_FLOAT32", [1, 6, 6, 4]))
    for t in (conv, act, soft):
        b.mark_output(t)
    model = b.finish()
    inputs = [RNG.standard_normal((1, 6, 6, 3)).astype(np.float32)]
    got, _ = ClnnRunner(SimpleNamespace(model=model), cl_device).run(inputs)
    want, _ = ClnnRunner(SimpleNamespace(model=model), reference).run(inputs)
    rows = []
    for k, (op, a, e) in enumerate(zip(model.main.operations, got, want)):
        err = float(np.max(np.abs(a - e)))
        scale = float(np.max(np.abs(e)))
        rows.append({"index": k, "operation": op.type.name, "max_abs": err,
                     "max_rel": err / scale, "within": err <= 1e-6 * scale})
    first = next((r["index"] for r in rows if not r["within"]), None)
    return {"rows": rows, "first_divergent": first}


def test_per_op_error_panel(cl_device, reference, tmp_path):
    per_op = _per_op_rows(cl_device, reference)
    names = [r["operation"] for r in per_op["rows"]]
    assert names == ["CONV_2D", "TANH", "SOFTMAX"]
    out = tmp_path / "per_op.html"
    plots.run_figure(str(out), "graph", "opencl", [1e-3, 2e-3, 1.5e-3], None, per_op)
    page = out.read_text()
    k = per_op["first_divergent"]  # the highlight names it, where this device diverges
    assert ("first divergent:" in page) == (k is not None)
    if k is not None:
        assert f"first divergent: {k} {names[k]}" in page
    for name in names:
        assert name in page
    png = tmp_path / "per_op.png"
    plots.run_figure(str(png), "graph", "opencl", [1e-3, 2e-3], None, per_op)
    assert png_size(png) == (PX_W, 2 * PX_PANEL)


def test_bench_models_plot(cl_device, tmp_path):
    name = "face_detection_short_range.tflite"
    fetch([name])
    out = tmp_path / "bench.png"
    assert main(["bench", "models", "--models", name, "--iterations", "2",
                 "--plot", str(out)]) == 0
    assert png_size(out) == (PX_W, PX_PANEL)
    html = tmp_path / "bench.html"
    assert main(["bench", "models", "--models", name, "--iterations", "2", "--json",
                 "--plot", str(html)]) == 0
    page = html.read_text()
    assert "face_detection_short_range" in page and "litert" in page and "<svg" in page


def test_trace_has_one_event_per_kernel_launch(small_model, cl_profiling, tmp_path):
    out = tmp_path / "trace.json"
    assert main(["run", small_model, "--device", "opencl", "--iterations", "2",
                 "--trace", str(out)]) == 0
    events = json.loads(out.read_text())["traceEvents"]
    kernels = [e for e in events if e["ph"] == "X" and e["cat"] == "kernel"]
    imported = load(small_model)
    runner = ClnnRunner(imported, cl_profiling)
    launches = runner.prepared.pool_report()["launches"]
    assert len(kernels) == launches > 0
    types = [o.type.name for o in imported.model.main.operations]
    for e in kernels:
        assert e["dur"] >= 0 and e["ts"] >= 0
        assert e["name"].split()[0] == types[e["args"]["operation"]]
    # every operation that has a kernel of its own is named (fused ones run inside another's)
    fused = runner.prepared.fused_into
    assert {e["args"]["operation"] for e in kernels} == set(range(len(types))) - set(fused)
    assert min(e["ts"] for e in kernels) == 0


def test_trace_has_host_events_for_reference_partitions(tmp_path, monkeypatch):
    import dataclasses

    from clnn.kernels import kernel_for
    from clnn.kernels.registry import _KERNELS
    from hal.types import OperationType

    # TOPK_V2 has an OpenCL kernel: this test declines it, so that (with fallback) it runs
    # in a reference partition between two OpenCL ones
    reg = kernel_for(OperationType.TOPK_V2)
    monkeypatch.setitem(_KERNELS, OperationType.TOPK_V2, dataclasses.replace(
        reg, support=lambda ctx: "declined by this test"))
    dev = open_or_skip("opencl", profiling=True)
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", [4, 8])
    r = b.op("RELU", [x], b.tensor("TENSOR_FLOAT32", [4, 8]))
    vals = b.tensor("TENSOR_FLOAT32", [4, 2])
    idx = b.tensor("TENSOR_INT32", [4, 2])
    b.add_operation("TOPK_V2", [r, b.int32(2)], [vals, idx])
    y = b.op("RELU", [vals], b.tensor("TENSOR_FLOAT32", [4, 2]))
    b.mark_output(y)
    b.mark_output(idx)
    model = b.finish()
    pm = dev.prepare_model(model)
    trace = trace_events(pm, model, [RNG.standard_normal((4, 8)).astype(np.float32)])
    json.dumps(trace)  # serializable as it is
    host = [e for e in trace["traceEvents"] if e.get("cat") == "reference"]
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert [e["name"] for e in host] == ["TOPK_V2"]
    assert host[0]["args"]["operations"] == [1] and host[0]["dur"] >= 0
    assert sorted(e["args"]["operation"] for e in kernels) == [0, 2]
    assert "_run_partition" not in vars(pm)  # the timing wrapper is gone after the run


def test_plot_errors_are_one_line(small_model, tmp_path, capsys, monkeypatch):
    assert main(["run", small_model, "--plot", str(tmp_path / "x.pdf")]) != 0
    assert "must end in .png or .html" in capsys.readouterr().err
    assert main(["run", small_model, "--trace", str(tmp_path / "t.json")]) != 0
    assert "--trace" in capsys.readouterr().err and not (tmp_path / "t.json").exists()
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    assert main(["run", small_model, "--iterations", "1",
                 "--plot", str(tmp_path / "x.png")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    # the latency warnings of a loaded machine (clnn/bench/timing.py) may come first
    err = [line for line in err if not line.startswith("clnn run: warning:")]
    assert err == ["clnn run: plotting needs matplotlib: pip install 'clnn[plot]'"]


def test_per_op_colours_tell_compared_from_not_compared():
    """Out of tolerance is orange; a fused operation with no tensor of its own (within None) is
    grey, never drawn as a divergence."""
    plt = pytest.importorskip("matplotlib.pyplot")
    from matplotlib.colors import to_rgba

    from clnn.bench.plots import per_op_errors

    rows = [{"index": 0, "operation": "CONV_2D", "max_abs": None, "within": None},
            {"index": 1, "operation": "RELU", "max_abs": 1e-6, "within": True},
            {"index": 2, "operation": "ADD", "max_abs": 0.5, "within": False}]
    fig, ax = plt.subplots()
    per_op_errors(ax, rows, first_divergent=None)
    faces = [p.get_facecolor() for p in ax.patches]
    plt.close(fig)
    assert faces == [to_rgba("lightgray"), to_rgba("tab:blue"), to_rgba("tab:orange")]
