"""``clnn bench gemm`` runs and reports both figures from one run (no timing assertions)."""

from __future__ import annotations

import json


def test_bench_gemm_json(cl_device, capsys, monkeypatch):
    from clnn.cli.main import main

    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.delenv("OPENBLAS_L2_SIZE", raising=False)  # (the caller's environment)
    assert main(["bench", "gemm", "--n", "96", "--reps", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 96
    for side in ("clnn", "numpy"):
        r = out[side]
        assert r["repetitions"] == 3 and r["gflops_min"] <= r["gflops_median"] <= \
            r["gflops_max"]
    assert out["clnn"]["relative_error"] < 1e-5
    assert out["numpy"]["env_removed"] == ["OPENBLAS_CORETYPE"]
    assert out["numpy"]["blas"]["source"]
    assert out["ratio_clnn_over_numpy"] > 0
