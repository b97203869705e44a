#!/usr/bin/env python3
"""Host cost per layer of graft's eager CUDA path (issue 14: at most 3 microseconds per layer).

A CUDA graph replays a shape set graft has already captured; the eager path runs every shape set
the first time, and every run when graphs are off. Its cost is host time: per layer, preparing the
launch (output shapes, arena offsets, descriptors, algorithm choice) and the launch itself. This
measures it the way a user's process sees it: a torchvision model exported with a dynamic batch
axis, built with a profile 1..32 in a process that ran PyTorch, CUDA tensors on torch's stream.

For each model and batch it times
  - eager_enqueue_us: the wall time of one Engine.run call that only enqueues (the GPU is idle
    before it, so the call never waits for the GPU), with CUDA graphs off (GRAFT_CUDA_GRAPHS=0);
  - graph_enqueue_us: the same call when the shape set's CUDA graph replays: the per-call cost
    (Python, input checks, one graph launch) that does not grow with the layers;
  - host_us_per_layer: (eager - graph) / GPU layers, the eager path's cost per layer;
  - gpu_ms: the run's GPU time (CUDA events), for scale;
  - host_by_op: where the eager run's host time goes, from the engine's own trace
    (GRAFT_CUDA_GRAPH_TRACE=1, its "eager host time by op" line of the last timed run): per op type
    the layers, their host microseconds, and the part inside the op's own call (descriptors,
    library calls, launches) as against the engine's around it (inputs, output shapes, buffers).
Records go to --out (JSON), one per model and batch, with the GPU, date and commit.

    PYTHONPATH=python:build/python GRAFT_LIB_DIR=build/python/graft python3 bench/eager_host_cost.py \\
        --models resnet50 mobilenet_v3_large vit_b_16 --out docs/results/eager_host_cost.json
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo  # noqa: E402  (native_stderr: the engine's trace from file descriptor 2)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def export(name, path, size):
    import torch
    import torchvision
    model = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.randn(2, 3, size, size)
    torch.onnx.export(model, (x,), path, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, opset_version=17, dynamo=False)


def gpu_layers(engine):
    # "placement: N layers on the GPU, ..." from the engine's description.
    for line in engine.describe().splitlines():
        if line.startswith("placement:"):
            return int(line.split()[1])
    return None


TRACE_PREFIX = "graft: cuda trace: eager host time by op: "


def parse_host_by_op(line):
    """Parses the trace's line: '<n> layers, <us> us, <us> us in the ops' calls; op layers us (us in
    the op's call): A 3 1.0 (0.5); ...'."""
    head, _, rows = line[len(TRACE_PREFIX):].partition("; op layers us (us in the op's call): ")
    nums = [float(w) for w in head.replace(",", "").split() if w.replace(".", "", 1).isdigit()]
    by_op = []
    for row in rows.strip().split("; "):
        words = row.rsplit(" ", 3)
        if len(words) == 4:
            by_op.append({"op": words[0], "layers": int(words[1]), "us": float(words[2]),
                          "op_call_us": float(words[3].strip("()"))})
    return {"traced_layers": int(nums[0]), "traced_us": nums[1], "traced_op_calls_us": nums[2], "host_by_op": by_op}


def traced(fn):
    """Runs fn with the process's stderr (the engine's trace) going to a file; returns fn's result
    and the last "eager host time by op" line, parsed."""
    result, text = zoo.native_stderr(fn)
    lines = [ln for ln in text.splitlines() if ln.startswith(TRACE_PREFIX)]
    return result, (parse_host_by_op(lines[-1]) if lines else {})


def measure(engine, torch, batch, size, iters, graphs):
    x = torch.randn(batch, 3, size, size, device="cuda", dtype=torch.float32)
    for _ in range(3):  # first run plans the shape set (eager), second captures when graphs are on
        engine.run({"input": x})
    torch.cuda.synchronize()
    walls, gpus = [], []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(iters):
        torch.cuda.synchronize()
        start.record()
        t0 = time.perf_counter()
        engine.run({"input": x})
        t1 = time.perf_counter()
        stop.record()
        torch.cuda.synchronize()
        walls.append((t1 - t0) * 1e6)
        gpus.append(start.elapsed_time(stop))
    return statistics.median(walls), statistics.median(gpus)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["resnet50", "mobilenet_v3_large", "vit_b_16"])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 32])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--cache", default="/tmp/graft_eager_cache")
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", default=os.environ.get("GRAFT_COMMIT"))
    args = ap.parse_args()
    import torch
    import graft
    os.makedirs(args.cache, exist_ok=True)
    commit = args.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                           text=True).stdout.strip() or "unknown"
    records = []
    for name in args.models:
        path = os.path.join(args.cache, f"{name}_{args.size}.onnx")
        try:
            if not os.path.exists(path):
                export(name, path, args.size)
            # Graphs on and off need two engines: GRAFT_CUDA_GRAPHS is read when a context is made.
            prof = {"input": ((1, 3, args.size, args.size), (8, 3, args.size, args.size), (32, 3, args.size, args.size))}
            engines = {}
            for graphs in (True, False):
                # The eager engine's context traces its runs (read when the context is made).
                os.environ["GRAFT_CUDA_GRAPHS"] = "1" if graphs else "0"
                os.environ["GRAFT_CUDA_GRAPH_TRACE"] = "0" if graphs else "1"
                engines[graphs] = graft.Engine.build(path, fp16=True, device="cuda", profile=prof)
                traced(lambda: engines[graphs].run({"input": torch.randn(1, 3, args.size, args.size, device="cuda")}))
            os.environ.pop("GRAFT_CUDA_GRAPHS", None)
            os.environ.pop("GRAFT_CUDA_GRAPH_TRACE", None)
            layers = gpu_layers(engines[False])
            for b in args.batches:
                (eager_us, gpu_ms), by_op = traced(lambda: measure(engines[False], torch, b, args.size, args.iters, False))
                graph_us, graph_gpu_ms = measure(engines[True], torch, b, args.size, args.iters, True)
                rec = {"model": name, "batch": b, "profile": "dynamic", "gpu_layers": layers,
                       "eager_enqueue_us": round(eager_us, 1),
                       "host_us_per_layer": round((eager_us - graph_us) / layers, 2) if layers else None,
                       "eager_gpu_ms": round(gpu_ms, 4), "graph_enqueue_us": round(graph_us, 1),
                       "graph_gpu_ms": round(graph_gpu_ms, 4), **by_op}
                log(json.dumps(rec))
                records.append(rec)
        except Exception as e:  # a model that fails is a record that says why
            records.append({"model": name, "status": "failed", "reason": str(e).splitlines()[0][:300]})
            log(f"{name}: failed: {e}")
    meta = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "commit": commit,
            "date": datetime.date.today().isoformat(), "target_host_us_per_layer": 3.0}
    for r in records:
        r.update(meta)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        json.dump(records, f, indent=1)
    os.replace(args.out + ".tmp", args.out)
    print(f"{'model':22} {'batch':>5} {'layers':>6} {'eager enqueue us':>17} {'us/layer':>9} {'graph enqueue us':>17}")
    for r in records:
        if "eager_enqueue_us" in r:
            print(f"{r['model']:22} {r['batch']:5d} {r['gpu_layers']:6d} {r['eager_enqueue_us']:17.1f} "
                  f"{r['host_us_per_layer']:9.2f} {r['graph_enqueue_us']:17.1f}")
            if r.get("host_by_op"):
                print("    host by op (layers, us, us in the op's call): " + "; ".join(
                    f"{o['op']} {o['layers']} {o['us']:.0f} ({o['op_call_us']:.0f})" for o in r["host_by_op"][:6]))
        else:
            print(f"{r['model']:22} failed: {r['reason']}")


if __name__ == "__main__":
    main()
