#!/usr/bin/env python3
"""Benchmarks graft's engine against PyTorch eager and torch.compile, side by side in one run.

For each model x batch x dtype it measures latency (median, p99), throughput, peak device memory
and accuracy against the FP32 PyTorch eager output (||y - y_ref|| / ||y_ref||), plus graft's
engine build time and torch.compile's compile time. Writes bench_models.json, bench_models.md and
(with matplotlib) bench_models.png into --out.

    PYTHONPATH=python:build/python GRAFT_LIB_DIR=build/python/graft \\
        python3 bench/bench_models.py --out /tmp/bench            # GPU: all models, batch 1/32, fp32/fp16
    ... bench/bench_models.py --smoke --out /tmp/bench_smoke      # CPU allowed: tiny shapes, 2 iterations

Each (model, contender) runs in its own worker process with a time limit, so a compile that takes
too long is recorded as a timeout and a crash in one engine is recorded as a failure; the other
models still run. Exit status: 0 when every entry was measured, 3 when some entry failed, was
skipped or timed out (the results are written all the same), 1 when the harness itself failed.
"""
import argparse
import copy
import datetime
import inspect
import json
import math
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_HERE)
sys.path.insert(0, _HERE)

CONTENDERS = ("eager", "compile", "graft")
DTYPES = ("fp32", "fp16")
# Accuracy above these relative errors gets a warning mark in the table (not a failure).
REL_ERR_WARN = {"fp32": 1e-3, "fp16": 3e-2}


# ---------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------
def _log(*a):
    print(*a, file=sys.stderr, flush=True)


def _percentile(sorted_vals, p):
    """Nearest-rank percentile (the same rule as `graft run`)."""
    if not sorted_vals:
        return float("nan")
    k = max(0, min(len(sorted_vals) - 1, int(math.ceil(p / 100.0 * len(sorted_vals))) - 1))
    return sorted_vals[k]


def _median(vals):
    s = sorted(vals)
    n = len(s)
    if n == 0:
        return float("nan")
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def _stats(ms_list, batch):
    s = sorted(ms_list)
    med = _median(s)
    return {"median_ms": med, "p99_ms": _percentile(s, 99), "min_ms": s[0] if s else float("nan"),
            "mean_ms": sum(s) / len(s) if s else float("nan"), "iters": len(s),
            "throughput_per_s": batch / (med / 1000.0) if med and med > 0 else float("nan")}


# ---------------------------------------------------------------------------------------------
# Worker: one model, one contender, every (batch, dtype); one JSON line per configuration
# ---------------------------------------------------------------------------------------------
class Worker:
    def __init__(self, args):
        import torch
        self.torch = torch
        self.args = args
        self.device = torch.device(args.device)
        self.cuda = self.device.type == "cuda"
        self.out = open(args.result_file, "a")
        if self.cuda:
            # FP32 means FP32: no TF32 in matmuls or convolutions (NVIDIA_TF32_OVERRIDE=0 is also
            # set for the process by the parent, which covers graft's cuBLAS/cuDNN calls).
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cudnn.benchmark = True
        if hasattr(torch, "set_float32_matmul_precision"):
            torch.set_float32_matmul_precision("highest")
        import models
        self.spec = models.get(args.model)

    # -- plumbing --------------------------------------------------------------------------------
    def emit(self, rec):
        rec.setdefault("model", self.args.model)
        rec.setdefault("contender", self.args.contender)
        self.out.write(json.dumps(rec) + "\n")
        self.out.flush()

    def configs(self):
        return [(b, d) for d in self.args.dtypes for b in self.args.batches]

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def tdtype(self, dtype):
        return self.torch.float16 if dtype == "fp16" else self.torch.float32

    def rel_err(self, y, ref):
        return relative_error(self._first_tensor(y), ref)

    def _first_tensor(self, y):
        torch, np = self.torch, __import__("numpy")
        if isinstance(y, dict):
            y = y["output"] if "output" in y else next(iter(y.values()))
        if isinstance(y, (tuple, list)):
            y = y[0]
        if isinstance(y, np.ndarray):
            y = torch.from_numpy(np.ascontiguousarray(y))
        return y

    def time_fn(self, fn, warmup, iters):
        """Per-iteration latency of fn() until its results are complete. On CUDA: CUDA events on
        the current stream around each call (the primary number) and host wall-clock around call +
        synchronize (a cross-check that also covers work on other streams)."""
        torch = self.torch
        # A slow engine must not eat the run's time: warm-up stops after ~max_s/3 seconds, and the
        # timed loop is shortened to ~max_s seconds (at least 5 iterations); the record says how many ran.
        max_s = self.args.max_seconds_per_config
        t0 = time.perf_counter()
        done = 0
        for done in range(1, warmup + 1):
            fn()
            if done % 4 == 0 or done == warmup:
                self.sync()
                if time.perf_counter() - t0 > max_s / 3:
                    break
        self.sync()
        if done:
            per_iter = (time.perf_counter() - t0) / done
            iters = max(min(iters, 5), min(iters, int(max_s / max(per_iter, 1e-9))))
        wall = []
        events = []
        for _ in range(iters):
            if self.cuda:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                t0 = time.perf_counter()
                s.record()
                fn()
                e.record()
                torch.cuda.synchronize()
                wall.append((time.perf_counter() - t0) * 1e3)
                events.append((s, e))
            else:
                t0 = time.perf_counter()
                fn()
                wall.append((time.perf_counter() - t0) * 1e3)
        if self.cuda:
            ev_ms = [s.elapsed_time(e) for s, e in events]
            return ev_ms, wall, "cuda_events"
        return wall, wall, "wall_clock"

    def reset_peak(self):
        if self.cuda:
            self.torch.cuda.empty_cache()
            self.torch.cuda.reset_peak_memory_stats()

    def peak_mib(self):
        if self.cuda:
            return self.torch.cuda.max_memory_allocated() / 2**20
        return None

    def cpu_model(self):
        if not hasattr(self, "_cpu_model"):
            t0 = time.perf_counter()
            self._cpu_model = self.spec.build(smoke=self.args.smoke, device="cpu")
            _log(f"[{self.args.model}/{self.args.contender}] model built in {time.perf_counter() - t0:.1f}s")
        return self._cpu_model

    def references(self):
        """FP32 eager outputs on the benchmark device, per batch: the accuracy baseline for all."""
        torch = self.torch
        refs = {}
        m = copy.deepcopy(self.cpu_model()).to(self.device)
        with torch.inference_mode():
            for b in self.args.batches:
                x = self.spec.input(b, self.args.smoke, self.device)
                refs[b] = self._first_tensor(m(x)).detach().float().cpu()
                if not torch.isfinite(refs[b]).all():
                    _log(f"[{self.args.model}] warning: the FP32 reference output has non-finite values (batch {b})")
        del m
        self.reset_peak()
        return refs

    def run(self):
        fn = {"eager": self.run_torch, "compile": self.run_torch, "graft": self.run_graft}[self.args.contender]
        try:
            refs = self.references()
        except Exception as e:  # noqa: BLE001 - recorded per configuration, then the worker ends
            msg = f"building the model or its FP32 reference failed: {type(e).__name__}: {e}"
            for b, d in self.configs():
                self.emit({"batch": b, "dtype": d, "status": "error", "error": msg})
            return 0
        if os.environ.get("GRAFT_BENCH_TEST_CRASH") == self.args.contender:
            os.kill(os.getpid(), signal.SIGSEGV)  # test hook: bench/test_bench.py checks a crash is recorded
        fn(refs)
        return 0

    # -- PyTorch: eager and torch.compile ---------------------------------------------------------
    def run_torch(self, refs):
        torch, a = self.torch, self.args
        compiled = a.contender == "compile"
        if compiled and not hasattr(torch, "compile"):
            for b, d in self.configs():
                self.emit({"batch": b, "dtype": d, "status": "skipped",
                           "error": f"torch {torch.__version__} has no torch.compile"})
            return
        mode = "max-autotune" if a.max_autotune else "reduce-overhead"
        for b, d in self.configs():
            rec = {"batch": b, "dtype": d}
            if compiled:
                rec["compile_mode"] = mode
            try:
                if compiled:
                    import torch._dynamo
                    torch._dynamo.reset()
                self.reset_peak()
                m = copy.deepcopy(self.cpu_model()).to(self.device, self.tdtype(d))
                x = self.spec.input(b, a.smoke, self.device, self.tdtype(d))
                run = m
                with torch.inference_mode():
                    if compiled:
                        run = torch.compile(m, mode=mode, fullgraph=False, dynamic=False)
                        t0 = time.perf_counter()
                        run(x)
                        self.sync()
                        rec["compile_s"] = time.perf_counter() - t0
                    ev, wall, how = self.time_fn(lambda: run(x), a.warmup, a.iters)
                    y = self._first_tensor(run(x)).clone()  # cudagraph outputs are overwritten by later runs
                    self.sync()
                rec.update(_stats(ev, b), timing=how, wall_median_ms=_median(wall),
                           peak_mem_mib=self.peak_mib(), mem_kind="torch.cuda.max_memory_allocated")
                rec["rel_err"], err = self.rel_err(y, refs[b])
                if err:
                    rec["rel_err_note"] = err
                rec["status"] = "ok"
                del m, run, x, y
            except Exception as e:  # noqa: BLE001 - one configuration fails, the next still runs
                rec.update(status="error", error=f"{type(e).__name__}: {_short(e)}")
            _log(f"[{a.model}/{a.contender}] batch {b} {d}: {_summary(rec)}")
            self.emit(rec)

    # -- graft --------------------------------------------------------------------------------
    def run_graft(self, refs):
        torch, a = self.torch, self.args
        try:
            import graft
            from graft import _native
            _native.engine_module()
        except Exception as e:  # noqa: BLE001
            for b, d in self.configs():
                self.emit({"batch": b, "dtype": d, "status": "error",
                           "error": f"graft's engine bindings did not load: {type(e).__name__}: {_short(e)}"})
            return
        onnx_path = os.path.join(a.work_dir, f"{a.model}.onnx")
        export_info = {}
        try:
            t0 = time.perf_counter()
            export_info = self.export_onnx(graft, onnx_path)
            export_info["export_s"] = time.perf_counter() - t0
            _log(f"[{a.model}/graft] exported {onnx_path} with the {export_info['exporter']} exporter "
                 f"in {export_info['export_s']:.1f}s")
        except Exception as e:  # noqa: BLE001
            for b, d in self.configs():
                self.emit({"batch": b, "dtype": d, "status": "error",
                           "error": f"ONNX export failed: {type(e).__name__}: {_short(e)}"})
            return
        ort_outs, ort_info = self.ort_reference(onnx_path, refs)
        build_params = inspect.signature(graft.Engine.build).parameters
        cli = _find_graft_cli(a.graft_cli)
        for b, d in self.configs():
            rec = {"batch": b, "dtype": d, **export_info, **ort_info.get(b, {})}
            eng = None
            try:
                self.reset_peak()
                x = self.spec.input(b, a.smoke, self.device)
                shape = list(x.shape)
                profile = {"input": (shape, shape, shape)}
                free0 = self._free_bytes()
                t0 = time.perf_counter()
                try:
                    kw = {}
                    cache = os.path.join(a.work_dir, f"{a.model}_b{b}_{d}.timing")
                    if "timing_cache" in build_params and not a.no_timing_cache:
                        kw["timing_cache"] = cache
                    eng = graft.Engine.build(onnx_path, fp16=(d == "fp16"), device=a.device, profile=profile, **kw)
                finally:
                    rec["build_s"] = time.perf_counter() - t0
                if "timing_cache" in kw:
                    t0 = time.perf_counter()
                    eng = graft.Engine.build(onnx_path, fp16=(d == "fp16"), device=a.device, profile=profile, **kw)
                    rec["build_cached_s"] = time.perf_counter() - t0
                    rec["build_cached_via"] = "python timing_cache"
                elif cli and (self.cuda or a.smoke) and not a.no_timing_cache and b == max(a.batches):
                    # Two more builds of a big model take a while: measured at the largest batch only.
                    rec.update(self.cli_builds(cli, onnx_path, shape, d, b))
                elif a.no_timing_cache:
                    pass
                elif not (self.cuda or a.smoke):
                    rec["build_cached_note"] = "timing cache: CUDA only"
                elif not cli:
                    rec["build_cached_note"] = ("graft.Engine.build has no timing_cache argument and no graft CLI "
                                                "binary was found (--graft-cli, $GRAFT_CLI, <build>/bin/graft)")
                else:
                    rec["build_cached_note"] = f"timing-cache builds: measured at batch {max(a.batches)} only"
                rec["engine_device"] = eng.device
                ins = eng.inputs
                if len(ins) != 1:
                    raise RuntimeError(f"expected one engine input, got {[i['name'] for i in ins]}")
                in_name, in_dtype = ins[0]["name"], ins[0]["dtype"]
                rec["engine_io_dtype"] = in_dtype
                xin = x.to(getattr(torch, in_dtype)).contiguous()
                run = self._graft_runner(eng, in_name, xin)
                with torch.inference_mode():
                    y = run()
                    ev, wall, how = self.time_fn(run, a.warmup, a.iters)
                    y = run()
                free1 = self._free_bytes()
                rec.update(_stats(ev, b), timing=how, wall_median_ms=_median(wall))
                rec["timing_note"] = ("graft.Engine.run on torch's CUDA stream: CUDA tensors in and out, as "
                                      "the torch contenders")
                if free0 is not None and free1 is not None:
                    rec["peak_mem_mib"] = (free0 - free1) / 2**20
                    rec["mem_kind"] = "device memory held after build+runs (cudaMemGetInfo delta)"
                desc = eng.describe()
                rec["describe_head"] = "\n".join(desc.splitlines()[:30])[:3000]
                arena = _arena_bytes(eng, desc)
                if arena is not None:
                    rec["graft_arena_mib"] = arena / 2**20
                rec["rel_err"], err = self.rel_err(y, refs[b])
                if err:
                    rec["rel_err_note"] = err
                if b in ort_outs:
                    rec["graft_vs_ort_rel_err"], _ = self.rel_err(y, ort_outs[b])
                rec["status"] = "ok"
            except Exception as e:  # noqa: BLE001
                stage = "build" if eng is None else "run"
                rec.update(status="error", error=f"graft {stage} failed: {type(e).__name__}: {_short(e)}")
            del eng
            _log(f"[{a.model}/graft] batch {b} {d}: {_summary(rec)}")
            self.emit(rec)

    def ort_reference(self, onnx_path, refs):
        """ONNX Runtime's CPU provider on the exported FP32 file at the smallest batch: a second
        reference beside PyTorch FP32 ({batch: output}, {batch: record fields}). A model with graft's
        custom ops loads only where ORT has them registered; any failure is a note on the record."""
        b = min(self.args.batches)
        try:
            import onnxruntime as ort
        except Exception as e:  # noqa: BLE001
            return {}, {b: {"ort_status": "skipped", "ort_reason": f"onnxruntime is not installed ({_short(e, 120)})"}}
        try:
            opts = ort.SessionOptions()
            # graft's ONNX Runtime adapter (adapters/onnxruntime), where built, runs the custom ops too.
            if os.environ.get("GRAFT_ORT_CUSTOM_OPS"):
                opts.register_custom_ops_library(os.environ["GRAFT_ORT_CUSTOM_OPS"])
            sess = ort.InferenceSession(onnx_path, sess_options=opts, providers=["CPUExecutionProvider"])
            x = self.spec.input(b, self.args.smoke, "cpu")
            y = self._first_tensor(sess.run([sess.get_outputs()[0].name], {sess.get_inputs()[0].name: x.numpy()})[0])
            err, why = relative_error(y.float(), refs[b])
            info = {"ort_status": "ok", "ort_version": ort.__version__, "ort_rel_err": err}
            if why:
                info["ort_reason"] = why
            return {b: y.float()}, {b: info}
        except Exception as e:  # noqa: BLE001
            return {}, {b: {"ort_status": "error", "ort_reason": f"{type(e).__name__}: {_short(e)}"}}

    def export_onnx(self, graft, path):
        """FP32 ONNX with a dynamic batch axis: graft.export (TorchScript exporter first, which graft's
        importer is tested with; then the dynamo exporter)."""
        torch = self.torch
        m = self.cpu_model()
        x = self.spec.input(2, self.args.smoke, "cpu")
        errors = []
        for exporter in ("torchscript", "dynamo"):
            try:
                with torch.no_grad():
                    graft.export(m, x, path, exporter=exporter, input_names=["input"], output_names=["output"])
                return {"exporter": exporter, "onnx_mib": os.path.getsize(path) / 2**20}
            except Exception as e:  # noqa: BLE001
                errors.append(f"{exporter}: {type(e).__name__}: {_short(e, 300)}")
        raise RuntimeError("; ".join(errors))

    def cli_builds(self, cli, onnx_path, shape, dtype, batch):
        """Two `graft build --timing-cache` runs: the first fills the cache, the second reads it."""
        a = self.args
        cache = os.path.join(a.work_dir, f"{a.model}_b{batch}_{dtype}.timing")
        plan = os.path.join(a.work_dir, f"{a.model}_b{batch}_{dtype}.plan")
        if os.path.exists(cache):
            os.remove(cache)
        cmd = [cli, "build", onnx_path, "-o", plan, "--device", a.device,
               "--shapes", "input:" + "x".join(str(s) for s in shape), "--timing-cache", cache]
        if dtype == "fp16":
            cmd.append("--fp16")
        out = {"build_cached_via": "graft CLI --timing-cache"}
        for key in ("cli_build_s", "build_cached_s"):
            t0 = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.cli_timeout)
            if p.returncode != 0:
                out["build_cached_note"] = f"`{' '.join(cmd)}` failed (rc {p.returncode}): {(p.stderr or p.stdout)[-400:]}"
                return out
            out[key] = time.perf_counter() - t0
        return out

    def _free_bytes(self):
        if not self.cuda:
            return None
        self.torch.cuda.synchronize()
        return self.torch.cuda.mem_get_info()[0]

    def _graft_runner(self, eng, in_name, xin):
        """A zero-argument call that runs the engine on xin. A CUDA engine given a CUDA tensor runs
        on torch's current stream and returns CUDA tensors, as the torch contenders do."""
        impl = getattr(eng, "_impl", None)
        if xin.device.type == "cuda" and eng.device == "cuda":
            return lambda: eng.run({in_name: xin})
        if impl is not None and xin.device.type == "cpu":
            feed = {in_name: xin.numpy()}
            return lambda: impl.run(feed)
        return lambda: eng.run({in_name: xin})


def relative_error(y, ref):
    """(||y - ref||_2 / ||ref||_2 in float64, None) or (None, why it is undefined). Non-finite
    outputs give inf/nan, which the table flags."""
    import torch
    if tuple(y.shape) != tuple(ref.shape):
        return None, f"output shape {tuple(y.shape)} differs from the reference {tuple(ref.shape)}"
    y64 = y.detach().to("cpu", torch.float64).reshape(-1)
    r64 = ref.detach().to("cpu", torch.float64).reshape(-1)
    denom = float(r64.norm())
    if denom == 0.0:
        return None, "the reference output is all zeros: relative error undefined"
    return float((y64 - r64).norm()) / denom, None


def _arena_bytes(eng, desc):
    dj = getattr(eng, "describe_json", None) or getattr(getattr(eng, "_impl", None), "describe_json", None)
    if callable(dj):
        try:
            j = json.loads(dj())
            for key in ("peak_memory_bytes", "peak_bytes"):
                if key in j:
                    return int(j[key])
            mp = j.get("memory_plan")
            if isinstance(mp, dict) and "peak_bytes" in mp:
                return int(mp["peak_bytes"])
        except Exception:  # noqa: BLE001
            pass
    import re
    m = re.search(r"activation arena (\d+) bytes", desc or "")
    return int(m.group(1)) if m else None


def _short(e, n=600):
    s = str(e).strip().replace("\n", " | ")
    return s if len(s) <= n else s[: n - 3] + "..."


def _summary(rec):
    if rec.get("status") != "ok":
        return f"{rec.get('status')}: {rec.get('error')}"
    s = f"median {rec['median_ms']:.3f} ms, p99 {rec['p99_ms']:.3f} ms"
    if rec.get("rel_err") is not None:
        s += f", rel err {rec['rel_err']:.2e}"
    for k in ("compile_s", "build_s"):
        if k in rec:
            s += f", {k} {rec[k]:.1f}"
    return s


def _find_graft_cli(given):
    cands = [given] if given else []
    if os.environ.get("GRAFT_CLI"):
        cands.append(os.environ["GRAFT_CLI"])
    for d in (os.environ.get("GRAFT_LIB_DIR") or "").split(os.pathsep):
        if d:
            d = os.path.abspath(d)
            for up in (d, os.path.dirname(d), os.path.dirname(os.path.dirname(d))):
                cands.append(os.path.join(up, "bin", "graft"))
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


# ---------------------------------------------------------------------------------------------
# Parent: runs the workers with time limits, then writes JSON, markdown and the plot
# ---------------------------------------------------------------------------------------------
def _commit(given):
    if given:
        return given
    try:
        p = subprocess.run(["git", "-C", _REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                           timeout=10)
        if p.returncode == 0 and p.stdout.strip():
            dirty = subprocess.run(["git", "-C", _REPO, "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            return p.stdout.strip() + ("+dirty" if dirty else "")
    except Exception:  # noqa: BLE001
        pass
    f = os.path.join(_REPO, ".device", "commit")
    if os.path.exists(f):
        return open(f).read().strip()
    return "unknown"


def _environment(args):
    import torch
    env = {"date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "commit": _commit(args.commit), "torch": torch.__version__, "python": platform.python_version(),
           "host": platform.node(), "device": args.device,
           "command": " ".join(shlex.quote(x) for x in [sys.executable] + sys.argv)}
    try:
        import torchvision
        env["torchvision"] = torchvision.__version__
    except ImportError:
        env["torchvision"] = None
    if args.device.startswith("cuda"):
        env["gpu"] = torch.cuda.get_device_name(0)
        env["cuda"] = torch.version.cuda
        env["cudnn"] = torch.backends.cudnn.version()
    else:
        env["gpu"] = None
        env["cpu"] = platform.processor() or platform.machine()
    try:
        from graft import _native
        env["graft"] = _native.engine_module().version()
    except Exception as e:  # noqa: BLE001
        env["graft"] = "unavailable"
        env["graft_error"] = _short(e, 400)
    return env


def _run_worker(args, model, contender, timeout_s, work_dir):
    """Runs one worker; returns its records (JSON lines) plus error records for what it left out."""
    result_file = os.path.join(work_dir, f"{model}.{contender}.jsonl")
    log_file = os.path.join(work_dir, f"{model}.{contender}.log")
    open(result_file, "w").close()
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--model", model, "--contender", contender,
           "--result-file", result_file, "--work-dir", work_dir, "--device", args.device,
           "--iters", str(args.iters), "--warmup", str(args.warmup),
           "--batches", *map(str, args.batches), "--dtypes", *args.dtypes, "--cli-timeout", str(args.cli_timeout),
           "--max-seconds-per-config", str(args.max_seconds_per_config)]
    for flag in ("smoke", "max_autotune", "no_timing_cache"):
        if getattr(args, flag):
            cmd.append("--" + flag.replace("_", "-"))
    if args.graft_cli:
        cmd += ["--graft-cli", args.graft_cli]
    env = dict(os.environ)
    env.setdefault("NVIDIA_TF32_OVERRIDE", "0")  # fp32 means fp32 in every library of the process
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(work_dir, "inductor-cache"))
    t0 = time.perf_counter()
    status, rc = "done", None
    with open(log_file, "w") as log:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            status = "timeout"
            # The worker leads its own process group (inductor's compile workers are in it too).
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    try:  # leftovers of this worker's own group (e.g. inductor compile workers) go with it
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    elapsed = time.perf_counter() - t0
    with open(log_file, errors="replace") as f:
        log_text = f.read()
    for line in log_text.splitlines():
        print(f"  {line}", flush=True)
    records = []
    with open(result_file) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    have = {(r["batch"], r["dtype"]) for r in records}
    tail = " | ".join(log_text.strip().splitlines()[-6:])[-800:]
    for b in args.batches:
        for d in args.dtypes:
            if (b, d) in have:
                continue
            if status == "timeout":
                err = f"timeout: the {contender} worker exceeded its {timeout_s:.0f}s limit before this configuration"
                st = "timeout"
            else:
                err = f"the {contender} worker exited (rc {rc}) without a result for this configuration; log tail: {tail}"
                st = "error"
            records.append({"model": model, "contender": contender, "batch": b, "dtype": d, "status": st,
                            "error": err})
    print(f"[{model}/{contender}] worker {status} rc={rc} in {elapsed:.1f}s", flush=True)
    return records


def _json_safe(v):
    """Strict JSON: NaN/inf become the strings "nan"/"inf"/"-inf"."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    return v


def _fmt(v, spec=".3f", none="—"):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return none
    return format(v, spec)


def _markdown(env, results, args, notes):
    by = {(r["model"], r["batch"], r["dtype"], r["contender"]): r for r in results}
    keys = sorted({(r["model"], r["batch"], r["dtype"]) for r in results},
                  key=lambda k: (args.models.index(k[0]), k[1], DTYPES.index(k[2])))
    lines = [f"# graft vs PyTorch eager vs torch.compile",
             "",
             f"GPU: {env.get('gpu') or 'none (' + env['device'] + ')'} | date: {env['date_utc']} | commit: {env['commit']} | "
             f"torch {env['torch']} (CUDA {env.get('cuda')}, cuDNN {env.get('cudnn')}) | torchvision {env.get('torchvision')} | "
             f"graft {env.get('graft')}",
             "",
             f"Command: `{env['command']}`",
             "",
             f"Latency: median (p99) in ms over {args.iters} iterations after {args.warmup} warm-up, one call at a "
             f"time, timed with {'CUDA events' if env['device'].startswith('cuda') else 'the host clock'}. "
             f"compile = torch.compile(mode={'max-autotune' if args.max_autotune else 'reduce-overhead'}). "
             "Speedup = compile (or eager) median / graft median (>1: graft is faster). Rel err = "
             "||y - y_ref|| / ||y_ref|| against FP32 eager (TF32 off). Memory: torch = max_memory_allocated; "
             "graft = device memory held by the engine (cudaMemGetInfo delta). Build = graft.Engine.build "
             "(and, at the largest batch, `graft build` CLI without / with a filled timing cache), compile = first-call compile time, in seconds.",
             "",
             "| model | batch | dtype | eager ms | compile ms | graft ms | graft vs compile | graft vs eager | "
             "rel err eager | rel err compile | rel err graft | graft build s | compile s | mem MiB eager/compile/graft |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    failures = {}

    def cell(r):
        if r is None:
            return "—"
        if r.get("status") != "ok":
            # Identical messages (e.g. one reason for every configuration of a model) share a number.
            key = (r["model"], r["contender"], r.get("error", ""))
            if key not in failures:
                failures[key] = []
            failures[key].append(f"batch {r['batch']} {r['dtype']}")
            return f"{r.get('status', 'error').upper()} [{list(failures).index(key) + 1}]"
        return f"{_fmt(r['median_ms'])} ({_fmt(r['p99_ms'])})"

    def err_cell(r, dtype):
        if r is None or r.get("status") != "ok":
            return "—"
        v = r.get("rel_err")
        if v is None:
            return "n/a"
        warn = " ⚠" if not (v <= REL_ERR_WARN[dtype]) else ""
        return f"{v:.1e}{warn}"

    for m, b, d in keys:
        e, c, g = (by.get((m, b, d, k)) for k in CONTENDERS)
        ok = lambda r: r is not None and r.get("status") == "ok"  # noqa: E731
        sp_c = _fmt(c["median_ms"] / g["median_ms"], ".2f") + "x" if ok(c) and ok(g) and g["median_ms"] > 0 else "—"
        sp_e = _fmt(e["median_ms"] / g["median_ms"], ".2f") + "x" if ok(e) and ok(g) and g["median_ms"] > 0 else "—"
        build = "—"
        if g is not None and "build_s" in g:
            build = _fmt(g["build_s"], ".2f")
            if g.get("cli_build_s") is not None and g.get("build_cached_s") is not None:
                build += f" (CLI {_fmt(g['cli_build_s'], '.2f')} / cached {_fmt(g['build_cached_s'], '.2f')})"
            elif g.get("build_cached_s") is not None:
                build += " / cached " + _fmt(g["build_cached_s"], ".2f")
        comp = _fmt(c.get("compile_s"), ".1f") if c is not None and "compile_s" in c else "—"
        mem = "/".join(_fmt(r.get("peak_mem_mib") if ok(r) else None, ".0f") for r in (e, c, g))
        lines.append(f"| {m} | {b} | {d} | {cell(e)} | {cell(c)} | {cell(g)} | {sp_c} | {sp_e} | "
                     f"{err_cell(e, d)} | {err_cell(c, d)} | {err_cell(g, d)} | {build} | {comp} | {mem} |")
    if failures:
        lines += ["", "## Failures, timeouts and skips", ""]
        for i, ((model, contender, error), where) in enumerate(failures.items(), 1):
            lines.append(f"{i}. {model} {contender} ({', '.join(where)}): {error.replace('|', '/')}")
    warn = [r for r in results if r.get("status") == "ok" and r.get("rel_err") is not None
            and not r["rel_err"] <= REL_ERR_WARN[r["dtype"]]]
    if warn:
        lines += ["", f"⚠ relative error above {REL_ERR_WARN['fp32']:g} (fp32) / {REL_ERR_WARN['fp16']:g} (fp16)."]
    graft_ok = [r for r in results if r["contender"] == "graft" and r.get("status") == "ok"]
    if graft_ok:
        exps = sorted({r.get("exporter", "?") for r in graft_ok})
        devs = sorted({str(r.get("engine_device")) for r in graft_ok})
        lines += ["", f"graft: ONNX exported with {', '.join(exps)}; engine device {', '.join(devs)}; "
                      "a CUDA engine runs on torch's current stream with CUDA tensors in and out, like the torch "
                      "contenders; a CPU engine returns host outputs."]
    for n in notes:
        lines += ["", n]
    return "\n".join(lines) + "\n"


def _plot(results, args, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not importable: no plot written", flush=True)
        return None
    keys = sorted({(r["model"], r["batch"], r["dtype"]) for r in results},
                  key=lambda k: (args.models.index(k[0]), k[1], DTYPES.index(k[2])))
    by = {(r["model"], r["batch"], r["dtype"], r["contender"]): r for r in results}
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(keys) + 2), 5))
    width = 0.27
    colors = {"eager": "#4c72b0", "compile": "#dd8452", "graft": "#55a868"}
    for i, c in enumerate(CONTENDERS):
        xs, ys, missing = [], [], []
        for j, k in enumerate(keys):
            r = by.get(k + (c,))
            if r is not None and r.get("status") == "ok":
                xs.append(j + (i - 1) * width)
                ys.append(r["median_ms"])
            elif r is not None:
                missing.append(j + (i - 1) * width)
        ax.bar(xs, ys, width, label=c, color=colors[c])
        for x in missing:  # a failed/skipped entry gets an x on the axis in its colour
            ax.plot([x], [0.02], marker="x", color=colors[c], transform=ax.get_xaxis_transform(), clip_on=False)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([f"{m}\nb{b} {d}" for m, b, d in keys], fontsize=7, rotation=45, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("median latency (ms, log scale)")
    ax.set_title("graft vs PyTorch eager vs torch.compile (x: failed, timed out or skipped)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def parent(args):
    import torch
    if args.device is None:
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"error: --device {args.device} but torch {torch.__version__} sees no CUDA device", file=sys.stderr)
        return 1
    if args.device == "cpu" and not args.smoke:
        print("error: no CUDA device; the full benchmark needs a GPU (use --smoke to test the pipeline on the CPU)",
              file=sys.stderr)
        return 1
    import models
    for m in args.models:
        try:
            models.get(m)
        except KeyError as e:
            print(f"error: {e.args[0]}", file=sys.stderr)
            return 1
    if args.dtypes is None:
        args.dtypes = ["fp32", "fp16"] if args.device.startswith("cuda") else ["fp32"]
    bad = [d for d in args.dtypes if d not in DTYPES]
    if bad:
        print(f"error: unknown dtype {bad} (use fp32, fp16)", file=sys.stderr)
        return 1
    if args.device == "cpu" and "fp16" in args.dtypes:
        print("note: fp16 on the CPU is slow and not what this benchmark is for; kept because it was asked for",
              flush=True)
    os.makedirs(args.out, exist_ok=True)
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="graft_bench_")
    os.makedirs(work_dir, exist_ok=True)
    env = _environment(args)
    print(f"bench: {env}", flush=True)
    print(f"bench: work dir {work_dir}", flush=True)
    deadline = time.monotonic() + args.budget_s if args.budget_s else None
    timeouts = {"eager": args.eager_timeout, "graft": args.graft_timeout, "compile": args.compile_timeout}
    contenders = [c for c in ("eager", "graft", "compile") if c not in args.skip]
    results, notes = [], []
    # Phases: all eager runs, then graft, then torch.compile (the slowest): when the global budget
    # runs out, what is lost is the tail of the compile phase.
    for c in contenders:
        for i, m in enumerate(args.models):
            limit = timeouts[c]
            if deadline is not None:
                left = deadline - time.monotonic()
                if c == contenders[-1]:
                    # The last phase shares what is left evenly, so one slow model does not starve the rest.
                    limit = min(limit, max(left / (len(args.models) - i), 15))
                if left < 15:
                    for b in args.batches:
                        for d in args.dtypes:
                            results.append({"model": m, "contender": c, "batch": b, "dtype": d, "status": "skipped",
                                            "error": f"skipped: the run's time budget (--budget-s {args.budget_s}) "
                                                     "was used up"})
                    continue
                limit = max(1.0, min(limit, left))
            print(f"[{m}/{c}] worker starting (limit {limit:.0f}s)", flush=True)
            results += _run_worker(args, m, c, limit, work_dir)
    for c in args.skip:
        notes.append(f"{c}: not run (--skip {c}).")
    doc = {"environment": env, "settings": {k: v for k, v in vars(args).items() if k != "worker"},
           "results": results}
    jpath = os.path.join(args.out, "bench_models.json")
    with open(jpath, "w") as f:
        json.dump(_json_safe(doc), f, indent=1, default=str)
    md = _markdown(env, [r for r in results if r["contender"] in CONTENDERS], args, notes)
    mpath = os.path.join(args.out, "bench_models.md")
    with open(mpath, "w") as f:
        f.write(md)
    print(md, flush=True)
    ppath = _plot(results, args, os.path.join(args.out, "bench_models.png"))
    print(f"wrote {jpath}, {mpath}" + (f", {ppath}" if ppath else ""), flush=True)
    measured = [r for r in results if r.get("status") == "ok"]
    if not measured:
        print("error: nothing was measured (see the failures above)", file=sys.stderr)
        return 1
    return 0 if len(measured) == len(results) else 3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--models", nargs="+", default=None,
                    help="models (default: resnet50 mobilenet_v3_large vit_b_16 seed; --smoke: seed tiny_cnn)")
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 32])
    ap.add_argument("--dtypes", nargs="+", default=None,
                    help="fp32 and/or fp16 (default: both; on a CPU: fp32, as torch has no CPU fp16 convolutions)")
    ap.add_argument("--iters", type=int, default=None, help="timed iterations (default 100; --smoke: 2)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up iterations (default 20; --smoke: 1)")
    ap.add_argument("--out", default="bench-out", help="directory for bench_models.{json,md,png}")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes, 2 iterations, CPU allowed")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--max-autotune", action="store_true", help="torch.compile mode=max-autotune (slow to compile)")
    ap.add_argument("--skip", nargs="*", default=[], choices=list(CONTENDERS), help="contenders not to run")
    ap.add_argument("--commit", default=None, help="commit to record (default: git rev-parse --short HEAD)")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="time budget of the whole run; what is left when it is used up is recorded as skipped")
    ap.add_argument("--eager-timeout", type=float, default=180, help="seconds per model for the eager worker")
    ap.add_argument("--compile-timeout", type=float, default=240,
                    help="seconds per model for the torch.compile worker (all its batch/dtype configs)")
    ap.add_argument("--graft-timeout", type=float, default=240, help="seconds per model for the graft worker")
    ap.add_argument("--cli-timeout", type=float, default=120, help="seconds per `graft build` CLI call")
    ap.add_argument("--graft-cli", default=None, help="graft CLI binary for timing-cache builds (default: "
                                                      "$GRAFT_CLI, else bin/graft beside GRAFT_LIB_DIR's build dir)")
    ap.add_argument("--no-timing-cache", action="store_true", help="skip the second (timing-cache) graft build")
    ap.add_argument("--max-seconds-per-config", type=float, default=20,
                    help="cap on one configuration's timed loop (iterations are cut to fit, at least 5)")
    ap.add_argument("--work-dir", default=None, help="ONNX files, plans, worker logs (default: a temp dir)")
    # internal: one worker process
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--contender", choices=CONTENDERS, help=argparse.SUPPRESS)
    ap.add_argument("--result-file", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.models is None:
        import models
        args.models = list(models.SMOKE_MODELS if args.smoke else models.DEFAULT_MODELS)
    if args.iters is None:
        args.iters = 2 if args.smoke else 100
    if args.warmup is None:
        args.warmup = 1 if args.smoke else 20
    if args.iters < 1 or args.warmup < 0:
        ap.error("--iters must be >= 1 and --warmup >= 0")
    if args.worker:
        return Worker(args).run()
    try:
        return parent(args)
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 - the harness itself failed: say so and exit 1
        import traceback
        traceback.print_exc()
        print(f"error: the benchmark harness failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
