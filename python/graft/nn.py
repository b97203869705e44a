"""graft.nn: torch.nn.Module layers over graft ops.

``GraftLayer(op_name, **attrs)`` wraps any registered op (inputs beyond the first are learnable
Parameters when ``param_shapes`` gives their shapes); CustomLayer and GroupNorm are thin named
forms of it. The layers hold their attributes as plain Python values and their tensors as
Parameters, so nn.Sequential, state_dict, .cuda(), .half() and .to() all behave as for torch layers.
MultiScaleDeformableAttention is graft.deformable's mmcv-style layer, re-exported here, and
ModulatedDeformConv2d / ModulatedDeformConv2dPack (DCNv2) are graft.deform_conv's. RoIAlign (mmcv's
layer) and grid_sample (torch.nn.functional's signature) run mmdeploy's MMCVRoiAlign and grid_sampler,
so a model using them exports those nodes, which graft's engine, TensorRT (graft's plugin library)
and mmdeploy's own runtimes read.
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


_GRID_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_GRID_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):  # noqa: A002
    """torch.nn.functional.grid_sample for 4-D input (N, C, H, W) and grid (N, H_out, W_out, 2), as
    graft's grid_sampler op (mmdeploy's node): the same values and gradients for every mode."""
    if mode not in _GRID_MODES:
        raise ValueError(f"grid_sample: mode must be one of {', '.join(_GRID_MODES)}, got '{mode}'")
    if padding_mode not in _GRID_PADDINGS:
        raise ValueError(f"grid_sample: padding_mode must be one of {', '.join(_GRID_PADDINGS)}, got '{padding_mode}'")
    info = _registry.find("grid_sampler")
    return _function.call(info, [input, grid], {"interpolation_mode": _GRID_MODES[mode],
                                                "padding_mode": _GRID_PADDINGS[padding_mode],
                                                "align_corners": int(bool(align_corners))})


class RoIAlign(torch.nn.Module):
    """mmcv.ops.RoIAlign: forward(input (N, C, H, W), rois (K, 5) = (batch_index, x1, y1, x2, y2)) ->
    (K, C, *output_size), average or max pooling of bilinear samples (graft's MMCVRoiAlign op)."""

    def __init__(self, output_size, spatial_scale=1.0, sampling_ratio=0, pool_mode="avg", aligned=True):
        super().__init__()
        oh, ow = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
        if pool_mode not in ("avg", "max"):
            raise ValueError(f"RoIAlign: pool_mode must be 'avg' or 'max', got '{pool_mode}'")
        self.output_size, self.spatial_scale, self.sampling_ratio = (int(oh), int(ow)), float(spatial_scale), \
            int(sampling_ratio)
        self.pool_mode, self.aligned = pool_mode, bool(aligned)

    def forward(self, input, rois):  # noqa: A002
        info = _registry.find("MMCVRoiAlign")
        return _function.call(info, [input, rois], {
            "output_height": self.output_size[0], "output_width": self.output_size[1],
            "spatial_scale": self.spatial_scale, "sampling_ratio": self.sampling_ratio, "mode": self.pool_mode,
            "aligned": int(self.aligned)})

    def extra_repr(self):
        return (f"output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, pool_mode={self.pool_mode!r}, aligned={self.aligned}")
