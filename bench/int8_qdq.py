#!/usr/bin/env python3
"""Explicitly quantized (Q/DQ) models in graft (issue 16): accuracy against PyTorch's own quantized
model, and speed against graft's FP16 engine of the same network, in one process with PyTorch.

The model (torchvision's ResNet-50 by default; random weights from bench/zoo.py's seed, BatchNorm
statistics calibrated on random images as the zoo does) is quantized the way TensorRT's explicit
INT8 flow expects it, in one of two ways. --quantizer fx: PyTorch's own post-training quantization
(torch.ao.quantization's FX flow with its TensorRT backend config), which quantizes every layer's
output as well, residual adds included; its min/max observers set the scales (amax / 127).
--quantizer fake (the default): every Conv2d and Linear reads its input through a per-tensor fake
quantizer and its weight through a per-output-channel one, symmetric int8 (zero point 0, scale
amax / 127), the activation ranges calibrated by the largest magnitude seen on calibration images.
Either way PyTorch's `torch.fake_quantize_per_*_affine` computes the quantized model in FP32: the
reference. The
TorchScript exporter turns each fake quantizer into a QuantizeLinear/DequantizeLinear pair (opset
17, a dynamic batch axis), the file graft then builds with a dynamic profile.

Measured, per batch of the profile: graft's engine of the Q/DQ file (on CUDA with fp16=True, so
what graft does not run in int8 runs in float16, as TensorRT's --int8 --fp16), graft's engine of
the float file ("graft_float": FP16 on CUDA, FP32 on the CPU), and PyTorch eager FP16 of the float
model for context, each timed by CUDA events on torch's stream (bench/zoo.py's time_fn), the two
graft engines in --rounds alternating rounds (the speed-up is the median of the rounds' ratios); and over
--images random images, the top-1 agreement of graft's Q/DQ engine with PyTorch's quantized model
(issue 16's target: at least 99%) and of graft's float engine with the FP32 float model, with the
relative errors of the logits. Beside them, the reference's own noise floor: PyTorch's quantized
model against itself on the same images nudged by float32 rounding, and rounded to float16.

    export PYTHONPATH=python:build/python GRAFT_LIB_DIR=build/python/graft
    python3 bench/int8_qdq.py --out docs/results                    # the GPU machine, ResNet-50
    /usr/bin/python3 bench/int8_qdq.py --smoke --out /tmp/int8       # CPU, a tiny net, in seconds

Records go to <out>/int8_qdq.json (one per model, batch and commit, merged with earlier ones) and a
table to <out>/int8_qdq.md. Exit status 0 when every stage ran, 3 when a stage failed (the record
says which and why).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)

import zoo  # noqa: E402  (model construction, export, timing, commit and record helpers)
import zoo_plot  # noqa: E402

OPSET = 17
# The activation quantizer's range: ONNX's QuantizeLinear saturates int8 to [-128, 127].
QMIN, QMAX = -128, 127


def conv_args(layer):
    """A Conv2d's (stride, padding, dilation, groups); None for a Linear."""
    return (layer.stride, layer.padding, layer.dilation, layer.groups) if hasattr(layer, "groups") else None


def layer_op(F, x, w, bias, args):
    """The layer's own operation over a fake-quantized weight w: conv2d with conv_args, or linear."""
    return F.conv2d(x, w, bias, *args) if args is not None else F.linear(x, w, bias)


def quantize_model(torch, model, calib, batch=8):
    """Wraps every Conv2d and Linear of `model` in a fake quantizer and calibrates the activation
    ranges on `calib` (N images, run in batches). Returns the number of wrapped layers."""
    nn, F = torch.nn, torch.nn.functional

    class FakeQuant(nn.Module):
        def __init__(self, layer):
            super().__init__()
            self.layer = layer
            self.calibrating = True
            self.register_buffer("act_amax", torch.zeros(()))
            w = layer.weight.detach()
            amax = w.abs().reshape(w.shape[0], -1).amax(1).clamp(min=1e-8)
            self.register_buffer("w_scale", amax / QMAX)
            self.register_buffer("w_zero", torch.zeros(w.shape[0], dtype=torch.int32))
            self.register_buffer("x_scale", torch.ones(()))
            self.register_buffer("x_zero", torch.zeros((), dtype=torch.int32))

        def finish_calibration(self):
            self.calibrating = False
            self.x_scale = (self.act_amax / QMAX).clamp(min=1e-8)

        def forward(self, x):
            if self.calibrating:
                self.act_amax = torch.maximum(self.act_amax, x.detach().abs().max().float())
                return self.layer(x)
            xq = torch.fake_quantize_per_tensor_affine(x, self.x_scale, self.x_zero, QMIN, QMAX)
            wq = torch.fake_quantize_per_channel_affine(self.layer.weight, self.w_scale, self.w_zero, 0, QMIN, QMAX)
            L = self.layer
            return layer_op(F, xq, wq, L.bias, conv_args(L))

    wrapped = []
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, (nn.Conv2d, nn.Linear)) and not isinstance(child, FakeQuant):
                q = FakeQuant(child)
                setattr(parent, name, q)
                wrapped.append(q)
    model.eval()
    with torch.no_grad():
        for i in range(0, calib.shape[0], batch):
            model(calib[i:i + batch])
    for q in wrapped:
        q.finish_calibration()
    return len(wrapped)


def quantize_model_fx(torch, model, calib, batch=8):
    """PyTorch's own post-training quantization, TensorRT's form: torch.ao.quantization's FX
    prepare / calibrate / convert_to_reference_fx with its TensorRT backend config (symmetric int8
    activations per tensor, weights per output channel, min/max observers). The reference model
    quantizes with quantize_per_tensor/dequantize, which the TorchScript exporter cannot take from
    an FX module, so each such pair becomes the same fake quantizer (and each reference conv/linear
    a layer that fake-quantizes its weight with the observer's scales). Returns (model, layers)."""
    import torch.fx
    from torch.ao.quantization import QConfig, QConfigMapping
    from torch.ao.quantization.backend_config import get_tensorrt_backend_config
    from torch.ao.quantization.observer import MinMaxObserver, PerChannelMinMaxObserver
    from torch.ao.quantization.quantize_fx import convert_to_reference_fx, prepare_fx
    nn, F = torch.nn, torch.nn.functional
    # The observers' ranges are TensorRT's narrow -127..127, so a scale is amax / 127 and a channel's
    # largest weight lands on +-127 exactly. Over -128..127 (amax / 127.5) it lands on a tie, +-127.5,
    # which PyTorch's fake quantizer (x times 1 / scale) and ONNX's QuantizeLinear (x / scale) round
    # apart, as a unit in the last place falls: graft, ONNX Runtime or TensorRT would then differ from
    # PyTorch by a step in such weights. The quantizers still clamp to -128..127, which the exporter
    # accepts; no value reaches -128.
    act = MinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric, quant_min=-QMAX,
                                   quant_max=QMAX)
    wt = PerChannelMinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_channel_symmetric,
                                            quant_min=-QMAX, quant_max=QMAX)
    bc = get_tensorrt_backend_config()
    qmap = QConfigMapping().set_global(QConfig(activation=act, weight=wt))
    model = model.eval()
    prepared = prepare_fx(model, qmap, example_inputs=(calib[:1],), backend_config=bc)
    with torch.no_grad():
        for i in range(0, calib.shape[0], batch):
            prepared(calib[i:i + batch])
    ref = convert_to_reference_fx(prepared, backend_config=bc)

    class WeightFakeQuant(nn.Module):
        def __init__(self, r):
            super().__init__()
            self.weight = nn.Parameter(r.weight.detach().clone(), requires_grad=False)
            self.bias = None if r.bias is None else nn.Parameter(r.bias.detach().clone(), requires_grad=False)
            self.register_buffer("w_scale", r.weight_scale.detach().float().clone())
            self.register_buffer("w_zero", r.weight_zero_point.detach().to(torch.int32).clone())
            self.axis = int(r.weight_axis)
            self.args = conv_args(r)

        def forward(self, x):
            w = torch.fake_quantize_per_channel_affine(self.weight, self.w_scale, self.w_zero, self.axis, QMIN, QMAX)
            return layer_op(F, x, w, self.bias, self.args)

    from torch.ao.nn.quantized import reference as qref
    layers = 0
    for name, mod in list(ref.named_modules()):
        if isinstance(mod, (qref.Conv2d, qref.Linear)) and mod.weight_qscheme == torch.per_channel_affine:
            parent = ref.get_submodule(name.rpartition(".")[0]) if "." in name else ref
            setattr(parent, name.rpartition(".")[2], WeightFakeQuant(mod))
            layers += 1
    g = ref.graph
    for node in list(g.nodes):
        if node.op != "call_function" or node.target is not torch.quantize_per_tensor:
            continue
        x, s, z, dtype = node.args
        if dtype is not torch.qint8:
            raise RuntimeError(f"FX quantized {node.name} to {dtype}, not qint8")
        scale = float(getattr(ref, s.target)) if isinstance(s, torch.fx.Node) else float(s)
        zero = int(getattr(ref, z.target)) if isinstance(z, torch.fx.Node) else int(z)
        dqs = [u for u in node.users if u.op == "call_method" and u.target == "dequantize"]
        if len(dqs) != len(node.users):
            raise RuntimeError(f"FX's {node.name} has readers other than dequantize")
        with g.inserting_after(node):
            fq = g.call_function(torch.fake_quantize_per_tensor_affine, (x, scale, zero, QMIN, QMAX))
        for dq in dqs:
            dq.replace_all_uses_with(fq)
            g.erase_node(dq)
        g.erase_node(node)
    g.eliminate_dead_code()
    ref.recompile()
    return ref.eval(), layers


def count_ops(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    counts = {}
    for n in m.graph.node:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    return counts


def images(torch, n, hw, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn((n, 3) + tuple(hw), generator=g)


def top1_agreement(a, b):
    return float((a.argmax(1) == b.argmax(1)).double().mean())


class Run:
    """One model: its records (one per batch) and the stages that fill them."""

    def __init__(self, args, torch):
        self.a, self.torch = args, torch
        self.dev = torch.device(args.device)
        self.cuda = self.dev.type == "cuda"
        self.hw = zoo.input_hw(args.model, args.smoke)
        p = args.profile
        self.profile = {"input": [(b, 3) + tuple(self.hw) for b in p]}
        base = {"model": args.model, "profile": "dynamic", "profile_shapes": self.profile["input"],
                "commit": args.commit, "date": zoo._now(), "torch": torch.__version__, "device": str(self.dev),
                "gpu": torch.cuda.get_device_name(self.dev) if self.cuda else None, "smoke": bool(args.smoke),
                "status": "ok", "stage": None, "reason": None, "qdq_engine": args.qdq_engine,
                "quantizer": args.quantizer}
        self.recs = {b: dict(base, batch=b) for b in args.batches}

    def fail(self, stage, e, batches=None):
        for b in batches or self.recs:
            r = self.recs[b]
            if r["status"] == "ok":
                r.update(status="error", stage=stage, reason=zoo._short(e))
        zoo._log(f"[int8] {stage} failed: {zoo._short(e)}")

    def set_all(self, **kw):
        for r in self.recs.values():
            r.update(kw)

    def time(self, fn):
        a = self.a
        return zoo.time_fn(self.torch, fn, self.cuda, a.warmup, a.iters, a.max_seconds_per_config)

    def run(self, work):
        torch, a = self.torch, self.a
        if self.cuda:
            torch.backends.cudnn.benchmark = True
        # The float model and its quantized twin, both exported with a dynamic batch.
        try:
            import copy
            model = zoo.make_model(a.model, "classification", a.smoke)
            from models import _calibrate_batchnorm  # bench/models.py
            torch.manual_seed(zoo.SEED + 1)
            _calibrate_batchnorm(model, zoo.make_input(4, self.hw))
            model.eval()
            qmodel = copy.deepcopy(model)
            t0 = time.perf_counter()
            calib = images(torch, a.calib_images, self.hw, zoo.SEED + 3)
            if a.quantizer == "fx":
                qmodel, layers = quantize_model_fx(torch, qmodel, calib)
            else:
                layers = quantize_model(torch, qmodel, calib)
            self.set_all(quantized_layers=layers, calibration_images=a.calib_images,
                         calibration_s=round(time.perf_counter() - t0, 2))
            float_path, qdq_path = os.path.join(work, "float.onnx"), os.path.join(work, "qdq.onnx")
            x2 = zoo.make_input(2, self.hw)
            with torch.no_grad():
                zoo._export_file(torch, model, x2, float_path, "torchscript", opset=OPSET)
                zoo._export_file(torch, qmodel, x2, qdq_path, "torchscript", opset=OPSET)
            ops = count_ops(qdq_path)
            self.set_all(qdq_ops={k: ops.get(k, 0) for k in ("QuantizeLinear", "DequantizeLinear", "Conv", "Gemm")})
            if not ops.get("QuantizeLinear") or not ops.get("DequantizeLinear"):
                raise RuntimeError(f"the quantized export has no Q/DQ pairs: {ops}")
        except Exception as e:  # noqa: BLE001
            return self.fail("export", e)

        # References on the device: PyTorch's quantized model (FP32) and the float model (FP32).
        n = a.images
        xs = images(torch, n, self.hw, zoo.SEED + 5)
        chunk = max(a.batches)
        try:
            tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
            qm, fm = qmodel.to(self.dev), model.to(self.dev)

            def logits(m, inputs):
                with torch.inference_mode():
                    return torch.cat([m(inputs[i:i + chunk].to(self.dev)).float().cpu() for i in range(0, n, chunk)])
            ref_q, ref_f = logits(qm, xs), logits(fm, xs)
            # The reference's own noise floor: the quantized model again, on the same images moved by
            # float32 rounding (a relative 2^-24 per pixel) and rounded to float16. A quantizer turns a
            # value one rounding away from a step boundary into a whole step, and a random network
            # carries that step on to the logits, so this is the agreement any engine that does not
            # repeat PyTorch's float32 arithmetic bit for bit can be expected to reach on this model.
            g = torch.Generator().manual_seed(zoo.SEED + 7)
            nudged = xs * (1 + 2.0 ** -24 * torch.randn(xs.shape, generator=g))
            floor32, floor16 = logits(qm, nudged), logits(qm, xs.half().float())
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
            self.set_all(torch_qdq_vs_fp32_top1=top1_agreement(ref_q, ref_f), images=n,
                         top1_classes=int(ref_q.argmax(1).unique().numel()),
                         torch_qdq_fp32_noise_top1=top1_agreement(floor32, ref_q),
                         torch_qdq_fp32_noise_rel_err=zoo.rel_err(floor32, ref_q),
                         torch_qdq_fp16_input_top1=top1_agreement(floor16, ref_q),
                         torch_qdq_fp16_input_rel_err=zoo.rel_err(floor16, ref_q))
        except Exception as e:  # noqa: BLE001
            return self.fail("reference", e)

        try:
            import graft
        except Exception as e:  # noqa: BLE001
            return self.fail("graft_import", e)
        engines = {}
        for key, path in (("graft_qdq", qdq_path), ("graft_float", float_path)):
            t0 = time.perf_counter()
            try:
                # float16 where graft cannot run int8, as TensorRT's --int8 --fp16 (CUDA engines only).
                # --qdq-engine picks the Q/DQ engine's form: the faster one (auto), or its INT8
                # convolutions (int8: NHWC, always built with them) or none (float16), or everything
                # in float32 (float32: the accuracy graft reaches without float16 between quantizers).
                opts, fp16 = {}, self.cuda
                if key == "graft_qdq" and self.a.qdq_engine == "float32":
                    fp16 = False
                elif key == "graft_qdq" and self.cuda and self.a.qdq_engine != "auto":
                    opts = {"layout": "nhwc", "int8": self.a.qdq_engine == "int8"}
                engines[key] = graft.Engine.build(path, fp16=fp16, device=self.dev.type, profile=self.profile,
                                                  **opts)
                self.set_all(**{f"{key}_build_s": round(time.perf_counter() - t0, 2)})
            except Exception as e:  # noqa: BLE001
                self.fail(f"{key}_build", e)
        # Accuracy over every image, in chunks of the profile's largest batch.
        refs = {"graft_qdq": ref_q, "graft_float": ref_f}
        for key, eng in engines.items():
            try:
                ys = []
                with torch.inference_mode():
                    for i in range(0, n, chunk):
                        x = xs[i:i + chunk].to(self.dev).contiguous()
                        ys.append(eng.run({"input": x})["output"].float().cpu())
                y = torch.cat(ys)
                self.set_all(**{f"{key}_top1": top1_agreement(y, refs[key]), f"{key}_rel_err": zoo.rel_err(y, refs[key])})
            except Exception as e:  # noqa: BLE001
                self.fail(f"{key}_accuracy", e)
        # Speed at each batch: both engines, and PyTorch eager FP16 of the float model.
        m16 = model.to(self.dev).half() if self.cuda else None
        for b in a.batches:
            x = zoo.make_input(b, self.hw, self.dev)
            # The two engines in alternating rounds (Q/DQ first, then float first, ...): the ratio is the
            # figure that matters, and timing one engine after the other let clock and thermal drift
            # between them move it (the float engine read 1.23 and 1.56 ms at batch 32 in two calls on
            # one kind of card). Each engine's figure is the median of its rounds' medians, and the
            # speed-up the median of the rounds' own ratios.
            per_round = {key: [] for key in engines}
            failed = set()
            for rnd in range(a.rounds):
                order = list(engines.items())
                if rnd % 2:
                    order.reverse()
                for key, eng in order:
                    if key in failed:
                        continue
                    try:
                        with torch.inference_mode():
                            eng.run({"input": x})
                            ms, iters, wall = self.time(lambda: eng.run({"input": x}))
                        per_round[key].append(ms)
                        self.recs[b].update({f"{key}_iters": iters, f"{key}_wall_ms": wall})
                    except Exception as e:  # noqa: BLE001
                        failed.add(key)
                        self.fail(f"{key}_run", e, [b])
            for key, v in per_round.items():
                if v:
                    self.recs[b].update({f"{key}_ms": statistics.median(v), f"{key}_round_ms": v})
            if m16 is not None:
                try:
                    x16 = x.half()
                    with torch.inference_mode():
                        ms, iters, _ = self.time(lambda: m16(x16))
                    self.recs[b].update(eager_fp16_ms=ms, eager_iters=iters)
                except Exception as e:  # noqa: BLE001
                    self.fail("eager_run", e, [b])
            r = self.recs[b]
            q, f = per_round.get("graft_qdq", []), per_round.get("graft_float", [])
            if q and f and len(q) == len(f):
                r["qdq_speedup_over_float"] = statistics.median(fm / qm for fm, qm in zip(f, q))
            elif r.get("graft_qdq_ms") and r.get("graft_float_ms"):
                r["qdq_speedup_over_float"] = r["graft_float_ms"] / r["graft_qdq_ms"]


def summary(records):
    # The GPU beside the device: records of several runs are merged here, and milliseconds compare
    # only within one card (a ratio within one run).
    rows = ["| model | batch | device | GPU | commit | quantizer | Q/DQ engine | graft Q/DQ ms | graft float ms (FP16 on CUDA) | "
            "eager FP16 ms | Q/DQ speed-up | top-1 Q/DQ vs PyTorch quantized | top-1 float vs FP32 | "
            "PyTorch quantized against itself, top-1 (rel. err): float32-rounding input noise / float16 input | "
            "status |",
            "|---|---:|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---|"]

    def f(v, spec=".3f"):
        return "" if v is None else format(v, spec)

    def floor(r):
        if r.get("torch_qdq_fp32_noise_top1") is None:
            return ""
        return (f"{f(r['torch_qdq_fp32_noise_top1'], '.4f')} ({f(r['torch_qdq_fp32_noise_rel_err'], '.4f')}) / "
                f"{f(r['torch_qdq_fp16_input_top1'], '.4f')} ({f(r['torch_qdq_fp16_input_rel_err'], '.4f')})")
    for r in records:
        status = r.get("status") if r.get("status") == "ok" else f"{r.get('status')} at {r.get('stage')}: {r.get('reason')}"
        rows.append(f"| {r['model']} | {r['batch']} | {r.get('device')} | {r.get('gpu') or ''} | {r.get('commit')} | "
                    f"{r.get('quantizer', 'fake')} | {r.get('qdq_engine', 'auto')} | {f(r.get('graft_qdq_ms'))} | "
                    f"{f(r.get('graft_float_ms'))} | {f(r.get('eager_fp16_ms'))} | {f(r.get('qdq_speedup_over_float'), '.2f')} | "
                    f"{f(r.get('graft_qdq_top1'), '.4f')} | {f(r.get('graft_float_top1'), '.4f')} | {floor(r)} | {status} |")
    return "\n".join(rows) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None, help="a torchvision classification model (default resnet50; "
                                                 "--smoke: tiny_cnn, plain torch)")
    p.add_argument("--smoke", action="store_true", help="tiny model, small batches, CPU unless --device")
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    p.add_argument("--out", required=True, help="folder for int8_qdq.json and int8_qdq.md")
    p.add_argument("--images", type=int, default=None, help="images for the top-1 agreement (default 512; smoke 32)")
    p.add_argument("--calib-images", type=int, default=None, help="calibration images (default 64; smoke 8)")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3, help="alternating timing rounds of the two engines (default 3)")
    p.add_argument("--qdq-engine", choices=("auto", "int8", "float16", "float32"), default="auto",
                   help="CUDA: the Q/DQ engine as the builder picks it (auto: the faster of its INT8 and float16 "
                        "forms), or with its quantized convolutions on their int8 integers (int8) or in float16; "
                        "float32: a float32 engine (no float16 between the quantizers: the accuracy ceiling)")
    p.add_argument("--quantizer", choices=("fake", "fx"), default="fake",
                   help="fake: a fake quantizer on every Conv2d and Linear input and weight, ranges from the "
                        "largest magnitude seen in calibration; fx: PyTorch's own post-training quantization "
                        "(torch.ao.quantization FX with its TensorRT backend config: every layer's output "
                        "quantized too, residual adds included)")
    p.add_argument("--max-seconds-per-config", type=float, default=8.0)
    p.add_argument("--commit", default=None)
    p.add_argument("--work-dir", default=None, help="where the exported files go (default: a temporary folder)")
    a = p.parse_args(argv)
    import torch
    a.model = a.model or ("tiny_cnn" if a.smoke else "resnet50")
    a.device = a.device or ("cuda" if torch.cuda.is_available() and not a.smoke else "cpu")
    a.batches = list(zoo.SMOKE_BATCHES if a.smoke else zoo.BATCHES)
    a.profile = list(zoo.SMOKE_PROFILE if a.smoke else zoo.PROFILE)
    a.images = a.images or (32 if a.smoke else 512)
    a.calib_images = a.calib_images or (8 if a.smoke else 64)
    a.commit = zoo.commit_id(a.commit)
    if a.smoke:
        a.warmup, a.iters, a.max_seconds_per_config = 2, 5, 1.0
    work = a.work_dir or tempfile.mkdtemp(prefix="graft_int8_")
    os.makedirs(work, exist_ok=True)
    run = Run(a, torch)
    run.run(work)
    records = list(run.recs.values())
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "int8_qdq.json")
    old = zoo.load_results(path) if os.path.exists(path) else []
    key = lambda r: (r.get("model"), r.get("batch"), r.get("commit"), bool(r.get("smoke")),  # noqa: E731
                     r.get("qdq_engine", "auto"), r.get("quantizer", "fake"))
    mine = {key(r) for r in records}
    merged = [r for r in old if key(r) not in mine] + records
    zoo.save_results(path, merged)
    with open(os.path.join(a.out, "int8_qdq.md.tmp"), "w") as f:
        f.write(summary(merged))
    os.replace(os.path.join(a.out, "int8_qdq.md.tmp"), os.path.join(a.out, "int8_qdq.md"))
    sys.stdout.write(summary(records))
    return 0 if all(r["status"] == "ok" for r in records) else 3


if __name__ == "__main__":
    sys.exit(main())
