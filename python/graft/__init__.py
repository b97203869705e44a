"""graft: write a custom layer once in C++/CUDA; use it from PyTorch, export it to ONNX, run it in
graft's engine.

    import graft
    layer = graft.nn.CustomLayer(beta=0.5)          # torch.nn.Module over torch.ops.graft.CustomLayer
    y = graft.ops.custom_layer(x, beta=0.5)         # functional form, with autograd
    attn = graft.nn.MultiScaleDeformableAttention(embed_dims=256)  # graft.deformable (mmcv-style)
    graft.export(model, x, "model.onnx")            # one ai.onnx.contrib::CustomLayer node
    eng = graft.Engine.build("model.onnx", profile={"input": ((1, 8), (4, 8), (16, 8))})
    out = eng.run({"input": x})
    print(graft.compare("model.onnx", reference_device="onnxruntime", layerwise=True))

Native pieces: libgraft_torch.so (torch ops) and _engine*.so (engine bindings). From a source tree,
``PYTHONPATH=python:build/python`` finds both (the build writes them to build/python/graft);
GRAFT_LIB_DIR=<dir> points elsewhere. Use /usr/bin/python3 on Debian (it has torch).
"""
import pkgutil

# Lets graft/ folders elsewhere on sys.path (the build tree's build/python/graft) add modules.
__path__ = pkgutil.extend_path(__path__, __name__)  # noqa: F821

# The package's version; CMakeLists.txt's project(VERSION) and pyproject.toml carry the same number
# (scripts/test_pip_install.sh checks that the installed package and the graft command agree).
__version__ = "0.1.0"

from ._errors import GraftError  # noqa: E402
from .engine import Engine, load_plugin  # noqa: E402
from ._compare import Comparison, compare  # noqa: E402


def set_log_level(level):
    """"quiet" (nothing), "default" (warnings, once each, and build summaries) or "verbose"
    (every build stage): what graft prints on stderr besides the errors it raises."""
    from . import _native
    _native.engine_module().set_log_level(str(level))


def __getattr__(name):
    # torch-dependent parts load on first use, so the engine works without torch installed.
    import importlib
    if name in ("ops", "nn", "deformable"):
        return importlib.import_module(f"graft.{name}")
    if name == "export":
        return importlib.import_module("graft._export").export
    if name == "registered_ops":
        from . import _registry
        return _registry.ops
    raise AttributeError(f"module 'graft' has no attribute '{name}'")


__all__ = ["__version__", "GraftError", "Engine", "load_plugin", "compare", "Comparison", "set_log_level", "ops", "nn", "deformable", "export", "registered_ops"]
