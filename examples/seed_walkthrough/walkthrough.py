#!/usr/bin/env python3
"""The seed's job, done with graft: a model with a custom layer, trained, exported to ONNX and run
in graft's engine, compared with PyTorch.

    PYTHONPATH=python:build/python /usr/bin/python3 examples/seed_walkthrough/walkthrough.py --device cpu
        (step 5 runs build/bin/graft on the exported model: `graft run model.onnx --inputs input:x.npy`)
    python3 examples/seed_walkthrough/walkthrough.py --device cuda     # torch with CUDA + graft CUDA build

Exits non-zero when graft's engine disagrees with PyTorch.
"""
import argparse
import glob
import inspect
import os
import shutil
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import graft  # noqa: E402

SEED_MISTAKE = """\
What the seed got wrong:
  It "registered" the ONNX symbolic with  sym_help._onnx_stable_opsets.add(...).
  torch.onnx.symbolic_helper._onnx_stable_opsets is a tuple of opset numbers, not a registry:
  .add raises AttributeError on every torch version, and no symbolic is ever attached to the op.
  It also packed the layer's parameters as JSON inside a Constant int tensor input.
The right registration:
  * TorchScript exporter (dynamo=False): a `symbolic(g, ...)` staticmethod on the layer's
    torch.autograd.Function emitting g.op("ai.onnx.contrib::CustomLayer", x, beta_f=...,
    plugin_version_s="1", plugin_namespace_s=""), or torch.onnx.register_custom_op_symbolic(
    "graft::CustomLayer", fn, opset). graft generates the former for every registered op.
  * Dynamo exporter (torch >= 2.8, dynamo=True): torch.onnx.ops.symbolic(...) while exporting,
    or a custom_translation_table. graft.export(..., exporter="dynamo") does this.
  Attributes are typed ONNX attributes (beta: FLOAT), which TensorRT's parser and graft read."""


def _find_graft_binary():
    """The `graft` command: $GRAFT_BIN, else the build tree that $GRAFT_LIB_DIR names
    (<build>/python/graft -> <build>/bin/graft), else a build*/bin/graft beside this checkout, else PATH."""
    cands = [os.environ.get("GRAFT_BIN")]
    lib = os.environ.get("GRAFT_LIB_DIR")
    if lib:
        cands.append(os.path.join(lib, "..", "..", "bin", "graft"))
    cands += sorted(glob.glob(os.path.join(_HERE, "..", "..", "build*", "bin", "graft")))
    cands.append(shutil.which("graft"))
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--out", default=None, help="where to write model.onnx (default: a temp dir)")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--exporter", default="seed", choices=["seed", "dynamo"],
                    help="seed: torch.onnx.export exactly as the seed calls it (TorchScript exporter); "
                         "dynamo: graft.export(..., exporter='dynamo') (torch >= 2.8)")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but torch has no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device(args.device)
    torch.manual_seed(0)

    # 1. The seed's model: a custom layer (param=0.5 in the seed's spelling) among ordinary layers.
    model = torch.nn.Sequential(
        graft.nn.CustomLayer(param=0.5),
        torch.nn.Linear(16, 32),
        graft.nn.CustomLayer(param=1.0),
        torch.nn.Linear(32, 8),
    ).to(dev)
    print(model)

    # 2. One training step: gradients flow through graft's backward kernel.
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(4, 16, device=dev)
    target = torch.randn(4, 8, device=dev)
    loss = torch.nn.functional.mse_loss(model(x), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"training step: loss {loss.item():.5f}")
    model.eval()

    # 3. Export exactly as the seed called torch.onnx.export (it now works: graft layers carry a
    #    symbolic). The seed's call predates the dynamo flag; on torch >= 2.9 say dynamo=False.
    out_dir = args.out or tempfile.mkdtemp(prefix="graft_seed_")
    os.makedirs(out_dir, exist_ok=True)
    onnx_path = os.path.join(out_dir, "model.onnx")
    export_kwargs = dict(opset_version=11, do_constant_folding=True, input_names=["input"],
                         output_names=["output"],
                         dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                         custom_opsets={"ai.onnx.contrib": 1})
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        export_kwargs["dynamo"] = False
    with torch.no_grad():
        if args.exporter == "seed":
            torch.onnx.export(model, torch.randn(2, 16, device=dev), onnx_path, **export_kwargs)
        else:
            # The dynamo exporter: opset 20 by default, the batch dimension dynamic.
            graft.export(model, (torch.randn(2, 16, device=dev),), onnx_path, exporter="dynamo",
                         input_names=["input"], output_names=["output"], dynamic_batch=True)
    try:
        import onnx
        m = onnx.load(onnx_path)
        for n in m.graph.node:
            if n.domain == "ai.onnx.contrib":
                attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
                print(f"ONNX node {n.domain}::{n.op_type} attributes {attrs}")
    except ImportError:
        pass
    print(f"exported {onnx_path}")

    # 4. graft's engine with a batch profile, then batch 1 and batch 7 against PyTorch.
    engine = graft.Engine.build(onnx_path, device=args.device,
                                profile={"input": ((1, 16), (4, 16), (32, 16))})
    print(engine)
    worst = 0.0
    for batch in (1, 7):
        xb = torch.randn(batch, 16, device=dev)
        with torch.no_grad():
            want = model(xb).cpu().numpy()
        got = engine.run({"input": xb})["output"]
        got = got.cpu().numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
        err = float(np.max(np.abs(got - want)))
        worst = max(worst, err)
        print(f"batch {batch}: output {tuple(got.shape)}, max abs err vs PyTorch {err:.3e}")
        if got.shape != want.shape or not err <= args.tol:
            print(f"MISMATCH at batch {batch} (tolerance {args.tol})", file=sys.stderr)
            return 1

    # 5. The same model from the command line, as a user would run it: `graft run model.onnx --inputs
    #    input:x.npy` builds the dynamic batch for the file's shape (no profile to write out), and
    #    its saved output must match PyTorch too.
    graft_bin = _find_graft_binary()
    if graft_bin is None:
        print("graft run: skipped (no graft binary found; set GRAFT_BIN)")
    else:
        xb = torch.randn(5, 16)
        x_path, out_dir = os.path.join(out_dir, "x.npy"), os.path.join(out_dir, "cli_outputs")
        np.save(x_path, xb.numpy())
        cmd = [graft_bin, "run", onnx_path, "--inputs", f"input:{x_path}", "--save-outputs", out_dir,
               "--iterations", "2"]
        if args.device == "cuda":
            cmd += ["--device", "cuda"]
        print("$ " + " ".join(cmd))
        r = subprocess.run(cmd, capture_output=True, text=True)
        print(r.stdout, end="")
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
            return 1
        got = np.load(os.path.join(out_dir, "output.npy"))
        with torch.no_grad():
            want = model(xb.to(dev)).cpu().numpy()
        err = float(np.max(np.abs(got - want)))
        worst = max(worst, err)
        print(f"graft run, batch 5 from x.npy: output {tuple(got.shape)}, max abs err vs PyTorch {err:.3e}")
        if got.shape != want.shape or not err <= args.tol:
            print(f"MISMATCH in graft run (tolerance {args.tol})", file=sys.stderr)
            return 1

    print()
    print(SEED_MISTAKE)
    print(f"\nOK: graft engine matches PyTorch (max abs err {worst:.3e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
