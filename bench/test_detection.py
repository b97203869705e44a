"""Tests of the detection benchmark (bench/detection.py, bench/detection_models.py) on the CPU:

- the batched two-stage detector equals itself image by image (the dynamic batch is real), its
  plain-torch NMS and RoIAlign references agree with torchvision where it exists;
- the smoke run end to end: tiny_rcnn and the DCNv2 ResNet-50 trunk exported with a dynamic batch,
  built by graft's CPU engine, run at batch 1 and 3 (the export used batch 2), detections compared
  with PyTorch's under the FP32 rule (same kept indices, boxes 1e-3 relative, scores 1e-4);
- a failing stage becomes a record naming the stage and graft's message; the comparison rules;
- torchvision's Faster R-CNN (the GPU machine's model): the wrapper reproduces torchvision's own
  detections and exports with NonMaxSuppression and RoiAlign (skipped without torchvision).

    PYTHONPATH=python:build/python GRAFT_LIB_DIR=build/python/graft /usr/bin/python3 -m pytest -q bench/test_detection.py
"""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import detection  # noqa: E402
import detection_models as dm  # noqa: E402

_PYTHONPATH = os.pathsep.join(p for p in [os.path.join(os.path.dirname(HERE), "python"),
                                          os.environ.get("PYTHONPATH", "")] if p)
NO_TV = "torchvision is not importable (the GPU machine has it; this machine's torch 1.13 has none)"


def _graft_available():
    p = subprocess.run([sys.executable, "-c", "from graft import _native, _registry; _native.engine_module(); "
                        "_registry.find('ModulatedDeformConv2d')"],
                       capture_output=True, env={**os.environ, "PYTHONPATH": _PYTHONPATH}, timeout=120)
    return p.returncode == 0


def _run(tmp_path, *extra, env=None, timeout=600):
    out = tmp_path / "out"
    cmd = [sys.executable, os.path.join(HERE, "detection.py"), "--smoke", "--out", str(out),
           "--work-dir", str(tmp_path / "work"), "--commit", "test", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "PYTHONPATH": _PYTHONPATH, **(env or {})})
    path = out / "detection.json"
    return p, (json.loads(path.read_text()) if path.exists() else None)


def _images(n, seed=1):
    return torch.rand(n, 3, 64, 64, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def tiny():
    det = dm.tiny_detector()
    dm.calibrate_detector(det, _images(2, seed=5))
    return det


def test_batched_detector_equals_per_image_runs(tiny):
    x = _images(3)
    with torch.no_grad():
        boxes, scores, labels, bidx, keep, rpn = tiny(x)
        assert len(scores) > 3 and bidx.unique().numel() == 3  # calibrated: every image has detections
        for i in range(3):
            b1, s1, l1, i1, k1, _ = tiny(x[i:i + 1])
            m = bidx == i
            assert torch.equal(keep[m], k1) and torch.equal(labels[m], l1)
            torch.testing.assert_close(boxes[m], b1, rtol=1e-5, atol=1e-4)
            torch.testing.assert_close(scores[m], s1, rtol=1e-5, atol=1e-6)
    # per image: scores descending, at most detections_per_img, rpn_keep grouped by image
    for i in range(3):
        s = scores[bidx == i]
        assert (s[:-1] >= s[1:]).all() and len(s) <= tiny.detections_per_img
    assert (rpn[1:, 0] >= rpn[:-1, 0]).all()


def test_nms_and_roi_align_references():
    g = torch.Generator().manual_seed(3)
    xy = torch.rand(60, 2, generator=g) * 50
    boxes = torch.cat([xy, xy + 5 + torch.rand(60, 2, generator=g) * 20], 1)
    scores = torch.rand(60, generator=g)
    keep = dm.nms_reference(boxes, scores, 0.5)
    # greedy by definition: every kept box overlaps no earlier kept box by more than 0.5
    iou = detection._iou(boxes[keep].numpy(), boxes[keep].numpy())
    assert all(iou[i, :i].max(initial=0) <= 0.5 for i in range(len(keep)))
    assert (scores[keep][:-1] >= scores[keep][1:]).all()
    feat = torch.randn(2, 3, 9, 11, generator=g)
    rb = torch.tensor([[1.0, 2.0, 30.0, 20.0], [-5.0, -3.0, 8.0, 40.0], [10.0, 10.0, 10.5, 10.2]])
    bi = torch.tensor([0, 1, 1])
    got = dm.roi_align_reference(feat, rb, bi, (3, 4), 0.25, 2)
    assert got.shape == (3, 3, 3, 4) and torch.isfinite(got).all()
    tv = dm.torchvision_or_none()
    if tv is None:
        return
    want = tv.ops.roi_align(feat, torch.cat([bi[:, None].float(), rb], 1), (3, 4), 0.25, 2, aligned=False)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert torch.equal(keep, tv.ops.nms(boxes, scores, 0.5))


def test_compile_mode_probe_inputs():
    """The torch.compile stage reads the trunk's DCN implementation from the model, and the graph probe
    (bench/cuda_graphs.py) answers None where it cannot try (no CUDA or no torchvision), never raises."""
    import cuda_graphs
    net = dm.DCNResNet50C4(8)
    assert net.set_impl("torchvision").impl == "torchvision"
    assert all(m.impl == "torchvision" for m in net.modules() if isinstance(m, dm.DCNv2))
    assert net.set_impl("pytorch").impl == "pytorch"
    if not torch.cuda.is_available():
        safe, why = cuda_graphs.deform_conv2d_graph_safe(torch, None)
        assert safe is None and why == "no CUDA device"


def test_rules():
    import numpy as np
    ref = {"boxes": np.array([[0, 0, 10, 10], [20, 20, 40, 40.]]), "scores": np.array([0.9, 0.8]),
           "labels": np.array([1, 2]), "batch_index": np.array([0, 0]), "keep": np.array([7, 3])}
    same = {k: v.copy() for k, v in ref.items()}
    assert detection.compare_exact(ref, same, 1)["status"] == "ok"
    swapped = {k: v[::-1].copy() for k, v in ref.items()}
    r = detection.compare_exact(ref, swapped, 1)
    assert r["status"] == "ok" and r["order_differs"]
    off = {**same, "boxes": same["boxes"] + np.array([0, 0, 0, 0.05])}
    r = detection.compare_exact(ref, off, 1)
    assert r["status"] == "mismatch" and "box error" in r["reason"]
    # Another candidate kept for the same detection (a tie): accepted and counted.
    twin = {**same, "keep": np.array([7, 4]), "scores": same["scores"] + np.array([0, 3e-5])}
    r = detection.compare_exact(ref, twin, 1)
    assert r["status"] == "ok" and r["tie_swaps"] == 1
    # Another candidate kept for a different box, or with a score beyond the tolerance: a mismatch.
    for other in ({**twin, "boxes": same["boxes"] + np.array([0, 0, 0, 9.0])},
                  {**twin, "scores": same["scores"] + np.array([0, 3e-4])}):
        r = detection.compare_exact(ref, other, 1)
        assert r["status"] == "mismatch" and "missing [3]" in r["reason"] and "extra [4]" in r["reason"]
    m = detection.compare_matched(ref, {**same, "boxes": same["boxes"] + 0.2}, 1)
    assert m["match_rate"] == 1.0
    m = detection.judge_fp16(detection.compare_matched(ref, {k: v[:1] for k, v in same.items()}, 1),
                             {"match_rate": 1.0})
    assert m["match_rate"] == 0.5 and m["status"] == "mismatch"
    # FP16 scores: within max(0.02, twice PyTorch FP16's own difference).
    moved = {**same, "scores": same["scores"] + np.array([0.1, 0.0])}
    m = detection.judge_fp16(detection.compare_matched(ref, moved, 1), {"match_rate": 1.0, "max_score_abs": 0.06})
    assert m["status"] == "ok", m
    m = detection.judge_fp16(detection.compare_matched(ref, moved, 1), {"match_rate": 1.0, "max_score_abs": 0.04})
    assert m["status"] == "mismatch" and "0.08" in m["reason"], m
    rec = {"model": "m", "batch": 1, "graft_ms": 1.0, "eager_ms": 2.0, "compile_ms": 4.0,
           **{f"{s}_status": "ok" for s in detection.STAGES}, "check_graft_cpu": {"status": "ok"},
           "check_graft_fp16": {"status": "mismatch", "reason": "match rate 0.5 < 0.9"}}
    r = detection.finalize(dict(rec))
    assert r["status"] == "mismatch" and r["stage"] == "check_graft_fp16" and r["speedup_vs_compile"] == 4.0
    r = detection.finalize({**rec, "graft_build_status": "error", "graft_build_reason": "node 'x' (RoiAlign): boom"})
    assert r["status"] == "failed" and r["stage"] == "graft_build" and "RoiAlign" in r["reason"]
    assert "graft_build" in detection.summary([r])


def test_smoke_end_to_end(tmp_path):
    if not _graft_available():
        pytest.skip("graft's engine bindings and torch extension (ModulatedDeformConv2d) are not importable here")
    p, recs = _run(tmp_path)
    assert recs is not None, p.stdout + p.stderr
    by = {(r["model"], r["batch"]): r for r in recs}
    assert set(by) == {(m, b) for m in ("tiny_rcnn", "dcn_resnet50_c4_tiny") for b in (1, 3)}, p.stderr
    for r in recs:
        assert r["export_status"] == "ok" and r["reference_status"] == "ok", r
        assert r["graft_build_status"] == "skipped" and r["compile_status"] == "skipped"
        assert r["graft_cpu_status"] == "ok", (r.get("graft_cpu_reason"), p.stderr[-3000:])
        assert r["check_graft_cpu"]["status"] == "ok", r["check_graft_cpu"]
        assert r["status"] == "partial" and r["stage"] == "compile", r
        assert r["graft_cpu_ms"] > 0 and r["eager_ms"] > 0
    rc = by[("tiny_rcnn", 3)]
    assert rc["onnx_ops"]["NonMaxSuppression"] == 2 and rc["onnx_ops"]["RoiAlign"] == 2, rc["onnx_ops"]
    assert "If" not in rc["onnx_ops"] and "Loop" not in rc["onnx_ops"]
    assert rc["check_graft_cpu"]["n_ref"] > 5
    assert by[("dcn_resnet50_c4_tiny", 1)]["onnx_ops"]["ModulatedDeformConv2d"] == 6
    md = (tmp_path / "out" / "detection.md").read_text()
    assert "| tiny_rcnn | 3 | partial |" in md and "NonMaxSuppression x2" in md
    assert p.returncode == 3  # partial: no torch.compile on the CPU


def test_failures_become_records(tmp_path):
    # A worker that dies in a stage, and a model that cannot be built, are records saying where.
    p, recs = _run(tmp_path, "--models", "tiny_rcnn", "--skip", "cpu", env={"GRAFT_ZOO_TEST_CRASH": "reference"})
    assert p.returncode == 3 and recs, p.stderr
    for r in recs:
        assert r["reference_status"] == "error" and "died" in r["reference_reason"], r
        assert r["export_status"] == "ok" and r["graft_cpu_status"] == "not run"
        assert r["status"] == "failed" and r["stage"] == "reference"


def test_torchvision_detector_matches_torchvision():
    if dm.torchvision_or_none() is None:
        pytest.skip(NO_TV)
    original, det = dm.torchvision_detector(image_size=128)
    x = torch.rand(2, 3, 128, 128, generator=torch.Generator().manual_seed(2))
    dm.calibrate_detector(det, x)
    with torch.no_grad():
        mine = detection.as_detections(det(x))
        theirs = detection.torchvision_outputs_as_detections(original(list(x)))
    assert len(mine["scores"]) > 0
    m = detection.compare_matched(mine, theirs, 2, iou_min=0.99)
    # Equal up to the rounding of batched vs per-image GEMMs, which may flip a near-tie at a top-k cut.
    assert m["match_rate"] >= 0.95 and m["max_score_abs"] <= 1e-4, m


def test_torchvision_detector_exports_nms_and_roialign(tmp_path):
    if dm.torchvision_or_none() is None:
        pytest.skip(NO_TV)
    onnx = pytest.importorskip("onnx")
    _, det = dm.torchvision_detector(image_size=128)
    path = str(tmp_path / "frcnn.onnx")
    import inspect
    kw = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(det, (torch.rand(2, 3, 128, 128),), path, opset_version=17, input_names=["images"],
                      output_names=dm.OUTPUT_NAMES, dynamic_axes={"images": {0: "batch"}}, **kw)
    ops = [n.op_type for n in onnx.load(path).graph.node]
    assert ops.count("NonMaxSuppression") == 2 and ops.count("RoiAlign") == 4, sorted(set(ops))
