"""ModulatedDeformConv2d (DCNv2) through torch: graft's op vs the grid_sample formulation and a direct
loop, gradients vs PyTorch's autograd of that formulation, the layers training, ONNX export (one
ai.onnx.contrib node, run by graft's engine) and, where torchvision exists (the GPU machine), torchvision.ops.deform_conv2d."""
import math

import pytest

torch = pytest.importorskip("torch")

from graft.deform_conv import (ModulatedDeformConv2d, ModulatedDeformConv2dPack,  # noqa: E402
                               modulated_deform_conv2d, modulated_deform_conv2d_pytorch)


def _out(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _away_from_integers(t, margin=1e-3):
    # Offsets on an integer put the sample on a bilinear kink (pixel line or border), where two
    # implementations may legitimately take different one-sided derivatives.
    frac = t - t.round()
    return torch.where(frac.abs() < margin, t + 3 * margin, t)


def _inputs(n, c, h, w, co, kh, kw, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, dg=1,
            dtype=torch.float32, off_scale=2.0, bias=True, requires_grad=False):
    ho, wo = _out(h, kh, stride[0], padding[0], dilation[0]), _out(w, kw, stride[1], padding[1], dilation[1])
    x = torch.randn(n, c, h, w, dtype=dtype)
    off = _away_from_integers((torch.rand(n, 2 * dg * kh * kw, ho, wo, dtype=dtype) * 2 - 1) * off_scale)
    mask = torch.rand(n, dg * kh * kw, ho, wo, dtype=dtype)
    weight = torch.randn(co, c // groups, kh, kw, dtype=dtype) / math.sqrt(c * kh * kw / groups)
    b = torch.randn(co, dtype=dtype) if bias else None
    ts = [x, off, mask, weight, b]
    for t in ts:
        if t is not None:
            t.requires_grad_(requires_grad)
    attrs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups, deform_groups=dg)
    return ts, attrs


CASES = {
    "basic": dict(n=2, c=4, h=5, w=6, co=3, kh=3, kw=3, padding=(1, 1)),
    "groups_dg": dict(n=1, c=4, h=6, w=5, co=6, kh=3, kw=3, padding=(1, 1), groups=2, dg=2),
    "strided_dilated": dict(n=2, c=3, h=9, w=8, co=2, kh=3, kw=3, stride=(2, 2), padding=(2, 2), dilation=(2, 2)),
    "asymmetric": dict(n=1, c=2, h=7, w=6, co=4, kh=2, kw=3, stride=(2, 1), padding=(0, 1), dilation=(1, 2), dg=2),
    "depthwise": dict(n=2, c=4, h=5, w=5, co=4, kh=3, kw=3, padding=(1, 1), groups=4, dg=4),
    "no_bias": dict(n=2, c=3, h=4, w=5, co=2, kh=3, kw=3, padding=(1, 1), bias=False),
    "far_outside": dict(n=1, c=2, h=4, w=5, co=3, kh=3, kw=3, padding=(1, 1), off_scale=6.0),
}


@pytest.fixture(scope="module")
def op(graft_mod):
    from graft import _registry
    try:
        _registry.find("ModulatedDeformConv2d")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"graft's torch extension has no ModulatedDeformConv2d: {e}")
    return modulated_deform_conv2d


def _direct(x, off, mask, weight, bias, stride, padding, dilation, groups, deform_groups):
    # Straight from the definition, with mmcv's boundary rule, in float64 Python loops.
    n, c, h, w = x.shape
    co, cg, kh, kw = weight.shape
    ho, wo = off.shape[2], off.shape[3]
    cpd, cog = c // deform_groups, co // groups
    out = torch.zeros(n, co, ho, wo, dtype=torch.float64)

    def sample(b, ch, y, xx):
        if y <= -1 or xx <= -1 or y >= h or xx >= w:
            return 0.0
        s = 0.0
        for i in (math.floor(y), math.floor(y) + 1):
            for j in (math.floor(xx), math.floor(xx) + 1):
                if 0 <= i < h and 0 <= j < w:
                    s += (1 - abs(y - i)) * (1 - abs(xx - j)) * x[b, ch, i, j].item()
        return s

    for b in range(n):
        for o in range(co):
            g = o // cog
            for oy in range(ho):
                for ox in range(wo):
                    acc = bias[o].item() if bias is not None else 0.0
                    for cl in range(cg):
                        ch = g * cg + cl
                        d = ch // cpd
                        for i in range(kh):
                            for j in range(kw):
                                tap = d * kh * kw + i * kw + j
                                y = oy * stride[0] - padding[0] + i * dilation[0] + off[b, 2 * tap, oy, ox].item()
                                xx = ox * stride[1] - padding[1] + j * dilation[1] + off[b, 2 * tap + 1, oy, ox].item()
                                acc += weight[o, cl, i, j].item() * mask[b, tap, oy, ox].item() * sample(b, ch, y, xx)
                    out[b, o, oy, ox] = acc
    return out


@pytest.mark.parametrize("name", ["basic", "asymmetric", "far_outside"])
def test_pytorch_reference_matches_a_direct_loop(name, seed):
    # Guards the grid_sample formulation itself (it is the reference of the tests below).
    cfg = dict(CASES[name])
    ts, attrs = _inputs(**cfg, dtype=torch.float64)
    got = modulated_deform_conv2d_pytorch(*ts, **attrs)
    want = _direct(*ts, **{k: (tuple(v) if isinstance(v, (tuple, list)) else v) for k, v in attrs.items()})
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_op_matches_pytorch(op, name, dtype, seed):
    ts, attrs = _inputs(**CASES[name], dtype=dtype)
    got = op(*ts, **attrs)
    want = modulated_deform_conv2d_pytorch(*ts, **attrs)
    tol = 1e-5 if dtype == torch.float32 else 1e-11
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", list(CASES))
def test_op_gradients_match_pytorch(op, name, seed):
    a, attrs = _inputs(**CASES[name], dtype=torch.float64, requires_grad=True)
    b = [None if t is None else t.detach().clone().requires_grad_(True) for t in a]
    ya = op(*a, **attrs)
    g = torch.randn_like(ya)
    ya.backward(g)
    modulated_deform_conv2d_pytorch(*b, **attrs).backward(g)
    for i, (ta, tb) in enumerate(zip(a, b)):
        if ta is None:
            continue
        torch.testing.assert_close(ta.grad, tb.grad, rtol=1e-9, atol=1e-9, msg=lambda m: f"input {i}: {m}")


def test_gradcheck_float64(op, seed):
    ts, attrs = _inputs(**CASES["groups_dg"], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda *xs: op(*xs, **attrs), tuple(ts), eps=1e-7, atol=1e-5, rtol=1e-4)


def test_ops_namespace_and_nn_exports(graft_mod, op):
    assert graft_mod.nn.ModulatedDeformConv2d is ModulatedDeformConv2d
    assert graft_mod.nn.ModulatedDeformConv2dPack is ModulatedDeformConv2dPack
    ts, attrs = _inputs(**CASES["basic"])
    list_attrs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in attrs.items()}
    torch.testing.assert_close(graft_mod.ops.ModulatedDeformConv2d(*ts, **list_attrs), op(*ts, **attrs))


def test_bad_attribute_names_it(op):
    ts, attrs = _inputs(**CASES["basic"])
    attrs["groups"] = 3  # does not divide C = 4
    with pytest.raises(RuntimeError, match="groups"):
        op(*ts, **attrs)
    ts, attrs = _inputs(**CASES["basic"])
    attrs["stride"] = (0, 1)
    with pytest.raises(RuntimeError, match="stride"):
        op(*ts, **attrs)


@pytest.mark.parametrize("backend", ["graft", "pytorch"])
def test_pack_layer_trains(graft_mod, backend, seed):
    if backend == "graft":
        from graft.deform_conv import graft_op_available
        if not graft_op_available():
            pytest.skip("graft's torch extension is not available")
    layer = ModulatedDeformConv2dPack(4, 6, 3, padding=1, groups=2, deform_groups=2, backend=backend)
    # Start off the zero offsets (all on the pixel grid, i.e. on kinks) as a trained layer would be.
    with torch.no_grad():
        layer.conv_offset.weight.normal_(0.0, 0.05)
        layer.conv_offset.bias.uniform_(0.1, 0.4)
    x = torch.randn(2, 4, 8, 8)
    target = torch.randn(2, 6, 8, 8)
    opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(layer(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.9 * losses[0], losses
    assert layer.conv_offset.weight.grad.abs().sum() > 0  # offsets and mask learn through the op


def test_layer_backends_agree(graft_mod, seed):
    from graft.deform_conv import graft_op_available
    if not graft_op_available():
        pytest.skip("graft's torch extension is not available")
    layer = ModulatedDeformConv2d(4, 6, (2, 3), stride=(2, 1), padding=(0, 1), dilation=(1, 2), groups=2,
                                  deform_groups=4)
    ts, _ = _inputs(n=2, c=4, h=7, w=6, co=6, kh=2, kw=3, stride=(2, 1), padding=(0, 1), dilation=(1, 2),
                    groups=2, dg=4)
    layer.backend = "graft"
    a = layer(*ts[:3])
    layer.backend = "pytorch"
    b = layer(*ts[:3])
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert "deform_groups=4" in repr(layer)


@pytest.mark.parametrize("bias", [True, False])
def test_export_emits_one_custom_node(op, graft_mod, tmp_onnx, bias, seed):
    onnx = pytest.importorskip("onnx")
    from graft import deform_conv
    layer = ModulatedDeformConv2d(4, 6, 3, stride=(1, 2), padding=1, groups=2, deform_groups=2, bias=bias,
                                  backend="graft").eval()
    ts, _ = _inputs(n=1, c=4, h=5, w=6, co=6, kh=3, kw=3, stride=(1, 2), padding=(1, 1), groups=2, dg=2)
    deform_conv._info = None  # the op's first lookup may happen inside the exporter's tracer
    graft_mod.export(layer, tuple(ts[:3]), tmp_onnx, dynamic_batch=False)
    model = onnx.load(tmp_onnx)
    onnx.checker.check_model(model)
    nodes = [nd for nd in model.graph.node if nd.op_type == "ModulatedDeformConv2d"]
    assert len(nodes) == 1, [nd.op_type for nd in model.graph.node]
    node = nodes[0]
    assert node.domain == "ai.onnx.contrib"
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert attrs["stride"] == [1, 2] and attrs["padding"] == [1, 1] and attrs["dilation"] == [1, 1], attrs
    assert attrs["groups"] == 2 and attrs["deform_groups"] == 2, attrs
    types = {a.name: a.type for a in node.attribute}
    assert types["stride"] == onnx.AttributeProto.INTS and types["groups"] == onnx.AttributeProto.INT
    real_inputs = [i for i in node.input if i]
    assert len(real_inputs) == (5 if bias else 4), list(node.input)
    # graft's engine runs the exported model (the op's CPU kernel inside the engine).
    names = [i.name for i in model.graph.input][:3]
    eng = graft_mod.Engine.build(tmp_onnx, device="cpu")
    out = list(eng.run(dict(zip(names, ts[:3]))).values())[0]
    with torch.no_grad():
        want = layer(*ts[:3])
    torch.testing.assert_close(torch.as_tensor(out), want, rtol=1e-5, atol=1e-5)


def test_torchvision_deform_conv2d_agrees(op, seed):
    # torchvision's deform_conv2d has the same offset layout, mask and boundary rule; it is absent
    # from the CPU development machine (Debian's torch), present on the GPU machine.
    tv = pytest.importorskip("torchvision.ops")
    # float64 on the CPU (graft's CPU kernel computes in double); the CUDA kernels are float32 and
    # float16, so on CUDA both sides run in float32 with float32's tolerances.
    devices = [("cpu", torch.float64, 1e-9, 1e-7)]
    if torch.cuda.is_available():
        devices.append(("cuda", torch.float32, 1e-4, 1e-3))
    for device, dtype, tol, grad_tol in devices:
        for name in ("basic", "groups_dg", "strided_dilated", "asymmetric", "depthwise", "far_outside"):
            cfg = CASES[name]
            ts, attrs = _inputs(**cfg, dtype=torch.float64, requires_grad=True)
            ts = [None if t is None else t.detach().to(device, dtype).requires_grad_(True) for t in ts]
            x, off, mask, weight, bias = ts
            got = op(x, off, mask, weight, bias, **attrs)
            want = tv.deform_conv2d(x, off, weight, bias, stride=attrs["stride"], padding=attrs["padding"],
                                    dilation=attrs["dilation"], mask=mask)
            torch.testing.assert_close(got, want, rtol=tol, atol=tol, msg=lambda m: f"{name} {device}: {m}")
            g = torch.randn_like(got)
            mine = torch.autograd.grad(got, ts, g)
            theirs = torch.autograd.grad(want, ts, g)
            for i, (u, v) in enumerate(zip(mine, theirs)):
                torch.testing.assert_close(u, v, rtol=grad_tol, atol=grad_tol,
                                           msg=lambda m: f"{name} {device} grad {i}: {m}")


def test_mmdeploy_node_runs_in_the_engine(graft_mod, tmp_onnx, seed):
    # An ONNX file as mmdeploy writes it: mmdeploy::MMCVModulatedDeformConv2d, inputs (input, offset,
    # mask, weight, bias), attributes stride/padding/dilation/groups/deform_groups.
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    ts, attrs = _inputs(n=1, c=4, h=6, w=5, co=6, kh=3, kw=3, stride=(2, 1), padding=(1, 1), dilation=(1, 1),
                        groups=2, dg=2)
    x, off, mask, weight, bias = ts
    want = modulated_deform_conv2d_pytorch(*ts, **attrs)
    names = ["input", "offset", "mask"]
    node = helper.make_node("MMCVModulatedDeformConv2d", names + ["weight", "bias"], ["output"], domain="mmdeploy",
                            stride=[2, 1], padding=[1, 1], dilation=[1, 1], groups=2, deform_groups=2)
    graph = helper.make_graph(
        [node], "mdcn",
        [helper.make_tensor_value_info(nm, TensorProto.FLOAT, list(t.shape)) for nm, t in zip(names, ts[:3])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, list(want.shape))],
        initializer=[numpy_helper.from_array(weight.numpy(), "weight"), numpy_helper.from_array(bias.numpy(), "bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("mmdeploy", 1)])
    onnx.save(model, tmp_onnx)
    eng = graft_mod.Engine.build(tmp_onnx, device="cpu")
    out = eng.run(dict(zip(names, ts[:3])))["output"]
    torch.testing.assert_close(torch.as_tensor(out), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bad, attribute", [(dict(groups=3), "groups"), (dict(stride=[1, 0]), "stride"),
                                            (dict(stride=[1, 1, 1]), "stride"), (dict(deform_groups=0), "deform_groups")])
def test_engine_error_names_node_and_attribute(graft_mod, tmp_onnx, bad, attribute):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    attrs = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1], groups=2, deform_groups=2)
    attrs.update(bad)
    shapes = {"input": [1, 4, 6, 5], "offset": [1, 36, 6, 5], "mask": [1, 18, 6, 5], "weight": [6, 2, 3, 3]}
    node = helper.make_node("MMCVModulatedDeformConv2d", list(shapes), ["output"], domain="mmdeploy", name="dcn0",
                            **attrs)
    graph = helper.make_graph([node], "m", [helper.make_tensor_value_info(k, TensorProto.FLOAT, v)
                                            for k, v in shapes.items()],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("mmdeploy", 1)]),
              tmp_onnx)
    with pytest.raises(Exception) as e:
        graft_mod.Engine.build(tmp_onnx, device="cpu")
    msg = str(e.value)
    assert "node 'dcn0'" in msg and f"attribute '{attribute}'" in msg, msg


@pytest.mark.parametrize("with_mask", [True, False])
def test_torchvision_export_as_onnx_deform_conv_runs(graft_mod, tmp_onnx, seed, with_mask):
    # What torch.onnx writes for torchvision's deform_conv2d at opset 19: ONNX's DeformConv, which
    # graft reads as this op (src/onnx/deform_conv_rewrite.h), with and without the mask. Needs
    # torchvision and a torch whose exporter has DeformConv (the GPU machine's); skipped elsewhere.
    tv = pytest.importorskip("torchvision.ops")
    pytest.importorskip("onnx")

    class Dcn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(6, 2, 3, 3))
            self.bias = torch.nn.Parameter(torch.randn(6))

        def forward(self, x, offset, mask=None):
            return tv.deform_conv2d(x, offset, self.weight, self.bias, stride=(2, 1), padding=(1, 1),
                                    dilation=(1, 2), mask=mask)

    torch.manual_seed(seed % (2 ** 31))
    model = Dcn().eval()
    x = torch.randn(2, 4, 7, 6)
    offset = torch.randn(2, 36, 4, 4) * 1.5  # Ho = (7 + 2 - 3) / 2 + 1, Wo = 6 + 2 - 5 + 1
    args = (x, offset, torch.rand(2, 18, 4, 4)) if with_mask else (x, offset)
    names = ["x", "offset", "mask"][:len(args)]
    try:
        torch.onnx.export(model, args, tmp_onnx, opset_version=19, input_names=names, output_names=["y"],
                          dynamo=False)
    except Exception as e:  # an exporter without DeformConv
        pytest.skip(f"torch {torch.__version__} does not export deform_conv2d as DeformConv-19: {e}")
    import onnx
    ops = {n.op_type for n in onnx.load(tmp_onnx).graph.node}
    if "DeformConv" not in ops:
        pytest.skip(f"the export has no DeformConv node: {sorted(ops)}")
    eng = graft_mod.Engine.build(tmp_onnx, device="cpu")
    got = eng.run(dict(zip(names, [a.numpy() for a in args])))["y"]
    with torch.no_grad():
        want = model(*args)
    torch.testing.assert_close(torch.as_tensor(got), want, rtol=1e-4, atol=1e-4)
