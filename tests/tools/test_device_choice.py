"""One way to pick a device: --device / open_device specs, CLNN_DEVICE > PYOPENCL_CTX >
default, errors that name the spec and list what exists, type strings decoded from the
cl_device_type bits, and the README's table of environment variables.

Most tests run on fake OpenCL devices (clnn.device.list_cl_devices replaced), so every form is
checked against a machine with several platforms, GPUs and a simulator whatever this one has.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("pyopencl")

import clnn.device  # noqa: E402 - after the skip: the module imports pyopencl's users
from clnn import devices  # noqa: E402
from clnn.cli import devices as cli_devices  # noqa: E402
from clnn.cli.main import build_parser, main  # noqa: E402
from clnn.device import DeviceUnavailable, device_type_name, select_device  # noqa: E402
from clnn.options import DEVICE_VARIABLES  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CPU, GPU, ACCELERATOR, DEFAULT = 2, 4, 8, 1


def _platform(name, vendor="", version="OpenCL 3.0"):
    return SimpleNamespace(name=name, vendor=vendor, version=version)


def _device(name, type_bits):
    return SimpleNamespace(name=name, type=type_bits, version="OpenCL 3.0", driver_version="1",
                           max_compute_units=2, global_mem_size=1 << 30,
                           max_work_group_size=256, extensions="cl_khr_fp64")


POCL = _platform("Portable Computing Language", "The pocl project", "OpenCL 3.0 PoCL 6.0")
FAKE = _platform("Fake GPU Platform", "Fakes Inc", "OpenCL 1.2 fake")
OCLGRIND = _platform("Oclgrind", "University of Bristol", "OpenCL 1.2 (Oclgrind 21.10)")
CPU_DEV = _device("pthread-skylake", CPU | DEFAULT)  # PoCL: pyopencl prints it "ALL | CPU"
GPU_A, GPU_B = _device("fakegpu alpha", GPU), _device("fakegpu beta", GPU)
SIM = _device("Oclgrind Simulator", DEFAULT | CPU | GPU | ACCELERATOR)
FOUND = [(0, 0, POCL, CPU_DEV), (1, 0, FAKE, GPU_A), (1, 1, FAKE, GPU_B), (2, 0, OCLGRIND, SIM)]


@pytest.fixture
def fake(monkeypatch):
    """Three fake platforms; no device variable set (each test sets the ones it checks)."""
    monkeypatch.setattr(clnn.device, "list_cl_devices", lambda: list(FOUND))
    for var in DEVICE_VARIABLES:
        monkeypatch.delenv(var, raising=False)


# ------------------------------------------------------------------------- spec forms

@pytest.mark.parametrize("spec, expected", [
    (None, GPU_A),                # default: the first GPU, before CPUs and simulators
    ("opencl", GPU_A),
    ("0", CPU_DEV),               # pyopencl's PYOPENCL_CTX=0: platform 0, its first device
    ("1", GPU_A),
    ("1:1", GPU_B),
    ("opencl:1:1", GPU_B),
    ("OpenCL:0:0", CPU_DEV),
    ("fake:1", GPU_B),            # platform name substring : device index
    ("fake:beta", GPU_B),         # platform substring : device name substring
    ("1:alpha", GPU_A),
    ("beta", GPU_B),              # a device name substring
    ("oclgrind", SIM),            # a simulator only when named
    ("pocl", CPU_DEV),            # no device name holds it: the platform's first device
    ("bristol:0", SIM),           # platform vendor substring
])
def test_every_spec_form_picks_its_device(fake, spec, expected):
    assert select_device(spec)[1] is expected


@pytest.mark.parametrize("spec", ["3", "1:5", "0:1", "nvidia", "opencl:", "opencl:nvidia",
                                  ":0", "0:", "9:alpha"])
def test_a_device_that_does_not_exist_names_the_spec_and_lists_the_devices(fake, spec):
    with pytest.raises(DeviceUnavailable) as e:
        select_device(spec)
    text = str(e.value)
    assert repr(spec) in text
    for name in ("0:0 pthread-skylake", "1:0 fakegpu alpha", "1:1 fakegpu beta",
                 "2:0 Oclgrind Simulator"):
        assert name in text


def test_a_platform_index_is_never_a_substring_of_the_version(fake):
    # "0" is in "OpenCL 3.0" of every platform: as an index it is platform 0 alone
    with pytest.raises(DeviceUnavailable):
        select_device("0:1")
    assert select_device("2:0")[1] is SIM


@pytest.mark.parametrize("spec, kind, cl_spec", [
    ("reference", "reference", None), ("Reference", "reference", None),
    ("opencl", "opencl", None), (" opencl ", "opencl", None),
    ("opencl:0:1", "opencl", "opencl:0:1"), ("0:1", "opencl", "0:1"),
    ("pocl", "opencl", "pocl"), ("7", "opencl", "7"),
])
def test_parse_device_spec(spec, kind, cl_spec):
    assert devices.parse_device_spec(spec) == (kind, cl_spec)


@pytest.mark.parametrize("spec", ["", "  ", "opencl:", "OPENCL:"])
def test_a_spec_naming_nothing_is_a_value_error(spec):
    with pytest.raises(ValueError, match="names no device"):
        devices.parse_device_spec(spec)


def test_open_device_parses_the_same_strings(fake, monkeypatch):
    made = []
    monkeypatch.setattr(clnn.device, "ClDevice",
                        lambda spec, **options: made.append((spec, options)) or "cl")
    assert type(devices.open_device("reference")).__name__ == "ReferenceDevice"
    assert devices.open_device("opencl:1:1", fallback=False) == "cl"
    assert devices.open_device("opencl", profiling=True) == "cl"
    # without options=, the DeviceOptions of the environment (the entry point's)
    from clnn.options import from_environ

    assert [kw.pop("options") for _, kw in made] == [from_environ()] * 2
    assert made == [("opencl:1:1", {"profiling": False, "fallback": False}),
                    (None, {"profiling": True})]
    with pytest.raises(ValueError, match="names no device"):
        devices.open_device("opencl:")


def test_open_device_on_a_real_device_by_index(cl_device):
    p_i, d_i = next((p_i, d_i) for p_i, d_i, p, d in clnn.device.list_cl_devices()
                    if d == cl_device.cl_device)
    opened = devices.open_device(f"opencl:{p_i}:{d_i}", fallback=False)
    assert opened.cl_device == cl_device.cl_device


# -------------------------------------------------------------------- the environment

def test_pyopencl_ctx_picks_the_device_when_nothing_else_does(fake, monkeypatch):
    monkeypatch.setenv("PYOPENCL_CTX", "1:1")
    assert select_device(*devices.environ_spec(None))[1] is GPU_B
    monkeypatch.setenv("PYOPENCL_CTX", "0")
    assert select_device(*devices.environ_spec("opencl"))[1] is CPU_DEV


def test_precedence_device_then_clnn_device_then_pyopencl_ctx_then_default(fake, monkeypatch):
    assert select_device(*devices.environ_spec(None))[1] is GPU_A
    monkeypatch.setenv("PYOPENCL_CTX", "0:0")
    assert select_device(*devices.environ_spec(None))[1] is CPU_DEV
    monkeypatch.setenv("CLNN_DEVICE", "1:1")
    assert select_device(*devices.environ_spec(None))[1] is GPU_B
    assert select_device(*devices.environ_spec("oclgrind"))[1] is SIM


def test_the_device_module_never_reads_the_environment(fake, monkeypatch):
    """Only the entry points read $CLNN_DEVICE / $PYOPENCL_CTX (clnn.devices.environ_spec):
    select_device(None), as ClDevice(None), is the default device whatever they hold."""
    monkeypatch.setenv("CLNN_DEVICE", "1:1")
    monkeypatch.setenv("PYOPENCL_CTX", "0:0")
    assert select_device(None)[1] is GPU_A
    assert select_device("opencl")[1] is GPU_A


def test_open_device_follows_the_environment(fake, monkeypatch):
    made = []
    monkeypatch.setattr(clnn.device, "ClDevice",
                        lambda spec, **options: made.append((spec, options)) or "cl")
    monkeypatch.setenv("CLNN_DEVICE", "1:1")
    assert devices.open_device("opencl") == "cl"
    assert devices.open_device(None) == "cl"  # a device variable set: OpenCL
    assert devices.open_device("0:0") == "cl"  # a spec given wins
    assert [(spec, kw.get("device_source")) for spec, kw in made] == \
        [("1:1", "$CLNN_DEVICE"), ("1:1", "$CLNN_DEVICE"), ("0:0", None)]


def test_a_bad_variable_is_an_error_naming_it(fake, monkeypatch):
    monkeypatch.setenv("PYOPENCL_CTX", "4:2")
    with pytest.raises(DeviceUnavailable, match=r"'4:2' \(from \$PYOPENCL_CTX\)"):
        select_device(*devices.environ_spec(None))
    monkeypatch.setenv("CLNN_DEVICE", "nvidia")
    with pytest.raises(DeviceUnavailable, match=r"'nvidia' \(from \$CLNN_DEVICE\)"):
        select_device(*devices.environ_spec("opencl"))
    with pytest.raises(DeviceUnavailable, match=r"'nvidia' \(from \$CLNN_DEVICE\)"):
        clnn.device.resolve_cl_device(*devices.environ_spec(None))


def test_a_variable_makes_opencl_the_device_asked_for(fake, monkeypatch):
    assert devices.parse_device_spec(None) == ("reference", None)
    assert not cli_devices.device_requested(None)
    monkeypatch.setenv("PYOPENCL_CTX", "0")
    assert devices.parse_device_spec(None) == ("opencl", None)
    assert cli_devices.device_requested(None)


def test_device_environment_exports_the_spec_and_restores(monkeypatch):
    monkeypatch.setenv("CLNN_DEVICE", "before")
    with cli_devices.device_environment("opencl:1:1"):
        assert os.environ["CLNN_DEVICE"] == "opencl:1:1"
    assert os.environ["CLNN_DEVICE"] == "before"
    monkeypatch.delenv("CLNN_DEVICE")
    with cli_devices.device_environment("0:0"):
        assert os.environ["CLNN_DEVICE"] == "0:0"
    assert "CLNN_DEVICE" not in os.environ
    with cli_devices.device_environment("opencl"):  # names no particular device: left alone
        assert "CLNN_DEVICE" not in os.environ


# ------------------------------------------------------------------------ type strings

@pytest.mark.parametrize("platform, device, text", [
    (POCL, CPU_DEV, "CPU"),
    (FAKE, GPU_A, "GPU"),
    (POCL, _device("x", ACCELERATOR), "ACCELERATOR"),
    (POCL, _device("x", DEFAULT), "DEFAULT"),
    (POCL, _device("x", 0), "unknown (0x0)"),
    (OCLGRIND, SIM, "CPU | GPU | ACCELERATOR (simulator)"),
    (FAKE, _device("every flag", 0xFFFFFFFF), "CPU | GPU | ACCELERATOR | CUSTOM (simulator)"),
])
def test_type_strings_decode_the_bits(platform, device, text):
    assert device_type_name(platform, device) == text


def test_clnn_devices_prints_types_and_marks_the_default(fake, capsys):
    assert cli_devices.run_devices_cli() == 0
    lines = capsys.readouterr().out.splitlines()
    row = {ln[2:].split()[0]: ln for ln in lines if re.match(r"[* ] \d+:\d+ ", ln)}
    assert "[CPU]" in row["0:0"] and "ALL" not in row["0:0"]
    assert "[GPU]" in row["1:0"] and row["1:0"].startswith("*")
    assert "[CPU | GPU | ACCELERATOR (simulator)]" in row["2:0"]
    assert sum(ln.startswith("*") for ln in lines) == 1


# ----------------------------------------------------------------------------- the CLI

RUNNERS = [["run", "m.tflite"], ["demo"], ["cts", "."], ["bench", "models"], ["bench", "gemm"],
           ["bench", "prepare"], ["support", "m.tflite"], ["capabilities"], ["fuzz", "models"],
           ["fuzz", "graphs"]]


@pytest.mark.parametrize("argv", RUNNERS, ids=" ".join)
def test_every_command_that_runs_something_takes_a_device_spec(argv, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.tflite").write_bytes(b"")
    args = build_parser().parse_args([*argv, "--device", "opencl:0:1"])
    assert args.device == "opencl:0:1"


def test_every_device_option_says_what_it_takes():
    sub = build_parser()._subparsers._group_actions[0].choices
    for name, parser in sub.items():
        for action in parser._actions:
            if "--device" in action.option_strings:
                assert "opencl:PLATFORM:DEVICE" in action.help, name


def test_support_cl_device_is_a_hidden_alias(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    parser = build_parser()
    assert parser.parse_args(["support", "m", "--cl-device", "0:0"]).device == "0:0"
    support = parser._subparsers._group_actions[0].choices["support"]
    assert "--cl-device" not in support.format_help() and "--device" in support.format_help()


@pytest.mark.parametrize("argv", [["capabilities", "--device", "nvidia"],
                                  ["bench", "gemm", "--device", "1:7"],
                                  ["support", "x.tflite", "--cl-device", "nvidia"]])
def test_a_missing_device_fails_naming_it_and_what_exists(fake, argv, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert repr(argv[-1]) in err and "1:1 fakegpu beta" in err


@pytest.mark.parametrize("argv", [["capabilities", "--device", "reference"],
                                  ["fuzz", "graphs", "--device", "reference"],
                                  ["run", "--device", "opencl:", "x.tflite"]])
def test_a_device_that_cannot_serve_is_a_usage_error(argv, capsys):
    assert main(argv) == 2
    assert "--device" in capsys.readouterr().err


# ------------------------------------------------------------- environment variables

_NAME = r"[A-Z][A-Z0-9_]{2,}"
_PY_READS = [re.compile(p) for p in (
    rf"os\.environ(?:\.get|\.pop|\.setdefault)?\(\s*[\"']({_NAME})[\"']",
    rf"os\.environ\[\s*[\"']({_NAME})[\"']",
    rf"getenv\(\s*[\"']({_NAME})[\"']",
    rf"(?:setenv|delenv)\(\s*[\"']({_NAME})[\"']",
    # names kept in tuples or env dicts ("CLNN_DEVICE": ...), in the families clnn uses
    r"[\"']((?:CLNN|POCL|PYOPENCL|OPENBLAS|XDG|OCL_ICD)_[A-Z0-9_]+)[\"']",
    rf"\$({_NAME})\b",  # docstrings write a variable with a dollar sign before it
)]


def environment_variables() -> dict[str, set[str]]:
    """{variable: files} for every environment variable clnn/, hal/, tests/, scripts/ and the
    Makefile read, or set for the processes they start."""
    found: dict[str, set[str]] = {}

    def add(names, path):
        for n in names:
            found.setdefault(n, set()).add(str(path.relative_to(REPO)))

    for path in sorted(p for d in ("clnn", "hal", "tests") for p in (REPO / d).rglob("*.py")):
        text = path.read_text()
        add({m for rx in _PY_READS for m in rx.findall(text)}, path)
        for body in re.findall(r"dict\(os\.environ,(.{0,200})", text, re.S):
            add(re.findall(rf"\b({_NAME})=", body), path)
    for path in sorted((REPO / "scripts").glob("*.sh")):
        text = path.read_text()
        own = set(re.findall(rf"^\s*(?:local\s+)?({_NAME})=", text, re.M))
        add(set(re.findall(rf"\$\{{?({_NAME})", text)) - own, path)
    makefile = REPO / "Makefile"
    add(re.findall(rf"^({_NAME})\s*\?=", makefile.read_text(), re.M), makefile)
    return found


def test_the_scan_finds_the_variables_it_must():
    found = environment_variables()
    for name in ("CLNN_DEVICE", "PYOPENCL_CTX", "CLNN_CACHE_DIR", "XDG_CACHE_HOME",
                 "CLNN_DEBUG", "CLNN_DUMP_CL", "CLNN_CTS_CORPUS", "POCL_CACHE_DIR"):
        assert name in found, name


def test_every_environment_variable_is_in_the_readme_table():
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(rf"`({_NAME})`", section))
    missing = {n: sorted(f) for n, f in environment_variables().items() if n not in documented}
    assert not missing, f"not in README.md's Environment variables table: {missing}"
