#!/usr/bin/env python3
"""Dynamic-profile engine against fixed-shape engines of the same model, timed in turns (issue 14).

The zoo (bench/zoo.py --fixed-shape) times a model's dynamic engine, then its fixed-shape engines,
one after the other, so drift between the two (GPU clocks, the process's other work) lands in the
ratio. Here both engines live in one process and are timed in alternating rounds (dynamic first in
even rounds, fixed first in odd ones), each round the zoo's own measurement (CUDA events around one
call on torch's current stream, the median of `--iters` calls); the ratio is the median over rounds.
The host time of the call itself (until `Engine.run` returns, the device synchronized after it,
outside the clock) is recorded too, and for the dynamic engine the part spent in the native call
alone, with a cProfile of 2000 calls (into the .md): at batch 1 it is a visible part of the latency.

    export PYTHONPATH=python:build/python GRAFT_LIB_DIR=build/python/graft
    python3 bench/zoo.py --export-only --cache /tmp/zoo_cache --models vit_b_32
    python3 bench/dynamic_vs_fixed.py --cache /tmp/zoo_cache --models vit_b_32 vit_b_16 --out /tmp/dvf

Writes <out>/dynamic_vs_fixed.json and .md. Exit status 0, or 1 when a model could not be measured.
"""
import argparse
import json
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)

import zoo  # noqa: E402  (the export cache, the input size, the timing loop)


def sync(torch):
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def host_call_us(torch, fn, n=30):
    """Median microseconds until fn() returns (its queued work finished outside the clock)."""
    out = []
    for _ in range(n):
        sync(torch)
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e6)
    sync(torch)
    return zoo._median(out)


def native_call_us(torch, eng, x, n=30, side_stream=False):
    """Median microseconds of the engine's native run call alone (pointers, output and stream made
    once, outside the clock): the part of a call that is not graft's Python wrapper. side_stream: on
    a stream of torch's own instead of the legacy default stream, which the engine cannot capture on
    and so joins through two events (the difference is that detour's host cost)."""
    y = eng.run({"input": x})  # its output's shape and dtype
    name = next(iter(y))
    out = torch.empty_like(y[name])
    stream = torch.cuda.Stream() if side_stream else torch.cuda.current_stream()
    handle = stream.cuda_stream or 1  # 1: cudaStreamLegacy, as Engine.run passes it
    feeds, outs = {"input": eng._pointer(x)}, {name: eng._pointer(out)}
    call = lambda: eng._impl.run(feeds, outputs=outs, stream=handle, profile=0)  # noqa: E731
    if side_stream:
        stream.wait_stream(torch.cuda.current_stream())
        call()  # the first run on a new stream orders itself after the last one's; not timed
    return host_call_us(torch, call, n)


def traced_split_us(torch, graft, path, profile, x, n=30):
    """Median (host us before cudaGraphLaunch, us inside it, whole native run) of n replays, from
    the engine's GRAFT_CUDA_GRAPH_TRACE lines (stderr, redirected to a file for the calls): where
    the native call's time goes. An engine of its own, since the trace is read when a context is made."""
    import re
    os.environ["GRAFT_CUDA_GRAPH_TRACE"] = "1"
    try:
        eng = graft.Engine.build(path, fp16=True, device="cuda", profile={"input": profile})

        def runs():
            for _ in range(n + 3):  # the first runs plan and capture
                sync(torch)
                eng.run({"input": x})
            sync(torch)
        _, text = zoo.native_stderr(runs)
    finally:
        del os.environ["GRAFT_CUDA_GRAPH_TRACE"]
    rows = [(float(m[2]), float(m[3]), float(m[1]) * 1e3) for m in
            re.finditer(r"run replayed.*?([0-9.]+) ms on the host \(([0-9.]+) us before cudaGraphLaunch, ([0-9.]+) us in it\)",
                        text)]
    if not rows:
        return None
    return tuple(zoo._median([r[k] for r in rows]) for k in range(3))


def call_profile(torch, fn, n=2000):
    """cProfile over n calls of fn, each on an idle device (synchronized before it, outside the
    profile: calls queued behind running work would block in the launch and time the GPU): where the
    host time of a call goes, function by function (torch's own calls show as built-in methods;
    graft's native run counts as its caller's own time). The top 25 by own time."""
    import cProfile
    import io
    import pstats
    prof = cProfile.Profile()
    for _ in range(n):
        sync(torch)
        prof.enable()
        fn()
        prof.disable()
    sync(torch)
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
    return out.getvalue()


def measure(torch, graft, path, hw, batch, rounds, iters, smoke=False):
    """smoke: CPU engines over the zoo's tiny models (the pipeline's test; no native-call timing)."""
    device = "cpu" if smoke else "cuda"
    shape = (batch, 3, hw[0], hw[1])
    ranges = [tuple(zoo.make_input(b, hw).shape) for b in (zoo.SMOKE_PROFILE if smoke else zoo.PROFILE)]
    engines = {
        "dynamic": graft.Engine.build(path, fp16=not smoke, device=device, profile={"input": ranges}),
        "fixed": graft.Engine.build(path, fp16=not smoke, device=device, profile={"input": [shape] * 3}),
    }
    x = torch.randn(shape, device=device)
    runs = {k: (lambda e=e: e.run({"input": x})) for k, e in engines.items()}
    with torch.inference_mode():
        per_round = zoo.time_in_turns(lambda fn: zoo.time_fn(torch, fn, not smoke, 10, iters, 5.0)[0], runs, rounds)
        host = {k: host_call_us(torch, runs[k]) for k in engines}
        native = None if smoke else native_call_us(torch, engines["dynamic"], x)
        native_side = None if smoke else native_call_us(torch, engines["dynamic"], x, side_stream=True)
        split = None if smoke else traced_split_us(torch, graft, path, ranges, x)
        profile = call_profile(torch, runs["dynamic"], 200 if smoke else 2000)
        # The two engines' outputs against each other: the same model, so FP16 rounding apart at most.
        outs = {k: next(iter(runs[k]().values())).float() for k in engines}
        agreement = zoo.rel_err(outs["dynamic"], outs["fixed"])
    dyn, fix = zoo._median(per_round["dynamic"]), zoo._median(per_round["fixed"])
    return {"batch": batch, "dynamic_ms": dyn, "fixed_ms": fix, "dynamic_over_fixed": dyn / fix,
            "dynamic_rounds_ms": per_round["dynamic"], "fixed_rounds_ms": per_round["fixed"],
            "dynamic_host_call_us": host["dynamic"], "fixed_host_call_us": host["fixed"],
            "dynamic_native_call_us": native, "dynamic_native_call_side_stream_us": native_side,
            "dynamic_native_split_us": split,
            "dynamic_call_profile": profile, "dynamic_vs_fixed_rel_err": agreement}


def _us(v):
    return "-" if v is None else format(v, ".0f")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", required=True, help="zoo.py's export cache (--export-only fills it)")
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--batches", nargs="+", type=int, default=list(zoo.BATCHES))
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true",
                    help="CPU test of the pipeline on the zoo's tiny models (zoo.py --export-only --smoke fills the cache)")
    a = ap.parse_args(argv)
    import torch
    import graft
    os.makedirs(a.out, exist_ok=True)
    if a.smoke and a.batches == list(zoo.BATCHES):
        a.batches = list(zoo.SMOKE_BATCHES)
    env = {"gpu": "cpu (--smoke)" if a.smoke else torch.cuda.get_device_name(0), "torch": torch.__version__,
           "commit": zoo.commit_id(None), "date": zoo._now(), "command": " ".join(sys.argv)}
    records, failed = [], 0
    for name in a.models:
        hw = zoo.input_hw(name, a.smoke)
        path = zoo.cache_paths(a.cache, name, hw)["onnx"]
        for b in a.batches:
            rec = {"model": name, **env}
            try:
                if not os.path.exists(path):
                    raise RuntimeError(f"no export in the cache: {path} (run zoo.py --export-only first)")
                rec.update(measure(torch, graft, path, hw, b, a.rounds, a.iters, a.smoke))
                rec["status"] = "ok"
            except Exception as e:  # noqa: BLE001 - a row that says why
                rec.update(batch=b, status="error", reason=zoo._short(e))
                failed += 1
            print(json.dumps({k: v for k, v in rec.items() if not k.endswith(("rounds_ms", "profile"))}), flush=True)
            records.append(rec)
    with open(os.path.join(a.out, "dynamic_vs_fixed.json"), "w") as f:
        json.dump(records, f, indent=1)
    lines = [f"# Dynamic-profile vs fixed-shape engines, timed in turns ({env['gpu']}, {env['date']}, commit "
             f"{env['commit']})", "", f"`{env['command']}`", "",
             "| model | batch | dynamic ms | fixed ms | dynamic / fixed | host call us (dynamic / fixed) | "
             "of which the native call (dynamic; on a side stream) | status |",
             "|---|---:|---:|---:|---:|---|---|---|"]
    for r in records:
        if r["status"] == "ok":
            lines.append(f"| {r['model']} | {r['batch']} | {r['dynamic_ms']:.3f} | {r['fixed_ms']:.3f} | "
                         f"{r['dynamic_over_fixed']:.3f} | {r['dynamic_host_call_us']:.0f} / {r['fixed_host_call_us']:.0f} | "
                         f"{_us(r['dynamic_native_call_us'])}; {_us(r.get('dynamic_native_call_side_stream_us'))} | ok |")
        else:
            lines.append(f"| {r['model']} | {r['batch']} | | | | | | {r['status']}: {r['reason']} |")
    splits = [r for r in records if r.get("dynamic_native_split_us")]
    if splits:
        lines += ["", "The native call from the engine's own trace (`GRAFT_CUDA_GRAPH_TRACE=1`, median of 30 "
                  "replays): host microseconds from the call's entry to `cudaGraphLaunch`, inside it, and the whole run.",
                  "", "| model | batch | before the launch | in the launch | whole run |", "|---|---:|---:|---:|---:|"]
        lines += [f"| {r['model']} | {r['batch']} | " + " | ".join(f"{v:.1f}" for v in r["dynamic_native_split_us"]) + " |"
                  for r in splits]
    for r in records:
        if r.get("dynamic_call_profile"):
            lines += ["", f"## Where a call's host time goes: {r['model']}, batch {r['batch']}, dynamic engine "
                      "(cProfile)", "", "```", r["dynamic_call_profile"].strip(), "```"]
    with open(os.path.join(a.out, "dynamic_vs_fixed.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
