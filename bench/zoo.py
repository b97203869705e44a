#!/usr/bin/env python3
"""Model-zoo benchmark (issue 14): torchvision models with a dynamic batch axis, graft vs PyTorch.

Every classification model of torchvision.models and the torchvision.models.segmentation models
(random weights, fixed seed, nothing downloaded) is exported once to FP32 ONNX with a dynamic batch
axis (TorchScript exporter, then the dynamo exporter as fallback) and cached. Then, one worker
process per model does what a user's script does: runs the model in PyTorch on the GPU (FP32
reference, eager FP16, torch.compile reduce-overhead FP16) and, in that same process, builds the
ONNX file with graft.Engine.build(fp16=True, profile batch 1..32) and runs it on torch's current
stream at batch 1 and 32. Records go to <out>/zoo.json (appended across calls), with a summary
(<out>/zoo.md) and a plot (<out>/zoo.png) written by bench/zoo_plot.py.

    export PYTHONPATH=python:build/python GRAFT_LIB_DIR=build/python/graft
    python3 bench/zoo.py --list                                           # the models, nothing run
    python3 bench/zoo.py --export-only --jobs 8 --cache /tmp/zoo_cache    # fill the ONNX cache (CPU)
    python3 bench/zoo.py --cache /tmp/zoo_cache --out docs/results --skip-done --time-budget 540
    /usr/bin/python3 bench/zoo.py --smoke --out /tmp/zoo_smoke            # CPU, tiny models

A run can be split over calls: --shard i/n takes every n-th model, --skip-done skips models that
already have records of the current commit in <out>/zoo.json, and --time-budget stops starting new models when the call's
time is nearly spent. Each model's worker has a time limit (--model-timeout); torch.compile has its
own budget inside it (--compile-budget). A model that fails anywhere (export, reference, eager,
graft build, graft run, compile, accuracy) is a record whose status/stage/reason say where and why.
Exit status: 0 when every model that ran is "ok", 3 when some record is not, 1 on harness errors.
"""
import argparse
import copy
import datetime
import inspect
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_HERE)
sys.path.insert(0, _HERE)

import zoo_plot  # noqa: E402  (summary, markdown and plot; no torch needed)

SEED = 20240607
# Batch sizes timed, and the engine's optimization profile (min, opt, max batch): the issue's
# deployment case, one engine for batch 1 to 32.
BATCHES = (1, 32)
PROFILE = (1, 8, 32)
SMOKE_BATCHES = (1, 4)
SMOKE_PROFILE = (1, 2, 4)

# The models that represent each torchvision family, run first so that a run cut short by the
# device's time limits still covers the zoo's breadth; everything else follows in name order,
# the largest models last.
CORE = [
    "resnet50", "mobilenet_v3_large", "vit_b_16", "swin_t", "resnet18", "mobilenet_v2", "mobilenet_v3_small",
    "efficientnet_b0", "regnet_y_400mf", "convnext_tiny", "densenet121", "vgg16", "squeezenet1_1",
    "shufflenet_v2_x1_0", "mnasnet1_0", "googlenet", "inception_v3", "resnext50_32x4d", "wide_resnet50_2",
    "efficientnet_v2_s", "regnet_x_1_6gf", "maxvit_t", "vit_b_32", "swin_v2_t", "alexnet",
    "fcn_resnet50", "deeplabv3_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large",
]
# Big enough (> 1 GB of FP32 weights, or > 100 GFLOPs per image) to be run last.
LAST = ["vit_l_16", "vit_l_32", "regnet_y_32gf", "regnet_y_128gf", "vit_h_14", "efficientnet_b7",
        "efficientnet_v2_l"]
# Used when torchvision is too old for list_models(): torchvision 0.13's classification models.
_FALLBACK_CLASSIFICATION = [
    "alexnet", "convnext_tiny", "convnext_small", "convnext_base", "convnext_large", "densenet121",
    "densenet161", "densenet169", "densenet201", "efficientnet_b0", "efficientnet_b1", "efficientnet_b2",
    "efficientnet_b3", "efficientnet_b4", "efficientnet_b5", "efficientnet_b6", "efficientnet_b7",
    "efficientnet_v2_s", "efficientnet_v2_m", "efficientnet_v2_l", "googlenet", "inception_v3", "maxvit_t",
    "mnasnet0_5", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3", "mobilenet_v2", "mobilenet_v3_large",
    "mobilenet_v3_small", "regnet_x_400mf", "regnet_x_800mf", "regnet_x_1_6gf", "regnet_x_3_2gf",
    "regnet_x_8gf", "regnet_x_16gf", "regnet_x_32gf", "regnet_y_400mf", "regnet_y_800mf", "regnet_y_1_6gf",
    "regnet_y_3_2gf", "regnet_y_8gf", "regnet_y_16gf", "regnet_y_32gf", "regnet_y_128gf", "resnet18",
    "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d", "resnext101_32x8d",
    "resnext101_64x4d", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0",
    "squeezenet1_0", "squeezenet1_1", "swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s", "swin_v2_b",
    "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn", "vit_b_16", "vit_b_32",
    "vit_l_16", "vit_l_32", "vit_h_14", "wide_resnet50_2", "wide_resnet101_2"]
_FALLBACK_SEGMENTATION = ["deeplabv3_mobilenet_v3_large", "deeplabv3_resnet50", "deeplabv3_resnet101",
                          "fcn_resnet50", "fcn_resnet101", "lraspp_mobilenet_v3_large"]
# Without torchvision (the dev machine's torch 1.13), the smoke run uses hand-written nets.
SMOKE_TV = ["resnet18", "mobilenet_v3_small", "lraspp_mobilenet_v3_large"]
SMOKE_PLAIN = ["tiny_cnn", "tiny_sepnet", "tiny_segnet"]

STAGES = ("model", "export", "reference", "ort", "eager", "graft_build", "graft_run", "compile")


def _log(*a):
    print(*a, file=sys.stderr, flush=True)


def _short(e, n=500):
    """First line of an exception (or message), trimmed: what a record's reason holds."""
    s = str(e).strip()
    lines = [ln.strip() for ln in s.splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    if isinstance(e, BaseException):
        first = f"{type(e).__name__}: {first}" if first else type(e).__name__
    return first if len(first) <= n else first[: n - 3] + "..."


# ---------------------------------------------------------------------------------------------
# The zoo: names, how to build each model, its input shape
# ---------------------------------------------------------------------------------------------
def _torchvision():
    try:
        import torchvision
        return torchvision
    except Exception:  # noqa: BLE001 - ImportError, or a torchvision built for another torch
        return None


def zoo_names(smoke=False, listing=False):
    """(ordered model names, {name: task}). Classification from torchvision.models, segmentation
    from torchvision.models.segmentation; CORE first, LAST last. listing=True (--list) works
    without torchvision, from the fixed list."""
    tv = _torchvision()
    if smoke:
        names = SMOKE_TV if tv is not None else SMOKE_PLAIN
        return list(names), {n: ("segmentation" if "seg" in n or "lraspp" in n else "classification") for n in names}
    if tv is None and not listing:
        raise SystemExit("error: torchvision is not importable: the zoo needs it (--smoke tests the pipeline "
                         "without it)")
    models = tv.models if tv is not None else None
    if tv is None:
        _log("zoo: torchvision is not importable: listing the fixed fallback list")
        cls, seg = list(_FALLBACK_CLASSIFICATION), list(_FALLBACK_SEGMENTATION)
    elif hasattr(models, "list_models"):
        try:
            cls = models.list_models(module=models)
            seg = models.list_models(module=models.segmentation)
        except TypeError:  # list_models without the module argument (torchvision 0.14)
            allm = models.list_models()
            seg = [n for n in allm if hasattr(models.segmentation, n)]
            cls = [n for n in allm if hasattr(models, n) and n not in seg and not hasattr(models.detection, n)
                   and not hasattr(models.video, n) and not hasattr(models.optical_flow, n)
                   and not n.startswith("quantized_")]
    else:
        cls = [n for n in _FALLBACK_CLASSIFICATION if hasattr(models, n)]
        seg = [n for n in _FALLBACK_SEGMENTATION if hasattr(models.segmentation, n)]
    task = {n: "classification" for n in cls}
    task.update({n: "segmentation" for n in seg})
    everything = sorted(task)
    order = [n for n in CORE if n in task]
    order += [n for n in everything if n not in order and n not in LAST]
    order += [n for n in LAST if n in task and n not in order]
    return order, task


def input_hw(name, smoke, image_size=None):
    if image_size:
        return (image_size, image_size)
    if smoke:
        return (32, 32)
    # Inception v3's stem needs 299x299 (its reference size); everything else runs at 224x224.
    return (299, 299) if name == "inception_v3" else (224, 224)


def _wrap_segmentation(torch, model):
    """Segmentation models return {"out": ..., ("aux": ...)}; the benchmark (and the ONNX file)
    use out["out"], the tensor a user would read."""
    class SegOut(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(x)["out"]

    return SegOut(model)


def _plain_models(torch, name):
    """Tiny nets in plain torch for the smoke run without torchvision: a conv/BN/ReLU net, a
    depthwise-separable net with a residual and squeeze-excitation gating, and a dict-returning
    segmentation net with bilinear upsampling (the shape of torchvision's segmentation heads)."""
    nn = torch.nn
    if name == "tiny_cnn":
        def block(cin, cout, stride):
            return [nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]
        return nn.Sequential(*block(3, 8, 2), *block(8, 8, 1), *block(8, 16, 2), *block(16, 16, 1),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))

    if name == "tiny_sepnet":
        class SE(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.fc1, self.fc2 = nn.Conv2d(c, c // 2, 1), nn.Conv2d(c // 2, c, 1)

            def forward(self, x):
                s = x.mean((2, 3), keepdim=True)
                return x * torch.sigmoid(self.fc2(torch.relu(self.fc1(s))))

        class Sep(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.dw = nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False)
                self.bn1 = nn.BatchNorm2d(c)
                self.pw = nn.Conv2d(c, c, 1, bias=False)
                self.bn2 = nn.BatchNorm2d(c)
                self.se = SE(c)

            def forward(self, x):
                y = nn.functional.hardswish(self.bn1(self.dw(x)))
                return x + self.se(self.bn2(self.pw(y)))

        return nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.Hardswish(), Sep(16), Sep(16),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(16, 10))

    if name == "tiny_segnet":
        class TinySeg(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU(),
                                          nn.Conv2d(16, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU())
                self.head = nn.Conv2d(16, 5, 1)

            def forward(self, x):
                y = self.head(self.body(x))
                return {"out": nn.functional.interpolate(y, size=x.shape[-2:], mode="bilinear",
                                                         align_corners=False)}

        return TinySeg()
    raise KeyError(name)


def make_model(name, task, smoke):
    """The model (CPU, FP32, eval, random weights from SEED) with one tensor output."""
    import torch
    torch.manual_seed(SEED)
    tv = _torchvision()
    if name in SMOKE_PLAIN:
        m = _plain_models(torch, name)
    elif task == "segmentation":
        # weights_backbone=None too: its default is the ImageNet backbone, which would be downloaded.
        m = getattr(tv.models.segmentation, name)(weights=None, weights_backbone=None)
    else:
        kw = {"weights": None}
        if name in ("googlenet", "inception_v3"):
            # The auxiliary classifiers are training-only; init_weights=True says which init to use
            # (torchvision warns otherwise).
            kw.update(aux_logits=False, init_weights=True)
        builder = getattr(tv.models, "get_model", None)
        m = builder(name, **kw) if builder is not None else getattr(tv.models, name)(**kw)
    if task == "segmentation":
        m = _wrap_segmentation(torch, m)
    # torchvision zero-initializes some classification heads (ViT): every output would be 0 and
    # every accuracy comparison meaningless, so such layers get small random weights.
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, (torch.nn.Linear, torch.nn.Conv2d)) and not mod.weight.any():
                torch.nn.init.normal_(mod.weight, std=0.02)
                if mod.bias is not None:
                    torch.nn.init.normal_(mod.bias, std=0.02)
    return m.eval()


def make_input(batch, hw, device="cpu", dtype=None):
    """The same input in every process and on every device for a given batch (seeded on the CPU)."""
    import torch
    g = torch.Generator().manual_seed(SEED + 7919 * batch)
    x = torch.randn((batch, 3) + tuple(hw), generator=g)
    return x.to(device=device, dtype=dtype or torch.float32)


# ---------------------------------------------------------------------------------------------
# The export cache: <cache>/<model>_<H>x<W>.{onnx,pt,json}
# ---------------------------------------------------------------------------------------------
def cache_paths(cache, name, hw):
    base = os.path.join(cache, f"{name}_{hw[0]}x{hw[1]}")
    return {"onnx": base + ".onnx", "state": base + ".pt", "meta": base + ".json", "timing": base + ".timing"}


def read_meta(cache, name, hw):
    p = cache_paths(cache, name, hw)
    try:
        with open(p["meta"]) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return None
    if meta.get("status") == "ok" and not (os.path.exists(p["onnx"]) and os.path.exists(p["state"])):
        return None
    return meta


def _write_json_atomic(path, obj):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def _export_file(torch, model, x, path, exporter, opset=None):
    """torch.onnx.export with a dynamic batch axis named 'batch' on the input and the output
    (opset: the exporter's default unless given)."""
    params = inspect.signature(torch.onnx.export).parameters
    if exporter == "torchscript":
        kw = {} if opset is None else {"opset_version": opset}
        if "dynamo" in params:
            kw["dynamo"] = False  # torch >= 2.9 defaults to the dynamo exporter
        torch.onnx.export(model, (x,), path, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, **kw)
        return
    if "dynamo" not in params:
        raise RuntimeError(f"torch {torch.__version__} has no dynamo ONNX exporter")
    dim = getattr(torch.export.Dim, "DYNAMIC", None) or torch.export.Dim("batch")
    kw = {}
    if "external_data" in params:
        # One self-contained file below protobuf's 2 GB limit; the biggest models need external data.
        nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
        kw["external_data"] = nbytes > 1.8e9
    torch.onnx.export(model, (x,), path, dynamo=True, input_names=["input"], output_names=["output"],
                      dynamic_shapes=({0: dim},), **kw)


def ensure_export(name, task, hw, cache, smoke, retry=False, calib_device="cpu", model=None, exporter="auto"):
    """Returns the cache entry's meta, exporting first when there is none. The model's weights
    (BatchNorm statistics calibrated on random data) are saved beside the ONNX file, so every
    later process compares graft against exactly the weights in the file. `model`: the freshly
    built model, to save building it twice (its BatchNorm statistics are calibrated in place)."""
    import torch
    from models import _calibrate_batchnorm  # bench/models.py: why calibration matters
    os.makedirs(cache, exist_ok=True)
    meta = read_meta(cache, name, hw)
    forced_other = exporter != "auto" and meta is not None and meta.get("exporter") != exporter
    if meta is not None and (meta.get("status") == "ok" or not retry) and not forced_other:
        meta["cached"] = True
        return meta
    p = cache_paths(cache, name, hw)
    t0 = time.perf_counter()
    model = model if model is not None else make_model(name, task, smoke)
    if any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        # Random BN statistics (mean 0, var 1) let activations of deep random nets grow past the
        # fp16 range; calibrated ones keep them realistic (see bench/models.py).
        dev = torch.device(calib_device)
        model.to(dev)
        torch.manual_seed(SEED + 1)
        _calibrate_batchnorm(model, make_input(4, hw, dev))
        model.cpu().eval()
    torch.save(model.state_dict(), p["state"] + ".tmp")
    os.replace(p["state"] + ".tmp", p["state"])
    x = make_input(2, hw)  # batch 2, so no exporter can mistake the batch axis for a constant 1
    errors = []
    meta = {"model": name, "task": task, "input_hw": list(hw), "torch": torch.__version__}
    for exp in (("torchscript", "dynamo") if exporter == "auto" else (exporter,)):
        try:
            t1 = time.perf_counter()
            with torch.no_grad():
                _export_file(torch, model, x, p["onnx"], exp)
            meta.update(status="ok", exporter=exp, export_s=round(time.perf_counter() - t1, 2),
                        onnx_mib=round(os.path.getsize(p["onnx"]) / 2**20, 1))
            break
        except Exception as e:  # noqa: BLE001 - try the next exporter, then record both reasons
            errors.append(f"{exp}: {_short(e, 300)}")
    else:
        meta.update(status="failed", reason="; ".join(errors))
    if errors and meta["status"] == "ok":
        meta["export_note"] = "; ".join(errors)
    meta["prepare_s"] = round(time.perf_counter() - t0, 2)
    meta["date"] = _now()
    _write_json_atomic(p["meta"], meta)
    meta["cached"] = False
    return meta


# ---------------------------------------------------------------------------------------------
# Worker: one model, in one process, as a user's script would run it
# ---------------------------------------------------------------------------------------------
def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def native_stderr(fn):
    """Runs fn with the process's file descriptor 2, where graft's C++ engine writes its traces,
    going to a temporary file; returns fn's result and the text written there."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+") as f:
        os.dup2(f.fileno(), 2)
        try:
            result = fn()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        return result, f.read()


def _median(v):
    s = sorted(v)
    n = len(s)
    if not n:
        return None
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def rel_err(y, ref):
    """||y - ref|| / ||ref|| over the whole output in float64 (NaN/inf stay as such)."""
    import torch
    if tuple(y.shape) != tuple(ref.shape):
        raise RuntimeError(f"output shape {tuple(y.shape)} differs from the reference's {tuple(ref.shape)}")
    y64 = y.detach().to("cpu", torch.float64).reshape(-1)
    r64 = ref.detach().to("cpu", torch.float64).reshape(-1)
    d = float(r64.norm())
    if d == 0.0:
        raise RuntimeError("the FP32 reference output is all zeros")
    return float((y64 - r64).norm()) / d


def time_fn(torch, fn, cuda, warmup, iters, max_seconds):
    """(median ms, iterations, median wall ms) of fn() until its work is done: CUDA events on
    the current stream around each call (host clock on the CPU), after warm-up; the wall clock
    (call + device sync) is a cross-check. The loop is cut to about max_seconds (at least 5
    iterations) so slow engines cannot eat the run."""
    t0 = time.perf_counter()
    n = 0
    for n in range(1, warmup + 1):
        fn()
        if n % 4 == 0:
            if cuda:
                torch.cuda.synchronize()
            if time.perf_counter() - t0 > max_seconds / 3:
                break
    if cuda:
        torch.cuda.synchronize()
    per = (time.perf_counter() - t0) / max(n, 1)
    iters = max(min(iters, 5), min(iters, int(max_seconds / max(per, 1e-9))))
    ms, wall = [], []
    for _ in range(iters):
        t = time.perf_counter()
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            # A whole-device sync, not just the event: the host clock then also covers work a
            # contender might leave on another stream (the events would not see it).
            torch.cuda.synchronize()
            wall.append((time.perf_counter() - t) * 1e3)
            ms.append(s.elapsed_time(e))
        else:
            fn()
            wall.append((time.perf_counter() - t) * 1e3)
            ms.append(wall[-1])
    return _median(ms), len(ms), _median(wall)


def time_in_turns(timer, runs, rounds):
    """{name: [ms of each round]}: every round times each callable of `runs` (name -> fn, in that
    order, reversed every other round) with timer(fn), so drift over the rounds reaches each alike."""
    names = list(runs)
    out = {k: [] for k in names}
    for r in range(rounds):
        for k in (names if r % 2 == 0 else names[::-1]):
            out[k].append(timer(runs[k]))
    return out


class _Budget(Exception):
    pass


def _is_budget(e):
    """Whether exception e is the compile budget's interrupt, raised inside torch.compile and handed
    back wrapped: Inductor re-raises what interrupts it as InductorError or BackendCompilerFailed,
    keeping the original as the cause (or as inner_exception)."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, _Budget):
            return True
        seen.add(id(e))
        e = getattr(e, "inner_exception", None) or e.__cause__ or e.__context__
    return False


class Worker:
    stages = STAGES  # a subclass with other stages (bench/detection.py) names its own

    def __init__(self, args):
        import torch
        self.torch = torch
        self.a = args
        self.dev = torch.device(args.device)
        self.cuda = self.dev.type == "cuda"
        self.hw = input_hw(args.model, args.smoke, args.image_size)
        self.batches = args.batches
        self.t_start = time.perf_counter()
        self.out = open(args.result_file, "a")
        self.tag = f"[{args.index} {args.model}]"
        p = args.profile
        shape = lambda b: [b, 3, self.hw[0], self.hw[1]]  # noqa: E731
        self.profile_shapes = {"input": [shape(p[0]), shape(p[1]), shape(p[2])]}
        self.recs = {b: self._base(b) for b in self.batches}

    def _base(self, b):
        a, torch = self.a, self.torch
        r = {"model": a.model, "task": a.task, "batch": b, "profile": "dynamic", "profile_shapes": self.profile_shapes,
             "input_shape": [b, 3, self.hw[0], self.hw[1]], "commit": a.commit, "date": _now(),
             "torch": torch.__version__, "device": str(self.dev), "smoke": bool(a.smoke),
             "gpu": torch.cuda.get_device_name(self.dev) if self.cuda else None,
             "graft_ms": None, "eager_ms": None, "compile_ms": None,
             "graft_rel_err": None, "torch_fp16_rel_err": None, "compile_rel_err": None,
             "ort_rel_err": None, "graft_vs_ort_rel_err": None}
        tv = _torchvision()
        r["torchvision"] = getattr(tv, "__version__", None)
        for s in STAGES:
            r[f"{s}_status"] = None
        return r

    # -- plumbing --------------------------------------------------------------------------------
    def emit(self, kind, **kw):
        self.out.write(json.dumps(zoo_plot.json_safe({"kind": kind, **kw})) + "\n")
        self.out.flush()

    def flush_records(self):
        for b in self.batches:
            self.emit("record", **self.recs[b])

    def stage(self, name):
        self.cur = name
        self.stage_t0 = time.perf_counter()
        self.emit("stage", stage=name)
        _log(f"{self.tag} {name} ... (t={time.perf_counter() - self.t_start:.1f}s)")
        # Test hooks (bench/test_zoo.py): a crash or a hang in a given stage must become a record.
        if os.environ.get("GRAFT_ZOO_TEST_CRASH") == name:
            os.kill(os.getpid(), signal.SIGSEGV)
        if os.environ.get("GRAFT_ZOO_TEST_HANG") == name:
            time.sleep(3600)

    def done(self, name, status="ok", reason=None, batches=None, **fields):
        dt = time.perf_counter() - self.stage_t0
        for b in batches or self.batches:
            r = self.recs[b]
            r[f"{name}_status"] = status
            if reason:
                r[f"{name}_reason"] = reason
            r.update(fields)
        self.flush_records()
        _log(f"{self.tag} {name} {status} in {dt:.1f}s" + (f": {reason}" if reason else ""))

    def set(self, b, **fields):
        self.recs[b].update(fields)

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def time_fn(self, fn):
        a = self.a
        return time_fn(self.torch, fn, self.cuda, a.warmup, a.iters, a.max_seconds_per_config)

    @staticmethod
    def first_tensor(y):
        if isinstance(y, dict):
            y = y["output"] if "output" in y else (y["out"] if "out" in y else next(iter(y.values())))
        if isinstance(y, (tuple, list)):
            y = y[0]
        return y

    # -- the model's life in one process -------------------------------------------------------------
    def run(self):
        try:
            self._run()
        except Exception as e:  # noqa: BLE001 - a harness bug: still a record that says so
            stage = getattr(self, "cur", "model")
            self.done(stage, "error", f"harness error in stage {stage}: {_short(e)}")
        # Stages left out because an earlier one failed say so (no silent gaps in a record).
        for r in self.recs.values():
            failed = next((s for s in self.stages if r.get(f"{s}_status") not in (None, "ok", "skipped")), None)
            for s in self.stages:
                if r.get(f"{s}_status") is None:
                    r[f"{s}_status"] = "not run"
                    r[f"{s}_reason"] = f"stage {failed} failed" if failed else "not reached"
        self.flush_records()
        self.out.close()
        sys.stderr.flush()
        # Leave without interpreter teardown: inductor's compile workers and CUDA-graph pools can
        # hang or crash at exit, which would turn a finished model into a timeout.
        os._exit(0)

    def _run(self):
        torch, a = self.torch, self.a
        if self.cuda:
            torch.backends.cudnn.benchmark = True  # PyTorch's fastest convolutions for its contenders
        self.stage("model")
        try:
            model = make_model(a.model, a.task, a.smoke)
        except Exception as e:  # noqa: BLE001
            return self.done("model", "error", _short(e))
        self.done("model")

        self.stage("export")
        try:
            meta = ensure_export(a.model, a.task, self.hw, a.cache, a.smoke, retry=a.retry_failed,
                                 calib_device=str(self.dev), model=model, exporter=a.exporter)
        except Exception as e:  # noqa: BLE001
            meta = {"status": "failed", "reason": f"preparing the export failed: {_short(e)}"}
        info = {k: meta.get(k) for k in ("exporter", "onnx_mib", "export_s", "export_note") if meta.get(k) is not None}
        info["export_cached"] = bool(meta.get("cached"))
        if meta.get("status") != "ok":
            return self.done("export", "error", meta.get("reason", "export failed"), **info)
        paths = cache_paths(a.cache, a.model, self.hw)
        model.load_state_dict(torch.load(paths["state"], map_location="cpu"))
        model.eval()
        self.done("export", **info)

        xs = {b: make_input(b, self.hw, self.dev) for b in self.batches}

        # FP32 reference: real FP32 (no TF32), the baseline for graft's and PyTorch's FP16 errors.
        self.stage("reference")
        refs = {}
        try:
            tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
            m32 = copy.deepcopy(model).to(self.dev)
            with torch.inference_mode():
                for b in self.batches:
                    refs[b] = self.first_tensor(m32(xs[b])).float().cpu()
                    if not torch.isfinite(refs[b]).all():
                        raise RuntimeError(f"the FP32 reference has non-finite values at batch {b}")
            del m32
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
            self.done("reference")
        except Exception as e:  # noqa: BLE001
            refs = {}
            self.done("reference", "error", _short(e))

        self.ort_out = self.run_ort(paths, xs, refs)
        m16 = self.run_eager(model, xs, refs)
        if a.skip_graft:
            for b in self.batches:
                self.set(b, **{"graft_build_status": "skipped", "graft_build_reason": "--skip graft"})
        else:
            self.run_graft(paths, meta, xs, refs)
        if self.cuda:
            torch.cuda.empty_cache()
        self.run_compile(m16, xs, refs)

    def run_ort(self, paths, xs, refs):
        """ONNX Runtime's CPU provider on the exported file, FP32, as a second reference: its error
        against PyTorch FP32 (ort_rel_err) checks the export itself, and graft's output is compared
        with it too (graft_vs_ort_rel_err). At the --ort-batches only (default: the smallest batch),
        since a CPU run of a large model at batch 32 would take much of a call. Not timed: a CPU
        provider is not a peer of a GPU engine. Missing onnxruntime is a skipped stage, not an error."""
        torch, a = self.torch, self.a
        self.stage("ort")
        batches = [b for b in self.batches if b in (a.ort_batches or [min(self.batches)])]
        others = [b for b in self.batches if b not in batches]
        if a.skip_ort:
            self.done("ort", "skipped", "--skip ort")
            return {}
        try:
            import onnxruntime as ort
        except Exception as e:  # noqa: BLE001
            self.done("ort", "skipped", f"onnxruntime is not installed ({_short(e, 120)})")
            return {}
        if others:
            self.done("ort", "skipped", "not an --ort-batches batch", batches=others)
        outs = {}
        try:
            sess = ort.InferenceSession(paths["onnx"], providers=["CPUExecutionProvider"])
            in_name, out_name = sess.get_inputs()[0].name, sess.get_outputs()[0].name
        except Exception as e:  # noqa: BLE001
            self.done("ort", "error", f"onnxruntime could not load the model: {_short(e)}", batches=batches)
            return {}
        for b in batches:
            try:
                y = sess.run([out_name], {in_name: xs[b].float().cpu().numpy()})[0]
                outs[b] = torch.from_numpy(y).float()
                if b in refs:
                    self.set(b, ort_rel_err=rel_err(outs[b], refs[b]))
                self.done("ort", batches=[b], ort_version=ort.__version__, ort_provider="CPUExecutionProvider")
            except Exception as e:  # noqa: BLE001
                self.done("ort", "error", _short(e), batches=[b])
        return outs

    def run_eager(self, model, xs, refs):
        torch, a = self.torch, self.a
        self.stage("eager")
        if a.skip_eager:
            self.done("eager", "skipped", "--skip eager")
            return None
        m16 = copy.deepcopy(model).to(self.dev)
        how = "fp16"
        try:
            m16 = m16.half()
            with torch.inference_mode():
                m16(xs[self.batches[0]].half())
        except Exception as e:  # noqa: BLE001
            if self.cuda:
                return self.done("eager", "error", _short(e))
            # torch 1.13 has no FP16 convolutions on the CPU: the smoke run emulates FP16 storage
            # (weights and input rounded to FP16, FP32 math) so the pipeline and the error ratio
            # still have numbers; GPU runs never take this path.
            m16 = copy.deepcopy(model).to(self.dev)
            with torch.no_grad():
                for p in list(m16.parameters()) + list(m16.buffers()):
                    if p.is_floating_point():
                        p.copy_(p.half().float())
            how = f"fp16-emulated on the CPU (FP16-rounded weights and input, FP32 math: {_short(e, 120)})"
        for b in self.batches:
            try:
                xh = xs[b].half() if how == "fp16" else xs[b].half().float()
                with torch.inference_mode():
                    y = self.first_tensor(m16(xh)).float()
                    ms, n, wall = self.time_fn(lambda: m16(xh))
                self.set(b, eager_ms=ms, eager_iters=n, eager_wall_ms=wall, eager_dtype=how)
                if b in refs:
                    self.set(b, torch_fp16_rel_err=rel_err(y, refs[b]))
                self.done("eager", batches=[b])
            except Exception as e:  # noqa: BLE001
                self.done("eager", "error", _short(e), batches=[b])
        return m16 if how == "fp16" else None

    def run_graft(self, paths, meta, xs, refs):
        torch, a = self.torch, self.a
        self.stage("graft_build")
        try:
            import graft
            from graft import _native
            version = _native.engine_module().version()
        except Exception as e:  # noqa: BLE001
            return self.done("graft_build", "error", f"graft's Python package or engine bindings did not load: "
                                                     f"{_short(e)}")
        kw = {}
        params = inspect.signature(graft.Engine.build).parameters
        cache_state = "off"
        if self.cuda and "timing_cache" in params and not a.no_timing_cache:
            # Tactic timings kept across calls: a rerun of the same model builds faster.
            cache_state = "hit" if os.path.exists(paths["timing"]) else "new"
            kw["timing_cache"] = paths["timing"]
        t0 = time.perf_counter()
        try:
            eng = graft.Engine.build(paths["onnx"], fp16=True, device=str(self.dev.type),
                                     profile={"input": [tuple(s) for s in self.profile_shapes["input"]]}, **kw)
        except Exception as e:  # noqa: BLE001
            return self.done("graft_build", "error", _short(e), graft_version=version,
                             graft_build_s=time.perf_counter() - t0)
        build_s = time.perf_counter() - t0
        ins, outs = eng.inputs, eng.outputs
        self.done("graft_build", graft_version=version, graft_build_s=build_s, graft_timing_cache=cache_state,
                  graft_engine_device=eng.device)
        for b, (variants, stem) in conv_tactics_by_batch(eng, self.batches).items():
            self.set(b, graft_conv_variants=variants, graft_stem_variant=stem)
        self.stage("graft_run")
        in_name, in_dtype = ins[0]["name"], ins[0]["dtype"]
        out_name = outs[0]["name"]
        for b in self.batches:
            try:
                if len(ins) != 1:
                    raise RuntimeError(f"expected one engine input, got {[i['name'] for i in ins]}")
                x = xs[b].to(getattr(torch, in_dtype)).contiguous()
                # CUDA tensors in: the engine runs on torch's current stream and returns CUDA
                # tensors, the way a user's script calls it.
                with torch.inference_mode():
                    y = eng.run({in_name: x})[out_name]
                    y = y.float().clone()
                    ms, n, wall = self.time_fn(lambda: eng.run({in_name: x}))
                self.set(b, graft_ms=ms, graft_iters=n, graft_wall_ms=wall)
                if b in refs:
                    self.set(b, graft_rel_err=rel_err(y, refs[b]))
                if b in getattr(self, "ort_out", {}):
                    self.set(b, graft_vs_ort_rel_err=rel_err(y, self.ort_out[b]))
                self.done("graft_run", batches=[b])
            except Exception as e:  # noqa: BLE001
                self.done("graft_run", "error", _short(e), batches=[b])
        if a.fixed_shape:
            self.run_graft_fixed(graft, eng, paths, xs, kw, in_name, in_dtype, out_name)
        eng = None  # frees the engine's device memory before torch.compile runs

    # Rounds in which the dynamic and the fixed-shape engine are timed in turns.
    FIXED_ROUNDS = 4

    def run_graft_fixed(self, graft, dyn_eng, paths, xs, kw, in_name, in_dtype, out_name):
        """The same model built for one shape per batch (min = opt = max): what a fixed-shape engine
        gives at that batch. It and the dynamic engine are timed in turns (FIXED_ROUNDS rounds, the
        order flipped each round, each round the zoo's own measurement), so drift between two
        sequential timings does not land in dynamic_over_fixed, the ratio of the two medians over
        rounds; graft_fixed_ms is the fixed engine's median. A failure is noted on the row
        (graft_fixed_error) without failing it: the dynamic engine is the measurement."""
        torch = self.torch
        for b in self.batches:
            shape = [b, 3, self.hw[0], self.hw[1]]
            t0 = time.perf_counter()
            try:
                eng = graft.Engine.build(paths["onnx"], fp16=True, device=str(self.dev.type),
                                         profile={in_name: [tuple(shape)] * 3}, **kw)
                build_s = time.perf_counter() - t0
                x = xs[b].to(getattr(torch, in_dtype)).contiguous()
                runs = {"dynamic": lambda: dyn_eng.run({in_name: x}), "fixed": lambda: eng.run({in_name: x})}
                with torch.inference_mode():
                    eng.run({in_name: x})[out_name]
                    rounds = time_in_turns(lambda fn: self.time_fn(fn)[0], runs, self.FIXED_ROUNDS)
                fixed, dyn = _median(rounds["fixed"]), _median(rounds["dynamic"])
                self.set(b, graft_fixed_ms=fixed, graft_fixed_rounds_ms=rounds["fixed"],
                         graft_dynamic_rounds_ms=rounds["dynamic"], graft_fixed_build_s=build_s,
                         dynamic_over_fixed=dyn / fixed)
            except Exception as e:  # noqa: BLE001
                self.set(b, graft_fixed_error=_short(e))
            eng = None

    def run_compile(self, m16, xs, refs):
        torch, a = self.torch, self.a
        self.stage("compile")
        if a.skip_compile or a.smoke:
            return self.done("compile", "skipped", "--smoke: torch.compile is not run" if a.smoke else "--skip compile")
        if not hasattr(torch, "compile"):
            return self.done("compile", "skipped", f"torch {torch.__version__} has no torch.compile")
        if m16 is None:
            return self.done("compile", "skipped", "no FP16 eager model to compile (the eager stage failed)")
        import torch._dynamo
        torch._dynamo.reset()
        # dynamic=False: one specialized graph per batch size, torch.compile's fastest code for a
        # known shape (what its users do for fixed-size serving).
        cm = torch.compile(m16, mode="reduce-overhead", dynamic=False)
        t_stage = time.perf_counter()

        def on_alarm(signum, frame):
            raise _Budget()

        old = signal.signal(signal.SIGALRM, on_alarm)
        try:
            for b in self.batches:
                left = a.compile_budget - (time.perf_counter() - t_stage)
                if left <= 1:
                    self.done("compile", "timeout", f"torch.compile's budget (--compile-budget {a.compile_budget:.0f} s) "
                                                    f"was used up before batch {b}", batches=[b])
                    continue
                # The budget interrupts inductor's Python-side compile; the parent's hard limit
                # (--model-timeout) covers anything this cannot interrupt.
                signal.alarm(max(1, int(math.ceil(left))))
                try:
                    xh = xs[b].half()
                    with torch.inference_mode():
                        t0 = time.perf_counter()
                        cm(xh)
                        self.sync()
                        compile_s = time.perf_counter() - t0
                        ms, n, wall = self.time_fn(lambda: cm(xh))
                        y = self.first_tensor(cm(xh)).float().clone()  # CUDA-graph outputs are reused
                    signal.alarm(0)
                    self.set(b, compile_ms=ms, compile_iters=n, compile_wall_ms=wall, compile_s=compile_s)
                    if b in refs:
                        self.set(b, compile_rel_err=rel_err(y, refs[b]))
                    self.done("compile", batches=[b])
                except Exception as e:  # noqa: BLE001  (_Budget itself, or wrapped by torch.compile)
                    signal.alarm(0)
                    if _is_budget(e):
                        self.done("compile", "timeout", f"torch.compile did not finish within --compile-budget "
                                                        f"{a.compile_budget:.0f} s (batch {b})", batches=[b])
                    else:
                        self.done("compile", "error", _short(e), batches=[b])
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)


def conv_tactics_by_batch(eng, batches):
    """{batch: ({variant: layers}, the first convolution's variant)} over the engine's GraftConv
    layers, from the tactics each was timed with at that batch (Engine.describe_json; a key's
    "x<N>x<C>x<H>x<W>" part names the batch). Which of graft's kernels or cuDNN's paths the tactic
    timing chose: GraftConv's variants are listed in src/ops/fused_conv/graft_conv_cuda.cpp. Empty where the
    graft in use has no describe_json or times no tactics (CPU)."""
    if not hasattr(eng, "describe_json"):
        return {}
    try:
        layers = eng.describe_json().get("layers", [])
    except Exception:  # noqa: BLE001  (a description is a nicety; the benchmark goes on)
        return {}
    out = {}
    for layer in layers:
        if layer.get("op_type") != "GraftConv":
            continue
        for t in layer.get("tactics", []):
            dims = [part for part in t.get("key", "").split(";") if part.startswith("x") and part[1:2].isdigit()]
            if "variant" not in t or not dims:
                continue
            batch = int(dims[0][1:].split("x")[0])
            if batch not in batches:
                continue
            counts, stem = out.setdefault(batch, ({}, None))
            counts[str(t["variant"])] = counts.get(str(t["variant"]), 0) + 1
            if stem is None:
                out[batch] = (counts, t["variant"])
    return out


def export_worker(args):
    """--export-only, one model: fill the cache entry, print its meta as one JSON line."""
    import torch
    if args.threads:
        torch.set_num_threads(args.threads)
    hw = input_hw(args.model, args.smoke, args.image_size)
    try:
        meta = ensure_export(args.model, args.task, hw, args.cache, args.smoke, retry=args.retry_failed,
                             exporter=args.exporter)
    except Exception as e:  # noqa: BLE001
        meta = {"model": args.model, "status": "failed", "reason": _short(e)}
    print("ZOO_EXPORT " + json.dumps(meta), flush=True)
    sys.stdout.flush()
    os._exit(0)


# ---------------------------------------------------------------------------------------------
# Parent: picks the models, runs one worker per model with a time limit, keeps the records
# ---------------------------------------------------------------------------------------------
def commit_id(given):
    """--commit, else $GRAFT_COMMIT (the GPU machine's checkout may lack .git), else git's short
    hash (+dirty when code differs from it; results and docs do not count), else .device/commit."""
    if given:
        return given
    if os.environ.get("GRAFT_COMMIT"):
        return os.environ["GRAFT_COMMIT"]
    try:
        p = subprocess.run(["git", "-C", _REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                           timeout=10)
        if p.returncode == 0 and p.stdout.strip():
            dirty = subprocess.run(["git", "-C", _REPO, "status", "--porcelain", "--untracked-files=no", "--",
                                    "src", "include", "python", "ops", "tools", "adapters", "bench", "cmake",
                                    "CMakeLists.txt"], capture_output=True, text=True, timeout=10).stdout.strip()
            return p.stdout.strip() + ("+dirty" if dirty else "")
    except Exception:  # noqa: BLE001
        pass
    try:
        with open(os.path.join(_REPO, ".device", "commit")) as f:
            return f.read().strip() or "unknown"
    except OSError:
        return "unknown"


def _pipe_to_stderr(stream, tail, prefix):
    """Forwards a worker's output line by line (progress stays live) and keeps its tail for the
    record of a crash."""
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace").rstrip("\n")
        tail.append(line)
        if line.startswith("ZOO_EXPORT "):
            continue
        print(f"{prefix}{line}", file=sys.stderr, flush=True)
    stream.close()


def _kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


_current = {"proc": None}


def _spawn(cmd, env, prefix):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    tail = deque(maxlen=400)
    t = threading.Thread(target=_pipe_to_stderr, args=(p.stdout, tail, prefix), daemon=True)
    t.start()
    return p, tail, t


def _worker_env(args):
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    # torch.compile's caches beside the ONNX cache: a rerun (next call) compiles faster.
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(os.path.abspath(args.cache), "inductor"))
    return env


def read_worker_events(rfile):
    """A worker's result file (JSON lines of stage and record events) -> ({batch: last record},
    the last stage started, or None)."""
    records, stage = {}, None
    with open(rfile) as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("kind") == "stage":
                stage = ev["stage"]
            elif ev.get("kind") == "record":
                ev.pop("kind")
                records[ev["batch"]] = ev
    return records, stage


def run_model(args, name, task, index, limit_s, commit, budget_cut):
    """Runs one model's worker; returns its records (one per batch), complete even when the worker
    crashed or ran out of time."""
    os.makedirs(args.work_dir, exist_ok=True)
    rfile = os.path.join(args.work_dir, f"{name}.jsonl")
    open(rfile, "w").close()
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--model", name, "--task", task,
           "--index", index, "--result-file", rfile, "--cache", args.cache, "--device", args.device,
           "--commit", commit, "--iters", str(args.iters), "--warmup", str(args.warmup),
           "--max-seconds-per-config", str(args.max_seconds_per_config), "--compile-budget", str(args.compile_budget),
           "--batches", *map(str, args.batches), "--profile", *map(str, args.profile), "--exporter", args.exporter]
    if args.image_size:
        cmd += ["--image-size", str(args.image_size)]
    for flag in ("smoke", "retry_failed", "no_timing_cache", "fixed_shape"):
        if getattr(args, flag):
            cmd.append("--" + flag.replace("_", "-"))
    if args.skip:
        cmd += ["--skip", *args.skip]
    if args.ort_batches:
        cmd += ["--ort-batches", *map(str, args.ort_batches)]
    t0 = time.perf_counter()
    p, tail, th = _spawn(cmd, _worker_env(args), "    ")
    _current["proc"] = p
    timed_out = False
    try:
        rc = p.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(p)
        rc = p.wait()
    finally:
        _current["proc"] = None
    _kill_group(p)  # inductor's compile workers live in the worker's process group
    th.join(timeout=5)
    elapsed = time.perf_counter() - t0
    records, stage = read_worker_events(rfile)
    if not records:
        records = {b: {"model": name, "task": task, "batch": b, "profile": "dynamic", "commit": commit,
                       "date": _now(), "device": args.device, "smoke": bool(args.smoke)} for b in args.batches}
    if timed_out or rc != 0:
        stage = stage or "model"
        log_tail = " | ".join(ln for ln in list(tail)[-8:] if ln.strip())[-600:]
        if timed_out:
            why = (f"the call's --time-budget ran out {elapsed:.0f} s into this model (limit {limit_s:.0f} s); "
                   f"it is retried by the next call with --skip-done" if budget_cut else
                   f"timeout: the model's worker exceeded --model-timeout {limit_s:.0f} s")
        else:
            why = f"the worker died (rc {rc}) during this stage; log tail: {log_tail}"
        for r in records.values():
            # The stage running when the worker ended fails for the batches it had not finished;
            # stages that had finished keep their numbers; later stages did not run.
            if r.get(f"{stage}_status") is None:
                r[f"{stage}_status"] = "timeout" if timed_out else "error"
                r[f"{stage}_reason"] = why
            for s in STAGES[STAGES.index(stage) + 1:]:
                if r.get(f"{s}_status") is None:
                    r[f"{s}_status"] = "not run"
                    r[f"{s}_reason"] = f"the worker ended in stage {stage}"
            r["worker_exit"] = "timeout" if timed_out else rc
            if timed_out and budget_cut:
                r["retry"] = True
    out = []
    for b in args.batches:
        r = records.get(b) or dict(next(iter(records.values())), batch=b)
        r["model_s"] = round(elapsed, 1)
        zoo_plot.finalize(r)
        out.append(r)
    return out, elapsed


def load_results(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        data = json.load(f)
    if isinstance(data, dict):  # tolerate {"records": [...]} written by hand
        data = data.get("records", [])
    return list(data)


def save_results(path, records):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    _write_json_atomic(path, zoo_plot.json_safe(records))


def parse_shard(s):
    try:
        i, n = (int(v) for v in s.split("/"))
        if n >= 1 and 0 <= i < n:
            return i, n
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"--shard wants i/n with 0 <= i < n, got '{s}'")


def select_models(args):
    order, task = zoo_names(args.smoke, listing=args.list)
    if not args.models:
        names = order
    else:
        names = []
        for m in args.models:
            group = {"all": order, "core": [n for n in order if n in CORE],
                     "classification": [n for n in order if task[n] == "classification"],
                     "segmentation": [n for n in order if task[n] == "segmentation"]}.get(m)
            if group is not None:
                names += group
            elif m in task:
                names.append(m)
            else:
                raise SystemExit(f"error: unknown model '{m}' (groups: all core classification segmentation; "
                                 f"models: {' '.join(order)})")
        names = list(dict.fromkeys(names))
    if args.shard:
        i, n = args.shard
        names = [m for k, m in enumerate(names) if k % n == i]
    return names, task


def export_only(args, names, task):
    """Fills the ONNX cache with up to --jobs exports at once (CPU work, no GPU timing to disturb)."""
    jobs = max(1, args.jobs)
    threads = max(1, (os.cpu_count() or 2) // jobs)
    pending = list(enumerate(names, 1))
    running = []
    results = {}
    t_all = time.perf_counter()
    while pending or running:
        while pending and len(running) < jobs:
            i, m = pending.pop(0)
            cmd = [sys.executable, os.path.abspath(__file__), "--export-worker", "--model", m, "--task", task[m],
                   "--cache", args.cache, "--threads", str(threads), "--exporter", args.exporter]
            if args.image_size:
                cmd += ["--image-size", str(args.image_size)]
            for flag in ("smoke", "retry_failed"):
                if getattr(args, flag):
                    cmd.append("--" + flag.replace("_", "-"))
            _log(f"[{i}/{len(names)} {m}] export starting (t={time.perf_counter() - t_all:.0f}s)")
            p, tail, th = _spawn(cmd, _worker_env(args), f"    [{m}] ")
            running.append((m, p, tail, th, time.perf_counter()))
        time.sleep(0.2)
        for item in list(running):
            m, p, tail, th, t0 = item
            over = time.perf_counter() - t0 > args.model_timeout
            if p.poll() is None and not over:
                continue
            if over:
                _kill_group(p)
                p.wait()
            th.join(timeout=5)
            running.remove(item)
            line = next((ln for ln in reversed(tail) if ln.startswith("ZOO_EXPORT ")), None)
            meta = json.loads(line[len("ZOO_EXPORT "):]) if line else {
                "status": "failed", "reason": ("timeout" if over else f"export worker rc {p.returncode}: ")
                + " | ".join(list(tail)[-4:])[-300:]}
            results[m] = meta
            _log(f"[{m}] export {meta.get('status')}" + (" (cached)" if meta.get("cached") else "")
                 + (f" with {meta.get('exporter')} in {meta.get('export_s')} s" if meta.get("exporter") else "")
                 + (f": {meta.get('reason')}" if meta.get("reason") else ""))
    bad = [m for m in names if results.get(m, {}).get("status") != "ok"]
    print(f"export-only: {len(names) - len(bad)}/{len(names)} models in the cache {args.cache} "
          f"({time.perf_counter() - t_all:.0f} s)" + (f"; export failed: {', '.join(bad)} (their benchmark rows "
                                                       "will say why)" if bad else ""), flush=True)
    return 0


def parent(args):
    names, task = select_models(args)
    results_path = os.path.join(args.out, "zoo.json")
    if args.list:
        existing = {(r.get("model")) for r in load_results(results_path)} if os.path.exists(results_path) else set()
        for i, m in enumerate(names, 1):
            hw = input_hw(m, args.smoke, args.image_size)
            meta = read_meta(args.cache, m, hw)
            cache = "not exported" if meta is None else (f"exported ({meta.get('exporter')})" if meta.get("status") == "ok"
                                                         else "export failed")
            print(f"{i:3d}  {m:32s} {task[m]:15s} {hw[0]}x{hw[1]}  {cache:26s} "
                  f"{'has records' if m in existing else ''}")
        print(f"{len(names)} models" + (f" (shard {args.shard[0]}/{args.shard[1]})" if args.shard else ""))
        return 0
    if args.export_only:
        return export_only(args, names, task)

    import torch  # the parent only asks whether CUDA exists; it never initializes it
    if args.device is None:
        args.device = "cpu" if args.smoke else "cuda"
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"error: no CUDA device for torch {torch.__version__} (use --smoke for a CPU test)", file=sys.stderr)
        return 1
    results = []
    if not args.fresh:
        if os.path.exists(results_path):
            results = load_results(results_path)
        elif args.previous:
            # Earlier calls' records (their zoo.json copied back into the checkout): this call's
            # zoo.json starts from them, so --skip-done continues and the file stays complete.
            for f in args.previous:
                if os.path.exists(f):
                    results = zoo_plot.merge([results, load_results(f)])
                    _log(f"zoo: starting from {f} ({len(results)} records)")
                else:
                    _log(f"zoo: --previous {f} does not exist; starting without it")
    commit = commit_id(args.commit)
    # Done means measured at this commit: records of an earlier commit (kept from --previous) are
    # what a rerun is meant to replace, not a reason to skip the model.
    done = {r["model"] for r in results if not r.get("retry") and r.get("commit") == commit}
    if args.retry_failed:
        done -= {r["model"] for r in results if r.get("status") not in ("ok",)}
    todo = [m for m in names if not (args.skip_done and m in done)]
    skipped = [m for m in names if m not in todo]
    os.makedirs(args.cache, exist_ok=True)
    args.work_dir = args.work_dir or tempfile.mkdtemp(prefix="graft_zoo_")
    _log(f"zoo: {len(todo)} models to run ({len(skipped)} already have records of this commit), commit {commit}, "
         f"cache {args.cache}, out {args.out}, budget {args.time_budget or 'none'} s")
    t_call = time.perf_counter()
    durations, not_started = [], []
    for k, m in enumerate(todo):
        elapsed = time.perf_counter() - t_call
        limit, budget_cut = args.model_timeout, False
        if args.time_budget:
            left = args.time_budget - elapsed
            # Typical cost of a model in this call, so the call ends instead of starting a model it
            # would have to cut (a cut model is retried by the next call, so its time is lost).
            need = max(args.min_model_s, 1.2 * _median(durations)) if durations else args.min_model_s
            need = min(need, args.model_timeout)
            if left < need:
                not_started = todo[k:]
                _log(f"zoo: {left:.0f} s of --time-budget left, a model needs about {need:.0f} s: stopping; "
                     f"not started: {' '.join(not_started)}")
                break
            if left - 5 < limit:
                limit, budget_cut = left - 5, True
        index = f"{k + 1}/{len(todo)}"
        _log(f"[{index} {m}] starting (limit {limit:.0f} s, call elapsed {elapsed:.0f} s)")
        recs, dt = run_model(args, m, task[m], index, limit, commit, budget_cut)
        durations.append(dt)
        results = [r for r in results if r.get("model") != m] + recs
        save_results(results_path, results)  # after every model: a killed call keeps what it measured
        for r in recs:
            _log(f"[{index} {m}] batch {r['batch']}: {zoo_plot.one_line(r)}")
    if results:
        save_results(results_path, results)  # complete even when nothing ran (records from --previous)
    summary = zoo_plot.write_all(results, args.out, plot_path=args.plot)
    print(summary, flush=True)
    if not_started or skipped:
        print(f"\nnot run in this call: {len(not_started)} model(s) left by the time budget"
              + (f" ({' '.join(not_started)})" if not_started else "")
              + f"; {len(skipped)} skipped because zoo.json already has them at this commit (--skip-done)", flush=True)
    mine = [r for r in results if r.get("model") in todo]
    return 0 if all(r.get("status") == "ok" for r in mine) else 3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=None,
                    help="model names or groups (all, core, classification, segmentation); default: all, "
                         "core models first")
    ap.add_argument("--shard", type=parse_shard, default=None, help="i/n: every n-th model from the i-th")
    ap.add_argument("--skip-done", action="store_true", help="skip models that have records of this commit in <out>/zoo.json")
    ap.add_argument("--retry-failed", action="store_true",
                    help="rerun models whose records are not ok and retry cached export failures")
    ap.add_argument("--fresh", action="store_true", help="start a new zoo.json instead of adding to it")
    ap.add_argument("--previous", nargs="+", default=None, metavar="JSON",
                    help="records of earlier calls to start from when <out>/zoo.json does not exist yet "
                         "(e.g. docs/results/zoo.json when --out is a fresh per-call directory)")
    ap.add_argument("--list", "--dry-run", dest="list", action="store_true", help="list the models and exit")
    ap.add_argument("--export-only", action="store_true", help="only fill the ONNX cache (CPU), --jobs at once")
    ap.add_argument("--jobs", type=int, default=4, help="parallel exports for --export-only")
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "graft_zoo_cache"),
                    help="ONNX files, weights, graft timing caches, inductor cache (reused by later calls)")
    ap.add_argument("--out", default=os.path.join(_REPO, "docs", "results"),
                    help="directory of zoo.json (read and extended), zoo.md and zoo.png")
    ap.add_argument("--plot", default=None, help="plot path (default <out>/zoo.png)")
    ap.add_argument("--work-dir", default=None, help="worker result files (default: a temp dir)")
    ap.add_argument("--time-budget", type=float, default=None,
                    help="seconds for this call: no model is started that would not fit")
    ap.add_argument("--model-timeout", type=float, default=None, help="hard limit per model's worker (default 300 s)")
    ap.add_argument("--compile-budget", type=float, default=None,
                    help="torch.compile budget per model, both batches (default 200 s); over it: a timeout row")
    ap.add_argument("--min-model-s", type=float, default=None,
                    help="with --time-budget: no model starts with less than this left (default 120 s)")
    ap.add_argument("--batches", nargs="+", type=int, default=None, help="default 1 32 (--smoke: 1 4)")
    ap.add_argument("--profile", nargs=3, type=int, default=None, metavar=("MIN", "OPT", "MAX"),
                    help="the engine's batch profile (default 1 8 32; --smoke: 1 2 4)")
    ap.add_argument("--image-size", type=int, default=None, help="square input size for every model "
                                                                 "(default 224, inception_v3 299; --smoke 32)")
    ap.add_argument("--iters", type=int, default=None, help="timed iterations (default 50; --smoke 3)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up iterations (default 10; --smoke 1)")
    ap.add_argument("--max-seconds-per-config", type=float, default=4.0,
                    help="cap on one timed loop; iterations are cut to fit (at least 5)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["eager", "compile", "graft", "ort"],
                    help="contenders (and the ONNX Runtime reference) not run")
    ap.add_argument("--ort-batches", nargs="+", type=int, default=None,
                    help="batches ONNX Runtime's CPU provider runs as a second FP32 reference (default: the smallest)")
    ap.add_argument("--exporter", choices=["auto", "torchscript", "dynamo"], default="auto",
                    help="auto: TorchScript exporter, the dynamo exporter when that fails (default)")
    ap.add_argument("--no-timing-cache", action="store_true", help="graft builds without the cached tactic timings")
    ap.add_argument("--fixed-shape", action="store_true",
                    help="also build a fixed-shape engine per batch and time it in turns with the dynamic one "
                         "(graft_fixed_ms, dynamic_over_fixed): issue 14 wants the dynamic-profile engine within 5%% of it")
    ap.add_argument("--device", default=None, help="cuda (default) or cpu (--smoke default)")
    ap.add_argument("--commit", default=None, help="commit to record (default $GRAFT_COMMIT, else git)")
    ap.add_argument("--smoke", action="store_true", help="CPU test: 3 tiny models, 32x32, batch 1 and 4, no compile")
    # internal
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--export-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--task", help=argparse.SUPPRESS)
    ap.add_argument("--index", default="1/1", help=argparse.SUPPRESS)
    ap.add_argument("--result-file", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    s = args.smoke
    args.batches = args.batches or list(SMOKE_BATCHES if s else BATCHES)
    args.profile = args.profile or list(SMOKE_PROFILE if s else PROFILE)
    args.iters = args.iters if args.iters is not None else (3 if s else 50)
    args.warmup = args.warmup if args.warmup is not None else (1 if s else 10)
    args.model_timeout = args.model_timeout or (180 if s else 300)
    args.compile_budget = args.compile_budget or 200
    args.min_model_s = args.min_model_s if args.min_model_s is not None else (5 if s else 120)
    args.skip_eager, args.skip_compile, args.skip_graft = ("eager" in args.skip, "compile" in args.skip,
                                                           "graft" in args.skip)
    args.skip_ort = "ort" in args.skip
    if not (args.profile[0] <= args.profile[1] <= args.profile[2]):
        ap.error("--profile wants MIN <= OPT <= MAX")
    if any(not (args.profile[0] <= b <= args.profile[2]) for b in args.batches):
        ap.error(f"every --batches value must lie in the profile {args.profile[0]}..{args.profile[2]}")
    if args.iters < 1 or args.warmup < 0:
        ap.error("--iters must be >= 1 and --warmup >= 0")
    if args.device is None and (args.worker or args.export_worker):
        args.device = "cpu" if s else "cuda"
    if args.worker:
        return Worker(args).run()
    if args.export_worker:
        return export_worker(args)

    def on_term(signum, frame):
        # The device's time limit (or ^C): stop the running worker's whole group, keep what is saved.
        p = _current.get("proc")
        if p is not None:
            _kill_group(p)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        return parent(args)
    except KeyboardInterrupt:
        p = _current.get("proc")
        if p is not None:
            _kill_group(p)
        print("zoo: interrupted; zoo.json holds every model finished so far", file=sys.stderr, flush=True)
        return 130
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 - the harness itself failed
        import traceback
        traceback.print_exc()
        print(f"error: the zoo harness failed: {_short(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
