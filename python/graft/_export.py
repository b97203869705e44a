"""graft.export: ONNX export of models with graft layers, on whichever exporter this torch has.

TorchScript exporter (torch.onnx.export(..., dynamo=False); torch 1.13 .. 2.x): graft ops become
one node each through GraftFunction.symbolic (typed attributes + plugin_version/plugin_namespace).
Dynamo exporter (torch >= 2.8 with onnxscript): graft ops become torch.onnx.ops.symbolic nodes.
The seed's ``sym_help._onnx_stable_opsets.add(...)`` registration never worked (see _function.py).
"""
import contextlib
import copy
import itertools
import inspect
import warnings

import torch

from . import _function, _registry
from ._errors import GraftError


def _torch_version():
    v = torch.__version__.split("+")[0]
    parts = []
    for p in v.split(".")[:2]:
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def torchscript_exporter_available():
    # The TorchScript exporter is torch.onnx.export without dynamo (or with dynamo=False).
    return hasattr(torch.onnx, "export") and hasattr(torch.jit, "trace")


def dynamo_exporter_available():
    """(available, reason)."""
    if _torch_version() < (2, 8):
        return False, f"torch {torch.__version__} is older than 2.8"
    if not (hasattr(torch.onnx, "ops") and hasattr(torch.onnx.ops, "symbolic")):
        return False, "torch.onnx.ops.symbolic is missing"
    try:
        import onnxscript  # noqa: F401
    except ImportError:
        return False, "onnxscript is not installed"
    if "dynamo" not in inspect.signature(torch.onnx.export).parameters:
        return False, "torch.onnx.export has no dynamo parameter"
    return True, ""


def _domains():
    return sorted({info.domain for info in _registry.ops().values()})


def _as_tuple(args):
    return args if isinstance(args, tuple) else (args,)


def _names(prefix, n, given):
    if given:
        return list(given)
    return [prefix] if n == 1 else [f"{prefix}{i}" for i in range(n)]


def _batch_flags(args):
    """Which inputs carry the batch: tensors whose leading dim equals the first tensor's. Index tables
    (e.g. deformable attention's spatial_shapes, whose axis 0 is the level count) stay static."""
    tensors = [a for a in args if isinstance(a, torch.Tensor) and a.dim() > 0]
    if not tensors:
        return [False] * len(args)
    batch = tensors[0].shape[0]
    return [isinstance(a, torch.Tensor) and a.dim() > 0 and a.shape[0] == batch for a in args]


_LEGACY_EXPORT_WARNING = r".*legacy (TorchScript-based )?ONNX export"


def _export_torchscript(model, args, path, dynamic_batch, input_names, output_names, opset_version, kwargs):
    n_in = len(_as_tuple(args))
    input_names = _names("input", n_in, input_names)
    output_names = _names("output", 1, output_names) if output_names is None else list(output_names)
    opts = dict(input_names=input_names, output_names=output_names,
                custom_opsets={d: 1 for d in _domains()})
    if opset_version is not None:
        opts["opset_version"] = opset_version
    if dynamic_batch and "dynamic_axes" not in kwargs:
        flags = _batch_flags(_as_tuple(args))
        opts["dynamic_axes"] = {n: {0: "batch"} for n, f in zip(input_names, flags) if f}
        opts["dynamic_axes"].update({n: {0: "batch"} for n in output_names})
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        opts["dynamo"] = False
    opts.update(kwargs)
    _function._trace_log = []
    try:
        with warnings.catch_warnings():
            # torch >= 2.8 warns on every TorchScript export that it is legacy and to pass dynamo=True:
            # a parameter graft's caller does not have (theirs is exporter=), reported at graft's
            # line. The caller chose this exporter (or "auto" found no other), so the advice is noise.
            warnings.filterwarnings("ignore", message=_LEGACY_EXPORT_WARNING, category=DeprecationWarning)
            warnings.filterwarnings("ignore", message=_LEGACY_EXPORT_WARNING, category=FutureWarning)
            torch.onnx.export(model, _as_tuple(args), path, **opts)
        log = _function._trace_log
    finally:
        _function._trace_log = None
    _restore_custom_shapes(path, log, opts.get("dynamic_axes") or {})


def _restore_custom_shapes(path, log, dynamic_axes):
    """torch 1.13's exporter replaces the types symbolic() sets on custom-domain outputs with
    unknown dims; write the traced shapes back (batch-like axis 0 stays symbolic)."""
    try:
        import onnx
    except ImportError:
        return
    m = onnx.load(path)
    known = {}
    pending = list(log)
    for node in m.graph.node:
        if not pending:
            break
        dom, name, meta = pending[0]
        if node.op_type == name and node.domain == dom:
            pending.pop(0)
            for out_name, (sizes, _dtype) in zip(node.output, meta):
                known[out_name] = (sizes, name)
    if not known:
        return

    def fill(vi, sizes, op_name, dyn):
        dims = vi.type.tensor_type.shape.dim
        if len(dims) != len(sizes):
            return
        for d, (dim, size) in enumerate(zip(dims, sizes)):
            if size is None or d in dyn:
                # keep user/dynamic_axes names; replace the exporter's generated "<Op>..._dim_<n>" ones
                if not dim.dim_param or dim.dim_param.startswith(op_name):
                    dim.dim_param = dyn.get(d, "batch") if isinstance(dyn, dict) else "batch"
            else:
                dim.dim_value = size

    changed = False
    for vi in list(m.graph.value_info) + list(m.graph.output):
        if vi.name in known:
            dyn = dynamic_axes.get(vi.name, {})
            if isinstance(dyn, (list, tuple)):
                dyn = {a: f"{vi.name}_dynamic_axes_{a}" for a in dyn}
            fill(vi, *known[vi.name], dyn)
            changed = True
    if changed:
        onnx.save(m, path)


@contextlib.contextmanager
def _dynamo_mode():
    _function._dynamo_exporting[0] = True
    try:
        yield
    finally:
        _function._dynamo_exporting[0] = False


def _traced_on_cpu(model, args):
    """The model and its example inputs as the dynamo exporter should trace them. The fake output
    of torch.onnx.ops.symbolic lives on the CPU (an ONNX graph has no devices), so tracing a model
    that sits on a GPU would meet CPU and CUDA tensors in one op ("Unhandled FakeTensor Device
    Propagation"); such a model is traced as a CPU copy, leaving the caller's model where it is."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    on_gpu = any(t.device.type != "cpu" for t in tensors)
    if isinstance(model, torch.nn.Module):
        on_gpu = on_gpu or any(t.device.type != "cpu" for t in itertools.chain(model.parameters(), model.buffers()))
    if not on_gpu:
        return model, args
    if isinstance(model, torch.nn.Module):
        model = copy.deepcopy(model).cpu()
    return model, tuple(a.cpu() if isinstance(a, torch.Tensor) else a for a in args)


def _export_dynamo(model, args, path, dynamic_batch, input_names, output_names, opset_version, kwargs):
    model, args = _traced_on_cpu(model, _as_tuple(args))
    opts = dict(dynamo=True)
    if input_names:
        opts["input_names"] = list(input_names)
    if output_names:
        opts["output_names"] = list(output_names)
    if opset_version is not None:
        opts["opset_version"] = opset_version
    if dynamic_batch and "dynamic_shapes" not in kwargs:
        dim = getattr(torch.export.Dim, "DYNAMIC", None) or torch.export.Dim("batch")
        opts["dynamic_shapes"] = tuple({0: dim} if f else None for a, f in zip(args, _batch_flags(args)))
    opts.update(kwargs)
    with _dynamo_mode():
        prog = torch.onnx.export(model, args, **opts)
    if prog is None:
        raise GraftError("graft.export: the dynamo exporter returned nothing")
    prog.save(str(path))


def export(model, args, path, *, exporter="auto", dynamic_batch=True, input_names=None, output_names=None,
           opset_version=None, **kwargs):
    """Exports `model` (which may contain graft layers) to ONNX at `path`.

    exporter: "torchscript" (torch.onnx.export with dynamo=False; default opset: torch's),
              "dynamo" (torch >= 2.8 + onnxscript; default opset 20 on torch 2.9+), or
              "auto" (dynamo when available, else torchscript).
    dynamic_batch: axis 0 is dynamic ("batch") for every output and for each input whose leading
                   dim equals the first input's (index tables and weights passed as inputs stay static).
    Extra keyword arguments go to torch.onnx.export unchanged.
    Returns the exporter that was used.
    """
    _registry.ensure_loaded()
    ok_dynamo, why_not = dynamo_exporter_available()
    if exporter == "auto":
        exporter = "dynamo" if ok_dynamo else "torchscript"
    if exporter == "dynamo":
        if not ok_dynamo:
            raise GraftError(f"graft.export: the dynamo ONNX exporter is not available ({why_not}); "
                             "use exporter='torchscript' (or exporter='auto')")
        _export_dynamo(model, args, path, dynamic_batch, input_names, output_names, opset_version, kwargs)
    elif exporter == "torchscript":
        if not torchscript_exporter_available():
            raise GraftError(f"graft.export: torch {torch.__version__} has no TorchScript ONNX exporter; "
                             "use exporter='dynamo' (needs torch >= 2.8 and onnxscript)")
        _export_torchscript(model, args, path, dynamic_batch, input_names, output_names, opset_version, kwargs)
    else:
        raise GraftError(f"graft.export: unknown exporter '{exporter}' (use 'auto', 'torchscript' or 'dynamo')")
    return exporter
