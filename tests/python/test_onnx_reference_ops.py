"""Builtin ops newer than Debian's ONNX test data, checked on graft's CPU and CUDA engines against ONNX's
own reference implementation (onnx.reference, onnx 1.13+: the GPU machine's onnx; skipped where onnx
is older) and, for AffineGrid and Col2Im, against PyTorch's F.affine_grid and F.fold, which export to them.
CenterCropPad (opset 18): every element is a copy or a zero, so results must be equal.
AffineGrid (opset 20): sums of three or four products, rounded once: within float32 rounding.
Blocked QuantizeLinear and DequantizeLinear (opset 21's block_size): integers equal, floats one
rounding of (x - zero_point) * scale. Their int4/uint4 forms (opset 21), in a model whose values are
exact in float32: equal. Cast to and from int4/uint4 (opset 21): the ONNX suite's formula, and ONNX Runtime
where the references agree (below).
Cast, QuantizeLinear and DequantizeLinear to and from the 8-bit floats (opset 19): equal. DeformConv
(opset 19, run as graft's ModulatedDeformConv2d): within float32 rounding. ImageDecoder (opset 20, against
Pillow through onnx.reference): equal."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
from onnx import TensorProto, helper  # noqa: E402

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(scope="module")
def onnx_reference():
    return pytest.importorskip("onnx.reference")


def _run(graft_mod, path, device, feeds):
    engine = graft_mod.Engine.build(path, device=device)
    out = engine.run(feeds)
    return {k: (v.cpu().numpy() if hasattr(v, "cpu") else np.asarray(v)) for k, v in out.items()}


# ---- CenterCropPad ----------------------------------------------------------------------------------

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


CENTER_CROP_PAD_CASES = [  # input shape, target extents, axes, dtype
    ((2, 3, 9, 8), [5, 5], [2, 3], np.float32),
    ((1, 2, 4, 3), [7, 6], [-2, -1], np.float32),
    ((3, 10, 4), [7, 9], [1, 2], np.float32),
    ((6, 5), [3, 8], None, np.float32),
    ((4, 7), [4, 2], None, np.int64),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("x_shape,target,axes,dtype", CENTER_CROP_PAD_CASES)
def test_center_crop_pad_matches_onnx_reference(graft_mod, onnx_reference, tmp_path, seed, device, x_shape, target,
                                                axes, dtype):
    path = str(tmp_path / "center_crop_pad.onnx")
    model = _center_crop_pad_model(path, list(x_shape), target, axes, dtype)
    x = (np.random.default_rng(seed).standard_normal(x_shape) * 10).astype(dtype)
    (want,) = onnx_reference.ReferenceEvaluator(model).run(None, {"x": x})
    got = _run(graft_mod, path, device, {"x": x})["y"]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want, err_msg=f"seed {seed}")


# ---- AffineGrid -------------------------------------------------------------------------------------

def _affine_grid_model(path, size, align_corners):
    k = len(size) - 2
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align_corners)
    size_t = helper.make_tensor("size", TensorProto.INT64, [len(size)], list(size))
    graph = helper.make_graph([node], "affine_grid",
                              [helper.make_tensor_value_info("theta", TensorProto.FLOAT, [size[0], k, k + 1])],
                              [helper.make_tensor_value_info("grid", TensorProto.FLOAT, None)], initializer=[size_t])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    onnx.save(model, path)
    return model


AFFINE_GRID_CASES = [  # size (N, C, [D,] H, W), align_corners
    ((2, 3, 4, 5), 0),
    ((2, 3, 4, 5), 1),
    ((2, 1, 3, 4, 2), 0),
    ((1, 2, 2, 3, 4), 1),
    ((1, 1, 1, 6), 0),
]


def _theta(seed, size):
    k = len(size) - 2
    return np.random.default_rng(seed).standard_normal((size[0], k, k + 1)).astype(np.float32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size,align_corners", AFFINE_GRID_CASES)
def test_affine_grid_matches_torch(graft_mod, tmp_path, seed, device, size, align_corners):
    path = str(tmp_path / "affine_grid.onnx")
    _affine_grid_model(path, size, align_corners)
    theta = _theta(seed, size)
    want = torch.nn.functional.affine_grid(torch.from_numpy(theta).double(), list(size),
                                           align_corners=bool(align_corners)).float().numpy()
    got = _run(graft_mod, path, device, {"theta": theta})["grid"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"seed {seed}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size,align_corners", AFFINE_GRID_CASES)
def test_affine_grid_matches_onnx_reference(graft_mod, onnx_reference, tmp_path, seed, device, size, align_corners):
    path = str(tmp_path / "affine_grid.onnx")
    model = _affine_grid_model(path, size, align_corners)
    theta = _theta(seed, size)
    (want,) = onnx_reference.ReferenceEvaluator(model).run(None, {"theta": theta})
    got = _run(graft_mod, path, device, {"theta": theta})["grid"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"seed {seed}")


# ---- Col2Im -----------------------------------------------------------------------------------------

def _col2im_model(path, x_shape, image, block, dilations, pads, strides):
    node = helper.make_node("Col2Im", ["x", "image_shape", "block_shape"], ["y"], dilations=dilations, pads=pads,
                            strides=strides)
    inits = [helper.make_tensor("image_shape", TensorProto.INT64, [len(image)], image),
             helper.make_tensor("block_shape", TensorProto.INT64, [len(block)], block)]
    graph = helper.make_graph([node], "col2im", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.save(model, path)
    return model


FOLD_CASES = [  # N, C, output_size, kernel_size, dilation, padding, stride (F.fold's symmetric padding)
    (2, 3, (5, 5), (3, 3), (1, 1), (0, 0), (1, 1)),
    (1, 2, (7, 6), (2, 3), (2, 1), (1, 1), (2, 1)),
    (3, 1, (8, 8), (4, 4), (1, 1), (0, 0), (4, 4)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n,c,size,kernel,dilation,padding,stride", FOLD_CASES)
def test_col2im_matches_torch_fold(graft_mod, tmp_path, seed, device, n, c, size, kernel, dilation, padding, stride):
    blocks = [(size[d] + 2 * padding[d] - dilation[d] * (kernel[d] - 1) - 1) // stride[d] + 1 for d in range(2)]
    x_shape = [n, c * kernel[0] * kernel[1], blocks[0] * blocks[1]]
    path = str(tmp_path / "col2im.onnx")
    _col2im_model(path, x_shape, list(size), list(kernel), list(dilation), [padding[0], padding[1]] * 2, list(stride))
    x = np.random.default_rng(seed).standard_normal(x_shape).astype(np.float32)
    want = torch.nn.functional.fold(torch.from_numpy(x).double(), size, kernel, dilation=dilation, padding=padding,
                                    stride=stride).float().numpy()
    got = _run(graft_mod, path, device, {"x": x})["y"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"seed {seed}")


# ---- Blocked QuantizeLinear / DequantizeLinear (opset 21) -------------------------------------------

BLOCKED_CASES = [  # x shape, axis, block_size, with zero point, int dtype
    ((2, 3, 10), 2, 4, True, np.int8),
    ((4, 6), 0, 2, True, np.uint8),
    ((3, 16), -1, 8, False, np.uint8),  # no zero point: QuantizeLinear's output is uint8
    ((2, 7, 4), 1, 3, True, np.uint8),
]


def _blocked_model(path, op, x_shape, x_elem, y_elem, scale, zp, axis, block):
    inputs = ["x", "scale"] + (["zp"] if zp is not None else [])
    node = helper.make_node(op, inputs, ["y"], axis=axis, block_size=block)
    inits = [helper.make_tensor("scale", TensorProto.FLOAT, scale.shape, scale.ravel().tolist())]
    if zp is not None:
        zp_elem = TensorProto.INT8 if zp.dtype == np.int8 else TensorProto.UINT8
        inits.append(helper.make_tensor("zp", zp_elem, zp.shape, zp.ravel().tolist()))
    graph = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info("x", x_elem, list(x_shape))],
                              [helper.make_tensor_value_info("y", y_elem, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    onnx.save(model, path)
    return model


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("x_shape,axis,block,with_zp,int_dtype", BLOCKED_CASES)
def test_blocked_quantize_dequantize_match_onnx_reference(graft_mod, onnx_reference, tmp_path, seed, device, x_shape,
                                                          axis, block, with_zp, int_dtype):
    rng = np.random.default_rng(seed)
    ax = axis % len(x_shape)
    s_shape = list(x_shape)
    s_shape[ax] = -(-x_shape[ax] // block)
    scale = rng.uniform(0.01, 0.05, s_shape).astype(np.float32)
    lo, hi = (-20, 20) if int_dtype == np.int8 else (100, 150)
    zp = rng.integers(lo, hi, s_shape).astype(int_dtype) if with_zp else None
    int_elem = TensorProto.INT8 if int_dtype == np.int8 else TensorProto.UINT8

    x = (rng.standard_normal(x_shape) * 2).astype(np.float32)
    path = str(tmp_path / "q.onnx")
    model = _blocked_model(path, "QuantizeLinear", x_shape, TensorProto.FLOAT, int_elem, scale, zp, axis, block)
    (want,) = onnx_reference.ReferenceEvaluator(model).run(None, {"x": x})
    got = _run(graft_mod, path, device, {"x": x})["y"]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want, err_msg=f"QuantizeLinear, seed {seed}")

    q = rng.integers(np.iinfo(int_dtype).min, np.iinfo(int_dtype).max, x_shape, endpoint=True).astype(int_dtype)
    path = str(tmp_path / "dq.onnx")
    model = _blocked_model(path, "DequantizeLinear", x_shape, int_elem, TensorProto.FLOAT, scale, zp, axis, block)
    (want,) = onnx_reference.ReferenceEvaluator(model).run(None, {"x": q})
    got = _run(graft_mod, path, device, {"x": q})["y"]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, err_msg=f"DequantizeLinear, seed {seed}")


# ---- int4 / uint4 QuantizeLinear and DequantizeLinear (opset 21) ------------------------------------

def _int4_model(path, act_zp_elem, w, w_scale, act_zp):
    """An int4 weight-only MatMul (the weight packed two a byte by onnx.helper, blocked scales along
    its rows) whose output is quantized to the activation's 4-bit type and dequantized again."""
    dq_w = helper.make_node("DequantizeLinear", ["w", "w_scale"], ["wf"], axis=0, block_size=4)
    mm = helper.make_node("MatMul", ["x", "wf"], ["y"])
    q = helper.make_node("QuantizeLinear", ["y", "a_scale", "a_zp"], ["yq"])
    dq = helper.make_node("DequantizeLinear", ["yq", "a_scale", "a_zp"], ["yd"])
    inits = [helper.make_tensor("w", TensorProto.INT4, w.shape, w.ravel().tolist()),
             helper.make_tensor("w_scale", TensorProto.FLOAT, w_scale.shape, w_scale.ravel().tolist()),
             helper.make_tensor("a_scale", TensorProto.FLOAT, [], [0.5]),
             helper.make_tensor("a_zp", act_zp_elem, [], [act_zp])]
    graph = helper.make_graph([dq_w, mm, q, dq], "int4", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("yd", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    onnx.save(model, path)
    return model


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("act_zp_elem,act_zp", [(22, -1), (21, 7)])  # TensorProto.INT4, UINT4 (onnx 1.16+)
def test_int4_quantize_dequantize_match_onnx_reference(graft_mod, onnx_reference, tmp_path, seed, device, act_zp_elem,
                                                       act_zp):
    if not hasattr(TensorProto, "INT4"):
        pytest.skip("this onnx has no INT4 (onnx 1.16+)")
    rng = np.random.default_rng(seed)
    w = rng.integers(-8, 7, (8, 5), endpoint=True)
    w_scale = (2.0 ** -rng.integers(0, 4, (2, 5))).astype(np.float32)
    # Quarters times integers times powers of two: every product and sum is exact in float32, so
    # graft's MatMul and the reference's agree to the bit and the 4-bit rounding (ties included)
    # sees the same values; |y| / 0.5 reaches well past both types' ranges.
    x = (rng.integers(-8, 8, (3, 8)) / 4).astype(np.float32)
    path = str(tmp_path / "int4.onnx")
    model = _int4_model(path, act_zp_elem, w, w_scale, act_zp)
    want = dict(zip(["y", "yd"], onnx_reference.ReferenceEvaluator(model).run(None, {"x": x})))
    got = _run(graft_mod, path, device, {"x": x})
    for name in ("y", "yd"):
        assert got[name].shape == want[name].shape, name
        np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name}, seed {seed}")


# ---- Cast to and from int4 / uint4 (opset 21) ----------------------------------------------------------
# The references disagree where a value is a half or rounds past the 4-bit range:
# - the ONNX backend suite's cast-to-int4 data (onnx 1.16's reference) and ONNX Runtime's CPU Cast of
#   2025 clamp into the range and round half to even, which graft does;
# - ONNX Runtime 1.30 rounds half away from zero and wraps (7.5 -> -8 in int4, -3.5 -> 12 in uint4);
# - onnx.reference since 1.18 converts through ml_dtypes' astype, which truncates and wraps.
# So graft is checked against ONNX Runtime where they all agree (values that are not halves and round
# into the range), and against the suite's formula, clip(round_half_even(x)), everywhere.

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("to4", [22, 21])  # TensorProto.INT4, UINT4 (onnx 1.16+)
def test_cast_to_and_from_4bit_matches_onnx_runtime(graft_mod, tmp_path, seed, device, to4):
    """x cast to int4 (or uint4) and back to float32, and to int32 and on to 4 bits and back: past
    both ends of the range, and halves, where the rounding (ties to even) shows."""
    if not hasattr(TensorProto, "INT4"):
        pytest.skip("this onnx has no INT4 (onnx 1.16+)")
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(seed)
    x = (rng.integers(-40, 72, (4, 6)) / 4).astype(np.float32)  # quarters over [-10, 18): halves among them
    x.flat[:10] = [2.5, -3.5, 0.5, 6.5, -7.5, 7.5, 1.25, 2.75, 3.0, 5.75]  # halves, then four values inside both ranges
    lo, hi = (-8, 7) if to4 == 22 else (0, 15)
    nodes = [helper.make_node("Cast", ["x"], ["q"], to=to4),
             helper.make_node("Cast", ["q"], ["back"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT32),
             helper.make_node("Cast", ["i"], ["qi"], to=to4),
             helper.make_node("Cast", ["qi"], ["back_i"], to=TensorProto.INT32)]
    graph = helper.make_graph(nodes, "cast4", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
                              [helper.make_tensor_value_info("back", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("back_i", TensorProto.INT32, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = min(model.ir_version, 10)
    path = str(tmp_path / "cast4.onnx")
    onnx.save(model, path)
    got = _run(graft_mod, path, device, {"x": x})
    # The suite's semantics everywhere: float -> 4 bits clamps and rounds half to even; float -> int32
    # truncates, then int32 -> 4 bits clamps.
    formula = {"back": np.clip(np.rint(x), lo, hi).astype(np.float32),
               "back_i": np.clip(np.trunc(x), lo, hi).astype(np.int32)}
    for name in ("back", "back_i"):
        assert got[name].dtype == formula[name].dtype and got[name].shape == formula[name].shape, name
        np.testing.assert_array_equal(got[name], formula[name], err_msg=f"{name}, to {to4}, seed {seed}, x {x.ravel()}")
    try:
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    except Exception as e:  # an ONNX Runtime without 4-bit Cast kernels
        pytest.skip(f"ONNX Runtime {ort.__version__} does not run the model: {e}")
    want = dict(zip(["back", "back_i"], session.run(None, {"x": x})))
    agree = {"back": (np.abs(x - np.trunc(x)) != 0.5) & (np.rint(x) >= lo) & (np.rint(x) <= hi),
             "back_i": (np.trunc(x) >= lo) & (np.trunc(x) <= hi)}
    for name in ("back", "back_i"):
        assert agree[name].sum() >= 4, f"too few values where the references agree: {x.ravel()}"
        np.testing.assert_array_equal(got[name][agree[name]], want[name][agree[name]],
                                      err_msg=f"{name} where the references agree, to {to4}, seed {seed}, x {x.ravel()}")


# ---- Cast to and from the 8-bit floats (opset 19) --------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("to8", [17, 18, 19, 20])  # FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ
@pytest.mark.parametrize("saturate", [1, 0])
def test_cast_to_and_from_float8_matches_onnx_reference(graft_mod, onnx_reference, tmp_path, seed, device, to8,
                                                        saturate):
    """x cast to an 8-bit float and back to float32: values across the type's range, its subnormals,
    halfway points and values past its largest finite, with and without saturation (NaN where the
    type has no infinity: equal as NaN)."""
    if not hasattr(TensorProto, "FLOAT8E4M3FN"):
        pytest.skip("this onnx has no 8-bit floats (onnx 1.14+)")
    rng = np.random.default_rng(seed)
    largest = {17: 448.0, 18: 240.0, 19: 57344.0, 20: 57344.0}[to8]
    x = np.concatenate([rng.uniform(-1.5 * largest, 1.5 * largest, 40),
                        rng.uniform(-1, 1, 20) * 2.0 ** rng.integers(-18, 0, 20),
                        [0.0, -0.0, largest, -largest, np.inf, -np.inf, 1.0625, 1.1875]]).astype(np.float32)
    nodes = [helper.make_node("Cast", ["x"], ["q"], to=to8, saturate=saturate),
             helper.make_node("Cast", ["q"], ["back"], to=TensorProto.FLOAT)]
    graph = helper.make_graph(nodes, "cast8", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [x.size])],
                              [helper.make_tensor_value_info("back", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    path = str(tmp_path / "cast8.onnx")
    onnx.save(model, path)
    (want,) = onnx_reference.ReferenceEvaluator(model).run(None, {"x": x})
    got = _run(graft_mod, path, device, {"x": x})["back"]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want, err_msg=f"to {to8}, saturate {saturate}, seed {seed}, x {x}")


# ---- QuantizeLinear and DequantizeLinear into and out of the 8-bit floats (opset 19) -------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("to8", [17, 18, 19, 20])  # FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ
@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("per_axis", [False, True])
def test_float8_quantize_dequantize_match_onnx_reference(graft_mod, onnx_reference, tmp_path, seed, device, to8,
                                                         saturate, per_axis):
    """x / scale into an 8-bit float (the zero point, all zeros, names the type) and back through
    DequantizeLinear: values past the type's largest finite, within it and among its subnormals, per
    tensor or per channel, with and without saturation. Equal to onnx.reference, NaN as NaN."""
    if not hasattr(TensorProto, "FLOAT8E4M3FN"):
        pytest.skip("this onnx has no 8-bit floats (onnx 1.14+)")
    rng = np.random.default_rng(seed)
    largest = {17: 448.0, 18: 240.0, 19: 57344.0, 20: 57344.0}[to8]
    channels = 4
    scale = (rng.uniform(0.5, 2.0, channels) if per_axis else rng.uniform(0.5, 2.0, ())).astype(np.float32)
    x = np.concatenate([rng.uniform(-2 * largest, 2 * largest, (channels, 12)),
                        rng.uniform(-1, 1, (channels, 8)) * 2.0 ** rng.integers(-18, 0, (channels, 8))],
                       axis=1).astype(np.float32)
    zp_shape = [channels] if per_axis else []
    zero = helper.make_tensor("zp", to8, zp_shape, [0.0] * (channels if per_axis else 1))
    scale_t = helper.make_tensor("scale", TensorProto.FLOAT, zp_shape, scale.ravel().tolist())
    nodes = [helper.make_node("QuantizeLinear", ["x", "scale", "zp"], ["q"], axis=0, saturate=saturate),
             helper.make_node("DequantizeLinear", ["q", "scale", "zp"], ["back"], axis=0),
             helper.make_node("Cast", ["q"], ["q_value"], to=TensorProto.FLOAT)]
    graph = helper.make_graph(nodes, "quantize8", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("back", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("q_value", TensorProto.FLOAT, None)],
                              initializer=[zero, scale_t])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    path = str(tmp_path / "quantize8.onnx")
    onnx.save(model, path)
    want = dict(zip(["back", "q_value"], onnx_reference.ReferenceEvaluator(model).run(None, {"x": x})))
    got = _run(graft_mod, path, device, {"x": x})
    for name in ("q_value", "back"):
        assert got[name].dtype == want[name].dtype and got[name].shape == want[name].shape, name
        np.testing.assert_array_equal(got[name], want[name],
                                      err_msg=f"{name}, to {to8}, saturate {saturate}, per axis {per_axis}, seed {seed}")


# ---- DeformConv (opset 19), which graft runs as its ModulatedDeformConv2d ---------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("with_mask,with_bias", [(True, True), (False, False), (False, True)])
def test_deform_conv_matches_onnx_reference(graft_mod, onnx_reference, tmp_path, seed, device, with_mask, with_bias):
    """ONNX's DeformConv against onnx.reference (bilinear samples through GridSample, zeros outside):
    strides, pads, dilations, 2 groups and 2 offset groups, offsets that move samples partly and wholly
    off the image, with and without the optional mask and bias. Sums of 18 products of float32 values
    whose orders differ: within float32 rounding."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    offset = (rng.standard_normal((2, 36, 4, 6)) * 2).astype(np.float32)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 7, 6]),
              helper.make_tensor_value_info("offset", TensorProto.FLOAT, [2, 36, 4, 6])]
    feeds = {"x": x, "offset": offset}
    if with_mask:
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [2, 18, 4, 6]))
        feeds["mask"] = rng.uniform(0, 1, (2, 18, 4, 6)).astype(np.float32)
    inits = [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel().tolist())]
    if with_bias:
        inits.append(helper.make_tensor("b", TensorProto.FLOAT, [6], rng.standard_normal(6).astype(np.float32).tolist()))
    node = helper.make_node("DeformConv", ["x", "w", "offset", "b" if with_bias else "", "mask" if with_mask else ""],
                            ["y"], strides=[2, 1], pads=[1, 2, 1, 2], dilations=[1, 2], group=2, offset_group=2)
    graph = helper.make_graph([node], "deform_conv", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    path = str(tmp_path / "deform_conv.onnx")
    onnx.save(model, path)
    (want,) = onnx_reference.ReferenceEvaluator(model).run(None, feeds)
    got = _run(graft_mod, path, device, feeds)["y"]
    assert got.shape == want.shape == (2, 6, 4, 6)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"seed {seed}")


# ---- ImageDecoder (opset 20) ----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["jpeg", "png", "png_gray", "png_rgba"])
@pytest.mark.parametrize("pixel_format", ["RGB", "BGR", "Grayscale"])
def test_image_decoder_matches_onnx_reference(graft_mod, onnx_reference, tmp_path, seed, fmt, pixel_format):
    """An image Pillow encodes, decoded by graft's CPU engine and by onnx.reference (which decodes with
    Pillow): equal, JPEG included (libjpeg-turbo's default decoding on both sides; Pillow's wheel may
    carry another libjpeg-turbo release than Debian's, whose IDCT gives the same integers)."""
    Image = pytest.importorskip("PIL.Image")
    import io
    rng = np.random.default_rng(seed)
    h, w = 13, 17
    base = (np.add.outer(np.arange(h) * 9, np.arange(w) * 7)[:, :, None] + np.array([0, 60, 120])) % 256
    pixels = np.clip(base + rng.integers(-8, 9, (h, w, 3)), 0, 255).astype(np.uint8)
    img = Image.fromarray(pixels)
    if fmt == "png_gray":
        img = img.convert("L")
    elif fmt == "png_rgba":
        img = img.convert("RGBA")
    buf = io.BytesIO()
    img.save(buf, format="JPEG" if fmt == "jpeg" else "PNG", **({"quality": 90} if fmt == "jpeg" else {}))
    stream = np.frombuffer(buf.getvalue(), dtype=np.uint8)
    node = helper.make_node("ImageDecoder", ["stream"], ["image"], pixel_format=pixel_format)
    graph = helper.make_graph([node], "decode", [helper.make_tensor_value_info("stream", TensorProto.UINT8, [stream.size])],
                              [helper.make_tensor_value_info("image", TensorProto.UINT8, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    path = str(tmp_path / "decode.onnx")
    onnx.save(model, path)
    if fmt == "png_gray" and pixel_format == "BGR":
        # onnx.reference (1.23) reverses the channel axis of Pillow's array, which a gray image does
        # not have (an IndexError there): Pillow's gray values are what it would return for RGB.
        want = np.asarray(Image.open(io.BytesIO(buf.getvalue())))
    else:
        (want,) = onnx_reference.ReferenceEvaluator(model).run(None, {"stream": stream})
    # For RGB and BGR the reference returns Pillow's array as it is, so a gray source comes back
    # [H, W] and an RGBA one with its alpha ([A, B, G, R] for BGR); ONNX's output is [H, W, 3], which
    # graft gives (gray repeated, alpha dropped): the reference's pixels, in that shape.
    if pixel_format != "Grayscale" and want.ndim == 2:
        want = np.repeat(want[:, :, None], 3, axis=2)
    elif pixel_format != "Grayscale" and want.shape[2] == 4:
        want = want[:, :, :3] if pixel_format == "RGB" else want[:, :, 1:]
    got = _run(graft_mod, path, "cpu", {"stream": stream})["image"]
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want, err_msg=f"{fmt} as {pixel_format}, seed {seed}")
