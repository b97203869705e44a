"""What a user does right after `pip install .` on the GPU machine (scripts/gpu/run_gpu_suite.sh pip):
import graft from a folder outside the checkout, build a CUDA engine from a freshly exported torch
model with a dynamic batch, run it on CUDA tensors and compare with PyTorch, then check that a string
model runs on the CPU and is refused by a CUDA build. Prints one line per check; exits 1 on a failure."""
import os
import sys
import tempfile

import numpy as np
import torch

import graft

failures = []


def check(what, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        failures.append(what)


here = os.path.dirname(graft.__file__)
check("graft imported from the installed package", "site-packages" in here or "dist-packages" in here, here)
check("graft.__version__", bool(getattr(graft, "__version__", "")), getattr(graft, "__version__", ""))

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                            torch.nn.Flatten(), torch.nn.Linear(16, 10)).eval()
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "m.onnx")
    torch.onnx.export(model, torch.randn(2, 3, 32, 32), path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}}, dynamo=False)
    eng = graft.Engine.build(path, device="cuda", profile={"x": ((1, 3, 32, 32), (4, 3, 32, 32), (8, 3, 32, 32))})
    for batch in (1, 5, 8):
        x = torch.randn(batch, 3, 32, 32, device="cuda")
        with torch.no_grad():
            want = model.cuda()(x)
        got = eng.run({"x": x})["y"]
        err = (got - want).abs().max().item()
        check(f"CUDA engine, batch {batch}, against PyTorch", got.is_cuda and err < 1e-3, f"max abs error {err:.2e}")

    from onnx import TensorProto, helper, save
    graph = helper.make_graph([helper.make_node("StringNormalizer", ["w"], ["k"], case_change_action="UPPER",
                                                stopwords=["monday"])], "s",
                              [helper.make_tensor_value_info("w", TensorProto.STRING, [3])],
                              [helper.make_tensor_value_info("k", TensorProto.STRING, None)])
    spath = os.path.join(tmp, "s.onnx")
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), spath)
    out = graft.Engine.build(spath).run({"w": np.array(["Monday", "a", "b\u00e9"])})["k"].tolist()
    check("string model on the CPU engine", out == ["A", "B\u00c9"], str(out))
    try:
        graft.Engine.build(spath, device="cuda")
        check("string model refused by a CUDA build", False, "it built")
    except graft.GraftError as e:
        check("string model refused by a CUDA build", "CPU engine only" in str(e), str(e).splitlines()[0])

sys.exit(1 if failures else 0)
