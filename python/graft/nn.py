"""graft.nn: torch.nn.Module layers over graft ops.

``GraftLayer(op_name, **attrs)`` wraps any registered op (inputs beyond the first are learnable
Parameters when ``param_shapes`` gives their shapes); CustomLayer and GroupNorm are thin named
forms of it. The layers hold their attributes as plain Python values and their tensors as
Parameters, so nn.Sequential, state_dict, .cuda(), .half() and .to() all behave as for torch layers.
MultiScaleDeformableAttention is graft.deformable's mmcv-style layer, re-exported here, and
ModulatedDeformConv2d / ModulatedDeformConv2dPack (DCNv2) are graft.deform_conv's.
"""
import torch

from . import _function, _registry
from .deform_conv import ModulatedDeformConv2d, ModulatedDeformConv2dPack  # noqa: F401
from .deformable import MultiScaleDeformableAttention  # noqa: F401


class GraftLayer(torch.nn.Module):
    def __init__(self, op_name, param_shapes=None, **attrs):
        super().__init__()
        self.op_name = op_name
        info = _registry.find(op_name)
        self._torch_name = info.torch_name
        _function.normalize_attrs(info, attrs)  # unknown names fail here, at construction
        self.attrs = dict(attrs)
        self._param_names = []
        for name, shape in (param_shapes or {}).items():
            if name not in info.inputs:
                raise TypeError(f"graft op {info.name} has no input '{name}' (inputs: {', '.join(info.inputs)})")
            self.register_parameter(name, torch.nn.Parameter(torch.empty(shape)))
            self._param_names.append(name)

    @property
    def info(self):
        return _registry.ops()[self._torch_name]

    def forward(self, *xs):
        info = self.info
        inputs = list(xs)
        for name in info.inputs[len(xs):]:
            inputs.append(getattr(self, name) if name in self._param_names else None)
        # Parameters follow the input's dtype under autocast-free mixed use (e.g. .half() models).
        return _function.call(info, inputs, dict(self.attrs))

    def extra_repr(self):
        return ", ".join(f"{k}={v!r}" for k, v in self.attrs.items())


class CustomLayer(GraftLayer):
    """y = x * sigmoid(beta * x). ``param`` is accepted as the seed's spelling of ``beta``."""

    def __init__(self, beta=None, *, param=None):
        if beta is not None and param is not None:
            raise TypeError("CustomLayer: give beta or param (the seed's name for it), not both")
        value = beta if beta is not None else param
        super().__init__("CustomLayer", **({} if value is None else {"beta": float(value)}))

    @property
    def beta(self):
        return self.attrs.get("beta", float(self.info.attr("beta").default))


def _attr_name(info, *candidates):
    for c in candidates:
        if info.attr(c) is not None:
            return c
    return None


class GroupNorm(GraftLayer):
    """Group normalization (Wu & He, arXiv 1803.08494) with a learnable per-channel scale and bias,
    like torch.nn.GroupNorm(num_groups, num_channels, eps)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True):
        info = _registry.find("GroupNorm")
        if num_channels % num_groups != 0:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        attrs = {}
        g = _attr_name(info, "num_groups", "groups")
        e = _attr_name(info, "epsilon", "eps")
        if g:
            attrs[g] = int(num_groups)
        if e:
            attrs[e] = float(eps)
        params = {name: (num_channels,) for name in info.inputs[1:3]} if affine else {}
        super().__init__("GroupNorm", param_shapes=params, **attrs)
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        with torch.no_grad():
            if affine:
                getattr(self, info.inputs[1]).fill_(1.0)
                if len(info.inputs) > 2:
                    getattr(self, info.inputs[2]).zero_()
