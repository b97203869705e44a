"""Generic autograd and ONNX export for every graft op (nothing here is written per op).

Forward/backward call torch.ops.graft.<Name> and torch.ops.graft.<Name>_backward.

ONNX export, and what the seed got wrong: the seed "registered" its symbolic with
``sym_help._onnx_stable_opsets.add(...)``. ``_onnx_stable_opsets`` is a tuple of opset numbers, not
a registry: ``.add`` raises AttributeError on every torch version, and nothing ever maps the op to
an ONNX node. The real mechanisms are:
  * TorchScript exporter (torch.onnx.export(..., dynamo=False)): an autograd.Function ``symbolic``
    staticmethod (used here) or torch.onnx.register_custom_op_symbolic("graft::Name", fn, opset);
  * dynamo exporter (torch >= 2.8, dynamo=True): torch.onnx.ops.symbolic(...) called while
    exporting (used here), or a custom_translation_table.
"""
import re
import warnings

import torch

from . import _registry

# Set by graft.export() while the dynamo exporter traces; also detected from torch's own flags.
_dynamo_exporting = [False]
# While graft.export runs the TorchScript exporter: (op name, output meta) per traced graft call.
_trace_log = None


def plugin_attrs(info):
    # TensorRT's ONNX parser finds a plugin by op_type + these two string attributes.
    return {"plugin_version": info.version, "plugin_namespace": info.plugin_namespace}


def normalize_attrs(info, attrs):
    """Keyword attributes -> {name: value} with the op's declared Python types (None = default)."""
    out = {}
    for name, value in attrs.items():
        a = info.attr(name)
        if a is None:
            known = ", ".join(x.name for x in info.attrs) or "none"
            raise TypeError(f"graft op {info.name}: unknown attribute '{name}' (known: {known})")
        if value is None:
            continue
        if a.type == "float":
            value = float(value)
        elif a.type == "int":
            value = int(value)
        elif a.type == "floats":
            value = [float(v) for v in value]
        elif a.type == "ints":
            value = [int(v) for v in value]
        elif a.type == "strings":
            value = [str(v) for v in value]
        out[name] = value
    return out


def _dynamo_export_active():
    if _dynamo_exporting[0]:
        return True
    is_export = getattr(torch.onnx, "is_in_onnx_export", None)
    # The TorchScript exporter traces with torch.jit; the dynamo exporter does not.
    return bool(is_export and is_export() and not torch.jit.is_tracing()
                and hasattr(torch.onnx, "ops") and hasattr(torch.onnx.ops, "symbolic"))


# graft._engine.infer_shapes names operations as graft::dim_op_name does ("+", "*", "max", ...);
# the TensorRT-style names are accepted too.
_DIM_OP_ALIASES = {"+": "SUM", "*": "PROD", "-": "SUB", "max": "MAX", "min": "MIN", "floordiv": "FLOOR_DIV",
                   "ceildiv": "CEIL_DIV", "==": "EQUAL", "<": "LESS"}


def _sym_combine(op, a, b):
    op = _DIM_OP_ALIASES.get(op, op)
    if op == "SUM":
        return a + b
    if op == "PROD":
        return a * b
    if op == "SUB":
        return a - b
    if op == "MAX":
        return torch.sym_max(a, b) if hasattr(torch, "sym_max") else max(a, b)
    if op == "MIN":
        return torch.sym_min(a, b) if hasattr(torch, "sym_min") else min(a, b)
    if op == "FLOOR_DIV":
        return a // b
    if op == "CEIL_DIV":
        return (a + b - 1) // b
    if op == "EQUAL":
        return int(a == b)
    if op == "LESS":
        return int(a < b)
    raise ValueError(f"unknown dimension operation {op}")


def output_meta(info, inputs, attrs):
    """Output (shapes, dtypes) for export: the op's C++ shape function evaluated over torch's
    (possibly symbolic) sizes when graft._engine is built, else the Meta kernel on concrete sizes."""
    try:
        from . import _native
        eng = _native.engine_module()
        shapes, dts = eng.infer_shapes(
            info.domain, info.name, info.version, info.plugin_namespace,
            [None if t is None else list(t.shape) for t in inputs],
            ["" if t is None else str(t.dtype).replace("torch.", "") for t in inputs],
            attrs, _sym_combine)
        return shapes, [getattr(torch, d) for d in dts]
    except (ImportError, RuntimeError) as e:  # no bindings: fall back to the Meta kernel
        if "was not found" not in str(e):
            raise
    metas = [None if t is None else torch.empty([int(s) for s in t.shape], dtype=t.dtype, device="meta")
             for t in inputs]
    outs = info.torch_op()(*metas, **attrs)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    return [list(o.shape) for o in outs], [o.dtype for o in outs]


def _dynamo_symbolic(info, inputs, attrs):
    shapes, dtypes = output_meta(info, inputs, attrs)
    all_attrs = dict(attrs)
    all_attrs.update(plugin_attrs(info))
    domain_op = f"{info.domain}::{info.name}"
    args = list(inputs)
    if len(info.outputs) == 1:
        return torch.onnx.ops.symbolic(domain_op, args, all_attrs, dtype=dtypes[0], shape=shapes[0],
                                       version=1)
    return tuple(torch.onnx.ops.symbolic_multi_out(domain_op, args, all_attrs, dtypes=dtypes,
                                                   shapes=shapes, version=1))


def _onnx_attr_kwargs(info, attrs):
    """g.op keyword arguments: name_f / name_i / name_s (lists become FLOATS/INTS/STRINGS)."""
    suffix = {"float": "f", "floats": "f", "int": "i", "ints": "i", "string": "s", "strings": "s"}
    kw = {}
    for a in info.attrs:
        if a.name not in attrs:
            continue
        kw[f"{a.name}_{suffix[a.type]}"] = attrs[a.name]
    for k, v in plugin_attrs(info).items():
        kw[f"{k}_s"] = v
    return kw


class GraftFunction(torch.autograd.Function):
    """Generic autograd.Function: apply(torch_name, attr_items, *inputs)."""

    @staticmethod
    def forward(ctx, torch_name, attr_items, out_meta, *inputs):
        info = _registry.ops()[torch_name]
        attrs = dict(attr_items)
        ctx.torch_name = torch_name
        ctx.attrs = attrs
        ctx.save_for_backward(*[t if t is not None else torch.empty(0) for t in inputs])
        ctx.absent = [t is None for t in inputs]
        out = info.torch_op()(*inputs, **attrs)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *grads):
        info = _registry.ops()[ctx.torch_name]
        saved = list(ctx.saved_tensors)
        inputs = [None if absent else t for t, absent in zip(saved, ctx.absent)]
        if not info.has_backward:
            raise RuntimeError(f"graft op {info.name} has no backward kernel")
        outs = None
        grads = list(grads)
        for i, g in enumerate(grads):
            if g is None:  # an unused output: its gradient is zero
                if outs is None:
                    outs = GraftFunction._forward_like(info, inputs, ctx.attrs)
                grads[i] = torch.zeros_like(outs[i])
        res = info.torch_backward_op()(*inputs, *grads, **ctx.attrs)
        res = res if isinstance(res, (tuple, list)) else (res,)
        full = [None] * len(inputs)
        for k, idx in enumerate(info.diff_inputs):
            if ctx.needs_input_grad[3 + idx] and not ctx.absent[idx]:
                full[idx] = res[k]
        return (None, None, None, *full)

    @staticmethod
    def _forward_like(info, inputs, attrs):
        out = info.torch_op()(*inputs, **attrs)
        return out if isinstance(out, (tuple, list)) else (out,)

    @staticmethod
    def symbolic(g, torch_name, attr_items, out_meta, *inputs):
        # TorchScript exporter: one node in the op's domain with typed attributes and output types.
        info = _registry.ops()[torch_name]
        attrs = dict(attr_items)
        _quiet_shape_inference_warning(info)
        with warnings.catch_warnings():
            # torch 1.13 hands an autograd.Function's symbolic a torch._C.Graph whose g.op warns that
            # it is deprecated (FutureWarning); it is the documented way to emit a node there.
            warnings.filterwarnings("ignore", message=r".*_graph_op.* is deprecated", category=FutureWarning)
            args = [g.op("prim::Constant").setType(torch._C.OptionalType.ofTensor())
                    if t is None else t for t in inputs]
            n_out = len(info.outputs)
            res = g.op(f"{info.domain}::{info.name}", *args, outputs=n_out, **_onnx_attr_kwargs(info, attrs))
        outs = res if n_out > 1 else [res]
        _set_output_types(inputs, out_meta, outs)
        return res if n_out > 1 else outs[0]


def _quiet_shape_inference_warning(info):
    """torch's TorchScript exporter warns "The shape inference of <domain>::<op> type is missing" for
    every node outside the ONNX domain, even when the symbolic set the output's type and shape (as
    symbolic() does through setType; torch 1.13 keeps the warning regardless, and graft.export writes
    the shapes back into value_info). For graft's own ops the warning is wrong, so it is filtered,
    for exactly these ops, from the first export of each on: torch raises it again in passes that
    run after the symbolic, outside any scope graft controls. The filter is added again whenever it
    is missing: a warnings.catch_warnings around an export (graft.export's own, or a caller's) drops
    the filters added inside it when it exits."""
    pattern = re.escape(f"The shape inference of {info.domain}::{info.name} type is missing")
    if any(f[0] == "ignore" and f[1] is not None and f[1].pattern == pattern and f[2] is UserWarning
           for f in warnings.filters):
        return
    warnings.filterwarnings("ignore", message=pattern, category=UserWarning)


def _traced_out_meta(info, inputs, attrs):
    """Output shapes/dtypes of this call while the TorchScript exporter traces (inputs are real
    tensors then); symbolic() gets them as a plain argument because torch 1.13 hands symbolic
    values whose types carry no sizes. Reading the traced sizes as Python ints is what this is for:
    the tracer's TracerWarnings about it are not the user's concern and are not shown."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        return _traced_out_meta_impl(info, inputs, attrs)


def _traced_out_meta_impl(info, inputs, attrs):
    metas = [None if t is None else torch.empty(list(t.shape), dtype=t.dtype, device="meta") for t in inputs]
    res = info.torch_op()(*metas, **attrs)
    res = res if isinstance(res, (tuple, list)) else (res,)
    first = next((t for t in inputs if t is not None), None)
    batch = first.shape[0] if first is not None and first.dim() > 0 else None
    # Axis 0 equal to the inputs' leading axis is treated as the (possibly dynamic) batch axis and
    # left unknown, so value_info never pins the example's batch size.
    meta = tuple((tuple(None if (d == 0 and batch is not None and n == batch) else int(n)
                        for d, n in enumerate(r.shape)), r.dtype) for r in res)
    if _trace_log is not None:
        _trace_log.append((info.domain, info.name, meta))
    return meta


def _set_output_types(inputs, out_meta, outs):
    """Keeps output shapes in the exported graph (the ONNX checker cannot infer custom ops)."""
    x = next((t for t in inputs if t is not None), None)
    if x is None:
        return
    for i, o in enumerate(outs):
        if out_meta is None or i >= len(out_meta):
            o.setType(x.type())
            continue
        sizes, dtype = out_meta[i]
        try:
            o.setType(x.type().with_dtype(dtype).with_sizes(list(sizes)))
        except (RuntimeError, AttributeError, TypeError):
            o.setType(x.type())


def call(info, inputs, attrs):
    attrs = normalize_attrs(info, attrs)
    if _dynamo_export_active():
        return _dynamo_symbolic(info, inputs, attrs)
    if torch.jit.is_scripting():  # pragma: no cover - scripting a graft op calls the op directly
        return info.torch_op()(*inputs, **attrs)
    out_meta = _traced_out_meta(info, inputs, attrs) if torch.jit.is_tracing() else None
    return GraftFunction.apply(info.torch_name, tuple(sorted(attrs.items())), out_meta, *inputs)


def register_torch_library_extras(new_ops):
    """torch >= 2.4: autograd on the raw torch.ops.graft.* ops too (torch.library.register_autograd)."""
    lib = getattr(torch, "library", None)
    if lib is None or not hasattr(lib, "register_autograd"):
        return
    for info in new_ops:
        if not info.has_backward:
            continue

        def setup_context(ctx, inputs, output, keyword_only_inputs=None, _info=info):
            ctx.save_for_backward(*[t if t is not None else torch.empty(0) for t in inputs])
            ctx.absent = [t is None for t in inputs]
            ctx.kw = dict(keyword_only_inputs or {})

        def backward(ctx, *grads, _info=info):
            saved = list(ctx.saved_tensors)
            inputs = [None if a else t for t, a in zip(saved, ctx.absent)]
            res = _info.torch_backward_op()(*inputs, *grads, **ctx.kw)
            res = res if isinstance(res, (tuple, list)) else (res,)
            full = [None] * len(inputs)
            for k, idx in enumerate(_info.diff_inputs):
                if not ctx.absent[idx]:
                    full[idx] = res[k]
            return tuple(full)

        try:
            lib.register_autograd(f"graft::{info.torch_name}", backward, setup_context=setup_context)
        except Exception as e:  # noqa: BLE001 - older 2.x variants differ; autograd.Function still works
            import warnings
            warnings.warn(f"graft: torch.library.register_autograd for {info.torch_name} failed: {e}")
