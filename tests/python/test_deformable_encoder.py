"""The Deformable-DETR-style encoder example (examples/deformable_detr_encoder) end to end at a small
size on CPU: PyTorch (graft's op) vs the grid_sample formulation, TorchScript export (one
ai.onnx.contrib MultiScaleDeformableAttention node per layer), graft engine vs PyTorch."""
import collections
import importlib.util
import os

import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_EXAMPLE = os.path.join(_REPO, "examples", "deformable_detr_encoder", "encoder.py")

IMAGE = (64, 96)  # levels 8x12, 4x6, 2x3, 1x2 -> S = 128
LAYERS, D_MODEL, HEADS = 2, 32, 4


@pytest.fixture(scope="module")
def enc(graft_mod):
    from graft import _registry
    try:
        _registry.find("MultiScaleDeformableAttention")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"graft's torch extension has no MultiScaleDeformableAttention: {e}")
    spec = importlib.util.spec_from_file_location("deformable_detr_encoder", _EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _model(enc, seed, backend="graft"):
    torch.manual_seed(seed)
    model = enc.DeformableEncoder(num_layers=LAYERS, d_model=D_MODEL, d_ffn=4 * D_MODEL, num_heads=HEADS,
                                  backend=backend)
    return enc.randomize_(model, seed).eval()


def test_level_shapes_of_the_full_size_image(enc):
    shapes = enc.level_shapes((800, 1200))
    assert shapes == [(100, 150), (50, 75), (25, 38), (13, 19)]
    assert sum(h * w for h, w in shapes) == 19947
    assert enc.level_shapes(IMAGE) == [(8, 12), (4, 6), (2, 3), (1, 2)]


def test_reference_points_are_each_querys_own_location(enc):
    shapes = [(2, 3), (1, 2)]
    ref = enc.reference_points(shapes)
    assert ref.shape == (8, 2, 2)
    # query 4 is level 0, row 1, column 1 of a 2x3 map: centre (1.5/3, 1.5/2), same on every level
    torch.testing.assert_close(ref[4], torch.tensor([[0.5, 0.75], [0.5, 0.75]]))
    torch.testing.assert_close(ref[7, 0], torch.tensor([0.75, 0.5]))  # level 1, column 1 of 1x2


def test_graft_op_model_matches_grid_sample_model(enc, seed):
    feats = enc.make_features(IMAGE, D_MODEL, batch=2, seed=seed)
    with torch.no_grad():
        got = _model(enc, seed, "graft")(*feats)
        ref = _model(enc, seed, "pytorch")(*feats)
    assert got.shape == (2, 128, D_MODEL)
    assert enc.rel_error(got, ref) < 1e-5


def test_export_and_graft_engine_match_pytorch(enc, graft_mod, seed, tmp_path):
    model = _model(enc, seed)
    feats = enc.make_features(IMAGE, D_MODEL, batch=1, seed=seed)
    with torch.no_grad():
        ref = model(*feats)
    path = str(tmp_path / "encoder.onnx")
    used, names = enc.export_onnx(model, feats, path, exporter="torchscript")
    assert used == "torchscript"

    m = onnx.load(path)
    msda = [n for n in m.graph.node if n.op_type == "MultiScaleDeformableAttention"]
    assert len(msda) == LAYERS
    assert all(n.domain == "ai.onnx.contrib" for n in msda)
    ops = collections.Counter(n.op_type for n in m.graph.node)
    assert ops["Relu"] == LAYERS and ops["Softmax"] == LAYERS

    eng = graft_mod.Engine.build(path, device="cpu")
    out = eng.run(dict(zip(names, feats)))["memory"]
    assert tuple(out.shape) == tuple(ref.shape) == (1, 128, D_MODEL)
    assert torch.isfinite(out).all()
    err = enc.rel_error(out, ref)
    assert err <= 1e-4, f"graft engine vs PyTorch: relative error {err:.3e} (seed {seed})"
