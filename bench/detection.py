#!/usr/bin/env python3
"""Detection models end to end (issue 17, item 5): export, graft engines with a dynamic batch on the
CPU and CUDA, detections compared with PyTorch's, and graft timed against PyTorch eager and
torch.compile in one process.

Models (bench/detection_models.py):
  fasterrcnn_resnet50_fpn  torchvision's Faster R-CNN (random weights from a fixed seed, calibrated so
                           it detects something), 512x512, wrapped to take one (N, 3, H, W) batch and
                           exported by the TorchScript exporter (opset 17, dynamic batch) with
                           NonMaxSuppression and RoiAlign as ONNX builtins. Needs torchvision.
  dcn_resnet50_c4          ResNet-50 through stage 3, every stage-3 3x3 conv a DCNv2
                           (graft.nn.ModulatedDeformConv2d + its offset/mask conv), exported by
                           graft.export (one ai.onnx.contrib ModulatedDeformConv2d node per block).
  --smoke (CPU, no torchvision needed): tiny_rcnn (a two-level Faster R-CNN in plain torch: the same
  batched post-processing, NMS and RoIAlign) and dcn_resnet50_c4_tiny (width 16), 64x64.

Per model, one worker process runs the stages model, export, reference (PyTorch FP32; for the
torchvision detector also a check that the batched wrapper reproduces torchvision's own model),
eager (PyTorch FP16; torchvision's model as users call it, DCN through torchvision.ops.deform_conv2d),
graft_build + graft_run (CUDA FP16 engine, profile batch min..max), graft_fp32 (CUDA FP32 engine),
compile (torch.compile FP16) and graft_cpu (graft's CPU engine, same dynamic profile), the slowest
last. A stage that fails records its status and graft's message (which names the node and op);
later stages still run where they can. A worker that crashes or runs out of time leaves records
saying in which stage.

Accuracy rules (the "check_*" fields of a record):
  detections, FP32 (graft CPU, graft CUDA FP32, the wrapper vs torchvision): per image the same kept
      candidate indices (as a set; an order difference is noted), the same labels, boxes within 1e-3
      relative (|d| <= 1e-3 * max(|ref|, 1 px)), scores within 1e-4 absolute.
  detections, FP16 (graft CUDA FP16, PyTorch eager FP16, torch.compile FP16): FP16 moves scores by
      ~1e-3, which reorders near-ties in top-k and NMS, so kept indices may differ. Detections are
      matched per image by label and IoU >= 0.9; graft passes when its match rate is >= 0.9 or at
      least PyTorch's own FP16 match rate, and matched scores differ by <= 0.02.
  dense output (DCN): against an FP64 PyTorch reference (the deep random trunk amplifies rounding:
      PyTorch's own FP32 is ~3e-4 off FP64 in the smoke net), relative L2 error <= max(1e-4 (CPU) or
      1e-3 (CUDA FP32: cuDNN may use TF32), 2x PyTorch FP32's); FP16 <= 2x PyTorch's own FP16 error
      (bench/zoo.py's rule).

    export PYTHONPATH=python:build/python GRAFT_LIB_DIR=build/python/graft
    /usr/bin/python3 bench/detection.py --smoke --out /tmp/det_smoke        # CPU, tiny models
    python3 bench/detection.py --out $OUT/detection                          # GPU machine
Records: <out>/detection.json (one per model and batch, replaced per model), summary
<out>/detection.md. Exit status 0 when every record is ok, 3 otherwise, 1 on harness errors.
"""
import argparse
import contextlib
import copy
import inspect
import math
import os
import signal
import subprocess
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_HERE)
sys.path.insert(0, _HERE)

import zoo  # noqa: E402  (worker plumbing: records, stages, timing; process spawning)
import zoo_plot  # noqa: E402

SEED = 20240607
STAGES = ("model", "export", "reference", "eager", "graft_build", "graft_run", "graft_fp32", "compile", "graft_cpu")
# A record fails when one of these did not finish (skipped is fine: e.g. CUDA stages on the CPU).
GRAFT_STAGES = ("model", "export", "reference", "graft_build", "graft_run", "graft_fp32", "graft_cpu")
GRAFT_CHECKS = ("check_graft_cpu", "check_graft_fp32", "check_graft_fp16")

MODELS = {  # the DCN trunk first: it is the quicker of the two, so a call cut short still has it
    "dcn_resnet50_c4": {"kind": "dcn", "hw": 512, "width": 64},
    "fasterrcnn_resnet50_fpn": {"kind": "detector", "hw": 512, "torchvision": True},
}
SMOKE_MODELS = {
    "tiny_rcnn": {"kind": "detector", "hw": 64},
    "dcn_resnet50_c4_tiny": {"kind": "dcn", "hw": 64, "width": 16},
}
BATCHES, PROFILE = (1, 8), (1, 4, 8)
SMOKE_BATCHES, SMOKE_PROFILE = (1, 3), (1, 2, 3)  # batch 3: neither the export's batch (2) nor a profile point

FP32_BOX_REL, FP32_SCORE_ABS = 1e-3, 1e-4
FP16_IOU, FP16_MATCH_RATE, FP16_SCORE_ABS = 0.9, 0.9, 0.02
DENSE_CPU_TOL, DENSE_CUDA_FP32_TOL, DENSE_FP32_RATIO, DENSE_FP16_RATIO = 1e-4, 1e-3, 2.0, 2.0

_log, _short, _now = zoo._log, zoo._short, zoo._now


def model_table(smoke):
    return SMOKE_MODELS if smoke else MODELS


# ---------------------------------------------------------------------------------------------
# Comparing detections
# ---------------------------------------------------------------------------------------------
def as_detections(outputs):
    """{boxes, scores, labels, batch_index[, keep]} as float64/int64 numpy arrays from the wrapper's
    (or an engine's) outputs."""
    import numpy as np
    import torch
    names = ("boxes", "scores", "labels", "batch_index", "keep", "rpn_keep")
    if isinstance(outputs, (tuple, list)):
        outputs = dict(zip(names, outputs))
    d = {}
    for k in names:
        if k in outputs:
            v = outputs[k]
            v = v.detach().float().cpu().numpy() if isinstance(v, torch.Tensor) and v.is_floating_point() else (
                v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else np.asarray(v))
            d[k] = v.astype(np.float64) if k in ("boxes", "scores") else v.astype(np.int64)
    d["boxes"] = d["boxes"].reshape(-1, 4)
    if "rpn_keep" in d:
        d["rpn_keep"] = d["rpn_keep"].reshape(-1, 3)
    return d


def torchvision_outputs_as_detections(results):
    """torchvision's [{boxes, scores, labels}] per image -> the flat layout (no keep indices)."""
    import torch
    cat = lambda k: torch.cat([r[k].detach().float().cpu() if k != "labels" else r[k].cpu() for r in results])  # noqa: E731
    idx = torch.cat([torch.full((len(r["scores"]),), i, dtype=torch.long) for i, r in enumerate(results)])
    return as_detections({"boxes": cat("boxes"), "scores": cat("scores"), "labels": cat("labels"), "batch_index": idx})


def _iou(a, b):
    import numpy as np
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = np.clip(rb - lt, 0, None)
    inter = wh[..., 0] * wh[..., 1]
    area = lambda x: (x[:, 2] - x[:, 0]) * (x[:, 3] - x[:, 1])  # noqa: E731
    uni = area(a)[:, None] + area(b)[None, :] - inter
    return np.where(uni > 0, inter / np.where(uni > 0, uni, 1), 0.0)


def tie_swaps(ref, got, r, g, miss, extra):
    """Kept indices of one image that differ only by a tie: a candidate the reference kept and graft
    did not, matched to one graft kept instead that is the same detection (label, IoU >= 0.99, score
    within the FP32 tolerance). Two candidates that decode to the same box with scores a rounding
    apart may each suppress the other; which survives is not a property of the model. Returns
    (swaps, the missing indices with no such twin)."""
    import numpy as np
    rk, gk = ref["keep"][r], got["keep"][g]
    used, unmatched, swaps = set(), [], 0
    for m in miss:
        i = r[rk == m][0]
        twin = None
        for e in extra:
            j = g[gk == e][0]
            if e in used or ref["labels"][i] != got["labels"][j]:
                continue
            if abs(float(ref["scores"][i] - got["scores"][j])) > FP32_SCORE_ABS:
                continue
            if _iou(ref["boxes"][i][None], got["boxes"][j][None])[0, 0] >= 0.99:
                twin = e
                break
        if twin is None:
            unmatched.append(m)
        else:
            used.add(twin)
            swaps += 1
    return swaps, unmatched


def rpn_keep_difference(ref, got):
    """Where the RPN's NMS selections (rows of (image, level, proposal)) of two runs part: "same", or
    the counts and the first rows each has that the other lacks. A diagnostic for a detection
    mismatch: it says whether the proposals already differ or only the box stage does."""
    rs = {tuple(int(v) for v in row) for row in ref}
    gs = {tuple(int(v) for v in row) for row in got}
    if rs == gs:
        return "same"
    return (f"{len(rs)} vs {len(gs)} rows; only in the reference {sorted(rs - gs)[:5]}, "
            f"only in graft's {sorted(gs - rs)[:5]}")


def compare_exact(ref, got, batch):
    """The FP32 rule: same kept indices per image, labels, boxes within 1e-3 relative, scores 1e-4."""
    import numpy as np
    res = {"rule": f"fp32: same kept indices per image (up to ties: the same detection from another candidate), "
                   f"boxes |d| <= {FP32_BOX_REL:g}*max(|ref|,1), scores |d| <= {FP32_SCORE_ABS:g}",
           "n_ref": int(len(ref["scores"])), "n_got": int(len(got["scores"])), "max_box_rel": 0.0,
           "max_score_abs": 0.0, "order_differs": False, "unmatched": 0}
    problems = []
    for b in range(batch):
        r = np.nonzero(ref["batch_index"] == b)[0]
        g = np.nonzero(got["batch_index"] == b)[0]
        rk, gk = ref["keep"][r], got["keep"][g]
        if set(rk.tolist()) != set(gk.tolist()):
            miss = sorted(set(rk.tolist()) - set(gk.tolist()))
            extra = sorted(set(gk.tolist()) - set(rk.tolist()))
            swaps, unmatched = tie_swaps(ref, got, r, g, miss, extra)
            res["tie_swaps"] = res.get("tie_swaps", 0) + swaps
            res["unmatched"] += len(unmatched)
            if unmatched:
                msc = [float(ref["scores"][r][rk == m][0]) for m in unmatched[:3]]
                problems.append(f"image {b}: kept {len(rk)} vs {len(gk)}; missing {unmatched[:5]} (scores "
                                f"{[round(s, 6) for s in msc]}) with no same detection among the extra "
                                f"{extra[:5]}")
                continue
            both = sorted(set(rk.tolist()) & set(gk.tolist()))  # compare the kept indices the two share
            r = r[np.isin(rk, both)]
            g = g[np.isin(gk, both)]
            rk, gk = ref["keep"][r], got["keep"][g]
        if not np.array_equal(rk, gk):
            res["order_differs"] = True
        pos = {int(k): i for i, k in enumerate(gk)}
        gi = g[[pos[int(k)] for k in rk]]
        if not np.array_equal(ref["labels"][r], got["labels"][gi]):
            problems.append(f"image {b}: labels differ for the same kept indices")
        if len(r):
            d = np.abs(ref["boxes"][r] - got["boxes"][gi]) / np.maximum(np.abs(ref["boxes"][r]), 1.0)
            res["max_box_rel"] = max(res["max_box_rel"], float(d.max()))
            res["max_score_abs"] = max(res["max_score_abs"], float(np.abs(ref["scores"][r] - got["scores"][gi]).max()))
    if "rpn_keep" in ref and "rpn_keep" in got:
        res["rpn_keep"] = rpn_keep_difference(ref["rpn_keep"], got["rpn_keep"])
    if res["max_box_rel"] > FP32_BOX_REL:
        problems.append(f"box error {res['max_box_rel']:.2e} > {FP32_BOX_REL:g} relative")
    if res["max_score_abs"] > FP32_SCORE_ABS:
        problems.append(f"score error {res['max_score_abs']:.2e} > {FP32_SCORE_ABS:g}")
    if not res["n_ref"]:
        problems.append("the reference has no detections: the comparison says nothing")
    res["status"] = "mismatch" if problems else "ok"
    if problems:
        res["reason"] = "; ".join(problems)[:800]
    return res


def compare_matched(ref, got, batch, iou_min=FP16_IOU):
    """The FP16 measure: detections matched per image by label and IoU >= iou_min (greedy, by
    reference score); match rate = matched / max(n_ref, n_got), the score difference of matches."""
    import numpy as np
    matched, total, worst = 0, 0, 0.0
    kept_same = 0
    for b in range(batch):
        r = np.nonzero(ref["batch_index"] == b)[0]
        g = np.nonzero(got["batch_index"] == b)[0]
        total += max(len(r), len(g))
        if not len(r) or not len(g):
            continue
        iou = _iou(ref["boxes"][r], got["boxes"][g])
        iou[ref["labels"][r][:, None] != got["labels"][g][None, :]] = -1
        used = set()
        for i in np.argsort(-ref["scores"][r], kind="stable"):
            j = next((int(j) for j in np.argsort(-iou[i], kind="stable") if iou[i, j] >= iou_min and j not in used),
                     None)
            if j is None:
                continue
            used.add(j)
            matched += 1
            worst = max(worst, abs(float(ref["scores"][r][i] - got["scores"][g][j])))
        if "keep" in ref and "keep" in got:
            kept_same += len(set(ref["keep"][r].tolist()) & set(got["keep"][g].tolist()))
    rate = matched / total if total else 1.0
    res = {"rule": f"matched by label and IoU >= {iou_min:g}", "n_ref": int(len(ref["scores"])),
           "n_got": int(len(got["scores"])), "match_rate": rate, "max_score_abs": worst}
    if "keep" in ref and "keep" in got and len(ref["scores"]):
        res["kept_same_frac"] = kept_same / max(len(ref["scores"]), len(got["scores"]))
    return res


def judge_fp16(check, torch_check):
    """graft's FP16 check against the FP16 rule, with PyTorch's own FP16 match rate as context."""
    floor = min(FP16_MATCH_RATE, torch_check.get("match_rate", FP16_MATCH_RATE)) if torch_check else FP16_MATCH_RATE
    # As the zoo's rule: within twice PyTorch's own FP16 deviation where that is larger than the floor
    # (a random-weight detector moves PyTorch's own FP16 scores by ~0.1).
    score_lim = max(FP16_SCORE_ABS, 2 * torch_check.get("max_score_abs", 0.0)) if torch_check else FP16_SCORE_ABS
    check["rule"] = (f"fp16: match rate (label, IoU >= {FP16_IOU:g}) >= min({FP16_MATCH_RATE:g}, PyTorch FP16's), "
                     f"matched scores |d| <= max({FP16_SCORE_ABS:g}, 2 x PyTorch FP16's)")
    bad = []
    if check["match_rate"] < floor - 1e-9:
        bad.append(f"match rate {check['match_rate']:.3f} < {floor:.3f}")
    if check["max_score_abs"] > score_lim:
        bad.append(f"matched score difference {check['max_score_abs']:.3g} > {score_lim:.3g}")
    check["status"] = "mismatch" if bad else "ok"
    if bad:
        check["reason"] = "; ".join(bad)
    return check


def compare_dense(y, ref, tol, rule):
    try:
        e = zoo.rel_err(y, ref)
    except Exception as ex:  # noqa: BLE001 - a shape difference, or an all-zero reference
        return {"status": "mismatch", "rule": rule, "reason": _short(ex)}
    ok = math.isfinite(e) and e <= tol
    r = {"status": "ok" if ok else "mismatch", "rule": rule, "rel_err": e}
    if not ok:
        r["reason"] = f"relative error {e:.3e} > {tol:g}"
    return r


# ---------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------
def finalize(r):
    """status/stage/reason of one record:
    ok        every graft stage ran (CUDA stages may be skipped on a CPU run) and every graft check passed
    failed    a graft stage failed: `stage` names it, `reason` carries graft's message
    mismatch  graft ran, but a check failed: `stage` names the check
    partial   graft ok, but PyTorch's eager or torch.compile number is missing"""
    g, e, c = (zoo_plot.num(r.get(k)) for k in ("graft_ms", "eager_ms", "compile_ms"))
    r["speedup_vs_eager"] = e / g if g and e else None
    r["speedup_vs_compile"] = c / g if g and c else None
    r["status"], r["stage"], r["reason"] = "ok", None, None
    for s in GRAFT_STAGES:
        st = r.get(f"{s}_status")
        if st not in ("ok", "skipped"):
            r.update(status="failed", stage=s, reason=f"{st or 'not run'}: {r.get(f'{s}_reason') or 'no reason recorded'}")
            return r
    for k in GRAFT_CHECKS:
        ch = r.get(k)
        if isinstance(ch, dict) and ch.get("status") != "ok":
            r.update(status="mismatch", stage=k, reason=ch.get("reason") or ch.get("status"))
            return r
    for s in ("eager", "compile"):
        st = r.get(f"{s}_status")
        if st not in ("ok",):
            r.update(status="partial", stage=s, reason=f"{st or 'not run'}: {r.get(f'{s}_reason') or ''}")
            return r
    return r


def _fmt(v, spec=".2f"):
    v = zoo_plot.num(v)
    return "—" if v is None else format(v, spec)


def _check_cell(ch):
    if not isinstance(ch, dict):
        return "—"
    s = ch.get("status", "?")
    if "rel_err" in ch:
        return f"{s} ({ch['rel_err']:.1e})"
    if "match_rate" in ch:
        return f"{s or ''} ({ch['match_rate']:.2f} matched)".strip()
    cell = f"{s} ({ch.get('n_got', '?')}/{ch.get('n_ref', '?')} det"
    if ch.get("unmatched"):
        cell += f", {ch['unmatched']} kept differ"
    return cell + ")"


def summary(records):
    lines = ["# graft detection models (issue 17, item 5)", ""]
    if records:
        r0 = records[0]
        lines.append(f"commit {r0.get('commit')}, {r0.get('date', '')[:10]}, device {r0.get('gpu') or r0.get('device')}, "
                     f"torch {r0.get('torch')}, torchvision {r0.get('torchvision')}")
        lines.append("")
    lines += ["| model | batch | status | graft fp16 ms | graft fp32 ms | eager fp16 ms | compile fp16 ms | vs eager | "
              "vs compile | graft CPU ms | check CPU | check CUDA fp32 | check CUDA fp16 | PyTorch fp16 | wrapper vs torchvision | "
              "PyTorch fp32 CPU vs CUDA |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        lines.append(f"| {r['model']} | {r['batch']} | {r.get('status')} | {_fmt(r.get('graft_ms'), '.3f')} | "
                     f"{_fmt(r.get('graft_fp32_ms'), '.3f')} | {_fmt(r.get('eager_ms'), '.3f')} | "
                     f"{_fmt(r.get('compile_ms'), '.3f')} | {_fmt(r.get('speedup_vs_eager'))}x | "
                     f"{_fmt(r.get('speedup_vs_compile'))}x | {_fmt(r.get('graft_cpu_ms'), '.1f')} | "
                     f"{_check_cell(r.get('check_graft_cpu'))} | {_check_cell(r.get('check_graft_fp32'))} | "
                     f"{_check_cell(r.get('check_graft_fp16'))} | {_check_cell(r.get('check_torch_fp16'))} | "
                     f"{_check_cell(r.get('check_torchvision'))} | {_check_cell(r.get('check_torch_fp32_cpu_vs_cuda'))} |")
    bad = [r for r in records if r.get("status") != "ok"]
    lines += ["", f"detection: {len(records) - len(bad)}/{len(records)} records ok"]
    for r in bad:
        lines.append(f"- {r['model']} b{r['batch']}: {r.get('status')} at {r.get('stage')}: {r.get('reason')}")
    exp = {r["model"]: r for r in records}
    notes = []
    for m, r in exp.items():
        ops = r.get("onnx_ops")
        if ops:
            notes.append(f"- {m}: exported by {r.get('exporter')} ({r.get('onnx_nodes')} nodes; "
                         + ", ".join(f"{k} x{v}" for k, v in sorted(ops.items())) + ")"
                         + (f"; dynamo exporter: {r['dynamo_export']}" if r.get("dynamo_export") else ""))
    if notes:
        lines += ["", "exports:"] + notes
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Worker
# ---------------------------------------------------------------------------------------------
def make_images(kind, batch, hw, device="cpu"):
    import torch
    g = torch.Generator().manual_seed(SEED + 7919 * batch)
    shape = (batch, 3, hw, hw)
    x = torch.rand(shape, generator=g) if kind == "detector" else torch.randn(shape, generator=g)
    return x.to(device)


def _op_histogram(path):
    try:
        import onnx
    except ImportError:
        return None, None
    m = onnx.load(path, load_external_data=False)
    counts = {}
    for n in m.graph.node:
        if n.op_type in ("NonMaxSuppression", "RoiAlign", "ModulatedDeformConv2d", "TopK", "NonZero", "If", "Loop",
                         "ScatterElements", "ScatterND", "GridSample"):
            counts[n.op_type] = counts.get(n.op_type, 0) + 1
    return counts, len(m.graph.node)


class DetWorker(zoo.Worker):
    stages = STAGES

    def __init__(self, args):  # noqa: D401 - replaces zoo.Worker's: other models, other stages
        import torch
        self.torch, self.a = torch, args
        self.dev = torch.device(args.device)
        self.cuda = self.dev.type == "cuda"
        self.spec = model_table(args.smoke)[args.model]
        self.kind, self.hw = self.spec["kind"], self.spec["hw"]
        self.batches = args.batches
        self.t_start = time.perf_counter()
        self.out = open(args.result_file, "a")
        self.tag = f"[{args.model}]"
        p = args.profile
        shape = lambda b: [b, 3, self.hw, self.hw]  # noqa: E731
        self.profile = {"images": [shape(p[0]), shape(p[1]), shape(p[2])]}
        tv = zoo._torchvision()
        self.recs = {b: {"model": args.model, "model_kind": self.kind, "batch": b, "profile": "dynamic",
                         "profile_shapes": self.profile, "input_shape": shape(b), "commit": args.commit, "date": _now(),
                         "torch": torch.__version__, "torchvision": getattr(tv, "__version__", None),
                         "device": str(self.dev), "smoke": bool(args.smoke),
                         "gpu": torch.cuda.get_device_name(self.dev) if self.cuda else None,
                         **{f"{s}_status": None for s in STAGES}} for b in self.batches}

    # -- the model, in PyTorch ---------------------------------------------------------------------
    def build_model(self):
        import detection_models as dm
        a = self.a
        if self.kind == "dcn":
            return dm.dcn_resnet50(width=self.spec["width"], image_size=self.hw if a.smoke else 224), None
        if self.spec.get("torchvision"):
            original, det = dm.torchvision_detector(a.model, image_size=self.hw)
        else:
            original, det = None, dm.tiny_detector(image_size=self.hw)
        dm.calibrate_detector(det, make_images("detector", 2, self.hw))
        return det, original

    def forward(self, model, x):
        out = model(x)
        if self.kind == "dcn":
            return out
        return as_detections(out)

    def compare_fp32(self, got, ref, b, device_tol):
        if self.kind == "dcn":
            te = zoo_plot.num(self.recs[b].get("torch_fp32_rel_err")) or 0.0
            return compare_dense(got, ref, max(device_tol, DENSE_FP32_RATIO * te),
                                 f"fp32: relative L2 error to the FP64 reference <= max({device_tol:g}, "
                                 f"{DENSE_FP32_RATIO:g}x PyTorch FP32's {te:.2e})")
        return compare_exact(ref, got, b)

    def _run(self):
        torch, a = self.torch, self.a
        if self.cuda:
            torch.backends.cudnn.benchmark = True
        self.stage("model")
        try:
            model, original = self.build_model()
        except Exception as e:  # noqa: BLE001
            return self.done("model", "error", _short(e, 1000))
        self.done("model")

        self.stage("export")
        path = os.path.join(a.work_dir, f"{a.model}_{self.hw}.onnx")
        info = self.export(model, path)
        if info.pop("ok") is False:
            return self.done("export", "error", info.pop("reason"), **info)
        self.done("export", **info)

        xs = {b: make_images(self.kind, b, self.hw, self.dev) for b in self.batches}
        # Beside the ONNX file, so the same engine can be profiled on the same images afterwards:
        # graft run <plan> --inputs images:<model>_<hw>_b<batch>.npy --profile
        import numpy as np
        for b, x in xs.items():
            np.save(os.path.join(a.work_dir, f"{a.model}_{self.hw}_b{b}.npy"), x.cpu().numpy())
        self.stage("reference")
        refs = {}
        try:
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
            m32 = copy.deepcopy(model).to(self.dev)
            if self.kind == "dcn":
                m32.set_impl("torchvision" if zoo._torchvision() is not None else "pytorch")
            if self.kind == "dcn":
                # This deep random trunk amplifies rounding (PyTorch's own FP32 is ~3e-4 off FP64 in the
                # smoke net): the reference is FP64, and FP32 results are judged against PyTorch's FP32 error.
                m64 = copy.deepcopy(m32).double()
            with torch.inference_mode():
                for b in self.batches:
                    # The detector's reference: ONNX's NMS and TopK semantics exactly (float32 IoU
                    # steps, ties in index order), which graft implements; torchvision's CUDA NMS
                    # rounds differently, so a near-threshold IoU may flip (check_torchvision below
                    # compares the wrapper with torchvision's ops against torchvision's own model).
                    import detection_models as dm
                    exact = dm.onnx_exact_reference() if self.kind == "detector" else contextlib.nullcontext()
                    with exact:
                        refs[b] = self.forward(m32, xs[b])
                    if self.kind == "dcn":
                        y32 = refs[b].float().cpu()
                        refs[b] = m64(xs[b].double()).cpu()
                        self.set(b, torch_fp32_rel_err=zoo.rel_err(y32, refs[b]))
                    else:
                        self.set(b, ref_detections=int(len(refs[b]["scores"])))
                        if self.cuda and a.torch_cross_device:
                            self.set(b, check_torch_fp32_cpu_vs_cuda=self.torch_cpu_vs_cuda(m32, xs[b], refs[b], b))
                    if original is not None:
                        o32 = copy.deepcopy(original).to(self.dev).eval()
                        tvd = torchvision_outputs_as_detections(o32(list(xs[b])))
                        chk = compare_matched(self.forward(m32, xs[b]), tvd, b, iou_min=0.99)
                        chk["status"] = "ok" if chk["match_rate"] == 1.0 and chk["max_score_abs"] <= 1e-4 else "mismatch"
                        chk["rule"] = "fp32: every detection matched (label, IoU >= 0.99), scores |d| <= 1e-4"
                        self.set(b, check_torchvision=chk)
                        del o32
            del m32
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
            self.done("reference")
        except Exception as e:  # noqa: BLE001
            refs = {}
            self.done("reference", "error", _short(e, 1000))

        m16, torch16 = self.run_eager(model, original, xs, refs)
        if self.cuda and "graft" not in a.skip:
            self.run_graft_cuda(path, xs, refs, torch16)
        else:
            why = "--skip graft" if "graft" in a.skip else "no CUDA device in this run"
            for s in ("graft_build", "graft_run", "graft_fp32"):
                self.done(s, "skipped", why)
        if self.cuda:
            torch.cuda.empty_cache()
        self.run_compile(m16, xs, refs, torch16)
        self.run_graft_cpu(path, xs, refs)

    def torch_cpu_vs_cuda(self, m32, x, ref_cuda, b):
        """PyTorch's own FP32 on the CPU against its FP32 on CUDA, both under the exact reference, with
        the FP32 rule graft's engines are held to: how far two correct FP32 implementations of this
        random-weight detector part (near-equal objectness scores reorder with rounding). Recorded
        next to graft's check, not used to pass it."""
        import torch
        import detection_models as dm
        try:
            cpu = copy.deepcopy(m32).cpu()
            with torch.inference_mode(), dm.onnx_exact_reference():
                got = self.forward(cpu, x.cpu())
            res = compare_exact(ref_cuda, got, b)
            res["rule"] = "PyTorch FP32 CPU vs PyTorch FP32 CUDA under " + res["rule"]
            return res
        except Exception as e:  # noqa: BLE001
            return {"status": "error", "reason": _short(e, 400)}

    # -- stages ------------------------------------------------------------------------------------
    def export(self, model, path):
        import torch
        import graft
        a = self.a
        t0 = time.perf_counter()
        info = {"exporter": "torchscript", "opset": 17}
        try:
            x = make_images(self.kind, 2, self.hw)  # batch 2: no exporter can take the batch for a constant 1
            with torch.no_grad():
                if self.kind == "dcn":
                    graft.export(model, (x,), path, exporter="torchscript", dynamic_batch=True,
                                 input_names=["images"], output_names=["features"], opset_version=17)
                else:
                    import detection_models as dm
                    kw = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
                    torch.onnx.export(model, (x,), path, opset_version=17, input_names=["images"],
                                      output_names=dm.OUTPUT_NAMES, dynamic_axes={"images": {0: "batch"}}, **kw)
            info["export_s"] = round(time.perf_counter() - t0, 2)
            info["onnx_mib"] = round(os.path.getsize(path) / 2**20, 1)
            info["onnx_ops"], info["onnx_nodes"] = _op_histogram(path)
            info["ok"] = True
        except Exception as e:  # noqa: BLE001
            info.update(ok=False, reason=f"TorchScript exporter: {_short(e, 1000)}")
        if a.dynamo_check and (self.kind == "dcn" or a.dynamo_check == "all"):
            info["dynamo_export"] = self.try_dynamo(model, path + ".dynamo.onnx")
        return info

    def try_dynamo(self, model, path):
        """Whether the dynamo exporter also exports the model (recorded, not used)."""
        import graft
        from graft import _export
        ok, why = _export.dynamo_exporter_available()
        if not ok:
            return f"not available ({why})"
        t0 = time.perf_counter()
        try:
            x = make_images(self.kind, 2, self.hw)
            graft.export(model, (x,), path, exporter="dynamo", dynamic_batch=True, input_names=["images"])
            return f"ok ({time.perf_counter() - t0:.1f} s)"
        except Exception as e:  # noqa: BLE001
            return f"failed after {time.perf_counter() - t0:.1f} s: {_short(e, 300)}"

    def _half(self, model, original):
        """The PyTorch FP16 contender: torchvision's own model for the detector, the DCN net through
        torchvision.ops.deform_conv2d (else graft's torch op); .half(), else autocast."""
        torch = self.torch
        m = copy.deepcopy(original if original is not None else model).to(self.dev).eval()
        if self.kind == "dcn":
            m.set_impl("torchvision" if zoo._torchvision() is not None else "graft")
        if not self.cuda:
            return m, "fp32 (CPU run: no FP16 contender)", ((lambda x: m(list(x))) if original is not None else m)
        x = make_images(self.kind, self.batches[0], self.hw, self.dev)
        try:
            mh = copy.deepcopy(m).half()
            with torch.inference_mode():
                mh(list(x.half()) if original is not None else x.half())
            call = (lambda x: mh(list(x.half()))) if original is not None else (lambda x: mh(x.half()))
            return mh, "fp16 (.half())", call
        except Exception as e:  # noqa: BLE001
            self.eager_autocast = True

            def call(x):
                with torch.autocast("cuda", dtype=torch.float16):
                    return m(list(x) if original is not None else x)
            return m, f"fp16 autocast (.half() failed: {_short(e, 150)})", call

    def _as_result(self, y):
        if self.kind == "dcn":
            return y.float().cpu()
        return torchvision_outputs_as_detections(y) if isinstance(y, list) else as_detections(y)

    def check_fp16(self, b, got, ref, torch_check=None):
        if self.kind == "dcn":
            e = zoo.rel_err(got, ref)
            te = (torch_check or {}).get("rel_err")
            lim = DENSE_FP16_RATIO * te if te else 1e-2
            ok = math.isfinite(e) and e <= lim
            r = {"rel_err": e, "status": "ok" if ok else "mismatch",
                 "rule": f"fp16: relative L2 error <= {DENSE_FP16_RATIO:g}x PyTorch FP16's"}
            if not ok:
                r["reason"] = f"relative error {e:.3e} > {lim:.3e}" + (f" ({DENSE_FP16_RATIO:g} x PyTorch FP16's)" if te else "")
            return r
        c = compare_matched(ref, got, b)
        return judge_fp16(c, torch_check) if torch_check is not None else c

    def run_eager(self, model, original, xs, refs):
        torch = self.torch
        self.stage("eager")
        if "eager" in self.a.skip:
            self.done("eager", "skipped", "--skip eager")
            return None, {}
        try:
            m16, how, call = self._half(model, original)
        except Exception as e:  # noqa: BLE001
            self.done("eager", "error", _short(e, 600))
            return None, {}
        checks = {}
        for b in self.batches:
            try:
                with torch.inference_mode():
                    y = self._as_result(call(xs[b]))
                    ms, n, wall = self.time_fn(lambda: call(xs[b]))
                self.set(b, eager_ms=ms, eager_iters=n, eager_wall_ms=wall, eager_dtype=how)
                if b in refs:
                    if self.kind == "dcn":
                        checks[b] = {"rel_err": zoo.rel_err(y, refs[b]), "status": "info"}
                    else:
                        checks[b] = dict(compare_matched(refs[b], y, b), status="info")
                    self.set(b, check_torch_fp16=checks[b])
                self.done("eager", batches=[b])
            except Exception as e:  # noqa: BLE001
                self.done("eager", "error", _short(e, 600), batches=[b])
        return (m16, call), checks

    def _build(self, path, fp16, device):
        import graft
        kw = {}
        if device == "cuda" and "timing_cache" in inspect.signature(graft.Engine.build).parameters:
            kw["timing_cache"] = os.path.join(self.a.work_dir, f"{self.a.model}.timing")
        return graft.Engine.build(path, fp16=fp16, device=device,
                                  profile={"images": [tuple(s) for s in self.profile["images"]]}, **kw)

    def _engine_result(self, out):
        if self.kind == "dcn":
            return next(iter(out.values())).float().cpu()
        return as_detections(out)

    def _run_timed(self, eng, x):
        """One run for the comparison, then the timed loop, on CUDA tensors (torch's stream)."""
        x = x.contiguous()
        with self.torch.inference_mode():
            got = self._engine_result(eng.run({"images": x}))
            ms, n, wall = self.time_fn(lambda: eng.run({"images": x}))
        return got, ms, n, wall

    def run_graft_cuda(self, path, xs, refs, torch16):
        torch = self.torch
        self.stage("graft_build")
        t0 = time.perf_counter()
        try:
            eng = self._build(path, True, "cuda")
        except Exception as e:  # noqa: BLE001
            self.done("graft_build", "error", _short(e, 1500), graft_build_s=time.perf_counter() - t0)
            eng = None
        if eng is not None:
            desc = ""
            try:
                desc = eng.describe()
            except Exception:  # noqa: BLE001
                pass
            self.done("graft_build", graft_build_s=time.perf_counter() - t0, graft_describe=desc[-3000:])
            self.stage("graft_run")
            for b in self.batches:
                try:
                    got, ms, n, wall = self._run_timed(eng, xs[b])
                    self.set(b, graft_ms=ms, graft_iters=n, graft_wall_ms=wall)
                    if b in refs:
                        self.set(b, check_graft_fp16=self.check_fp16(b, got, refs[b], torch16.get(b, {})))
                    self.done("graft_run", batches=[b])
                except Exception as e:  # noqa: BLE001
                    self.done("graft_run", "error", _short(e, 1500), batches=[b])
        eng = None
        torch.cuda.empty_cache()
        self.stage("graft_fp32")
        t0 = time.perf_counter()
        try:
            eng = self._build(path, False, "cuda")
        except Exception as e:  # noqa: BLE001
            return self.done("graft_fp32", "error", f"build: {_short(e, 1500)}", graft_fp32_build_s=time.perf_counter() - t0)
        build_s = time.perf_counter() - t0
        for b in self.batches:
            try:
                got, ms, n, _ = self._run_timed(eng, xs[b])
                self.set(b, graft_fp32_ms=ms, graft_fp32_iters=n, graft_fp32_build_s=build_s)
                if b in refs:
                    self.set(b, check_graft_fp32=self.compare_fp32(got, refs[b], b, DENSE_CUDA_FP32_TOL))
                self.done("graft_fp32", batches=[b])
            except Exception as e:  # noqa: BLE001
                self.done("graft_fp32", "error", _short(e, 1500), batches=[b])

    def run_compile(self, m16, xs, refs, torch16):
        torch, a = self.torch, self.a
        self.stage("compile")
        if "compile" in a.skip or a.smoke or not self.cuda:
            return self.done("compile", "skipped", "--skip compile" if "compile" in a.skip else
                             "torch.compile is timed on the GPU only (--smoke / CPU run)")
        if not hasattr(torch, "compile"):
            return self.done("compile", "skipped", f"torch {torch.__version__} has no torch.compile")
        if m16 is None:
            return self.done("compile", "skipped", "no FP16 eager model to compile (the eager stage failed)")
        import torch._dynamo
        torch._dynamo.reset()
        model, _ = m16
        # Detectors have data-dependent shapes (graph breaks, no CUDA graphs): the default mode; the
        # DCN trunk has static shapes: reduce-overhead, as bench/zoo.py, unless its DCN layers are
        # torchvision's and a CUDA-graph replay of torchvision's deform_conv2d does not recompute its
        # output (its im2col kernel runs on the legacy default stream, outside any capture: see
        # bench/cuda_graphs.py). Replays would then skip the six column passes and give a wrong trunk
        # output; the default mode (no CUDA graphs) runs them.
        mode, mode_reason = a.compile_mode, "--compile-mode" if a.compile_mode else None
        if not mode and self.kind == "detector":
            mode, mode_reason = "default", "data-dependent shapes: no CUDA graphs"
        if not mode and self.kind == "dcn" and getattr(model, "impl", None) == "torchvision":
            import cuda_graphs
            from torchvision.ops import deform_conv2d
            safe, detail = cuda_graphs.deform_conv2d_graph_safe(torch, deform_conv2d)
            if safe is False:
                mode, mode_reason = "default", ("a CUDA-graph replay of torchvision.ops.deform_conv2d does not "
                                                f"recompute its output ({detail}): no CUDA graphs")
            else:
                mode_reason = f"torchvision.ops.deform_conv2d graph probe: {safe} ({detail})"
        mode = mode or "reduce-overhead"
        cm = torch.compile(model, mode=mode, dynamic=False)
        detector_tv = self.kind == "detector" and self.spec.get("torchvision")
        autocast = getattr(self, "eager_autocast", False)  # .half() failed in the eager stage

        def call(x):
            if autocast:
                with torch.autocast("cuda", dtype=torch.float16):
                    return cm(list(x) if detector_tv else x)
            return cm(list(x.half()) if detector_tv else x.half())
        t_stage = time.perf_counter()

        def on_alarm(signum, frame):
            raise zoo._Budget()

        old = signal.signal(signal.SIGALRM, on_alarm)
        try:
            for b in self.batches:
                left = a.compile_budget - (time.perf_counter() - t_stage)
                if left <= 1:
                    self.done("compile", "timeout", f"--compile-budget {a.compile_budget:.0f} s used up before batch {b}",
                              batches=[b])
                    continue
                signal.alarm(max(1, int(math.ceil(left))))
                try:
                    with torch.inference_mode():
                        t0 = time.perf_counter()
                        call(xs[b])
                        self.sync()
                        compile_s = time.perf_counter() - t0
                        ms, n, wall = self.time_fn(lambda: call(xs[b]))
                        y = self._as_result(call(xs[b]))
                    signal.alarm(0)
                    self.set(b, compile_ms=ms, compile_iters=n, compile_wall_ms=wall, compile_s=compile_s, compile_mode=mode,
                             compile_mode_reason=mode_reason)
                    if b in refs:
                        ch = self.check_fp16(b, y, refs[b])
                        ch["status"] = "info"
                        self.set(b, check_compile=ch)
                    self.done("compile", batches=[b])
                except Exception as e:  # noqa: BLE001  (the budget's interrupt itself, or wrapped by torch.compile)
                    signal.alarm(0)
                    if zoo._is_budget(e):
                        self.done("compile", "timeout", f"torch.compile did not finish within --compile-budget "
                                                        f"{a.compile_budget:.0f} s (batch {b})", batches=[b])
                    else:
                        self.done("compile", "error", _short(e, 600), batches=[b])
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)

    def run_graft_cpu(self, path, xs, refs):
        a = self.a
        self.stage("graft_cpu")
        if "cpu" in a.skip:
            return self.done("graft_cpu", "skipped", "--skip cpu")
        cpu_batches = [b for b in self.batches if b in a.cpu_batches] or self.batches[:1]
        others = [b for b in self.batches if b not in cpu_batches]
        if others:
            self.done("graft_cpu", "skipped", f"the CPU engine runs batches {cpu_batches} only (--cpu-batches)",
                      batches=others)
        t0 = time.perf_counter()
        try:
            eng = self._build(path, False, "cpu")
        except Exception as e:  # noqa: BLE001
            return self.done("graft_cpu", "error", f"build: {_short(e, 1500)}", batches=cpu_batches,
                             graft_cpu_build_s=time.perf_counter() - t0)
        build_s = time.perf_counter() - t0
        for b in cpu_batches:
            try:
                x = xs[b].cpu().contiguous()
                t1 = time.perf_counter()
                got = self._engine_result(eng.run({"images": x}))
                ms = (time.perf_counter() - t1) * 1e3
                self.set(b, graft_cpu_ms=ms, graft_cpu_build_s=build_s)
                if b in refs:
                    self.set(b, check_graft_cpu=self.compare_fp32(got, refs[b], b, DENSE_CPU_TOL))
                self.done("graft_cpu", batches=[b])
            except Exception as e:  # noqa: BLE001
                self.done("graft_cpu", "error", _short(e, 1500), batches=[b])


# ---------------------------------------------------------------------------------------------
# Parent
# ---------------------------------------------------------------------------------------------
def run_model(args, name, commit):
    rfile = os.path.join(args.work_dir, f"{name}.jsonl")
    open(rfile, "w").close()
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--model", name, "--result-file", rfile,
           "--work-dir", args.work_dir, "--device", args.device, "--commit", commit, "--iters", str(args.iters),
           "--warmup", str(args.warmup), "--max-seconds-per-config", str(args.max_seconds_per_config),
           "--compile-budget", str(args.compile_budget), "--batches", *map(str, args.batches),
           "--profile", *map(str, args.profile), "--cpu-batches", *map(str, args.cpu_batches)]
    for flag in ("smoke", "torch_cross_device"):
        if getattr(args, flag):
            cmd.append("--" + flag.replace("_", "-"))
    if args.dynamo_check:
        cmd += ["--dynamo-check", args.dynamo_check]
    if args.compile_mode:
        cmd += ["--compile-mode", args.compile_mode]
    if args.skip:
        cmd += ["--skip", *args.skip]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(args.work_dir, "inductor"))
    t0 = time.perf_counter()
    p, tail, th = zoo._spawn(cmd, env, "    ")
    zoo._current["proc"] = p
    timed_out = interrupted = False
    try:
        rc = p.wait(timeout=args.model_timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        zoo._kill_group(p)
        rc = p.wait()
    except KeyboardInterrupt:
        interrupted = True
        zoo._kill_group(p)
        rc = p.wait()
    finally:
        zoo._current["proc"] = None
    zoo._kill_group(p)
    th.join(timeout=5)
    elapsed = time.perf_counter() - t0
    records, stage = zoo.read_worker_events(rfile)
    if not records:
        records = {b: {"model": name, "batch": b, "commit": commit, "date": _now(), "device": args.device,
                       "smoke": bool(args.smoke)} for b in args.batches}
    if timed_out or interrupted or rc != 0:
        stage = stage or "model"
        log_tail = " | ".join(ln for ln in list(tail)[-8:] if ln.strip())[-600:]
        why = (f"timeout: the worker exceeded --model-timeout {args.model_timeout:.0f} s" if timed_out else
               "interrupted (the call's time limit or ^C)" if interrupted else
               f"the worker died (rc {rc}) during this stage; log tail: {log_tail}")
        for r in records.values():
            if r.get(f"{stage}_status") is None:
                r[f"{stage}_status"] = "timeout" if (timed_out or interrupted) else "error"
                r[f"{stage}_reason"] = why
            for s in STAGES[STAGES.index(stage) + 1:]:
                if r.get(f"{s}_status") is None:
                    r[f"{s}_status"] = "not run"
                    r[f"{s}_reason"] = f"the worker ended in stage {stage}"
            r["worker_exit"] = "timeout" if timed_out else ("interrupted" if interrupted else rc)
    out = []
    for b in args.batches:
        r = records.get(b) or dict(next(iter(records.values())), batch=b)
        r["model_s"] = round(elapsed, 1)
        out.append(finalize(r))
    if interrupted:
        raise KeyboardInterrupt(out)
    return out


# The plot's contenders: record field, label, colour.
PLOT_SERIES = (("graft_ms", "graft FP16", "#4c72b0"), ("graft_fp32_ms", "graft FP32", "#8fb0d9"),
               ("eager_ms", "PyTorch eager FP16", "#dd8452"), ("compile_ms", "torch.compile FP16", "#55a868"))


def plot(records, path):
    """Milliseconds per run of every contender, per (model, batch), log scale; an x marks a contender
    without a number. Returns the path, or None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("detection: matplotlib is not importable: no plot written", file=sys.stderr, flush=True)
        return None
    rows = sorted(records, key=lambda r: (r.get("model", ""), r.get("batch", 0)))
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(rows) + 2), 4.5))
    width = 0.8 / len(PLOT_SERIES)
    values = []
    for i, (field, label, color) in enumerate(PLOT_SERIES):
        xs, ys = [], []
        for j, r in enumerate(rows):
            x = j + (i - (len(PLOT_SERIES) - 1) / 2) * width
            v = zoo_plot.num(r.get(field))
            if v is not None and v > 0 and math.isfinite(v):
                xs.append(x)
                ys.append(v)
            else:
                ax.plot([x], [0.03], marker="x", color=color, transform=ax.get_xaxis_transform(), clip_on=False)
        ax.bar(xs, ys, width, color=color, label=label)
        values += ys
    ax.set_yscale("log")
    if values:
        ax.set_ylim(min(values) / 1.5, max(values) * 1.5)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([f"{r.get('model')}\nbatch {r.get('batch')}" for r in rows], fontsize=8)
    ax.set_ylabel("ms per run (log; lower is better)")
    commits = ", ".join(sorted({str(r.get("commit")) for r in rows}))
    gpus = ", ".join(sorted({str(r.get("gpu") or r.get("device")) for r in rows}))
    ax.set_title(f"detection models, dynamic batch, in one process ({gpus}, commit {commits}; x: no number)",
                 fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def save(out_dir, records):
    os.makedirs(out_dir, exist_ok=True)
    zoo._write_json_atomic(os.path.join(out_dir, "detection.json"), zoo_plot.json_safe(records))
    text = summary(records)
    if plot(records, os.path.join(out_dir, "detection.png")):
        text += "\n![graft, PyTorch eager and torch.compile per model and batch](detection.png)\n"
    with open(os.path.join(out_dir, "detection.md"), "w") as f:
        f.write(text)
    return text


def parent(args):
    table = model_table(args.smoke)
    names = args.models or list(table)
    unknown = [m for m in names if m not in table]
    if unknown:
        raise SystemExit(f"error: unknown model(s) {unknown}; models{' (--smoke)' if args.smoke else ''}: "
                         f"{' '.join(table)}")
    import torch
    if args.device is None:
        args.device = "cuda" if torch.cuda.is_available() and not args.smoke else "cpu"
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"error: no CUDA device for torch {torch.__version__} (use --smoke or --device cpu)", file=sys.stderr)
        return 1
    path = os.path.join(args.out, "detection.json")
    records = [] if args.fresh or not os.path.exists(path) else zoo.load_results(path)
    if not records and not args.fresh:
        for f in args.previous or []:  # earlier calls' records, e.g. docs/results/detection/detection.json
            if os.path.exists(f):
                records = zoo_plot.merge([records, zoo.load_results(f)])
                _log(f"detection: starting from {f} ({len(records)} records)")
    commit = zoo.commit_id(args.commit)
    args.work_dir = args.work_dir or tempfile.mkdtemp(prefix="graft_detection_")
    os.makedirs(args.work_dir, exist_ok=True)
    _log(f"detection: {' '.join(names)} on {args.device}, commit {commit}, out {args.out}")
    for m in names:
        if table[m].get("torchvision") and zoo._torchvision() is None:
            recs = [finalize({"model": m, "batch": b, "commit": commit, "date": _now(), "device": args.device,
                              "model_status": "error", "model_reason": "torchvision is not importable: this model "
                              "is torchvision's detector"}) for b in args.batches]
        else:
            _log(f"[{m}] starting (limit {args.model_timeout:.0f} s)")
            try:
                recs = run_model(args, m, commit)
            except KeyboardInterrupt as e:
                recs = e.args[0] if e.args else []
                records = [r for r in records if r.get("model") != m] + recs
                save(args.out, records)
                print("detection: interrupted; detection.json holds what finished", file=sys.stderr)
                return 130
        records = [r for r in records if r.get("model") != m] + recs
        save(args.out, records)
        for r in recs:
            _log(f"[{m}] batch {r['batch']}: {r['status']}" + (f" at {r['stage']}: {r['reason']}" if r.get("stage") else ""))
    text = save(args.out, records)
    print(text, flush=True)
    mine = [r for r in records if r.get("model") in names]
    return 0 if all(r.get("status") == "ok" for r in mine) else 3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=None, help="default: every model (--smoke: the tiny ones)")
    ap.add_argument("--out", default=os.path.join(_REPO, "docs", "results", "detection"),
                    help="directory of detection.json (models run now replace their records) and detection.md")
    ap.add_argument("--fresh", action="store_true", help="start a new detection.json")
    ap.add_argument("--previous", nargs="+", default=None, metavar="JSON",
                    help="records to start from when <out>/detection.json does not exist (other models' rows are kept)")
    ap.add_argument("--work-dir", default=None, help="ONNX files, input images (.npy), worker records, timing caches (default: a temp dir)")
    ap.add_argument("--device", default=None, help="cuda (default when present) or cpu (--smoke default)")
    ap.add_argument("--batches", nargs="+", type=int, default=None, help="default 1 8 (--smoke: 1 3)")
    ap.add_argument("--profile", nargs=3, type=int, default=None, metavar=("MIN", "OPT", "MAX"),
                    help="the engines' batch profile (default 1 4 8; --smoke 1 2 3)")
    ap.add_argument("--cpu-batches", nargs="+", type=int, default=None,
                    help="batches run on graft's CPU engine (default: every batch with --smoke, else 1)")
    ap.add_argument("--iters", type=int, default=None, help="timed iterations (default 30; --smoke 2)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up iterations (default 5; --smoke 1)")
    ap.add_argument("--max-seconds-per-config", type=float, default=3.0, help="cap on one timed loop")
    ap.add_argument("--model-timeout", type=float, default=None, help="per model's worker (default 540 s; --smoke 300)")
    ap.add_argument("--compile-budget", type=float, default=150.0, help="torch.compile's seconds per model")
    ap.add_argument("--compile-mode", default=None, help="torch.compile mode (default: default for detectors, "
                                                         "reduce-overhead for the DCN trunk)")
    ap.add_argument("--dynamo-check", nargs="?", const="dcn", default=None, choices=["dcn", "all"],
                    help="also try the dynamo exporter (recorded, not used): for the DCN model, or 'all'")
    ap.add_argument("--skip", nargs="*", default=[], choices=["eager", "compile", "graft", "cpu"])
    ap.add_argument("--torch-cross-device", action="store_true",
                    help="detector on CUDA: also run PyTorch's FP32 reference on the CPU and compare it with its CUDA run")
    ap.add_argument("--commit", default=None)
    ap.add_argument("--smoke", action="store_true", help="CPU test: tiny_rcnn and dcn_resnet50_c4_tiny, 64x64")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--result-file", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    s = args.smoke
    args.batches = args.batches or list(SMOKE_BATCHES if s else BATCHES)
    args.profile = args.profile or list(SMOKE_PROFILE if s else PROFILE)
    args.cpu_batches = args.cpu_batches or (list(args.batches) if s else [1])
    args.iters = args.iters if args.iters is not None else (2 if s else 30)
    args.warmup = args.warmup if args.warmup is not None else (1 if s else 5)
    args.model_timeout = args.model_timeout or (300 if s else 540)
    if not (args.profile[0] <= args.profile[1] <= args.profile[2]):
        ap.error("--profile wants MIN <= OPT <= MAX")
    if any(not (args.profile[0] <= b <= args.profile[2]) for b in args.batches):
        ap.error("every --batches value must lie in the profile")
    if args.worker:
        return DetWorker(args).run()

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        return parent(args)
    except KeyboardInterrupt:
        p = zoo._current.get("proc")
        if p is not None:
            zoo._kill_group(p)
        return 130
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        print(f"error: the detection harness failed: {_short(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
