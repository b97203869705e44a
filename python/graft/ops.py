"""graft.ops: one Python function per registered op, generated from the registry metadata.

    y = graft.ops.custom_layer(x, beta=0.5)       # CustomLayer
    y = graft.ops.group_norm(x, scale, bias, num_groups=4)

Tensor inputs are positional (None for an absent optional input), attributes keyword-only with the
op's defaults. Gradients flow through the op's backward kernel; ONNX export emits one node in the
op's domain (see graft/_function.py). Ops from plugin libraries appear after graft.load_plugin().
"""
import sys

from . import _function, _registry


def _make(info):
    def fn(*inputs, **attrs):
        n = len(info.inputs)
        n_req = sum(1 for o in info.optional_inputs if not o)
        if not (n_req <= len(inputs) <= n):
            raise TypeError(f"graft.ops.{info.python_name}: expected {n_req}..{n} tensor inputs "
                            f"({', '.join(info.inputs)}), got {len(inputs)}")
        inputs = list(inputs) + [None] * (n - len(inputs))
        return _function.call(info, inputs, attrs)

    attr_doc = "\n".join(
        f"    {a.name}: {a.type}" + ("" if a.required else f" = {a.default}") +
        (f" in [{a.min_value:g}, {a.max_value:g}]" if a.min_value is not None and a.max_value is not None else "")
        for a in info.attrs)
    fn.__name__ = info.python_name
    fn.__qualname__ = info.python_name
    fn.__doc__ = (f"{info.domain}::{info.name} (version {info.version}).\n\n{info.doc}\n\n"
                  f"Inputs: {', '.join(info.inputs)}\nAttributes:\n{attr_doc or '    none'}\n")
    return fn


def _install(new_ops):
    mod = sys.modules[__name__]
    for info in new_ops:
        f = _make(info)
        setattr(mod, info.python_name, f)
        if info.torch_name != info.python_name:
            setattr(mod, info.torch_name, f)


def __getattr__(name):
    # Lazy: the first graft.ops.<x> lookup loads the extension and generates every function.
    if name.startswith("__"):
        raise AttributeError(name)
    _registry.ensure_loaded()
    mod = sys.modules[__name__]
    if name in mod.__dict__:
        return mod.__dict__[name]
    raise AttributeError(f"graft.ops has no op '{name}' (registered: "
                         f"{', '.join(sorted(i.python_name for i in _registry.ops().values())) or 'none'})")


def __dir__():
    _registry.ensure_loaded()
    return sorted(list(globals().keys()))


_registry.on_new_ops(_install)
_registry.on_new_ops(_function.register_torch_library_extras)
