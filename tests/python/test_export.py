"""ONNX export of graft ops: TorchScript exporter (opsets 11 and 17) and the dynamo exporter."""
import pytest
import torch

onnx = pytest.importorskip("onnx")


def _model(graft_mod):
    return torch.nn.Sequential(graft_mod.nn.CustomLayer(beta=0.5), torch.nn.Linear(8, 4),
                               graft_mod.nn.CustomLayer(beta=2.0)).eval()


def _custom_nodes(model_proto, op_type):
    return [n for n in model_proto.graph.node if n.op_type == op_type]


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


@pytest.mark.parametrize("opset", [11, 17])
def test_torchscript_export_node(graft_mod, tmp_onnx, opset):
    model = _model(graft_mod)
    used = graft_mod.export(model, torch.randn(2, 8), tmp_onnx, exporter="torchscript", opset_version=opset,
                            input_names=["input"], output_names=["output"])
    assert used == "torchscript"
    m = onnx.load(tmp_onnx)
    nodes = _custom_nodes(m, "CustomLayer")
    assert len(nodes) == 2
    for node, beta in zip(nodes, (0.5, 2.0)):
        assert node.domain == "ai.onnx.contrib"
        a = _attrs(node)
        assert a["beta"] == pytest.approx(beta)
        assert a["plugin_version"] == b"1" and a["plugin_namespace"] == b""
        types = {x.name: x.type for x in node.attribute}
        assert types["beta"] == onnx.AttributeProto.FLOAT
        assert types["plugin_version"] == onnx.AttributeProto.STRING
    assert any(o.domain == "ai.onnx.contrib" for o in m.opset_import)
    assert any(o.domain in ("", "ai.onnx") and o.version == opset for o in m.opset_import)
    # Output shape survives, batch axis dynamic.
    out = _dims(m.graph.output[0])
    assert out[1] == 4 and isinstance(out[0], str), out
    # The custom node's output keeps its shape in value_info (setType).
    vi = {v.name: _dims(v) for v in m.graph.value_info}
    first_out = nodes[0].output[0]
    if first_out in vi:
        assert vi[first_out][1] == 8


def test_export_seed_arguments(graft_mod, tmp_onnx):
    # Exactly the seed's torch.onnx.export call, made to work by the autograd.Function symbolic.
    model = _model(graft_mod)
    kwargs = dict(opset_version=11, do_constant_folding=True, input_names=["input"], output_names=["output"],
                  dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                  custom_opsets={"ai.onnx.contrib": 1})
    import inspect
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    torch.onnx.export(model, torch.randn(3, 8), tmp_onnx, **kwargs)
    m = onnx.load(tmp_onnx)
    assert len(_custom_nodes(m, "CustomLayer")) == 2


def test_export_plugin_op_typed_attributes(graft_mod, has_test_plugin, tmp_onnx):
    if not has_test_plugin:
        pytest.skip("test plugin not built")

    class M(torch.nn.Module):
        def forward(self, x, b):
            return graft_mod.ops.py_test_affine(x, b, alpha=0.5, mode="square", tags=[1, 2])

    graft_mod.export(M(), (torch.randn(2, 3), torch.randn(3)), tmp_onnx, exporter="torchscript",
                     input_names=["x", "b"], dynamic_batch=False)
    m = onnx.load(tmp_onnx)
    (node,) = _custom_nodes(m, "PyTestAffine")
    assert node.domain == "graft.test"
    a = _attrs(node)
    assert a["mode"] == b"square" and list(a["tags"]) == [1, 2] and a["alpha"] == pytest.approx(0.5)


def test_missing_exporter_is_a_clear_error(graft_mod, tmp_onnx):
    from graft import _export
    ok, why = _export.dynamo_exporter_available()
    if ok:
        pytest.skip("this torch has the dynamo exporter")
    with pytest.raises(graft_mod.GraftError) as e:
        graft_mod.export(_model(graft_mod), torch.randn(1, 8), tmp_onnx, exporter="dynamo")
    assert "dynamo" in str(e.value) and "torchscript" in str(e.value)
    with pytest.raises(graft_mod.GraftError, match="unknown exporter"):
        graft_mod.export(_model(graft_mod), torch.randn(1, 8), tmp_onnx, exporter="magic")


def test_dynamo_export(graft_mod, tmp_onnx):
    from graft import _export
    ok, why = _export.dynamo_exporter_available()
    if not ok:
        pytest.skip(f"dynamo exporter unavailable: {why} (needs torch >= 2.8 with onnxscript)")
    model = _model(graft_mod)
    graft_mod.export(model, torch.randn(3, 8), tmp_onnx, exporter="dynamo", input_names=["input"],
                     output_names=["output"])
    m = onnx.load(tmp_onnx)
    nodes = _custom_nodes(m, "CustomLayer")
    assert len(nodes) == 2 and nodes[0].domain == "ai.onnx.contrib"
    assert _attrs(nodes[0])["plugin_version"] == b"1"
    out = _dims(m.graph.output[0])
    assert out[1] == 4 and isinstance(out[0], str), out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_dynamo_export_of_a_cuda_model(graft_mod, tmp_onnx):
    """A model on the GPU exports with the dynamo exporter (traced as a CPU copy) and stays put."""
    from graft import _export
    ok, why = _export.dynamo_exporter_available()
    if not ok:
        pytest.skip(f"dynamo exporter unavailable: {why} (needs torch >= 2.8 with onnxscript)")
    model = _model(graft_mod).cuda()
    graft_mod.export(model, torch.randn(3, 8, device="cuda"), tmp_onnx, exporter="dynamo",
                     input_names=["input"], output_names=["output"])
    assert all(p.device.type == "cuda" for p in model.parameters())
    m = onnx.load(tmp_onnx)
    assert len(_custom_nodes(m, "CustomLayer")) == 2


_QUIET_EXPORT_SCRIPT = r"""
import inspect, sys, torch, graft
from graft import _export
out = sys.argv[1]
m = torch.nn.Sequential(graft.nn.CustomLayer(beta=0.5), torch.nn.Linear(8, 4), graft.nn.CustomLayer(beta=2.0)).eval()
for opset in (11, 17):
    graft.export(m, torch.randn(2, 8), out, exporter="torchscript", opset_version=opset,
                 input_names=["input"], output_names=["output"])
# The seed's own call: torch.onnx.export on a model with graft layers.
kw = dict(opset_version=11, input_names=["input"], output_names=["output"],
          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, custom_opsets={"ai.onnx.contrib": 1})
if "dynamo" in inspect.signature(torch.onnx.export).parameters:
    kw["dynamo"] = False
with torch.no_grad():
    torch.onnx.export(m, torch.randn(2, 8), out + ".seed.onnx", **kw)
from graft.deformable import ms_deform_attn
class Wrap(torch.nn.Module):
    def forward(self, value, hw, starts, locs, weights):
        return ms_deform_attn(value, hw, starts, locs, weights)
hw = torch.tensor([[3, 4], [2, 2]])
starts = torch.tensor([0, 12])
args = (torch.randn(1, 16, 2, 4), hw, starts, torch.rand(1, 5, 2, 2, 2, 2), torch.rand(1, 5, 2, 2, 2))
graft.export(Wrap(), args, out + ".msda.onnx", exporter="torchscript")
if _export.dynamo_exporter_available()[0]:
    graft.export(m, torch.randn(3, 8), out + ".dynamo.onnx", exporter="dynamo", input_names=["input"],
                 output_names=["output"])
print("exported")
"""


def test_export_is_quiet_and_typed(graft_mod, tmp_path):
    """Exporting graft layers prints no warning of graft's making (TracerWarnings from graft's code,
    torch 1.13's g.op deprecation, "shape inference of ai.onnx.contrib::... is missing"), even with
    every warning shown (-W always), and the custom node's output carries its type and shape."""
    import os
    import subprocess
    import sys
    out = str(tmp_path / "quiet.onnx")
    r = subprocess.run([sys.executable, "-W", "always", "-c", _QUIET_EXPORT_SCRIPT, out], capture_output=True,
                       text=True, env=dict(os.environ), timeout=600)
    assert r.returncode == 0 and "exported" in r.stdout, r.stderr[-4000:]
    lines = r.stderr.splitlines()
    graft_made = [ln for ln in lines if "Warning" in ln and any(
        k in ln for k in ("TracerWarning", "ai.onnx.contrib", "_graph_op", os.sep + "graft" + os.sep))]
    assert not graft_made, "\n".join(graft_made)
    # graft.export: the custom node's output has its dtype and shape (batch symbolic, features 8).
    m = onnx.load(out)
    node = _custom_nodes(m, "CustomLayer")[0]
    vi = {v.name: v for v in list(m.graph.value_info) + list(m.graph.output)}
    assert node.output[0] in vi, "the custom node's output has no type"
    assert vi[node.output[0]].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    dims = _dims(vi[node.output[0]])
    assert len(dims) == 2 and isinstance(dims[0], str) and dims[1] == 8, dims
    # The seed's direct torch.onnx.export: dtype and rank (torch 1.13 replaces the dims that
    # symbolic() sets with its own names; graft.export writes them back).
    m = onnx.load(out + ".seed.onnx")
    node = _custom_nodes(m, "CustomLayer")[0]
    vi = {v.name: v for v in list(m.graph.value_info) + list(m.graph.output)}
    assert node.output[0] in vi and vi[node.output[0]].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert len(_dims(vi[node.output[0]])) == 2


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_detection_layers_export_and_run(graft_mod, tmp_onnx, exporter):
    """graft.nn.RoIAlign and graft.nn.grid_sample export as mmdeploy's MMCVRoiAlign and grid_sampler
    nodes (dynamic batch) from both exporters, which graft's engine builds and runs to the torch
    model's values."""
    import numpy as np
    from graft import _export
    if exporter == "dynamo":
        ok, why = _export.dynamo_exporter_available()
        if not ok:
            pytest.skip(f"dynamo exporter unavailable: {why} (needs torch >= 2.8 with onnxscript)")

    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pool = graft_mod.nn.RoIAlign((2, 3), spatial_scale=0.5, sampling_ratio=2, aligned=True)

        def forward(self, feat, grid, rois):
            warped = graft_mod.nn.grid_sample(feat, grid, mode="bilinear", padding_mode="border", align_corners=False)
            return self.pool(warped, rois)

    feat, grid = torch.randn(2, 3, 8, 10), torch.rand(2, 6, 7, 2) * 2 - 1
    rois = torch.tensor([[0.0, 1.0, 2.0, 9.0, 11.0], [1.0, 0.5, 0.5, 6.0, 4.0], [1.0, 3.0, 1.0, 12.0, 7.5]])
    model = Head().eval()
    graft_mod.export(model, (feat, grid, rois), tmp_onnx, exporter=exporter, opset_version=17,
                     input_names=["feat", "grid", "rois"], output_names=["pooled"])
    m = onnx.load(tmp_onnx)
    kinds = {(n.domain, n.op_type) for n in m.graph.node}
    assert ("mmdeploy", "grid_sampler") in kinds and ("mmdeploy", "MMCVRoiAlign") in kinds, kinds
    eng = graft_mod.Engine.build(tmp_onnx, inputs={"feat": feat.numpy(), "grid": grid.numpy(), "rois": rois.numpy()})
    got = eng.run({"feat": feat.numpy(), "grid": grid.numpy(), "rois": rois.numpy()})["pooled"]
    with torch.no_grad():
        want = model(feat, grid, rois).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_torchscript_export_drops_torchs_legacy_exporter_advice(graft_mod, tmp_onnx, monkeypatch):
    """torch >= 2.8 warns on each TorchScript export to pass dynamo=True, a parameter graft.export does
    not have (its callers choose with exporter=), reported at graft's line: graft.export drops that one
    warning; torch's other warnings still reach the caller. A stand-in export emits both, so the test
    runs with any torch."""
    import warnings
    real = torch.onnx.export

    def warning_export(*args, **kwargs):
        warnings.warn("You are using the legacy TorchScript-based ONNX export. Starting in PyTorch 2.9, the new "
                      "torch.export-based ONNX exporter has become the default.", DeprecationWarning, stacklevel=2)
        warnings.warn("some other torch warning", UserWarning, stacklevel=2)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.onnx, "export", warning_export)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graft_mod.export(_model(graft_mod), torch.randn(2, 8), tmp_onnx, exporter="torchscript")
    texts = [str(w.message) for w in caught]
    assert not any("legacy TorchScript-based ONNX export" in t for t in texts), texts
    assert "some other torch warning" in texts
