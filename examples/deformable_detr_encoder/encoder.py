#!/usr/bin/env python3
"""A Deformable-DETR-style transformer encoder on graft's MultiScaleDeformableAttention: PyTorch,
ONNX export, graft engine, compared.

    PYTHONPATH=python:build/python GRAFT_LIB_DIR=build/python/graft \\
        /usr/bin/python3 examples/deformable_detr_encoder/encoder.py --image 64x96 --device cpu
    ... encoder.py --device cuda                 # full size (800x1200 image, S = 19947) on a GPU
    ... encoder.py --device cuda --fp16          # engine in fp16, tolerance 1e-2

Random (seeded) weights and feature maps; the model takes the four backbone levels (strides
8/16/32/64) as NCHW tensors, flattens and concatenates them itself, and returns the encoder memory
(N, S, d_model). Exits non-zero when graft's engine disagrees with PyTorch.
"""
import argparse
import math
import os
import sys
import tempfile
import time
import warnings

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "python"))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import graft  # noqa: E402
import graft.nn  # noqa: E402,F401

STRIDES = (8, 16, 32, 64)


def level_shapes(image_hw, strides=STRIDES):
    """Feature-map sizes of a backbone with these strides (each stride rounds up, as a stride-2
    conv chain with padding does): 800x1200 -> 100x150, 50x75, 25x38, 13x19."""
    h, w = image_hw
    return [(-(-h // s), -(-w // s)) for s in strides]


def make_features(image_hw, d_model, batch=1, seed=0, strides=STRIDES):
    """Random multi-level feature maps [(N, d_model, H_l, W_l)] for an image size."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, d_model, h, w, generator=g) for h, w in level_shapes(image_hw, strides)]


def sine_position_embedding(h, w, d_model, temperature=10000.0, dtype=torch.float32):
    """DETR's normalized sine embedding (no padding mask): (h*w, d_model), y half then x half.
    Built from Python ints, so an export sees it as a constant."""
    npf = d_model // 2
    scale, eps = 2 * math.pi, 1e-6
    y = (torch.arange(1, h + 1, dtype=torch.float32) - 0.5) / (h + eps) * scale
    x = (torch.arange(1, w + 1, dtype=torch.float32) - 0.5) / (w + eps) * scale
    dim_t = temperature ** (2 * torch.div(torch.arange(npf), 2, rounding_mode="floor").float() / npf)

    def embed(coord):  # (n,) -> (n, npf): sin on even features, cos on odd, interleaved
        t = coord[:, None] / dim_t
        return torch.stack([t[:, 0::2].sin(), t[:, 1::2].cos()], -1).flatten(1)

    pos_y = embed(y)[:, None, :].expand(h, w, npf)
    pos_x = embed(x)[None, :, :].expand(h, w, npf)
    return torch.cat([pos_y, pos_x], -1).reshape(h * w, d_model).to(dtype)


def reference_points(shapes, dtype=torch.float32):
    """Each query's own normalized (x, y) pixel centre, repeated for every level: (S, L, 2)."""
    refs = []
    for h, w in shapes:
        ys, xs = torch.meshgrid(torch.linspace(0.5, h - 0.5, h) / h, torch.linspace(0.5, w - 0.5, w) / w,
                                indexing="ij")
        refs.append(torch.stack([xs.reshape(-1), ys.reshape(-1)], -1))
    ref = torch.cat(refs, 0)
    return ref[:, None, :].expand(ref.shape[0], len(shapes), 2).to(dtype)


class DeformableEncoderLayer(nn.Module):
    """Deformable DETR's encoder layer (post-norm): deformable self-attention with the positional
    embedding added to the query, residual + LayerNorm, FFN with ReLU, residual + LayerNorm."""

    def __init__(self, d_model=256, d_ffn=1024, num_heads=8, num_levels=4, num_points=4, dropout=0.1,
                 backend="graft"):
        super().__init__()
        self.self_attn = graft.nn.MultiScaleDeformableAttention(
            embed_dims=d_model, num_heads=num_heads, num_levels=num_levels, num_points=num_points,
            dropout=dropout, batch_first=True, backend=backend)
        self.norm1 = nn.LayerNorm(d_model)
        self.linear1 = nn.Linear(d_model, d_ffn)
        self.linear2 = nn.Linear(d_ffn, d_model)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, src, pos, ref, spatial_shapes, level_start_index):
        # The attention layer adds its own identity shortcut (src) to its output.
        src = self.norm1(self.self_attn(src, value=src, query_pos=pos, reference_points=ref,
                                        spatial_shapes=spatial_shapes, level_start_index=level_start_index))
        ffn = self.linear2(self.dropout2(torch.relu(self.linear1(src))))
        return self.norm2(src + self.dropout3(ffn))


class DeformableEncoder(nn.Module):
    """Deformable DETR's encoder over L feature levels given as NCHW maps; returns (N, S, d_model).

    The level flatten/concat, the sine positional embedding (plus a learned per-level embedding),
    the reference points, spatial_shapes and level_start_index all derive from the maps' sizes;
    under export those sizes are fixed, so they become constants of the graph."""

    def __init__(self, num_layers=6, d_model=256, d_ffn=1024, num_heads=8, num_levels=4, num_points=4,
                 dropout=0.1, backend="graft"):
        super().__init__()
        self.d_model, self.num_levels = d_model, num_levels
        self.level_embed = nn.Parameter(torch.empty(num_levels, d_model))
        nn.init.normal_(self.level_embed)
        self.layers = nn.ModuleList([
            DeformableEncoderLayer(d_model, d_ffn, num_heads, num_levels, num_points, dropout, backend)
            for _ in range(num_layers)])

    def forward(self, *feats):
        if len(feats) != self.num_levels:
            raise ValueError(f"expected {self.num_levels} feature levels, got {len(feats)}")
        # Python ints on purpose: the derived tensors are constants in a traced/exported graph.
        shapes = [(int(f.shape[2]), int(f.shape[3])) for f in feats]
        dtype, device = feats[0].dtype, feats[0].device
        src = torch.cat([f.flatten(2).transpose(1, 2) for f in feats], 1)  # (N, S, C)
        pos = torch.cat([sine_position_embedding(h, w, self.d_model, dtype=dtype).to(device) + self.level_embed[lvl]
                         for lvl, (h, w) in enumerate(shapes)], 0)[None]
        ref = reference_points(shapes, dtype).to(device)[None]
        spatial_shapes = torch.tensor(shapes, dtype=torch.int64, device=device)
        starts = [0]
        for h, w in shapes[:-1]:
            starts.append(starts[-1] + h * w)
        level_start_index = torch.tensor(starts, dtype=torch.int64, device=device)
        for layer in self.layers:
            src = layer(src, pos, ref, spatial_shapes, level_start_index)
        return src


def randomize_(model, seed):
    """Random weights everywhere (graft's layer initializes attention weights to zero, which would
    make the softmax uniform and the test weaker)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("sampling_offsets.bias"):
                p.add_(torch.randn(p.shape, generator=g) * 0.5)  # keep the ray init, jittered
            elif p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1 + (1.0 if "norm" in name and name.endswith("weight")
                                                                    else 0.0))
    return model


def export_onnx(model, feats, path, exporter="torchscript"):
    names = [f"feat{i}" for i in range(len(feats))]
    with warnings.catch_warnings():
        # The int() of feature sizes is intended (fixed-size export); silence the tracer about it.
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        used = graft.export(model, tuple(feats), path, exporter=exporter, dynamic_batch=False,
                            input_names=names, output_names=["memory"])
    return used, names


def rel_error(got, ref):
    got, ref = got.double(), ref.double()
    return float((got - ref).norm() / ref.norm().clamp_min(1e-30))


def _parse_image(s):
    try:
        h, w = (int(v) for v in s.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--image wants HxW (e.g. 800x1200), got {s!r}")
    if h < 1 or w < 1:
        raise argparse.ArgumentTypeError(f"--image sizes must be positive, got {s!r}")
    return h, w


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", type=_parse_image, default=(800, 1200), help="image HxW (default 800x1200)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--exporter", default="auto", choices=["torchscript", "dynamo", "auto"])
    ap.add_argument("--fp16", action="store_true", help="build the graft engine in fp16 (tolerance 1e-2)")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="where to write encoder.onnx (default: a temp dir)")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but torch has no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device(args.device)
    tol = 1e-2 if args.fp16 else 1e-4

    torch.manual_seed(args.seed)
    model = randomize_(DeformableEncoder(num_layers=args.layers, d_model=args.d_model, d_ffn=4 * args.d_model,
                                         num_heads=args.heads), args.seed).eval()
    feats = make_features(args.image, args.d_model, args.batch, args.seed)
    shapes = [tuple(f.shape[2:]) for f in feats]

    # PyTorch (graft's torch op) on the chosen device, fp32: the reference for both precisions.
    model_dev, feats_dev = model.to(dev), [f.to(dev) for f in feats]
    with torch.no_grad():
        model_dev(*feats_dev)  # warm-up
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        ref = model_dev(*feats_dev)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t_torch = time.perf_counter() - t0

    tmp = None
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, "encoder.onnx")
    else:
        tmp = tempfile.TemporaryDirectory()
        path = os.path.join(tmp.name, "encoder.onnx")
    try:
        used, names = export_onnx(model.cpu(), feats, path, args.exporter)
        eng = graft.Engine.build(path, fp16=args.fp16, device=args.device)
        feed = dict(zip(names, feats_dev))
        eng.run(feed)  # warm-up
        t0 = time.perf_counter()
        got = eng.run(feed)["memory"]
        t_graft = time.perf_counter() - t0
    except graft.GraftError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.fp16 and args.device == "cpu":
        print("note: graft's CPU backend records --fp16 but computes in float32 (the fp16 pass is CUDA's)")

    err = rel_error(got.float().cpu(), ref.float().cpu())
    ok = tuple(got.shape) == tuple(ref.shape) and err <= tol
    print(f"deformable encoder {args.image[0]}x{args.image[1]} levels={shapes} S={ref.shape[1]} "
          f"out={tuple(ref.shape)} layers={args.layers} exporter={used} device={args.device} "
          f"{'fp16' if args.fp16 else 'fp32'}: rel_err={err:.2e} (tol {tol:.0e}) "
          f"torch {t_torch * 1e3:.1f} ms, graft {t_graft * 1e3:.1f} ms -> {'OK' if ok else 'MISMATCH'}")
    if tmp is not None:
        tmp.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
