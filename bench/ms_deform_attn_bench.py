#!/usr/bin/env python3
"""Multi-scale deformable attention on CUDA: graft's op vs the pure-PyTorch grid_sample formulation.

    PYTHONPATH=python:<build>/python python3 bench/ms_deform_attn_bench.py --out results/msda

Shapes: Deformable DETR's encoder (N=2, M=8, D=32, levels 100x150/50x75/25x38/13x19, P=4,
Lq = S = 19947) and decoder (same value, Lq = 300). Forward and backward (gradients of value,
locations and weights), fp32 and fp16. Times are medians of torch.cuda.Event pairs over --iters runs
after --warmup runs. "Bandwidth" counts each input read once and each output written once over the
time, against the H200's ~4.3 TB/s device copy; the op's real traffic is higher (each value row is
gathered by many samples, mostly from L2), so this is an efficiency figure, not a roofline.

Locations are realistic by default: every query samples around a reference point (encoder: its own
pixel; decoder: uniform) with offsets of a few pixels, as a trained model does. --uniform spreads them
uniformly over [0, 1] instead (worst case for caches). Writes results.json and results.md to --out.
"""
import argparse
import json
import os
import platform
import statistics
import sys

H200_COPY_TBPS = 4.3
LEVELS = [(100, 150), (50, 75), (25, 38), (13, 19)]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="bench_results/ms_deform_attn", help="output directory")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--uniform", action="store_true", help="uniform random locations instead of realistic ones")
    ap.add_argument("--dtypes", default="fp16,fp32")
    ap.add_argument("--cases", default="encoder,decoder")
    ap.add_argument("--no-backward", action="store_true")
    return ap.parse_args(argv)


def make_inputs(torch, case, dtype, uniform, device="cuda", batch=2, heads=8, dims=32, points=4):
    hw = torch.tensor(LEVELS, dtype=torch.int64, device=device)
    areas = hw[:, 0] * hw[:, 1]
    starts = torch.cat([areas.new_zeros(1), areas.cumsum(0)[:-1]])
    s = int(areas.sum())
    lq = s if case == "encoder" else 300
    g = torch.Generator(device=device).manual_seed(0)
    value = torch.randn(batch, s, heads, dims, device=device, generator=g).to(dtype)
    nl = len(LEVELS)
    if uniform:
        locs = torch.rand(batch, lq, heads, nl, points, 2, device=device, generator=g)
    else:
        if case == "encoder":
            refs = []
            for h, w in LEVELS:  # each query's own pixel centre, normalized
                ys, xs = torch.meshgrid(torch.arange(h, device=device), torch.arange(w, device=device), indexing="ij")
                refs.append(torch.stack([(xs.reshape(-1) + 0.5) / w, (ys.reshape(-1) + 0.5) / h], -1))
            ref = torch.cat(refs)[None].expand(batch, -1, -1)
        else:
            ref = torch.rand(batch, lq, 2, device=device, generator=g)
        wh = torch.tensor([[w, h] for h, w in LEVELS], dtype=torch.float32, device=device)  # (L, 2) as (W, H)
        offsets = torch.randn(batch, lq, heads, nl, points, 2, device=device, generator=g) * 2.0 / wh[None, None, None, :, None, :]
        locs = ref[:, :, None, None, None, :] + offsets
    weights = torch.rand(batch, lq, heads, nl, points, device=device, generator=g)
    weights = weights / weights.sum((-1, -2), keepdim=True)
    return value, hw, starts, locs.to(dtype).contiguous(), weights.to(dtype).contiguous()


def time_ms(torch, fn, iters, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def nbytes(*ts):
    return sum(t.numel() * t.element_size() for t in ts)


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
    except ImportError as e:
        print(f"ms_deform_attn_bench: torch is not importable ({e}); nothing measured", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("ms_deform_attn_bench: no CUDA device; this benchmark runs on the GPU machine only", file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
    from graft.deformable import graft_op_available, ms_deform_attn, ms_deform_attn_pytorch

    impls = {"pytorch": ms_deform_attn_pytorch}
    graft_note = "ok"
    if graft_op_available():
        impls["graft"] = ms_deform_attn
    else:
        graft_note = "graft's torch extension (with MultiScaleDeformableAttention) did not load"
        print(f"note: {graft_note}; measuring PyTorch only", file=sys.stderr)

    dtypes = {"fp16": torch.float16, "fp32": torch.float32}
    rows = []
    for case in args.cases.split(","):
        for dname in args.dtypes.split(","):
            dtype = dtypes[dname]
            value, hw, starts, locs, weights = make_inputs(torch, case, dtype, args.uniform)
            out_ref = None
            for impl, fn in impls.items():
                with torch.no_grad():
                    out = fn(value, hw, starts, locs, weights)
                    fwd = time_ms(torch, lambda: fn(value, hw, starts, locs, weights), args.iters, args.warmup)
                if out_ref is None:
                    out_ref = out.float()
                err = ((out.float() - out_ref).norm() / out_ref.norm().clamp_min(1e-30)).item()
                in_bytes = nbytes(value, hw, starts, locs, weights)
                row = dict(case=case, dtype=dname, impl=impl, lq=locs.shape[1], s=value.shape[1],
                           fwd_ms=fwd, fwd_tbps=(in_bytes + nbytes(out)) / (fwd * 1e-3) / 1e12,
                           rel_err_vs_pytorch=err)
                if not args.no_backward:
                    v, lc, w = (t.detach().clone().requires_grad_(True) for t in (value, locs, weights))
                    y = fn(v, hw, starts, lc, w)
                    gout = torch.randn_like(y)

                    def bwd():
                        torch.autograd.grad(y, (v, lc, w), gout, retain_graph=True)
                    row["bwd_ms"] = time_ms(torch, bwd, max(args.iters // 4, 10), max(args.warmup // 4, 3))
                    row["bwd_tbps"] = (nbytes(value, hw, starts, locs, weights, gout) + nbytes(value, locs, weights)) / (
                        row["bwd_ms"] * 1e-3) / 1e12
                rows.append(row)
                print(f"{case:8s} {dname} {impl:8s} fwd {row['fwd_ms']:8.3f} ms ({row['fwd_tbps']:5.2f} TB/s)"
                      + (f"  bwd {row['bwd_ms']:8.3f} ms" if "bwd_ms" in row else "")
                      + f"  rel.err {err:.2e}", flush=True)
            del value, locs, weights
            torch.cuda.empty_cache()

    for r in rows:  # speedup of graft over the pytorch formulation
        base = next(x for x in rows if x["case"] == r["case"] and x["dtype"] == r["dtype"] and x["impl"] == "pytorch")
        r["fwd_speedup"] = base["fwd_ms"] / r["fwd_ms"]
        if "bwd_ms" in r:
            r["bwd_speedup"] = base["bwd_ms"] / r["bwd_ms"]

    os.makedirs(args.out, exist_ok=True)
    meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, python=platform.python_version(),
                iters=args.iters, warmup=args.warmup, locations="uniform" if args.uniform else "realistic",
                levels=LEVELS, graft=graft_note, copy_bandwidth_tbps=H200_COPY_TBPS)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=2)
    lines = [f"# Multi-scale deformable attention: graft vs PyTorch grid_sample ({meta['device']})", "",
             f"torch {meta['torch']}; median of {args.iters} runs; {meta['locations']} locations; "
             f"bandwidth = inputs read once + outputs written once, vs ~{H200_COPY_TBPS} TB/s copy.", "",
             "| case | Lq | dtype | impl | fwd ms | fwd TB/s | fwd speedup | bwd ms | bwd speedup | rel. err |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['lq']} | {r['dtype']} | {r['impl']} | {r['fwd_ms']:.3f} | "
                     f"{r['fwd_tbps']:.2f} | {r['fwd_speedup']:.2f}x | "
                     f"{r.get('bwd_ms', float('nan')):.3f} | {r.get('bwd_speedup', float('nan')):.2f}x | "
                     f"{r['rel_err_vs_pytorch']:.1e} |")
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
