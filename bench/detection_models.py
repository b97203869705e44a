"""The models of bench/detection.py (issue 17, item 5): a two-stage detector with a batched, exportable
post-processing, and a ResNet-50 trunk with DCNv2 in stage 3.

Two-stage detector (``BatchedTwoStageDetector``): torchvision's detection models take a list of
images and loop over them in Python (RPN proposal filtering, RoI pooling, box post-processing), so
a traced export bakes the example's batch size into the graph. This wrapper takes one (N, 3, H, W)
tensor and does the same computation with batched tensor ops, so one ONNX file serves every batch:

- the RPN's per-image loop becomes one ONNX NonMaxSuppression over the N images with the FPN levels
  as its classes (torchvision's batched_nms by level; a box scores -1 outside its level); boxes that
  torchvision filters out (too small, below the score threshold) get the score -1 and
  score_threshold -0.5 instead, which drops them the same way. The kept boxes of all levels are
  merged by a per-image TopK of post_nms_top_n (torchvision's keep[:post_nms_top_n], by score) into a
  padded (N, post_nms_top_n) layout, a validity mask marking empty slots;
- MultiScaleRoIAlign: torchvision's FPN level mapper, one ONNX RoiAlign per level (opset 16,
  output_half_pixel: torchvision's aligned=False) on the RoIs of that level (NonZero/Gather), merged
  with ScatterElements as torchvision's own ONNX path does;
- box post-processing: softmax, decoding, clipping, score threshold and small-box removal as masks,
  then one NonMaxSuppression whose batch entries are the (image, class) pairs, over the image's
  proposals, and a per-image TopK of detections_per_img over the kept candidates (torchvision's
  keep[:detections_per_img]).
torchvision's batched_nms separates groups by adding coordinate offsets (on CUDA up to 5,000 boxes);
here groups are NMS classes or batch entries instead, which selects the same boxes (torchvision's own
per-class path) and keeps coordinates small, so a float16 engine can run the NMS inputs in float16
(offsets reach ~45,000 px in the box stage: 32 px steps in float16).

Outputs (K detections over the whole batch): boxes (K, 4) float, scores (K,), labels (K,) int64,
batch_index (K,) int64 and keep (K,) int64 (the candidate index, proposal * (classes - 1) + class - 1,
within the image: "the kept indices"), plus rpn_keep (K1, 3), the RPN NMS's selected indices.

The image resize of torchvision's GeneralizedRCNNTransform is left out: the model is built with
min_size = max_size = the input size, at which that resize is the identity (scale 1), and the
final rescale multiplies by 1. ``torchvision_detector`` builds the wrapper around
torchvision.models.detection.fasterrcnn_resnet50_fpn; ``tiny_detector`` is a small two-level model
in plain torch with the same parts, for the CPU smoke run without torchvision.

NMS and RoIAlign are autograd.Functions whose ``symbolic`` writes the ONNX builtin (TorchScript
exporter) and whose forward is torchvision.ops.nms / roi_align when torchvision is importable, else a
plain-torch reference of the same semantics.
"""
import contextlib
import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

SEED = 20240607


def torchvision_or_none():
    try:
        import torchvision
        return torchvision
    except Exception:  # noqa: BLE001 - ImportError, or a torchvision built for another torch
        return None


# ---------------------------------------------------------------------------------------------
# NMS and RoIAlign as ONNX builtins
# ---------------------------------------------------------------------------------------------
def nms_reference(boxes, scores, iou_threshold):
    """Greedy NMS over (x1, y1, x2, y2) boxes: highest score first (equal scores: lower index first),
    a box is dropped when its IoU with a kept box is > iou_threshold. Returns kept indices in order."""
    n = boxes.shape[0]
    if n == 0:
        return torch.zeros(0, dtype=torch.long, device=boxes.device)
    order = torch.sort(scores, descending=True, stable=True)[1]
    b = boxes[order].double()
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = torch.max(b[:, None, :2], b[None, :, :2])
    rb = torch.min(b[:, None, 2:], b[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    iou = inter / (area[:, None] + area[None, :] - inter)
    removed = torch.zeros(n, dtype=torch.bool)
    keep = []
    for i in range(n):
        if removed[i]:
            continue
        keep.append(i)
        removed |= iou[i].cpu() > iou_threshold
    return order[torch.tensor(keep, dtype=torch.long, device=boxes.device)]


# While set (onnx_exact_reference), the wrapper's NMS and top-k follow ONNX's reference semantics
# operation for operation instead of torchvision's CUDA NMS and torch.topk: IoUs in float32 rounded
# step by step, and equal scores in index order.
_ONNX_EXACT = [False]


@contextlib.contextmanager
def onnx_exact_reference():
    """The wrapper as an exact ONNX reference: torchvision's CUDA NMS contracts its area products into
    FMAs (an IoU within an ulp of the threshold can go either way) and sorts scores unstably, and
    torch.topk orders equal values arbitrarily; ONNX's NonMaxSuppression and TopK (and graft) round
    every step in float32 and keep equal scores in index order. Those are discrete decisions: one
    flipped suppression changes which boxes survive."""
    _ONNX_EXACT[0] = True
    try:
        yield
    finally:
        _ONNX_EXACT[0] = False


def _topk(x, k):
    """x.topk(k, dim=1), or under onnx_exact_reference a stable descending sort's first k."""
    if not _ONNX_EXACT[0]:
        return x.topk(k, dim=1)
    s, i = torch.sort(x, dim=1, descending=True, stable=True)
    return s[:, :k], i[:, :k]


def nms_float32(boxes, scores, iou_threshold):
    """ONNX NonMaxSuppression's greedy walk for one (batch, class), as the ONNX reference and graft
    compute it: boxes by descending score (equal scores: lower index first), each step of the IoU
    rounded in float32 (torch's elementwise kernels round each op; nothing is fused), a candidate
    dropped when inter / (area_kept + area_cand - inter) > iou_threshold. Returns kept indices."""
    import numpy as np
    n = boxes.shape[0]
    if n == 0:
        return torch.zeros(0, dtype=torch.long, device=boxes.device)
    order = torch.sort(scores, descending=True, stable=True)[1]
    b = boxes[order].float()
    lo0, hi0 = torch.minimum(b[:, 0], b[:, 2]), torch.maximum(b[:, 0], b[:, 2])
    lo1, hi1 = torch.minimum(b[:, 1], b[:, 3]), torch.maximum(b[:, 1], b[:, 3])
    area = (hi0 - lo0) * (hi1 - lo1)
    ilo0, ihi0 = torch.maximum(lo0[:, None], lo0[None, :]), torch.minimum(hi0[:, None], hi0[None, :])
    ilo1, ihi1 = torch.maximum(lo1[:, None], lo1[None, :]), torch.minimum(hi1[:, None], hi1[None, :])
    inter = (ihi0 - ilo0) * (ihi1 - ilo1)
    union = (area[:, None] + area[None, :]) - inter
    sup = (ihi0 > ilo0) & (ihi1 > ilo1) & (area[:, None] > 0) & (area[None, :] > 0) & (union > 0)
    sup &= (inter / union) > iou_threshold
    sup = sup.cpu().numpy()
    removed = np.zeros(n, dtype=bool)
    keep = []
    for i in range(n):
        if removed[i]:
            continue
        keep.append(i)
        removed |= sup[i]
    return order[torch.tensor(keep, dtype=torch.long, device=boxes.device)]


class _NMS(torch.autograd.Function):
    """ONNX NonMaxSuppression (center_point_box 0): boxes (N, M, 4), scores (N, C, M) ->
    selected (K, 3) int64 [batch, class, box], by batch, then class, then descending score."""

    @staticmethod
    def forward(ctx, boxes, scores, max_output, iou_threshold, score_threshold):
        tv = torchvision_or_none()
        out = []
        for b in range(boxes.shape[0]):
            for c in range(scores.shape[1]):
                s = scores[b, c].float()
                cand = torch.nonzero(s > score_threshold).reshape(-1)
                bx, sc = boxes[b, cand].float(), s[cand]
                if _ONNX_EXACT[0]:
                    keep = nms_float32(bx, sc, iou_threshold)[:max_output]
                else:
                    keep = (tv.ops.nms(bx, sc, iou_threshold) if tv is not None else
                            nms_reference(bx, sc, iou_threshold))[:max_output]
                idx = cand[keep]
                col = lambda v: torch.full_like(idx, v)  # noqa: E731
                out.append(torch.stack([col(b), col(c), idx], 1))
        if not out:
            return torch.zeros((0, 3), dtype=torch.long, device=boxes.device)
        return torch.cat(out, 0)

    @staticmethod
    def symbolic(g, boxes, scores, max_output, iou_threshold, score_threshold):
        const = lambda v, dt: g.op("Constant", value_t=torch.tensor([v], dtype=dt))  # noqa: E731
        return g.op("NonMaxSuppression", boxes, scores, const(int(max_output), torch.long),
                    const(float(iou_threshold), torch.float), const(float(score_threshold), torch.float),
                    center_point_box_i=0)


def batched_nms_onnx(boxes, scores, max_output, iou_threshold, score_threshold):
    return _NMS.apply(boxes, scores, int(max_output), float(iou_threshold), float(score_threshold))


def roi_align_reference(feat, boxes, batch_idx, out_hw, spatial_scale, sampling_ratio):
    """torchvision.ops.roi_align with aligned=False and sampling_ratio > 0, in plain torch."""
    n, c, h, w = feat.shape
    k = boxes.shape[0]
    oh, ow = out_hw
    sr = sampling_ratio
    b = boxes.float() * spatial_scale
    rw = (b[:, 2] - b[:, 0]).clamp(min=1.0)
    rh = (b[:, 3] - b[:, 1]).clamp(min=1.0)
    bw, bh = rw / ow, rh / oh
    iy = torch.arange(oh * sr, device=feat.device)
    ix = torch.arange(ow * sr, device=feat.device)
    y = b[:, 1:2] + (iy // sr)[None] * bh[:, None] + ((iy % sr)[None] + 0.5) * bh[:, None] / sr  # (K, oh*sr)
    x = b[:, 0:1] + (ix // sr)[None] * bw[:, None] + ((ix % sr)[None] + 0.5) * bw[:, None] / sr
    y = y[:, :, None].expand(k, oh * sr, ow * sr)
    x = x[:, None, :].expand(k, oh * sr, ow * sr)
    inside = ~((y < -1.0) | (y > h) | (x < -1.0) | (x > w))
    y, x = y.clamp(min=0), x.clamp(min=0)

    def corners(v, size):
        lo = v.floor().long()
        top = lo >= size - 1
        lo = torch.where(top, torch.full_like(lo, size - 1), lo)
        hi = torch.where(top, lo, lo + 1)
        v = torch.where(top, lo.to(v.dtype), v)
        frac = v - lo.to(v.dtype)
        return lo, hi, frac

    y0, y1, ly = corners(y, h)
    x0, x1, lx = corners(x, w)
    flat = feat.float().permute(0, 2, 3, 1).reshape(n * h * w, c)
    base = batch_idx.long().view(k, 1, 1) * (h * w)

    def at(yy, xx):
        return flat[(base + yy * w + xx).reshape(-1)].view(k, oh * sr, ow * sr, c)

    hy, hx = 1 - ly, 1 - lx
    v = ((hy * hx)[..., None] * at(y0, x0) + (hy * lx)[..., None] * at(y0, x1) +
         (ly * hx)[..., None] * at(y1, x0) + (ly * lx)[..., None] * at(y1, x1))
    v = v * inside[..., None]
    v = v.view(k, oh, sr, ow, sr, c).mean(dim=(2, 4))
    return v.permute(0, 3, 1, 2).contiguous().to(feat.dtype)


class _RoIAlign(torch.autograd.Function):
    """ONNX RoiAlign (opset 16, coordinate_transformation_mode output_half_pixel, avg)."""

    @staticmethod
    def forward(ctx, feat, boxes, batch_idx, out_h, out_w, spatial_scale, sampling_ratio):
        tv = torchvision_or_none()
        if tv is not None:
            rois = torch.cat([batch_idx.to(boxes.dtype)[:, None], boxes], 1).to(feat.dtype)
            return tv.ops.roi_align(feat, rois, (out_h, out_w), spatial_scale, sampling_ratio, aligned=False)
        return roi_align_reference(feat, boxes, batch_idx, (out_h, out_w), spatial_scale, sampling_ratio)

    @staticmethod
    def symbolic(g, feat, boxes, batch_idx, out_h, out_w, spatial_scale, sampling_ratio):
        return g.op("RoiAlign", feat, boxes, batch_idx, coordinate_transformation_mode_s="output_half_pixel",
                    mode_s="avg", output_height_i=int(out_h), output_width_i=int(out_w),
                    sampling_ratio_i=int(sampling_ratio), spatial_scale_f=float(spatial_scale))


def roi_align_onnx(feat, boxes, batch_idx, out_hw, spatial_scale, sampling_ratio):
    return _RoIAlign.apply(feat, boxes.to(feat.dtype), batch_idx, int(out_hw[0]), int(out_hw[1]),
                           float(spatial_scale), int(sampling_ratio))


# ---------------------------------------------------------------------------------------------
# Box arithmetic, in torchvision's operation order (so FP32 results agree bit for bit or nearly)
# ---------------------------------------------------------------------------------------------
def decode_boxes(rel, boxes, weights, clip):
    """torchvision's BoxCoder.decode_single over leading dims: rel (..., K*4), boxes (..., 4) ->
    (..., K, 4)."""
    boxes = boxes.to(rel.dtype)
    widths = boxes[..., 2] - boxes[..., 0]
    heights = boxes[..., 3] - boxes[..., 1]
    ctr_x = boxes[..., 0] + 0.5 * widths
    ctr_y = boxes[..., 1] + 0.5 * heights
    wx, wy, ww, wh = weights
    dx = rel[..., 0::4] / wx
    dy = rel[..., 1::4] / wy
    dw = torch.clamp(rel[..., 2::4] / ww, max=clip)
    dh = torch.clamp(rel[..., 3::4] / wh, max=clip)
    pred_ctr_x = dx * widths[..., None] + ctr_x[..., None]
    pred_ctr_y = dy * heights[..., None] + ctr_y[..., None]
    pred_w = torch.exp(dw) * widths[..., None]
    pred_h = torch.exp(dh) * heights[..., None]
    c_to_c_h = 0.5 * pred_h
    c_to_c_w = 0.5 * pred_w
    return torch.stack((pred_ctr_x - c_to_c_w, pred_ctr_y - c_to_c_h, pred_ctr_x + c_to_c_w,
                        pred_ctr_y + c_to_c_h), dim=-1)


def clip_boxes(boxes, hw):
    h, w = hw
    x = boxes[..., 0::2].clamp(min=0, max=w)
    y = boxes[..., 1::2].clamp(min=0, max=h)
    return torch.stack((x, y), dim=-1).reshape(boxes.shape)


def large_enough(boxes, min_size):
    ws = boxes[..., 2] - boxes[..., 0]
    hs = boxes[..., 3] - boxes[..., 1]
    return (ws >= min_size) & (hs >= min_size)


def _scatter_kept(sel_rows, sel_cols, scores_flat, n, m):
    """A (N, M) table holding -1 everywhere but at the selected (row, column) pairs, which hold
    their scores: the input of a per-row TopK that merges several NMS groups by score."""
    flat = sel_rows * m + sel_cols
    table = torch.full((n * m,), -1.0, dtype=scores_flat.dtype, device=scores_flat.device)
    return table.scatter(0, flat, scores_flat[flat]).view(n, m)


class BatchedTwoStageDetector(nn.Module):
    """Faster R-CNN (FPN) inference over a (N, 3, H, W) batch with batched post-processing (module doc).

    parts: backbone (x -> OrderedDict of feature maps), rpn_head (list of maps -> (objectness list,
    deltas list), with .cls_logits and .bbox_pred convolutions), box_head, box_predictor (with
    .cls_score and .bbox_pred), anchors (A, 4) for this image size, num_anchors_per_level, and the
    post-processing settings (torchvision's names)."""

    def __init__(self, backbone, rpn_head, box_head, box_predictor, anchors, num_anchors_per_level, *, image_hw,
                 image_mean, image_std, roi_featmap_names, roi_scales, roi_output_size, roi_sampling_ratio,
                 canonical_scale=224, canonical_level=4, rpn_pre_nms_top_n=1000, rpn_post_nms_top_n=1000,
                 rpn_nms_thresh=0.7, rpn_min_size=1e-3, rpn_score_thresh=0.0, rpn_weights=(1.0, 1.0, 1.0, 1.0),
                 box_weights=(10.0, 10.0, 5.0, 5.0), bbox_xform_clip=math.log(1000.0 / 16),
                 box_score_thresh=0.05, box_nms_thresh=0.5, detections_per_img=100, box_min_size=1e-2):
        super().__init__()
        self.backbone, self.rpn_head, self.box_head, self.box_predictor = backbone, rpn_head, box_head, box_predictor
        self.image_hw = tuple(int(v) for v in image_hw)
        self.register_buffer("mean", torch.tensor(image_mean, dtype=torch.float32).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(image_std, dtype=torch.float32).view(1, -1, 1, 1))
        self.register_buffer("anchors", anchors.float().clone())
        self.num_anchors_per_level = [int(v) for v in num_anchors_per_level]
        self.pre_nms = [min(int(rpn_pre_nms_top_n), n) for n in self.num_anchors_per_level]
        # The level of each top-n column (torchvision's `levels` after its top-n gather): static.
        self.register_buffer("cand_levels", torch.cat([torch.full((k,), i, dtype=torch.long)
                                                       for i, k in enumerate(self.pre_nms)]))
        self.roi_featmap_names = list(roi_featmap_names)
        self.roi_scales = [float(s) for s in roi_scales]
        self.k_min = -math.log2(self.roi_scales[0])
        self.k_max = -math.log2(self.roi_scales[-1])
        self.roi_output_size = tuple(int(v) for v in roi_output_size)
        self.roi_sampling_ratio = int(roi_sampling_ratio)
        self.canonical_scale, self.canonical_level = float(canonical_scale), float(canonical_level)
        self.post_nms = int(rpn_post_nms_top_n)
        self.rpn_nms_thresh, self.rpn_min_size, self.rpn_score_thresh = rpn_nms_thresh, rpn_min_size, rpn_score_thresh
        self.rpn_weights, self.box_weights, self.clip = tuple(rpn_weights), tuple(box_weights), float(bbox_xform_clip)
        self.box_score_thresh, self.box_nms_thresh = box_score_thresh, box_nms_thresh
        self.detections_per_img, self.box_min_size = int(detections_per_img), box_min_size

    def forward(self, images):
        n = images.shape[0]
        x = (images - self.mean.to(images.dtype)) / self.std.to(images.dtype)
        feats = self.backbone(x)
        maps = list(feats.values())
        objectness, deltas = self.rpn_head(maps)
        obj = torch.cat([o.permute(0, 2, 3, 1).reshape(n, -1) for o in objectness], 1)  # (N, A): (H, W, A) order
        rel = torch.cat([d.view(n, -1, 4, d.shape[2], d.shape[3]).permute(0, 3, 4, 1, 2).reshape(n, -1, 4)
                         for d in deltas], 1)
        proposals = decode_boxes(rel.detach(), self.anchors, self.rpn_weights, self.clip).reshape(n, -1, 4)

        # RPN filtering: top-n per level, then per image clip / small boxes / score threshold / NMS per level.
        idx, offset = [], 0
        for ob, k in zip(obj.split(self.num_anchors_per_level, 1), self.pre_nms):
            idx.append(_topk(ob, k)[1] + offset)
            offset += ob.shape[1]
        idx = torch.cat(idx, 1)
        prob = torch.sigmoid(torch.gather(obj, 1, idx))
        boxes = clip_boxes(torch.gather(proposals, 1, idx[..., None].expand(-1, -1, 4)), self.image_hw)
        valid = large_enough(boxes, self.rpn_min_size) & (prob >= self.rpn_score_thresh)
        # NMS per (image, level): the levels are NMS classes (boxes shared, a box scores -1 outside its
        # level), which is torchvision's batched_nms by level without its coordinate offsets (those
        # reach ~2,000 px here and ~45,000 px in the box stage, beyond float16's precision).
        r = boxes.shape[1]
        levels = torch.arange(len(self.pre_nms), device=images.device)
        in_level = (self.cand_levels[None, :] == levels[:, None])[None]  # (1, L, R)
        level_scores = torch.where(valid[:, None, :] & in_level, prob[:, None, :], torch.full_like(prob, -1.0)[:, None, :])
        rpn_sel = batched_nms_onnx(boxes, level_scores, self.post_nms, self.rpn_nms_thresh, -0.5)  # [b, level, i]
        # torchvision's keep[:post_nms_top_n]: the kept boxes of every level, by descending score.
        p = min(self.post_nms, r)
        top_s, top_i = _topk(_scatter_kept(rpn_sel[:, 0], rpn_sel[:, 2], prob.reshape(-1), n, r), p)
        rois = torch.gather(boxes, 1, top_i[..., None].expand(-1, -1, 4)).reshape(-1, 4)  # (N*P, 4)
        rvalid = (top_s > -0.5).reshape(-1)  # fewer than P kept: the rest are empty slots

        pooled = self.multiscale_roi_align(feats, rois, n, p)
        class_logits, box_regression = self.box_predictor(self.box_head(pooled))
        ncls = class_logits.shape[-1]
        pred = clip_boxes(decode_boxes(box_regression, rois, self.box_weights, self.clip), self.image_hw)[:, 1:]
        scores = F.softmax(class_logits, -1)[:, 1:]
        c = ncls - 1
        cvalid = (rvalid[:, None] & (scores > self.box_score_thresh) & large_enough(pred, self.box_min_size))
        # NMS per (image, class): image-class pairs are NMS batch entries over the image's P proposals
        # (torchvision's batched_nms by class, without offsets, as it runs above 5,000 candidates).
        group_boxes = pred.reshape(n, p, c, 4).permute(0, 2, 1, 3).reshape(n * c, p, 4)
        group_scores = torch.where(cvalid, scores, torch.full_like(scores, -1.0)).reshape(n, p, c).permute(0, 2, 1)
        sel = batched_nms_onnx(group_boxes, group_scores.reshape(n * c, 1, p), self.detections_per_img,
                               self.box_nms_thresh, -0.5)  # [image * C' + class', 0, proposal]
        group_image = torch.arange(n, device=images.device)[:, None].expand(n, c).reshape(-1)
        group_class = torch.arange(c, device=images.device)[None, :].expand(n, c).reshape(-1)
        g = sel[:, 0]
        cand = sel[:, 2] * c + group_class[g]  # the candidate index within the image: proposal * C' + class'
        # torchvision's keep[:detections_per_img]: the image's kept candidates by descending score.
        k = min(self.detections_per_img, p * c)
        top_s, top_j = _topk(_scatter_kept(group_image[g], cand, scores.reshape(-1), n, p * c), k)
        found = torch.nonzero((top_s > -0.5).reshape(-1)).reshape(-1)
        b = torch.arange(n, device=images.device)[:, None].expand(n, k).reshape(-1)[found]
        j = top_j.reshape(-1)[found]
        flat = b * (p * c) + j
        labels = (torch.arange(c, device=images.device) + 1).repeat(p)  # of candidate index j
        return pred.reshape(-1, 4)[flat], top_s.reshape(-1)[found], labels[j], b, j, rpn_sel

    def multiscale_roi_align(self, feats, rois, n, p):
        maps = [feats[k] for k in self.roi_featmap_names]
        bidx = torch.arange(n, device=rois.device)[:, None].expand(n, p).reshape(-1)
        area = (rois[:, 2] - rois[:, 0]) * (rois[:, 3] - rois[:, 1])
        s = torch.sqrt(area)
        lvl = torch.floor(self.canonical_level + torch.log2(s / self.canonical_scale) +
                          torch.tensor(1e-6, dtype=s.dtype))
        lvl = (torch.clamp(lvl, min=self.k_min, max=self.k_max).to(torch.int64) - int(self.k_min))
        c = maps[0].shape[1]
        oh, ow = self.roi_output_size
        result = torch.zeros((rois.shape[0], c, oh, ow), dtype=maps[0].dtype, device=rois.device)
        for level, (fmap, scale) in enumerate(zip(maps, self.roi_scales)):
            at = torch.nonzero(lvl == level).reshape(-1)
            pooled = roi_align_onnx(fmap, rois[at], bidx[at], (oh, ow), scale, self.roi_sampling_ratio)
            result = result.scatter(0, at.view(-1, 1, 1, 1).expand(-1, c, oh, ow), pooled)
        return result


OUTPUT_NAMES = ["boxes", "scores", "labels", "batch_index", "keep", "rpn_keep"]


def _reinit(layer, target_std, rms_in):
    """Weights N(0, s) with s so that the layer's outputs have about target_std (inputs of rms rms_in)."""
    fan_in = layer.weight[0].numel()
    with torch.no_grad():
        layer.weight.normal_(0.0, target_std / (max(rms_in, 1e-6) * math.sqrt(fan_in)))
        if layer.bias is not None:
            layer.bias.zero_()


def calibrate_detector(det, images):
    """Random weights give a detector with no signal: torchvision's RPN head (std 0.01) makes every
    objectness ~0.5 (near-ties everywhere, so any rounding reorders them), and a 91-way softmax of
    small logits keeps every class under the 0.05 score threshold (no detections). BatchNorm
    statistics are calibrated on the input, then the heads' last layers are rescaled from the rms of
    their inputs: objectness logits ~N(0, 1), RPN deltas ~0.2, class logits ~N(0, 3), box deltas ~1."""
    import models  # bench/models.py
    x = (images - det.mean) / det.std
    torch.manual_seed(SEED + 11)
    models._calibrate_batchnorm(det.backbone, x)
    seen = {}

    def hook(name):
        def f(mod, inp, out):
            seen.setdefault(name, []).append(inp[0].detach().float().pow(2).mean().sqrt().item())
        return f

    head, pred = det.rpn_head, det.box_predictor
    handles = [head.cls_logits.register_forward_hook(hook("rpn")), pred.cls_score.register_forward_hook(hook("box"))]
    with torch.no_grad():
        feats = det.backbone(x)
        _reinit(head.cls_logits, 1.0, 1.0)  # a first pass only measures the RPN input
        head(list(feats.values()))
        rpn_rms = sum(seen["rpn"]) / len(seen["rpn"])
        _reinit(head.cls_logits, 1.0, rpn_rms)
        _reinit(head.bbox_pred, 0.2, rpn_rms)
        det(images)
        box_rms = sum(seen["box"]) / len(seen["box"])
        _reinit(pred.cls_score, 3.0, box_rms)
        _reinit(pred.bbox_pred, 1.0, box_rms)
    for h in handles:
        h.remove()
    return det.eval()


# ---------------------------------------------------------------------------------------------
# torchvision's Faster R-CNN, and a tiny stand-in with the same parts
# ---------------------------------------------------------------------------------------------
def _roi_scales(maps, image_hw):
    return [2.0 ** round(math.log2(float(m.shape[-2]) / image_hw[0])) for m in maps]


def torchvision_detector(name="fasterrcnn_resnet50_fpn", image_size=512):
    """(original torchvision model, BatchedTwoStageDetector sharing its modules); random weights
    from SEED, calibrated (calibrate_detector)."""
    tv = torchvision_or_none()
    if tv is None:
        raise RuntimeError("torchvision is not importable")
    from torchvision.models.detection.image_list import ImageList
    torch.manual_seed(SEED)
    builder = getattr(tv.models.detection, name)
    # min_size = max_size = the input size: GeneralizedRCNNTransform's resize is then the identity.
    model = builder(weights=None, weights_backbone=None, min_size=image_size, max_size=image_size).eval()
    hw = (image_size, image_size)
    with torch.no_grad():
        dummy = torch.zeros(1, 3, *hw)
        feats = model.backbone(dummy)
        maps = list(feats.values())
        anchors = model.rpn.anchor_generator(ImageList(dummy, [hw]), maps)[0]
        counts = [int(o.shape[1] * o.shape[2] * o.shape[3]) for o in model.rpn.head(maps)[0]]
    rpn, rh, pool = model.rpn, model.roi_heads, model.roi_heads.box_roi_pool
    roi_maps = [feats[k] for k in pool.featmap_names]
    det = BatchedTwoStageDetector(
        model.backbone, rpn.head, rh.box_head, rh.box_predictor, anchors, counts, image_hw=hw,
        image_mean=model.transform.image_mean, image_std=model.transform.image_std,
        roi_featmap_names=pool.featmap_names, roi_scales=_roi_scales(roi_maps, hw),
        roi_output_size=pool.output_size, roi_sampling_ratio=pool.sampling_ratio,
        canonical_scale=getattr(pool, "canonical_scale", 224), canonical_level=getattr(pool, "canonical_level", 4),
        rpn_pre_nms_top_n=rpn._pre_nms_top_n["testing"], rpn_post_nms_top_n=rpn._post_nms_top_n["testing"],
        rpn_nms_thresh=rpn.nms_thresh, rpn_min_size=rpn.min_size, rpn_score_thresh=rpn.score_thresh,
        rpn_weights=rpn.box_coder.weights, box_weights=rh.box_coder.weights, bbox_xform_clip=rh.box_coder.bbox_xform_clip,
        box_score_thresh=rh.score_thresh, box_nms_thresh=rh.nms_thresh, detections_per_img=rh.detections_per_img)
    return model, det.eval()


class _TinyBackbone(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.c1 = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.BatchNorm2d(c), nn.ReLU(),
                                nn.Conv2d(c, c, 3, 2, 1), nn.BatchNorm2d(c), nn.ReLU())  # stride 4
        self.c2 = nn.Sequential(nn.Conv2d(c, c, 3, 2, 1), nn.BatchNorm2d(c), nn.ReLU())  # stride 8

    def forward(self, x):
        a = self.c1(x)
        return OrderedDict([("0", a), ("1", self.c2(a))])


class _TinyRPNHead(nn.Module):
    def __init__(self, c, a):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, 1, 1)
        self.cls_logits = nn.Conv2d(c, a, 1)
        self.bbox_pred = nn.Conv2d(c, 4 * a, 1)

    def forward(self, maps):
        hs = [F.relu(self.conv(m)) for m in maps]
        return [self.cls_logits(h) for h in hs], [self.bbox_pred(h) for h in hs]


class _TinyBoxHead(nn.Module):
    def __init__(self, c, r, rep):
        super().__init__()
        self.fc6, self.fc7 = nn.Linear(c * r * r, rep), nn.Linear(rep, rep)

    def forward(self, x):
        return F.relu(self.fc7(F.relu(self.fc6(x.flatten(start_dim=1)))))


class _TinyPredictor(nn.Module):
    def __init__(self, rep, classes):
        super().__init__()
        self.cls_score, self.bbox_pred = nn.Linear(rep, classes), nn.Linear(rep, 4 * classes)

    def forward(self, x):
        return self.cls_score(x), self.bbox_pred(x)


def grid_anchors(image_hw, map_sizes, sizes, aspect_ratios=(0.5, 1.0, 2.0)):
    """Anchors in torchvision's AnchorGenerator layout: per level, (H, W, A) order of the boxes
    centred on the strided grid, base anchors rounded."""
    out, counts = [], []
    ar = torch.tensor(aspect_ratios)
    for (gh, gw), size in zip(map_sizes, sizes):
        h_ratios = torch.sqrt(ar)
        ws = (1 / h_ratios * size).view(-1)
        hs = (h_ratios * size).view(-1)
        base = (torch.stack([-ws, -hs, ws, hs], 1) / 2).round()
        sy, sx = image_hw[0] // gh, image_hw[1] // gw
        yy, xx = torch.meshgrid(torch.arange(gh) * sy, torch.arange(gw) * sx, indexing="ij")
        shifts = torch.stack([xx.reshape(-1), yy.reshape(-1), xx.reshape(-1), yy.reshape(-1)], 1).float()
        out.append((shifts.view(-1, 1, 4) + base.view(1, -1, 4)).reshape(-1, 4))
        counts.append(out[-1].shape[0])
    return torch.cat(out), counts


def tiny_detector(image_size=64, classes=5):
    """A two-level Faster R-CNN-like model in plain torch (no torchvision): the CPU smoke test of the
    batched detector, its export and graft's NonMaxSuppression / RoiAlign / TopK / ScatterElements."""
    torch.manual_seed(SEED)
    c, a, r = 16, 3, 4
    hw = (image_size, image_size)
    backbone = _TinyBackbone(c)
    with torch.no_grad():
        maps = list(backbone.eval()(torch.zeros(1, 3, *hw)).values())
    anchors, counts = grid_anchors(hw, [m.shape[-2:] for m in maps], sizes=(16, 32))
    det = BatchedTwoStageDetector(
        backbone, _TinyRPNHead(c, a), _TinyBoxHead(c, r, 32), _TinyPredictor(32, classes), anchors, counts,
        image_hw=hw, image_mean=(0.485, 0.456, 0.406), image_std=(0.229, 0.224, 0.225), roi_featmap_names=["0", "1"],
        roi_scales=_roi_scales(maps, hw), roi_output_size=(r, r), roi_sampling_ratio=2, canonical_scale=32,
        canonical_level=3, rpn_pre_nms_top_n=60, rpn_post_nms_top_n=24, detections_per_img=12)
    return det.eval()


# ---------------------------------------------------------------------------------------------
# DCNv2 in a ResNet-50 trunk
# ---------------------------------------------------------------------------------------------
class DCNv2(nn.Module):
    """A 3x3 modulated deformable convolution with its offset/mask convolution (mmcv's
    ModulatedDeformConv2dPack arrangement: one conv predicts 18 offsets then 9 mask logits).
    impl: "graft" (graft.nn.ModulatedDeformConv2d's op: exports as one custom node), "torchvision"
    (torchvision.ops.deform_conv2d: what a PyTorch user runs) or "pytorch" (grid_sample)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        from graft.deform_conv import ModulatedDeformConv2d
        self.conv_offset = nn.Conv2d(cin, 27, 3, stride, 1)
        self.dcn = ModulatedDeformConv2d(cin, cout, 3, stride=stride, padding=1, bias=False, backend="graft")
        self.impl = "graft"

    def forward(self, x):
        o1, o2, m = torch.chunk(self.conv_offset(x), 3, dim=1)
        offset, mask = torch.cat((o1, o2), dim=1), torch.sigmoid(m)
        if self.impl == "torchvision":
            import torchvision
            d = self.dcn
            return torchvision.ops.deform_conv2d(x, offset, d.weight, d.bias, stride=d.stride, padding=d.padding,
                                                 dilation=d.dilation, mask=mask)
        self.dcn.backend = "pytorch" if self.impl == "pytorch" else "graft"
        return self.dcn(x, offset, mask)


class _Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride, dcn):
        super().__init__()
        cout = width * 4
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2 = DCNv2(width, width, stride) if dcn else nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class DCNResNet50C4(nn.Module):
    """ResNet-50 (v1.5: stride on the 3x3) through stage 3 ("C4", stride 16, as Faster R-CNN C4
    backbones use it), every stage-3 bottleneck's 3x3 convolution a DCNv2 (mmdetection's
    dcn=dict(type='DCNv2'), stage_with_dcn=(False, False, True, False)). Output: the stage-3 map
    (N, 16*width, H/16, W/16). width 64 is ResNet-50; the smoke run uses 16."""

    def __init__(self, width=64):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], width
        for stage, (blocks, stride) in enumerate(((3, 1), (4, 2), (6, 2))):
            w = width * 2 ** stage
            for i in range(blocks):
                layers.append(_Bottleneck(cin, w, stride if i == 0 else 1, dcn=stage == 2))
                cin = w * 4
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(self.stem(x))

    def set_impl(self, impl):
        self.impl = impl  # read by bench/detection.py's torch.compile stage
        for m in self.modules():
            if isinstance(m, DCNv2):
                m.impl = impl
        return self


def dcn_resnet50(width=64, image_size=224):
    """DCNResNet50C4 with random weights from SEED, BatchNorm calibrated on random images, and offset
    convolutions scaled to give offsets of about +-1 pixel and mask logits ~N(0, 1) (mmcv's zero
    init would make every DCN a plain convolution times 0.5)."""
    import models  # bench/models.py
    torch.manual_seed(SEED)
    net = DCNResNet50C4(width).set_impl("pytorch")
    x = torch.randn(4, 3, image_size, image_size, generator=torch.Generator().manual_seed(SEED + 3))
    seen = []
    hooks = [m.conv_offset.register_forward_hook(lambda mod, i, o: seen.append(i[0].pow(2).mean().sqrt().item()))
             for m in net.modules() if isinstance(m, DCNv2)]
    models._calibrate_batchnorm(net, x)
    with torch.no_grad():
        net(x)
    for h in hooks:
        h.remove()
    dcns = [m for m in net.modules() if isinstance(m, DCNv2)]
    for m, rms in zip(dcns, seen[-len(dcns):]):
        _reinit(m.conv_offset, 1.0, rms)
    models._calibrate_batchnorm(net, x)  # the offsets changed what the later layers see
    return net.set_impl("graft").eval()
