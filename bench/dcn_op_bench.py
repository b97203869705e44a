#!/usr/bin/env python3
"""DCNv2 forward on CUDA: graft's ModulatedDeformConv2d op against torchvision.ops.deform_conv2d.

    GRAFT_LIB_DIR=<build>/python/graft PYTHONPATH=python:<build>/python \\
        python3 bench/dcn_op_bench.py --out $OUT/dcnbench

Issue 17 asks that graft's CUDA forward beat torchvision.ops.deform_conv2d (with a mask) at
DCN-ResNet-50 stage shapes. Those are the 3x3 convolutions of ResNet-50's bottlenecks with DCNv2 on
stages 2-4 (mmdetection's dcn=True): C = Co = 128, 256, 512 at 1/8, 1/16, 1/32 of the input, padding 1,
stride 1, and stride 2 in each stage's first block (its input at the previous stage's resolution).
Inputs 512x512 and 800x1333 (detection's usual size), batch 1 and 8, FP32 and FP16, with bias.

Both run on the same random inputs: x ~ N(0, 1), offsets uniform in (-1, 1) px, masks uniform in
(0, 1), weights ~ N(0, 1/fan_in). graft is called through its torch op (torch.ops.graft.*, no
autograd) and torchvision through deform_conv2d. Times are medians over --iters CUDA-event pairs,
each around --inner back-to-back calls (so host overhead overlaps the GPU, as in a model), after
--warmup calls; "graph" times replay a CUDA graph of --inner calls (GPU time only; a capture that
fails is reported, not fatal). A graph time counts only when a replay recomputes the output
(bench/cuda_graphs.py): torchvision's column kernel runs outside any capture, so its replays skip it,
and that is reported as an error, not a figure. TF32 is off, so FP32 compares FP32 arithmetic.

Correctness, per configuration: FP32, graft against torchvision (relative L2 error below 1e-4);
FP16, both against torchvision in FP32 on the same (rounded) inputs, graft's error at most twice
torchvision's or 2e-3, whichever is larger.

Writes dcn_op_bench.json and dcn_op_bench.md to --out (GPU, torch and torchvision versions, date,
commit). Exit status: 0 when every check passed, 1 when one failed, 2 when nothing could be measured
(no torch, CUDA, torchvision or graft torch extension; the reason is printed).
"""
import argparse
import json
import math
import os
import platform
import statistics
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_HERE)
sys.path.insert(0, _HERE)

import cuda_graphs  # noqa: E402  (graph capture with a recompute check)
import ms_deform_attn_bench  # noqa: E402  (CUDA-event timing)
import zoo  # noqa: E402  (commit id and timestamp as the other benchmarks record them)

INPUTS = {"512": (512, 512), "800x1333": (800, 1333)}
STAGES = {2: 128, 3: 256, 4: 512}  # stage -> bottleneck width (the DCN's C and Co)
STAGE_STRIDE = {2: 8, 3: 16, 4: 32}  # stage -> output stride of its 3x3 convolutions


def feature_size(size, stride):
    """ResNet's feature size at an output stride: every stride-2 layer (stem conv, max pool, each stage's
    first block) gives ceil(size / 2)."""
    while stride > 1:
        size, stride = (size + 1) // 2, stride // 2
    return size


def configs(args):
    out = []
    for inp in args.inputs.split(","):
        h, w = INPUTS[inp]
        for stage in (int(s) for s in args.stages.split(",")):
            c, os_ = STAGES[stage], STAGE_STRIDE[stage]
            for stride in (int(s) for s in args.strides.split(",")):
                hi, wi = feature_size(h, os_ // stride), feature_size(w, os_ // stride)  # the conv's input
                for batch in (int(b) for b in args.batches.split(",")):
                    for dname in args.dtypes.split(","):
                        out.append(dict(input=inp, stage=stage, stride=stride, c=c, h=hi, w=wi, batch=batch,
                                        dtype=dname))
    return out


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--out", default=os.path.join(_REPO, "bench_results", "dcn_op"), help="output directory")
    ap.add_argument("--inputs", default="512,800x1333", help="input sizes: 512, 800x1333")
    ap.add_argument("--stages", default="2,3,4")
    ap.add_argument("--strides", default="1,2", help="1: a stage's later blocks; 2: its first block")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--dtypes", default="fp32,fp16")
    ap.add_argument("--iters", type=int, default=30, help="timed samples per measurement")
    ap.add_argument("--inner", type=int, default=5, help="calls per timed sample")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--no-graph", action="store_true", help="skip the CUDA-graph replay timings")
    ap.add_argument("--commit", default=None)
    return ap.parse_args(argv)


def time_eager(torch, fn, iters, inner, warmup):
    """Median ms per call over `iters` event pairs around `inner` back-to-back calls."""
    def calls():
        for _ in range(inner):
            fn()
    return ms_deform_attn_bench.time_ms(torch, calls, iters, max(1, warmup // inner)) / inner


def time_graph(torch, fn, iters, inner, expected):
    """Median ms per call replaying a CUDA graph of `inner` calls; (None, reason) when the capture fails
    or a replay does not recompute `expected` (the eager output; see cuda_graphs)."""
    try:
        g, outs = cuda_graphs.capture(torch, fn, inner)
        ok, _ = cuda_graphs.replay_recomputes(torch, g, outs, expected)
        if not ok:
            del g
            return None, ("a graph replay does not recompute the output (work launched outside the capture "
                          "stream is not in the graph): no graph time")
    except Exception as e:  # noqa: BLE001 - a capture failure is a finding, not a crash
        torch.cuda.synchronize()
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / inner)
    del g
    return statistics.median(times), None


def make_inputs(torch, cfg, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    n, c, h, w, s = cfg["batch"], cfg["c"], cfg["h"], cfg["w"], cfg["stride"]
    ho, wo = (h + 2 - 3) // s + 1, (w + 2 - 3) // s + 1
    x = torch.randn(n, c, h, w, device="cuda", generator=g)
    offset = torch.rand(n, 18, ho, wo, device="cuda", generator=g) * 2 - 1
    mask = torch.rand(n, 9, ho, wo, device="cuda", generator=g)
    weight = torch.randn(c, c, 3, 3, device="cuda", generator=g) / math.sqrt(c * 9)
    bias = torch.randn(c, device="cuda", generator=g) * 0.1
    return [t.to(dtype).contiguous() for t in (x, offset, mask, weight, bias)], (ho, wo)


def measure(torch, args, cfg, dtype, graft_op, attrs, deform_conv2d):
    """One configuration: correctness of both, then their eager and graph times."""
    (x, offset, mask, weight, bias), (ho, wo) = make_inputs(torch, cfg, dtype)
    s = cfg["stride"]
    a = dict(attrs, stride=[s, s])

    def run_graft():
        return graft_op(x, offset, mask, weight, bias, **a)

    def run_tv():
        return deform_conv2d(x, offset, weight, bias, stride=(s, s), padding=(1, 1), dilation=(1, 1), mask=mask)

    row = dict(cfg, ho=ho, wo=wo)
    with torch.no_grad():
        out_g, out_t = run_graft(), run_tv()
        eager_g, eager_t = out_g.clone(), out_t.clone()
        if dtype == torch.float32:
            row["err_graft"], row["err_tv"] = cuda_graphs.relative_error(torch, out_g, out_t), 0.0
            row["ok"] = bool(row["err_graft"] < 1e-4)
        else:
            ref = deform_conv2d(x.float(), offset.float(), weight.float(), bias.float(), stride=(s, s),
                                padding=(1, 1), dilation=(1, 1), mask=mask.float())
            row["err_graft"] = cuda_graphs.relative_error(torch, out_g, ref)
            row["err_tv"] = cuda_graphs.relative_error(torch, out_t, ref)
            row["ok"] = bool(row["err_graft"] <= max(2 * row["err_tv"], 2e-3))
            del ref
        del out_g, out_t
        row["graft_ms"] = time_eager(torch, run_graft, args.iters, args.inner, args.warmup)
        row["tv_ms"] = time_eager(torch, run_tv, args.iters, args.inner, args.warmup)
        if not args.no_graph:
            row["graft_graph_ms"], row["graft_graph_error"] = time_graph(torch, run_graft, args.iters, args.inner,
                                                                         eager_g)
            row["tv_graph_ms"], row["tv_graph_error"] = time_graph(torch, run_tv, args.iters, args.inner, eager_t)
    row["speedup"] = row["tv_ms"] / row["graft_ms"]
    if row.get("graft_graph_ms") and row.get("tv_graph_ms"):
        row["graph_speedup"] = row["tv_graph_ms"] / row["graft_graph_ms"]
    return row


def markdown(meta, rows):
    """The report: a summary line, then a table row per configuration (one column per figure)."""
    def ms(v):
        return "-" if v is None else f"{v:.3f}"

    columns = [("input", lambda r: r["input"]), ("stage", lambda r: r["stage"]), ("stride", lambda r: r["stride"]),
               ("C x H x W in", lambda r: f"{r['c']}x{r['h']}x{r['w']}"), ("batch", lambda r: r["batch"]),
               ("dtype", lambda r: r["dtype"]), ("graft ms", lambda r: ms(r["graft_ms"])),
               ("torchvision ms", lambda r: ms(r["tv_ms"])), ("speedup", lambda r: f"{r['speedup']:.2f}x"),
               ("graft graph ms", lambda r: ms(r.get("graft_graph_ms"))),
               ("torchvision graph ms", lambda r: ms(r.get("tv_graph_ms"))),
               ("graph speedup", lambda r: f"{r['graph_speedup']:.2f}x" if "graph_speedup" in r else "-"),
               ("rel. err graft", lambda r: f"{r['err_graft']:.1e}"),
               ("rel. err torchvision", lambda r: f"{r['err_tv']:.1e}"), ("ok", lambda r: "yes" if r["ok"] else "NO")]
    out = [f"# DCNv2 forward: graft vs torchvision.ops.deform_conv2d ({meta['gpu']})", "",
           f"torch {meta['torch']}, torchvision {meta['torchvision']}, CUDA {meta['cuda']}; commit {meta['commit']}, "
           f"{meta['date'][:10]}. Median ms per call over {meta['iters']} samples of {meta['inner']} calls; graph = "
           "CUDA graph replay (GPU time). 3x3, padding 1, one deform group, with bias and mask.", "",
           f"graft faster in {meta['graft_faster']} of {meta['configurations']} configurations; geometric-mean "
           f"speedup {meta['geomean_speedup']:.2f}x; {meta['checks_failed']} correctness check(s) failed.", ""]
    if meta["graph_errors"]:
        out += ["Graph capture errors: " + "; ".join(meta["graph_errors"]), ""]
    out.append("| " + " | ".join(name for name, _ in columns) + " |")
    out.append("|" + "---|" * len(columns))
    out += ["| " + " | ".join(str(cell(r)) for _, cell in columns) + " |" for r in rows]
    return "\n".join(out) + "\n"


def load_stack():
    """(torch, torchvision, deform_conv2d, graft's _function module, the op's info), or the reason why not."""
    try:
        import torch
        import torchvision
        from torchvision.ops import deform_conv2d
    except ImportError as e:
        return f"{e.name or 'torch or torchvision'} is not importable ({e}); nothing measured"
    if not torch.cuda.is_available():
        return "no CUDA device; this benchmark runs on the GPU machine only"
    sys.path.insert(0, os.path.join(_REPO, "python"))
    try:
        from graft import _function
        from graft.deform_conv import _op_info, graft_op_available
        if not graft_op_available():
            return ("graft's torch extension (with ModulatedDeformConv2d) did not load: set GRAFT_LIB_DIR to "
                    "<build>/python/graft")
        info = _op_info()
    except Exception as e:  # noqa: BLE001 - any failure to load graft is the reason printed
        return f"graft's op is not available ({type(e).__name__}: {e})"
    return torch, torchvision, deform_conv2d, _function, info


def main(argv=None):
    args = parse_args(argv)
    stack = load_stack()
    if isinstance(stack, str):
        print(f"dcn_op_bench: {stack}", file=sys.stderr)
        return 2
    torch, torchvision, deform_conv2d, _function, info = stack
    graft_op = info.torch_op()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    attrs = _function.normalize_attrs(info, {"padding": [1, 1], "dilation": [1, 1], "groups": 1,
                                             "deform_groups": 1})
    dtypes = {"fp16": torch.float16, "fp32": torch.float32}
    commit = zoo.commit_id(args.commit)
    rows = []
    for cfg in configs(args):
        row = measure(torch, args, cfg, dtypes[cfg["dtype"]], graft_op, attrs, deform_conv2d)
        rows.append(row)
        print(f"{cfg['input']:>8s} stage {cfg['stage']} s{cfg['stride']} {cfg['c']}x{cfg['h']}x{cfg['w']} "
              f"b{cfg['batch']} {cfg['dtype']}: graft {row['graft_ms']:.3f} ms, torchvision {row['tv_ms']:.3f} ms "
              f"({row['speedup']:.2f}x)"
              + (f", graph {row['graft_graph_ms']:.3f} / {row['tv_graph_ms']:.3f} ms"
                 if row.get("graft_graph_ms") and row.get("tv_graph_ms") else "")
              + f", rel.err {row['err_graft']:.1e} (torchvision {row['err_tv']:.1e}){'' if row['ok'] else ' FAILED'}",
              flush=True)
        torch.cuda.empty_cache()

    faster = sum(r["speedup"] > 1 for r in rows)
    geomean = math.exp(sum(math.log(r["speedup"]) for r in rows) / len(rows)) if rows else float("nan")
    failed = [r for r in rows if not r["ok"]]
    graph_errors = sorted({f"{who}: {r[key]}" for r in rows for who, key in (("graft", "graft_graph_error"),
                                                                              ("torchvision", "tv_graph_error"))
                           if r.get(key)})
    meta = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, torchvision=torchvision.__version__,
                cuda=torch.version.cuda, python=platform.python_version(), date=zoo._now(), commit=commit,
                iters=args.iters, inner=args.inner, warmup=args.warmup, configurations=len(rows),
                graft_faster=faster, geomean_speedup=geomean, checks_failed=len(failed), graph_errors=graph_errors)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "dcn_op_bench.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=2)
    text = markdown(meta, rows)
    with open(os.path.join(args.out, "dcn_op_bench.md"), "w") as f:
        f.write(text)
    print(text, end="")
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
