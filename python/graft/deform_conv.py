"""Modulated deformable convolution (DCNv2, Zhu et al., arXiv 1811.11168; mmcv semantics).

    from graft.deform_conv import ModulatedDeformConv2d, ModulatedDeformConv2dPack
    conv = ModulatedDeformConv2dPack(64, 64, 3, padding=1, deform_groups=2)   # predicts offset and mask
    y = conv(x)
    conv = ModulatedDeformConv2d(64, 64, 3, padding=1)                        # offset and mask given
    y = conv(x, offset, mask)

``modulated_deform_conv2d`` calls graft's op (``torch.ops.graft.ModulatedDeformConv2d`` through
graft.ops, so it has autograd and exports to ONNX as one ai.onnx.contrib node);
``modulated_deform_conv2d_pytorch`` is the same math through ``torch.nn.functional.grid_sample``, for
tests and machines without the extension.

Shapes: x (N, C, H, W); offset (N, 2*deform_groups*kh*kw, Ho, Wo), (dy, dx) pairs per deform group and
kernel tap; mask (N, deform_groups*kh*kw, Ho, Wo); weight (Co, C/groups, kh, kw); bias (Co) or None;
output (N, Co, Ho, Wo).
"""
import math
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.utils import _pair

OP_NAME = "ModulatedDeformConv2d"


def modulated_deform_conv2d_pytorch(x, offset, mask, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
                                    deform_groups=1):
    """Pure-PyTorch modulated deformable convolution: every kernel tap is one grid_sample (bilinear,
    zeros, align_corners=False at pixel coordinates), scaled by the mask, then a grouped matmul."""
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    n, c, h, w = x.shape
    co, cg, kh, kw = weight.shape
    ho, wo = offset.shape[2], offset.shape[3]
    k, dg = kh * kw, deform_groups
    off = offset.reshape(n, dg, k, 2, ho, wo)
    dev, dt = x.device, x.dtype
    tap_y = (torch.arange(kh, device=dev, dtype=dt) * dh).repeat_interleave(kw).view(1, 1, k, 1, 1)
    tap_x = (torch.arange(kw, device=dev, dtype=dt) * dw).repeat(kh).view(1, 1, k, 1, 1)
    grid_y = (torch.arange(ho, device=dev, dtype=dt) * sh - ph).view(1, 1, 1, ho, 1)
    grid_x = (torch.arange(wo, device=dev, dtype=dt) * sw - pw).view(1, 1, 1, 1, wo)
    ys = grid_y + tap_y + off[:, :, :, 0]  # (N, dg, K, Ho, Wo) in pixels
    xs = grid_x + tap_x + off[:, :, :, 1]
    # Pixel -> grid_sample's normalized coordinate with align_corners=False: (2p + 1) / size - 1.
    grid = torch.stack([(2 * xs + 1) / w - 1, (2 * ys + 1) / h - 1], -1).reshape(n * dg, k * ho, wo, 2)
    sampled = F.grid_sample(x.reshape(n * dg, c // dg, h, w), grid, mode="bilinear", padding_mode="zeros",
                            align_corners=False)  # (N*dg, C/dg, K*Ho, Wo)
    cols = sampled.view(n, dg, c // dg, k, ho, wo) * mask.reshape(n, dg, 1, k, ho, wo)
    cols = cols.reshape(n, groups, (c // groups) * k, ho * wo)
    out = torch.einsum("gor,ngrp->ngop", weight.reshape(groups, co // groups, cg * k), cols)
    out = out.reshape(n, co, ho, wo)
    if bias is not None:
        out = out + bias.view(1, co, 1, 1)
    return out


def _op_info():
    from . import _registry  # on first use: importing this module does not load the extension
    return _registry.find_once(OP_NAME)


def graft_op_available():
    """Whether graft's torch extension (with this op) can be loaded."""
    from . import _registry
    return _registry.available(OP_NAME)


def modulated_deform_conv2d(x, offset, mask, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
                            deform_groups=1):
    """graft's ModulatedDeformConv2d op (autograd, ONNX export); arguments as mmcv's
    ``modulated_deform_conv2d`` (ints or (h, w) pairs)."""
    from . import _function
    attrs = {"stride": list(_pair(stride)), "padding": list(_pair(padding)), "dilation": list(_pair(dilation)),
             "groups": int(groups), "deform_groups": int(deform_groups)}
    return _function.call(_op_info(), [x, offset, mask, weight, bias], attrs)


class ModulatedDeformConv2d(nn.Module):
    """mmcv-style modulated deformable convolution: ``forward(x, offset, mask)``. Parameter names
    (weight, bias) and layout match mmcv's, so state dicts load. ``backend``: "graft" (the op),
    "pytorch" (grid_sample) or "auto" (graft when its extension loads, else pytorch, with a warning).
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 deform_groups=1, bias=True, backend="auto"):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible by "
                             f"groups ({groups})")
        if in_channels % deform_groups:
            raise ValueError(f"in_channels ({in_channels}) must be divisible by deform_groups ({deform_groups})")
        if backend not in ("auto", "graft", "pytorch"):
            raise ValueError(f"backend must be 'auto', 'graft' or 'pytorch', got {backend!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _pair(kernel_size)
        self.stride, self.padding, self.dilation = _pair(stride), _pair(padding), _pair(dilation)
        self.groups, self.deform_groups = groups, deform_groups
        self.backend = backend
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels // groups, *self.kernel_size))
        self.bias = nn.Parameter(torch.empty(out_channels)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        fan_in = self.in_channels * self.kernel_size[0] * self.kernel_size[1]
        bound = 1.0 / math.sqrt(fan_in)
        nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def _conv(self, x, offset, mask):
        args = (x, offset, mask, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups,
                self.deform_groups)
        if self.backend == "pytorch":
            return modulated_deform_conv2d_pytorch(*args)
        if self.backend == "auto" and not graft_op_available():
            warnings.warn("graft's torch extension is not available; using the grid_sample formulation")
            self.backend = "pytorch"
            return modulated_deform_conv2d_pytorch(*args)
        return modulated_deform_conv2d(*args)

    def forward(self, x, offset, mask):
        return self._conv(x, offset, mask)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, groups={self.groups}, "
                f"deform_groups={self.deform_groups}, bias={self.bias is not None}")


class ModulatedDeformConv2dPack(ModulatedDeformConv2d):
    """DCNv2 block as in mmcv's ``ModulatedDeformConv2dPack``: a plain convolution ``conv_offset``
    (same kernel, stride, padding, dilation; zero-initialized, so training starts from a regular
    convolution with mask 0.5) predicts 3*deform_groups*kh*kw channels: the dy/dx offsets, then the
    mask logits (through a sigmoid). ``forward(x)``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        kh, kw = self.kernel_size
        self.conv_offset = nn.Conv2d(self.in_channels, self.deform_groups * 3 * kh * kw, self.kernel_size,
                                     stride=self.stride, padding=self.padding, dilation=self.dilation, bias=True)
        nn.init.zeros_(self.conv_offset.weight)
        nn.init.zeros_(self.conv_offset.bias)

    def forward(self, x):
        o1, o2, mask = torch.chunk(self.conv_offset(x), 3, dim=1)
        return self._conv(x, torch.cat((o1, o2), dim=1), torch.sigmoid(mask))
