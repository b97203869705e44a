"""The Q/DQ benchmark (bench/int8_qdq.py) on the CPU, in seconds: a tiny net quantized with
PyTorch's fake quantizers, exported with Q/DQ pairs, built by graft's CPU engine with a dynamic
batch and compared with PyTorch's quantized model.

    PYTHONPATH=python:build/python GRAFT_LIB_DIR=build/python/graft /usr/bin/python3 -m pytest -q bench/test_int8_qdq.py
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def test_smoke_matches_pytorchs_quantized_model(tmp_path):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, os.path.join(HERE, "int8_qdq.py"), "--smoke", "--out", str(out),
                        "--work-dir", str(tmp_path / "work"), "--commit", "test"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    records = json.loads((out / "int8_qdq.json").read_text())
    assert sorted(r["batch"] for r in records) == [1, 4]
    for r in records:
        assert r["status"] == "ok", r
        # Every Conv and the Linear read input and weight through a quantizer: two Q/DQ pairs each.
        assert r["qdq_ops"]["QuantizeLinear"] == r["qdq_ops"]["DequantizeLinear"] == 2 * r["quantized_layers"]
        # graft's QuantizeLinear/DequantizeLinear compute what PyTorch's fake quantizers compute:
        # the logits agree to float rounding, so every image's top-1 does.
        assert r["graft_qdq_rel_err"] < 1e-5, r
        assert r["graft_qdq_top1"] == 1.0, r
        assert r["graft_float_rel_err"] < 1e-5, r
        assert r["graft_qdq_ms"] > 0 and r["graft_float_ms"] > 0
        # The reference's noise floor is measured, not assumed: both perturbed runs are recorded.
        for k in ("torch_qdq_fp32_noise", "torch_qdq_fp16_input"):
            assert 0.0 <= r[k + "_top1"] <= 1.0 and r[k + "_rel_err"] >= 0.0, r
        assert 1 <= r["top1_classes"] <= r["images"], r
    assert "| tiny_cnn | 4 | cpu |  | test |" in (out / "int8_qdq.md").read_text()  # no GPU on the CPU
    # A second call with the same commit replaces its records rather than adding to them.
    p = subprocess.run([sys.executable, os.path.join(HERE, "int8_qdq.py"), "--smoke", "--out", str(out),
                        "--work-dir", str(tmp_path / "work"), "--commit", "test"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(json.loads((out / "int8_qdq.json").read_text())) == 2


def test_float32_qdq_engine_is_recorded_as_such(tmp_path):
    # --qdq-engine float32 builds the Q/DQ engine without float16 (on the CPU it is float32 anyway): the
    # record says which form ran, and a second form's records are kept beside the first's.
    out = tmp_path / "out"
    for form in ("float32", "auto"):
        p = subprocess.run([sys.executable, os.path.join(HERE, "int8_qdq.py"), "--smoke", "--out", str(out),
                            "--work-dir", str(tmp_path / "work"), "--commit", "test", "--qdq-engine", form],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
    records = json.loads((out / "int8_qdq.json").read_text())
    assert sorted((r["qdq_engine"], r["batch"]) for r in records) == [("auto", 1), ("auto", 4), ("float32", 1),
                                                                      ("float32", 4)]
    for r in records:
        assert r["status"] == "ok", r
        assert r["graft_qdq_top1"] == 1.0, r


def test_pytorchs_own_quantizer(tmp_path):
    # --quantizer fx: torch.ao.quantization's FX flow with its TensorRT backend config, which also
    # quantizes every layer's output; graft's CPU engine builds and runs the export.
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, os.path.join(HERE, "int8_qdq.py"), "--smoke", "--out", str(out),
                        "--work-dir", str(tmp_path / "work"), "--commit", "test", "--quantizer", "fx"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    records = json.loads((out / "int8_qdq.json").read_text())
    assert sorted(r["batch"] for r in records) == [1, 4]
    for r in records:
        assert r["status"] == "ok" and r["quantizer"] == "fx", r
        # Each layer's weight, and more activations than layers (outputs too), go through a pair.
        assert r["qdq_ops"]["QuantizeLinear"] == r["qdq_ops"]["DequantizeLinear"] > 2 * r["quantized_layers"] > 0, r
        # Not to float rounding, unlike the fake form: FX gives the average pool's output its input's
        # scale, so a pooled value, a whole number of 1/64 steps, is often a tie (k + 0.5 steps), and
        # which way a tie rounds follows the order of the float sums, in PyTorch and in graft alike
        # (2 of the 512 pooled values here, a step or two at the logits). Every layer before the pool
        # agrees exactly; a wrong weight scale, rounding or a lost bias moves the logits far more.
        assert r["graft_qdq_rel_err"] < 0.02 and r["graft_qdq_top1"] >= 0.9, r
    assert "| tiny_cnn | 4 | cpu |  | test | fx | auto |" in (out / "int8_qdq.md").read_text()
