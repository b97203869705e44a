"""Builtin ops newer than Debian's ONNX test data, checked against ONNX's own reference implementation
(onnx.reference, onnx 1.13+: the GPU machine's onnx; skipped where onnx is older) on graft's CPU and
CUDA engines. CenterCropPad (opset 18): every element is a copy or a zero, so results must be equal."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
reference = pytest.importorskip("onnx.reference")
torch = pytest.importorskip("torch")
from onnx import TensorProto, helper  # noqa: E402


def _center_crop_pad_model(path, x_shape, target, axes, dtype):
    elem = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64}[dtype]
    attrs = {} if axes is None else {"axes": axes}
    node = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], **attrs)
    shape = helper.make_tensor("shape", TensorProto.INT64, [len(target)], target)
    graph = helper.make_graph([node], "center_crop_pad", [helper.make_tensor_value_info("x", elem, x_shape)],
                              [helper.make_tensor_value_info("y", elem, None)], initializer=[shape])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.save(model, path)
    return model


CASES = [  # input shape, target extents, axes, dtype
    ((2, 3, 9, 8), [5, 5], [2, 3], np.float32),
    ((1, 2, 4, 3), [7, 6], [-2, -1], np.float32),
    ((3, 10, 4), [7, 9], [1, 2], np.float32),
    ((6, 5), [3, 8], None, np.float32),
    ((4, 7), [4, 2], None, np.int64),
]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("x_shape,target,axes,dtype", CASES)
def test_center_crop_pad_matches_onnx_reference(graft_mod, tmp_path, seed, device, x_shape, target, axes, dtype):
    path = str(tmp_path / "center_crop_pad.onnx")
    model = _center_crop_pad_model(path, list(x_shape), target, axes, dtype)
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(x_shape) * 10).astype(dtype)
    (want,) = reference.ReferenceEvaluator(model).run(None, {"x": x})
    engine = graft_mod.Engine.build(path, device=device)
    got = engine.run({"x": x})["y"]
    got = got.cpu().numpy() if hasattr(got, "cpu") else np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want, err_msg=f"seed {seed}")
