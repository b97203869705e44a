"""Tests of the model-zoo harness (bench/zoo.py, bench/zoo_plot.py) on the CPU, in seconds: the
smoke run end to end, that crashes, hangs and failed stages become records, the call-splitting
options (--skip-done, --shard, --time-budget), and the summary's arithmetic.

    PYTHONPATH=python:build/python GRAFT_LIB_DIR=build/python/graft /usr/bin/python3 -m pytest -q bench/test_zoo.py

Without graft's bindings the smoke rows fail at graft_build (and say so); with them they measure.
"""
import json
import math
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import zoo_plot  # noqa: E402

REQUIRED = ("model", "batch", "profile", "graft_ms", "eager_ms", "compile_ms", "graft_rel_err", "torch_fp16_rel_err",
            "commit", "date", "gpu", "torch", "status", "stage", "reason")


# The workers import graft the way this process does: the source tree's python/ first.
_PYTHONPATH = os.pathsep.join(p for p in [os.path.join(os.path.dirname(HERE), "python"),
                                          os.environ.get("PYTHONPATH", "")] if p)


def _graft_available():
    p = subprocess.run([sys.executable, "-c", "from graft import _native; _native.engine_module()"],
                       capture_output=True, env={**os.environ, "PYTHONPATH": _PYTHONPATH}, timeout=120)
    return p.returncode == 0


def _zoo(tmp_path, *extra, env=None, timeout=240):
    out = tmp_path / "out"
    cmd = [sys.executable, os.path.join(HERE, "zoo.py"), "--smoke", "--out", str(out),
           "--cache", str(tmp_path / "cache"), "--work-dir", str(tmp_path / "work"), "--commit", "test", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "PYTHONPATH": _PYTHONPATH, **(env or {})})
    recs = json.loads((out / "zoo.json").read_text()) if (out / "zoo.json").exists() else None
    return p, recs


def _by(recs):
    return {(r["model"], r["batch"]): r for r in recs}


def _smoke_names():
    import zoo
    return zoo.zoo_names(smoke=True)[0]


def test_smoke_end_to_end(tmp_path):
    names = _smoke_names()
    p, recs = _zoo(tmp_path, "--models", names[0], names[-1])
    assert recs is not None, p.stdout + p.stderr
    assert p.returncode in (0, 3), p.stdout + p.stderr
    by = _by(recs)
    assert set(by) == {(m, b) for m in (names[0], names[-1]) for b in (1, 4)}
    for r in recs:
        for k in REQUIRED:
            assert k in r, k
        assert r["profile"] == "dynamic" and r["commit"] == "test"
        assert r["export_status"] == "ok" and r["eager_status"] == "ok"
        assert r["compile_status"] == "skipped"
        assert 0 < r["torch_fp16_rel_err"] < 0.05
        # ONNX Runtime's CPU reference: at the smallest batch when onnxruntime is importable, where
        # the FP32 export must match PyTorch FP32 closely; otherwise a skipped stage that says why.
        try:
            import onnxruntime  # noqa: F401
            has_ort = True
        except Exception:  # noqa: BLE001
            has_ort = False
        if has_ort and r["batch"] == 1:
            assert r["ort_status"] == "ok", r
            assert r["ort_rel_err"] < 1e-4, r
            if _graft_available():
                assert r["graft_vs_ort_rel_err"] is not None and r["graft_vs_ort_rel_err"] < 0.05, r
        else:
            assert r["ort_status"] == "skipped" and r["ort_reason"], r
            assert r["ort_rel_err"] is None
        if _graft_available():
            assert r["graft_build_status"] == "ok", r
            assert r["graft_ms"] > 0 and r["graft_rel_err"] is not None
            assert r["status"] in ("ok", "partial", "mismatch")
        else:
            assert r["status"] == "failed" and r["stage"] == "graft_build" and r["reason"]
            assert r["graft_run_status"] == "not run"
    assert (tmp_path / "out" / "zoo.md").exists()
    assert "zoo: 2 models" in p.stdout
    # the export is cached: a second run reuses it
    p2, recs2 = _zoo(tmp_path, "--models", names[0])
    assert all(r["export_cached"] for r in recs2 if r["model"] == names[0]), p2.stderr
    assert len(recs2) == 4  # the rerun replaced its model's records, the other model's stay


def test_fixed_shape_engines(tmp_path):
    """--fixed-shape also times a fixed-shape engine per batch, in turns with the dynamic one."""
    if not _graft_available():
        pytest.skip("graft's bindings are not importable here")
    names = _smoke_names()
    p, recs = _zoo(tmp_path, "--models", names[0], "--fixed-shape")
    assert recs, p.stdout + p.stderr
    for r in recs:
        assert r["graft_fixed_ms"] > 0 and "graft_fixed_error" not in r, r
        rounds_fixed, rounds_dyn = r["graft_fixed_rounds_ms"], r["graft_dynamic_rounds_ms"]
        assert len(rounds_fixed) == len(rounds_dyn) == 4 and min(rounds_fixed + rounds_dyn) > 0, r
        assert r["graft_fixed_ms"] == pytest.approx(sorted(rounds_fixed)[1] / 2 + sorted(rounds_fixed)[2] / 2)
        assert r["dynamic_over_fixed"] == pytest.approx(
            (sorted(rounds_dyn)[1] + sorted(rounds_dyn)[2]) / (sorted(rounds_fixed)[1] + sorted(rounds_fixed)[2]))


def test_crash_and_hang_become_records(tmp_path):
    name = _smoke_names()[0]
    p, recs = _zoo(tmp_path, "--models", name, env={"GRAFT_ZOO_TEST_CRASH": "eager"})
    assert p.returncode == 3, p.stderr
    for r in recs:
        assert r["eager_status"] == "error" and "died" in r["eager_reason"], r
        assert r["reference_status"] == "ok" and r["graft_build_status"] == "not run"
        assert r["status"] == "failed" and r["stage"] == "graft_build"
    p, recs = _zoo(tmp_path, "--models", name, "--model-timeout", "8", "--fresh",
                   env={"GRAFT_ZOO_TEST_HANG": "graft_build"})
    assert p.returncode == 3
    for r in recs:
        assert r["graft_build_status"] == "timeout" and "--model-timeout" in r["graft_build_reason"], r
        assert r["eager_status"] == "ok" and r["eager_ms"] > 0  # what finished before the hang is kept
        assert r["compile_status"] == "not run" and not r.get("retry")
        assert r["status"] == "failed" and r["stage"] == "graft_build"


def test_skip_done_shard_and_budget(tmp_path):
    names = _smoke_names()
    p, recs = _zoo(tmp_path, "--models", names[0])
    assert recs and {r["model"] for r in recs} == {names[0]}
    p, recs = _zoo(tmp_path, "--skip-done", "--shard", "0/2")  # shard 0/2: names[0] and names[2]
    assert {r["model"] for r in recs} == {names[0], names[2]}, p.stderr
    assert "1 models to run (1 already have records of this commit)" in p.stderr
    # a budget too small for one model starts nothing and says which models are left
    p, recs = _zoo(tmp_path, "--skip-done", "--time-budget", "1", "--min-model-s", "30")
    assert "not started: " + names[1] in p.stderr and names[1] not in {r["model"] for r in recs}
    p = subprocess.run([sys.executable, os.path.join(HERE, "zoo.py"), "--smoke", "--list", "--shard", "1/2",
                        "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and names[1] in p.stdout and names[0] not in p.stdout


def _rec(model, batch, g, e, c, ge, te, **kw):
    r = {"model": model, "batch": batch, "graft_ms": g, "eager_ms": e, "compile_ms": c, "graft_rel_err": ge,
         "torch_fp16_rel_err": te, "commit": "x", "date": "2026-01-01T00:00:00Z"}
    for s in ("model", "export", "reference", "eager", "graft_build", "graft_run", "compile"):
        r[f"{s}_status"] = "ok"
    r.update(kw)
    return r


def test_summary_arithmetic(tmp_path):
    recs = [_rec("a", 1, 1.0, 4.0, 2.0, 1e-3, 1e-3), _rec("a", 32, 2.0, 8.0, 2.0, 1e-3, 1e-3),
            _rec("b", 1, 1.0, 4.0, 0.5, 3e-3, 1e-3), _rec("b", 32, 1.0, 4.0, 8.0, 1e-3, 1e-3),
            _rec("c", 1, None, 1.0, 1.0, None, 1e-3, graft_build_status="error", graft_build_reason="boom"),
            _rec("c", 32, None, 1.0, 1.0, None, 1e-3, graft_build_status="error", graft_build_reason="boom")]
    text, fin, facts = zoo_plot.summarize(recs)
    by = _by(fin)
    assert by[("a", 1)]["status"] == "ok" and by[("a", 1)]["speedup_vs_compile"] == 2.0
    assert by[("b", 1)]["status"] == "mismatch" and "3.00e-03" in by[("b", 1)]["reason"]
    assert by[("c", 1)]["status"] == "failed" and by[("c", 1)]["stage"] == "graft_build"
    assert facts["geomean"][1] == pytest.approx(math.sqrt(2.0 * 0.5))
    assert facts["geomean"][32] == pytest.approx(math.sqrt(1.0 * 8.0))
    assert facts["slower"][1] == ["b"] and facts["slower"][32] == []
    assert facts["graft_measured"] == 2 and facts["models"] == 3
    assert "MISSED" in text and "c b1,32: failed at graft_build" in text
    assert "fixed-shape" not in text  # no call measured fixed-shape engines
    text, _, _ = zoo_plot.summarize([_rec("a", 1, 1.0, 4.0, 2.0, 1e-3, 1e-3, dynamic_over_fixed=1.02),
                                     _rec("a", 32, 2.2, 8.0, 2.0, 1e-3, 1e-3, dynamic_over_fixed=1.10)])
    assert "dynamic engine within 5% of a fixed-shape one: MISSED (2 rows, 1 over: a b32 1.10x)" in text
    # a missing peer makes a partial row; NaN errors survive the JSON round trip as strings
    r = zoo_plot.finalize(_rec("d", 1, 1.0, 1.0, None, float("nan"), 1e-3, compile_status="timeout",
                               compile_reason="budget"))
    assert r["status"] == "mismatch"
    r = zoo_plot.finalize(_rec("d", 1, 1.0, 1.0, None, 1e-3, 1e-3, compile_status="timeout", compile_reason="budget"))
    assert r["status"] == "partial" and r["stage"] == "compile"
    # PyTorch eager's FP16 output not finite: torch.compile's FP16 error is the baseline, and a graft error
    # over twice it is still a mismatch; with no finite baseline a finite graft error passes
    r = zoo_plot.finalize(_rec("e", 1, 1.0, 1.0, 1.0, 1.5e-3, float("nan"), compile_rel_err=1e-3))
    assert r["status"] == "ok" and r["err_baseline"] == "compile" and r["err_ratio"] == pytest.approx(1.5)
    r = zoo_plot.finalize(_rec("e", 1, 1.0, 1.0, 1.0, 3e-3, float("nan"), compile_rel_err=1e-3))
    assert r["status"] == "mismatch" and "torch_compile_fp16_rel_err" in r["reason"]
    r = zoo_plot.finalize(_rec("e", 1, 1.0, 1.0, 1.0, 3e-3, float("nan"), compile_rel_err=None))
    assert r["status"] == "ok" and r["err_baseline"] == "none finite"
    r = zoo_plot.finalize(_rec("e", 1, 1.0, 1.0, 1.0, float("nan"), float("nan"), compile_rel_err=1e-3))
    assert r["status"] == "mismatch"
    assert json.loads(json.dumps(zoo_plot.json_safe({"v": float("nan")}))) == {"v": "nan"}
    # merging: the later file's record of the same (model, batch) wins
    f1, f2 = tmp_path / "a.json", tmp_path / "b.json"
    f1.write_text(json.dumps(recs))
    f2.write_text(json.dumps([_rec("a", 1, 0.5, 4.0, 2.0, 1e-3, 1e-3)]))
    assert zoo_plot.main([str(f1), str(f2), "--out", str(tmp_path / "m")]) == 0
    merged = json.loads((tmp_path / "m" / "zoo.json").read_text())
    assert len(merged) == 6 and _by(merged)[("a", 1)]["graft_ms"] == 0.5


def test_conv_tactics_by_batch():
    """Which GraftConv variant each batch's tactics chose, read from the engine's JSON description."""
    import zoo  # imports no torch at module level

    class FakeEngine:
        def describe_json(self):
            return {"layers": [
                {"op_type": "GraftConv", "tactics": [
                    {"key": "conv2d;sm90;cudnn91900;float16;nhwc;x1x8x224x224;w64x7x7;g1", "algo": 0, "variant": 9},
                    {"key": "conv2d;sm90;cudnn91900;float16;nhwc;x8x8x224x224;w64x7x7;g1", "algo": 1, "variant": 1},
                    {"key": "conv2d;sm90;cudnn91900;float16;nhwc;x32x8x224x224;w64x7x7;g1", "algo": 1, "variant": 0},
                    {"key": "conv2d;sm90;cudnn91900;float16;nhwc;x32x8x224x224;w64x7x7;g1;bias"}]},  # not in the table
                {"op_type": "Relu"},
                {"op_type": "GraftConv", "tactics": [
                    {"key": "conv2d;sm90;cudnn91900;float16;nhwc;x32x64x56x56;w64x3x3;g1", "algo": 0, "variant": 7}]},
            ]}

    got = zoo.conv_tactics_by_batch(FakeEngine(), (1, 32))
    assert got == {1: ({"9": 1}, 9), 32: ({"0": 1, "7": 1}, 0)}
    assert zoo.conv_tactics_by_batch(object(), (1, 32)) == {}


def test_a_wrapped_compile_budget_is_a_timeout():
    """torch.compile hands the budget's interrupt back wrapped (InductorError, BackendCompilerFailed):
    the record must say timeout, not error."""
    import zoo

    class Wrapper(Exception):
        def __init__(self, inner):
            super().__init__(f"{type(inner).__name__}: {inner}")
            self.inner_exception = inner

    assert zoo._is_budget(zoo._Budget())
    assert zoo._is_budget(Wrapper(zoo._Budget()))
    try:
        try:
            raise zoo._Budget()
        except zoo._Budget as inner:
            raise RuntimeError("inductor failed") from inner
    except RuntimeError as chained:
        assert zoo._is_budget(chained)
    assert not zoo._is_budget(RuntimeError("a real compiler error"))
    assert not zoo._is_budget(Wrapper(ValueError("bad")))
