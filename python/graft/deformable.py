"""Multi-scale deformable attention (Deformable DETR, Zhu et al., arXiv 2010.04159; mmcv semantics).

    from graft.deformable import MultiScaleDeformableAttention, ms_deform_attn, ms_deform_attn_pytorch
    attn = MultiScaleDeformableAttention(embed_dims=256, num_heads=8, num_levels=4, num_points=4)
    out = attn(query, value=feat, reference_points=ref, spatial_shapes=shapes, level_start_index=starts)

``ms_deform_attn`` calls graft's op (``torch.ops.graft.MultiScaleDeformableAttention`` through
graft.ops, so it has autograd and exports to ONNX as one ai.onnx.contrib node);
``ms_deform_attn_pytorch`` is the same math through ``torch.nn.functional.grid_sample``, for tests,
benchmarks and machines without the extension.

Shapes: value (N, S, M, D); spatial_shapes (L, 2) int64 as (H, W); level_start_index (L) int64;
sampling_locations (N, Lq, M, L, P, 2) as (x, y) in [0, 1]; attention_weights (N, Lq, M, L, P);
output (N, Lq, M*D).
"""
import math
import warnings

import torch
import torch.nn.functional as F
from torch import nn

OP_NAME = "MultiScaleDeformableAttention"


def ms_deform_attn_pytorch(value, spatial_shapes, level_start_index, sampling_locations, attention_weights):
    """Pure-PyTorch multi-scale deformable attention (grid_sample, bilinear, zeros, align_corners=False)."""
    n, _, m, d = value.shape
    _, lq, _, levels, points, _ = sampling_locations.shape
    shapes = [(int(h), int(w)) for h, w in spatial_shapes.tolist()]
    starts = [int(s) for s in level_start_index.tolist()]
    grids = 2.0 * sampling_locations - 1.0
    out = None
    for lvl, (h, w) in enumerate(shapes):
        # (N, H*W, M, D) -> (N*M, D, H, W)
        v = value[:, starts[lvl]:starts[lvl] + h * w].permute(0, 2, 3, 1).reshape(n * m, d, h, w)
        g = grids[:, :, :, lvl].transpose(1, 2).reshape(n * m, lq, points, 2)
        sampled = F.grid_sample(v, g.to(v.dtype), mode="bilinear", padding_mode="zeros", align_corners=False)
        wts = attention_weights[:, :, :, lvl].transpose(1, 2).reshape(n * m, 1, lq, points)
        part = (sampled * wts.to(sampled.dtype)).sum(-1)  # (N*M, D, Lq)
        out = part if out is None else out + part
    if out is None:
        return value.new_zeros(n, lq, m * d)
    return out.view(n, m, d, lq).permute(0, 3, 1, 2).reshape(n, lq, m * d)


def _op_info():
    from . import _registry  # on first use: importing this module does not load the extension
    return _registry.find_once(OP_NAME)


def graft_op_available():
    """Whether graft's torch extension (with this op) can be loaded."""
    from . import _registry
    return _registry.available(OP_NAME)


def ms_deform_attn(value, spatial_shapes, level_start_index, sampling_locations, attention_weights):
    """graft's MultiScaleDeformableAttention op (autograd, ONNX export). Locations and weights follow
    value's dtype; the index inputs become int64."""
    from . import _function
    info = _op_info()
    dt = value.dtype

    def as_type(t, want):
        # Converting only when needed keeps exported graphs free of no-op Cast nodes.
        return t if t.dtype == want else t.to(want)

    return _function.call(info, [value, as_type(spatial_shapes, torch.int64), as_type(level_start_index, torch.int64),
                                 as_type(sampling_locations, dt), as_type(attention_weights, dt)], {})


class MultiScaleDeformableAttention(nn.Module):
    """mmcv-style multi-scale deformable attention layer (same parameter names as mmcv's, so
    state dicts load): value_proj, sampling_offsets, attention_weights (softmax over levels*points),
    output_proj; a dropout and the identity shortcut around it.

    ``batch_first=False`` (mmcv's default) takes query (Lq, N, C) and value (S, N, C).
    reference_points is (N, Lq, L, 2) as normalized (x, y), or (N, Lq, L, 4) as boxes (cx, cy, w, h),
    in which case offsets are scaled by half the box size over num_points (as in Deformable DETR's
    two-stage/box-refinement decoder). ``backend``: "graft" (the op), "pytorch" (grid_sample) or
    "auto" (graft when its extension loads, else pytorch, with a warning).
    """

    def __init__(self, embed_dims=256, num_heads=8, num_levels=4, num_points=4, im2col_step=64, dropout=0.1,
                 batch_first=False, value_proj_ratio=1.0, backend="auto"):
        super().__init__()
        if embed_dims % num_heads != 0:
            raise ValueError(f"embed_dims ({embed_dims}) must be divisible by num_heads ({num_heads})")
        if backend not in ("auto", "graft", "pytorch"):
            raise ValueError(f"backend must be 'auto', 'graft' or 'pytorch', got {backend!r}")
        self.embed_dims, self.num_heads = embed_dims, num_heads
        self.num_levels, self.num_points = num_levels, num_points
        self.im2col_step = im2col_step  # mmcv's; kept for state/config compatibility, unused
        self.batch_first = batch_first
        self.backend = backend
        value_dims = int(embed_dims * value_proj_ratio)
        if value_dims % num_heads != 0:
            raise ValueError(f"value dims ({value_dims}) must be divisible by num_heads ({num_heads})")
        self.sampling_offsets = nn.Linear(embed_dims, num_heads * num_levels * num_points * 2)
        self.attention_weights = nn.Linear(embed_dims, num_heads * num_levels * num_points)
        self.value_proj = nn.Linear(embed_dims, value_dims)
        self.output_proj = nn.Linear(value_dims, embed_dims)
        self.dropout = nn.Dropout(dropout)
        self.init_weights()

    def init_weights(self):
        # Offsets start on rays in num_heads directions, at 1..P pixels (Deformable DETR's init).
        nn.init.constant_(self.sampling_offsets.weight, 0.0)
        thetas = torch.arange(self.num_heads, dtype=torch.float32) * (2.0 * math.pi / self.num_heads)
        grid = torch.stack([thetas.cos(), thetas.sin()], -1)
        grid = (grid / grid.abs().max(-1, keepdim=True)[0]).view(self.num_heads, 1, 1, 2)
        grid = grid.repeat(1, self.num_levels, self.num_points, 1)
        for i in range(self.num_points):
            grid[:, :, i, :] *= i + 1
        with torch.no_grad():
            self.sampling_offsets.bias.copy_(grid.view(-1))
        nn.init.constant_(self.attention_weights.weight, 0.0)
        nn.init.constant_(self.attention_weights.bias, 0.0)
        nn.init.xavier_uniform_(self.value_proj.weight)
        nn.init.constant_(self.value_proj.bias, 0.0)
        nn.init.xavier_uniform_(self.output_proj.weight)
        nn.init.constant_(self.output_proj.bias, 0.0)

    def _attend(self, *args):
        if self.backend == "pytorch":
            return ms_deform_attn_pytorch(*args)
        if self.backend == "auto" and not graft_op_available():
            warnings.warn("graft's torch extension is not available; using the grid_sample formulation")
            self.backend = "pytorch"
            return ms_deform_attn_pytorch(*args)
        return ms_deform_attn(*args)

    def forward(self, query, key=None, value=None, identity=None, query_pos=None, key_padding_mask=None,
                reference_points=None, spatial_shapes=None, level_start_index=None, **kwargs):
        if reference_points is None or spatial_shapes is None or level_start_index is None:
            raise ValueError("reference_points, spatial_shapes and level_start_index are required")
        if value is None:
            value = query
        if identity is None:
            identity = query
        if query_pos is not None:
            query = query + query_pos
        if not self.batch_first:
            query, value = query.transpose(0, 1), value.transpose(0, 1)
        n, lq, _ = query.shape
        _, s, _ = value.shape
        m, lv, p = self.num_heads, self.num_levels, self.num_points
        if spatial_shapes.shape[0] != lv:
            raise ValueError(f"spatial_shapes has {spatial_shapes.shape[0]} levels, the layer has {lv}")
        value = self.value_proj(value)
        if key_padding_mask is not None:
            value = value.masked_fill(key_padding_mask[..., None], 0.0)
        value = value.view(n, s, m, -1)
        offsets = self.sampling_offsets(query).view(n, lq, m, lv, p, 2)
        weights = self.attention_weights(query).view(n, lq, m, lv * p).softmax(-1).view(n, lq, m, lv, p)
        if reference_points.shape[-1] == 2:
            # Offsets are in pixels of each level: divide by (W, H).
            normalizer = torch.stack([spatial_shapes[..., 1], spatial_shapes[..., 0]], -1).to(offsets.dtype)
            locations = reference_points[:, :, None, :, None, :] + offsets / normalizer[None, None, None, :, None, :]
        elif reference_points.shape[-1] == 4:
            locations = (reference_points[:, :, None, :, None, :2] +
                         offsets / p * reference_points[:, :, None, :, None, 2:] * 0.5)
        else:
            raise ValueError(f"reference_points must end in 2 or 4, got {reference_points.shape[-1]}")
        out = self._attend(value, spatial_shapes, level_start_index, locations.to(value.dtype),
                           weights.to(value.dtype))
        out = self.output_proj(out)
        if not self.batch_first:
            out = out.transpose(0, 1)
        return self.dropout(out) + identity
