"""graft.Engine: build an engine from ONNX, save/load plans, run it from Python.

    eng = graft.Engine.build("model.onnx", profile={"input": ((1, 64), (4, 64), (16, 64))})
    out = eng.run({"input": x})        # numpy in -> numpy out; torch in -> torch out
    eng.save("model.plan"); eng2 = graft.Engine.load("model.plan")

Numpy arrays and CPU torch tensors are passed without copying when already contiguous; CUDA torch
tensors are passed by device pointer to a CUDA engine. Errors raise graft.GraftError with the
engine's message, and the engine stays usable afterwards.
"""
import os

from . import _native
from ._errors import GraftError


def _torch():
    import sys
    return sys.modules.get("torch")


class Engine:
    def __init__(self, impl):
        self._impl = impl

    @classmethod
    def build(cls, model, fp16=False, device="cpu", profile=None, plugins=(), timing_cache=None, fusion=True,
              layout="auto"):
        """model: path to an .onnx file or its bytes. profile: {input: (min, opt, max) shapes}.
        CUDA only: timing_cache (a file of tactic timings, read and updated), fusion (conv/GEMM
        epilogues, elementwise chains), layout ("auto": NHWC for float16 convolutions, "nchw", "nhwc")."""
        eng = _native.engine_module()
        prof = {name: [list(s) for s in rng] for name, rng in (profile or {}).items()}
        if not isinstance(model, (bytes, bytearray)):
            model = os.fspath(model)
        else:
            model = bytes(model)
        return cls(eng.Engine.build(model, fp16=fp16, device=str(device), profile=prof,
                                    plugins=[os.fspath(p) for p in plugins],
                                    timing_cache=os.fspath(timing_cache) if timing_cache else "",
                                    fusion=bool(fusion), layout=str(layout)))

    @classmethod
    def load(cls, plan):
        """plan: path to a plan file or its bytes."""
        eng = _native.engine_module()
        return cls(eng.Engine.load(bytes(plan) if isinstance(plan, (bytes, bytearray)) else os.fspath(plan)))

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

    def describe(self):
        return self._impl.describe()

    def run(self, feeds):
        torch = _torch()
        feed, keep, torch_device = {}, [], None
        for name, v in feeds.items():
            if torch is not None and isinstance(v, torch.Tensor):
                torch_device = torch_device or v.device
                t = v.detach().contiguous()
                keep.append(t)
                if t.device.type == "cuda" and self.device == "cuda":
                    feed[name] = ("ptr", t.data_ptr(), str(t.dtype).replace("torch.", ""),
                                  list(t.shape), "cuda")
                elif t.device.type == "cpu" and t.dtype != torch.bfloat16:
                    feed[name] = t.numpy()  # shares memory
                else:
                    feed[name] = t.cpu().numpy()
            else:
                feed[name] = v
        out = self._impl.run(feed)
        if torch_device is not None:
            out = {k: torch.from_numpy(v).to(torch_device) for k, v in out.items()}
        return out

    def __repr__(self):
        names = lambda l: ", ".join(i["name"] + i["shape"] for i in l)  # noqa: E731
        return f"graft.Engine(device={self.device}, inputs=[{names(self.inputs)}], outputs=[{names(self.outputs)}])"


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
