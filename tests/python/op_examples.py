"""Per-op example calls for the generic tests: one input spec per op input, and attributes.

An input spec is None (absent optional input), a shape tuple (standard-normal floats of the tested
dtype), ``Uniform(shape, lo, hi)`` (floats drawn in [lo, hi)) or ``Index(values)`` (a fixed integer
tensor, for index inputs whose contents must agree with the other inputs' shapes; it never
requires grad). Ops missing here get one (2, 3, 4) float tensor per required input and default
attributes; an op with an integer-only input must have an entry (examples_for says so).
Attribute names an op does not declare are dropped, so the table tolerates naming differences."""
import dataclasses
from typing import Optional, Sequence

import torch


@dataclasses.dataclass(frozen=True)
class Uniform:
    shape: tuple
    lo: float = 0.0
    hi: float = 1.0


@dataclasses.dataclass(frozen=True)
class Index:
    values: Sequence
    dtype: Optional[torch.dtype] = None  # None: the op's first allowed integer dtype (examples_for)


# Multi-scale deformable attention: levels (3, 4) and (2, 2), so S = 16 rows of value; N = 3,
# Lq = 5, M = 2 heads of D = 4, L = 2 levels, P = 3 points. Locations are uniform over [0, 1]
# (float64 gradcheck's step never crosses a bilinear kink in practice: they are measure zero).
_MS_DEFORM_ATTN = [dict(inputs=[(3, 16, 2, 4), Index([[3, 4], [2, 2]]), Index([0, 12]),
                                Uniform((3, 5, 2, 2, 3, 2)), Uniform((3, 5, 2, 2, 3))], attrs={})]

# Modulated deformable convolution. Offsets are kept 0.1 px or more away from integers, where the
# bilinear sampling has kinks (gradcheck's step then never crosses one): the first example moves
# samples a fraction of a pixel down-right (partly over the border with padding 1), the second
# by 1.1 to 1.9 px up-left, so that taps near the top-left leave the image entirely.
_MODULATED_DEFORM_CONV2D = [
    dict(inputs=[(2, 4, 3, 4), Uniform((2, 36, 3, 4), 0.1, 0.9), Uniform((2, 18, 3, 4)), (6, 2, 3, 3), (6,)],
         attrs={"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 2, "deform_groups": 2}),
    # 2x3 kernel, stride (2, 1), padding (0, 1), dilation (1, 2): Ho = 3, Wo = 4; no bias.
    dict(inputs=[(1, 3, 7, 6), Uniform((1, 12, 3, 4), -1.9, -1.1), Uniform((1, 6, 3, 4)), (2, 3, 2, 3), None],
         attrs={"stride": [2, 1], "padding": [0, 1], "dilation": [1, 2], "groups": 1, "deform_groups": 1}),
]

EXAMPLES = {
    "CustomLayer": [
        dict(inputs=[(2, 3, 4)], attrs={"beta": 0.7}),
        dict(inputs=[(5,)], attrs={"beta": 2.0}),
    ],
    "GroupNorm": [
        dict(inputs=[(2, 4, 3, 3), (4,), (4,)], attrs={"num_groups": 2, "groups": 2}),
        dict(inputs=[(1, 6, 5), (6,), (6,)], attrs={"num_groups": 3, "groups": 3}),
    ],
    "PyTestAffine": [
        dict(inputs=[(3, 5), (5,)], attrs={"alpha": 1.5, "mode": "square"}),
        dict(inputs=[(2, 2, 4), None], attrs={"alpha": -0.5}),
    ],
    "MultiScaleDeformableAttention": _MS_DEFORM_ATTN,
    "MultiscaleDeformableAttnPlugin_TRT": _MS_DEFORM_ATTN,
    # mmdeploy's roi_align: rois (K, 5) drawn in [0, 0.99), so column 0 truncates to batch index 0.
    "MMCVRoiAlign": [dict(inputs=[(2, 3, 8, 9), Uniform((3, 5), 0.0, 0.99)],
                          attrs={"output_height": 2, "output_width": 3, "sampling_ratio": 2, "aligned": 1})],
    # TensorRT's ROIAlign: rois (K, 4) inside the 8x9 map, each on the image its batch index names.
    "ROIAlign_TRT": [dict(inputs=[(2, 3, 8, 9), Uniform((3, 4), 0.0, 7.0), Index([0, 1, 1])],
                          attrs={"output_height": 2, "output_width": 3, "sampling_ratio": 2,
                                 "coordinate_transformation_mode": 1, "mode": 1})],
    "grid_sampler": [dict(inputs=[(2, 3, 5, 6), Uniform((2, 4, 3, 2), -1.2, 1.2)],
                          attrs={"interpolation_mode": 0, "padding_mode": 0, "align_corners": 0})],
    "ModulatedDeformConv2d": _MODULATED_DEFORM_CONV2D,
    # Batched NMS (no gradient): 30 boxes, 3 classes; normalized boxes for TensorRT's form, pixel
    # boxes for mmdeploy's, whose export writes clip_boxes 0.
    "BatchedNMSDynamic_TRT": [dict(inputs=[Uniform((2, 30, 1, 4)), Uniform((2, 30, 3))],
                                   attrs={"shareLocation": 1, "backgroundLabelId": -1, "numClasses": 3, "topK": 20,
                                          "keepTopK": 10, "scoreThreshold": 0.3, "iouThreshold": 0.5})],
    "TRTBatchedNMS": [dict(inputs=[Uniform((2, 30, 4), 0.0, 10.0), Uniform((2, 30, 3))],
                           attrs={"num_classes": 3, "topk": 20, "keep_topk": 10, "score_threshold": 0.3,
                                  "iou_threshold": 0.5, "clip_boxes": 0, "return_index": 1})],
}

_INT_DTYPES = {"int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8,
               "uint8": torch.uint8}


def _index_dtype(info, i):
    for name in (info.input_dtypes[i] if i < len(getattr(info, "input_dtypes", [])) else []):
        if name in _INT_DTYPES:
            return _INT_DTYPES[name]
    return torch.int64


def examples_for(info):
    """[(input specs, attrs)] for `info` (an OpInfo), index dtypes resolved from the op's metadata."""
    cases = EXAMPLES.get(info.name)
    if cases is None:
        ints = [n for i, n in enumerate(info.inputs)
                if not info.optional_inputs[i] and hasattr(info, "input_is_float") and not info.input_is_float(i)]
        if ints:
            raise AssertionError(f"op {info.name} has integer-only input(s) {', '.join(ints)}: add an entry with "
                                 "consistent Index(...) values to tests/python/op_examples.py")
        cases = [dict(inputs=[None if opt else (2, 3, 4) for opt in info.optional_inputs], attrs={})]
    out = []
    for c in cases:
        attrs = {k: v for k, v in c["attrs"].items() if info.attr(k) is not None}
        specs = [Index(s.values, _index_dtype(info, i)) if isinstance(s, Index) and s.dtype is None else s
                 for i, s in enumerate(c["inputs"])]
        out.append((specs, attrs))
    return out


def make_inputs(specs, dtype, requires_grad=False, device="cpu"):
    """Fresh random tensors for `specs` (floats in `dtype`); requires_grad applies to floats only."""
    ins = []
    for s in specs:
        if s is None:
            ins.append(None)
            continue
        if isinstance(s, Index):
            ins.append(torch.tensor(s.values, dtype=s.dtype or torch.int64, device=device))
            continue
        if isinstance(s, Uniform):
            t = torch.rand(s.shape, dtype=dtype, device=device) * (s.hi - s.lo) + s.lo
        else:
            t = torch.randn(s, dtype=dtype, device=device)
        if requires_grad:
            t.requires_grad_(True)
        ins.append(t)
    return ins
