"""graft.Engine: build an engine from ONNX, save/load plans, run it from Python.

    eng = graft.Engine.build("model.onnx", profile={"input": ((1, 64), (4, 64), (16, 64))})
    out = eng.run({"input": x})        # numpy in -> numpy out; torch in -> torch out (CUDA stays on the GPU)
    eng.save("model.plan"); eng2 = graft.Engine.load("model.plan")

Numpy arrays and CPU torch tensors are passed without copying when already contiguous; CUDA torch
tensors are passed by device pointer to a CUDA engine. Errors raise graft.GraftError with the
engine's message, and the engine stays usable afterwards.

Threads: one Engine may be shared by any number of Python threads. run() releases the GIL while the
engine computes (other Python threads keep running) and runs on that engine's one execution context,
so concurrent run() calls on one Engine are serialized, never deadlocked; for runs in parallel give
each thread its own Engine (Engine.load of the same plan). Returned arrays own their memory, even for
an output that is also a graph input, so they stay valid after the inputs are gone. See the threading
contract in include/graft/engine.h.
"""
import contextlib
import json
import operator
import os

from . import _native
from ._errors import GraftError


def _max_memory(value):
    """None -> 0 (no limit); a positive integer of bytes (int, numpy integer); anything else is an
    error naming it."""
    if value is None:
        return 0
    try:
        n = operator.index(value)
    except TypeError:
        n = None
    if isinstance(value, bool) or n is None or n <= 0:
        raise GraftError(f"max_memory must be a positive number of bytes or None, got {value!r}", "kInvalidArgument")
    return n


@contextlib.contextmanager
def _python_hints():
    """The engine's messages name no command-line flags or Python arguments; from Python, the
    argument that helps is added."""
    try:
        yield
    except GraftError as e:
        msg = str(e)
        if "plugin library that defines it" in msg:
            raise GraftError(msg + " (graft.load_plugin(path), or Engine.build(..., plugins=[path]))",
                             e.code) from None
        raise


def _torch():
    import sys
    return sys.modules.get("torch")


class Engine:
    def __init__(self, impl):
        self._impl = impl
        # CUDA runs on torch tensors: {input (name, shape, dtype) tuple: ((output, shape, torch dtype), ...)}
        self._io_plans = {}
        self._output_names = None  # read from the engine the first time a run names outputs

    @classmethod
    def build(cls, model, fp16=False, device="cpu", profile=None, plugins=(), timing_cache=None, fusion=True,
              layout="auto", strict=False, shapes=None, inputs=None, max_memory=None, profiles=None,
              layer_precisions=None, precision_constraints="obey", int8=True):
        """model: path to an .onnx file or its bytes.

        Shapes of dynamic inputs, one of (per input):
          profile: {input: (min, opt, max)} shapes: the engine runs any shape in between.
          profiles: [{input: (min, opt, max)}, ...]: several optimization profiles (TensorRT's), each
                  naming the same inputs; run(..., profile=k) selects profile k. Instead of profile=.
          shapes: {input: shape}: built for that one shape (min = opt = max).
          inputs: {input: sample array or tensor}: built for the sample's shape, as ONNX Runtime takes
                  shapes from the data. Only dynamic inputs that profile and shapes do not name use it.
        A dynamic input none of them names is an error naming the input.
        CUDA only (ignored with a warning for device="cpu"): fp16, timing_cache (a file of tactic
        timings, read and updated), fusion=False (no conv/GEMM epilogues or elementwise chains), layout
        ("auto": NHWC for float16 convolutions, "nchw", "nhwc"), strict (refuse to build when a layer
        would run on the CPU reference; the error names them), int8=False (with fp16: explicitly
        quantized (Q/DQ) convolutions run in float16 on the dequantized values, not on their int8
        integers).
        layer_precisions: {node name or pattern: "fp32" | "fp16"}: layers held to a precision, as trtexec's
          --layerPrecisions ('*' in a name matches any run of characters; an exact name wins, then the
          longest pattern). "fp32" keeps a layer out of fp16; "fp16" runs it in float16 even where graft
          would keep its op in float32, and needs fp16=True on CUDA. A name matching no node is an error.
          precision_constraints: what a layer held to fp16 that cannot run so does: "obey" (an error),
          "prefer" (a warning; it stays float32) or "none" (the names are checked, then ignored).
        max_memory: bytes that graft's host tensors may hold at once, during the build (weights, folded
          constants) and then during each run (activations, outputs); an allocation above it raises
          GraftError (code "out of memory") naming the limit. None: no limit (device memory is not counted).
        Warnings and the placement summary go to stderr; graft.set_log_level("quiet"|"default"|"verbose")."""
        eng = _native.engine_module()
        if profile and profiles:
            raise GraftError("give profile= (one optimization profile) or profiles= (several), not both",
                             "kInvalidArgument")
        as_lists = lambda p: {name: [list(s) for s in rng] for name, rng in p.items()}  # noqa: E731
        prof = as_lists(profile or {})
        profs = [as_lists(p) for p in (profiles or [])]
        for name, shape in (shapes or {}).items():
            if name in prof or any(name in p for p in profs):
                arg = "profile=" if name in prof else "profiles="
                raise GraftError(f"input '{name}' is in both {arg} and shapes=; give one", "kInvalidArgument")
            # A fixed shape holds in every profile.
            for p in profs or [prof]:
                p[name] = [list(shape)] * 3
        samples = {}
        for name, v in (inputs or {}).items():
            shape = getattr(v, "shape", None)
            if shape is None:
                raise GraftError(f"inputs['{name}'] must be an array or tensor with a shape, got {type(v).__name__}",
                                 "kInvalidArgument")
            samples[name] = [int(d) for d in shape]
        if str(device) == "cpu":
            unused = [arg for arg, on in (("fp16=True", fp16), ("timing_cache", timing_cache),
                                          ("fusion=False", not fusion), (f"layout={layout!r}", layout != "auto"),
                                          ("strict=True", strict), ("int8=False", not int8)) if on]
            if unused:
                import warnings
                verb = "applies" if len(unused) == 1 else "apply"
                warnings.warn(f"graft.Engine.build: {', '.join(unused)} {verb} to CUDA engines only; "
                              "ignored for device='cpu'", stacklevel=2)
                fp16, timing_cache, fusion, layout, strict, int8 = False, None, True, "auto", False, True
        if not isinstance(model, (bytes, bytearray)):
            model = os.fspath(model)
        else:
            model = bytes(model)
        with _python_hints():
            return cls(eng.Engine.build(model, fp16=fp16, device=str(device), profile=prof, profiles=profs,
                                        plugins=[os.fspath(p) for p in plugins],
                                        timing_cache=os.fspath(timing_cache) if timing_cache else "",
                                        fusion=bool(fusion), layout=str(layout), strict=bool(strict),
                                        sample_shapes=samples, max_memory=_max_memory(max_memory),
                                        layer_precisions={str(k): str(v) for k, v in (layer_precisions or {}).items()},
                                        precision_constraints=str(precision_constraints), int8=bool(int8)))

    @classmethod
    def load(cls, plan, max_memory=None):
        """plan: path to a plan file or its bytes. max_memory: as for build (the load, then each run)."""
        eng = _native.engine_module()
        with _python_hints():
            return cls(eng.Engine.load(bytes(plan) if isinstance(plan, (bytes, bytearray)) else os.fspath(plan),
                                       max_memory=_max_memory(max_memory)))

    def save(self, path):
        self._impl.save(os.fspath(path))

    def serialize(self):
        return self._impl.serialize()

    @property
    def inputs(self):
        return self._impl.inputs

    @property
    def outputs(self):
        return self._impl.outputs

    @property
    def device(self):
        return self._impl.device

    @property
    def num_profiles(self):
        """How many optimization profiles the engine has (at least 1)."""
        return self._impl.num_profiles

    @property
    def profiles(self):
        """Every optimization profile, profile k at index k: {input: (min, opt, max)}."""
        return self._impl.profiles

    def describe(self):
        return self._impl.describe()

    def describe_json(self):
        """The engine as `graft inspect --json` shows it, as a dict: inputs, outputs, profiles and
        layers (name, op type, outputs, typed attributes; for a tuned CUDA engine each layer's
        "tactics": the problem keys it was timed on and the chosen algo/variant for each)."""
        return json.loads(self._impl.describe_json())

    def run(self, feeds, outputs=None, profile=0):
        """feeds: {input name: numpy array or torch tensor}. Returns {output name: array}.

        profile: the optimization profile whose ranges the input shapes must lie in (see profiles).

        numpy in -> numpy out; CPU torch tensors in -> torch tensors out. CUDA torch tensors into a
        CUDA engine are read in place and the engine runs on torch's current CUDA stream without a
        host round trip: the call returns once the work is queued, and the outputs are CUDA tensors
        whose values later work on that stream sees (as with any torch op). outputs: optional
        {name: CUDA torch tensor} to write into (shape and dtype must match the output's)."""
        torch = _torch()
        if torch is not None and self.device == "cuda" and feeds and all(
                isinstance(v, torch.Tensor) and v.device.type == "cuda" for v in feeds.values()):
            return self._run_on_torch_stream(torch, feeds, outputs or {}, profile)
        if outputs:
            raise GraftError("run(outputs=...) needs CUDA torch tensors as inputs and outputs of a CUDA engine",
                             "kInvalidArgument")
        feed, keep, torch_device = {}, [], None
        for name, v in feeds.items():
            if torch is not None and isinstance(v, torch.Tensor):
                torch_device = torch_device or v.device
                t = v.detach().contiguous()
                keep.append(t)
                if t.device.type == "cpu" and t.dtype != torch.bfloat16:
                    feed[name] = t.numpy()  # shares memory
                else:
                    feed[name] = t.cpu().numpy()
            else:
                feed[name] = v
        out = self._impl.run(feed, profile=int(profile))
        if torch_device is not None:
            # String outputs (numpy object arrays) have no torch type and stay numpy.
            out = {k: v if getattr(v, "dtype", None) is not None and v.dtype.kind == "O"
                   else torch.from_numpy(v).to(torch_device) for k, v in out.items()}
        return out

    @staticmethod
    def _pointer(t):
        name = _TORCH_DTYPE_NAMES.get(t.dtype)
        if name is None:
            name = _TORCH_DTYPE_NAMES[t.dtype] = str(t.dtype).replace("torch.", "")
        return ("ptr", t.data_ptr(), name, list(t.shape), "cuda")

    def _run_on_torch_stream(self, torch, feeds, outputs, profile):
        # At batch 1 the host time of this call is latency the caller sees (the engine's graph replay
        # takes tens of microseconds), so everything that depends only on the input shapes is learned
        # by the first call per shape set and kept in self._io_plans.
        device = next(iter(feeds.values())).device
        keep = {n: v.detach().contiguous() for n, v in feeds.items()}
        key = tuple((n, t.shape, t.dtype) for n, t in keep.items())
        plan = self._io_plans.get(key)
        if outputs:
            if self._output_names is None:
                self._output_names = [o["name"] for o in self.outputs]
            for name, t in outputs.items():
                if name not in self._output_names:
                    raise GraftError(f"outputs: the engine has no output named '{name}' "
                                     f"(outputs: {', '.join(self._output_names)})", "kInvalidArgument")
                if not isinstance(t, torch.Tensor) or t.device != device or not t.is_contiguous():
                    raise GraftError(f"output '{name}' must be a contiguous torch tensor on {device}",
                                     "kInvalidArgument")
        given = dict(outputs)
        if plan is not None:
            for name, shape, dtype in plan:  # outputs from torch's allocator: stream-ordered, cached
                if name not in given:
                    given[name] = torch.empty(shape, dtype=dtype, device=device)
        index = device.index if device.index is not None else torch.cuda.current_device()
        # torch's default stream reads as handle 0, which the engine would take for "no stream" (a
        # synchronous run on its own stream, unordered with torch's work): name it cudaStreamLegacy,
        # which the engine orders against with events while it runs (and captures) on its own stream.
        handle = _current_stream_handle(torch, index) or _CUDA_STREAM_LEGACY
        feed_ptrs = {n: self._pointer(t) for n, t in keep.items()}
        out_ptrs = {n: self._pointer(t) for n, t in given.items()}
        # Switch the current device only when the tensors live on another one.
        if device.index is None or index == torch.cuda.current_device():
            raw = self._impl.run(feed_ptrs, outputs=out_ptrs, stream=handle, profile=int(profile))
        else:
            with torch.cuda.device(device):
                raw = self._impl.run(feed_ptrs, outputs=out_ptrs, stream=handle, profile=int(profile))
        result = {}
        for name, v in raw.items():
            if v is None:
                result[name] = given[name]
                continue
            if name in outputs:
                raise GraftError(f"output '{name}': the given tensor is {tuple(outputs[name].shape)} "
                                 f"{outputs[name].dtype}, but the engine produced {tuple(v.shape)} {v.dtype}",
                                 "kInvalidArgument")
            if isinstance(v, _native.engine_module().DeviceArray):
                result[name] = torch.as_tensor(v, device=device)
            else:
                result[name] = torch.from_numpy(v).to(device)
        if plan is None:
            if len(self._io_plans) >= _IO_PLANS_KEPT:  # a bounded cache: forget the oldest shape set
                del self._io_plans[next(iter(self._io_plans))]
            self._io_plans[key] = tuple((n, t.shape, t.dtype) for n, t in result.items() if t.device == device)
        # Like any torch op, the run is ordered on the current stream only: the engine's work is queued
        # on it (or joined back to it), so memory the caller frees afterwards is reused after the run
        # completes. A caller that made the inputs on another stream calls record_stream, as for torch's ops.
        return result

    def __repr__(self):
        names = lambda l: ", ".join(i["name"] + i["shape"] for i in l)  # noqa: E731
        return f"graft.Engine(device={self.device}, inputs=[{names(self.inputs)}], outputs=[{names(self.outputs)}])"


_CUDA_STREAM_LEGACY = 1  # cudaStreamLegacy in cuda_runtime_api.h
_IO_PLANS_KEPT = 64  # input shape sets whose output shapes an Engine remembers
_TORCH_DTYPE_NAMES = {}  # torch dtype -> graft's name for it ("float16"), filled as met


def _current_stream_handle(torch, index):
    """The cudaStream_t of torch's current stream on device `index`, as an integer. torch's raw-stream
    query skips the Stream object torch.cuda.current_stream builds (microseconds at batch 1); versions
    without it take the public path."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(index)
    return torch.cuda.current_stream(index).cuda_stream


def load_plugin(path):
    """Loads a graft plugin library into the op registry; its ops become graft.ops.* / torch ops
    (when torch is imported) and engine plugins."""
    path = os.fspath(path)
    torch = _torch()
    loaded = False
    try:
        from . import _registry
        if torch is not None:
            _registry.ensure_loaded([path])
            loaded = True
    except GraftError:
        raise
    except Exception:  # noqa: BLE001 - the torch extension is optional here
        loaded = False
    try:
        _native.engine_module().load_plugin(path)
        loaded = True
    except GraftError as e:
        if "was not found" not in str(e) or not loaded:
            raise
