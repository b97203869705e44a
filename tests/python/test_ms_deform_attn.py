"""MultiScaleDeformableAttention through torch: graft's op vs the grid_sample formulation, float64
gradcheck, the mmcv-style layer training, and ONNX export (one ai.onnx.contrib node)."""
import math

import pytest

torch = pytest.importorskip("torch")

from graft.deformable import (MultiScaleDeformableAttention, ms_deform_attn,  # noqa: E402
                              ms_deform_attn_pytorch)


def _levels(shapes):
    hw = torch.tensor(shapes, dtype=torch.int64)
    starts = torch.cat([hw.new_zeros(1), (hw[:, 0] * hw[:, 1]).cumsum(0)[:-1]])
    return hw, starts, int((hw[:, 0] * hw[:, 1]).sum())


def _inputs(n, m, d, lq, p, shapes, dtype=torch.float32, lo=-0.1, hi=1.1, requires_grad=False):
    hw, starts, s = _levels(shapes)
    value = torch.randn(n, s, m, d, dtype=dtype)
    locs = torch.rand(n, lq, m, len(shapes), p, 2, dtype=dtype) * (hi - lo) + lo
    weights = torch.rand(n, lq, m, len(shapes), p, dtype=dtype)
    for t in (value, locs, weights):
        t.requires_grad_(requires_grad)
    return value, hw, starts, locs, weights


CASES = [
    # n, m, d, lq, p, levels
    (2, 2, 4, 5, 3, [(3, 4), (2, 2)]),
    (1, 3, 5, 7, 2, [(5, 3), (2, 7), (1, 1)]),  # odd channels
    (2, 4, 1, 6, 4, [(4, 4), (2, 3)]),          # D = 1
    (1, 2, 3, 4, 8, [(6, 5), (3, 3), (2, 2), (1, 2), (1, 1)]),
    (1, 1, 96, 3, 2, [(4, 6), (2, 3)]),         # large D
    (2, 8, 32, 40, 4, [(10, 15), (5, 8), (3, 4), (2, 2)]),
]


@pytest.fixture(scope="module")
def op(graft_mod):
    from graft import _registry
    try:
        _registry.find("MultiScaleDeformableAttention")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"graft's torch extension has no MultiScaleDeformableAttention: {e}")
    return ms_deform_attn


def test_pytorch_reference_matches_a_direct_loop(seed):
    # Guards the grid_sample formulation itself with plain bilinear arithmetic (not grid_sample).
    value, hw, starts, locs, weights = _inputs(1, 2, 3, 4, 2, [(3, 5), (2, 2)], torch.float64)
    got = ms_deform_attn_pytorch(value, hw, starts, locs, weights)
    n, s, m, d = value.shape
    ref = torch.zeros(n, locs.shape[1], m, d, dtype=torch.float64)
    for b in range(n):
        for q in range(locs.shape[1]):
            for h in range(m):
                for lvl, (hh, ww) in enumerate(hw.tolist()):
                    for pt in range(locs.shape[4]):
                        x = locs[b, q, h, lvl, pt, 0].item() * ww - 0.5
                        y = locs[b, q, h, lvl, pt, 1].item() * hh - 0.5
                        x0, y0 = math.floor(x), math.floor(y)
                        for yy, xx in ((y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1)):
                            if 0 <= yy < hh and 0 <= xx < ww:
                                c = (1 - abs(x - xx)) * (1 - abs(y - yy))
                                ref[b, q, h] += weights[b, q, h, lvl, pt] * c * value[b, starts[lvl] + yy * ww + xx, h]
    torch.testing.assert_close(got, ref.view(n, locs.shape[1], m * d), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"n{c[0]}m{c[1]}d{c[2]}q{c[3]}p{c[4]}l{len(c[5])}")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_op_matches_pytorch(op, case, dtype, seed):
    n, m, d, lq, p, shapes = case
    args = _inputs(n, m, d, lq, p, shapes, dtype)
    got = op(*args)
    ref = ms_deform_attn_pytorch(*args)
    assert got.shape == (n, lq, m * d)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(got, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("case", CASES[:5], ids=lambda c: f"n{c[0]}m{c[1]}d{c[2]}q{c[3]}p{c[4]}l{len(c[5])}")
def test_op_gradients_match_pytorch(op, case, seed):
    n, m, d, lq, p, shapes = case
    a = _inputs(n, m, d, lq, p, shapes, torch.float64, requires_grad=True)
    b = [t.detach().clone().requires_grad_(t.requires_grad) for t in a]
    g = torch.randn(n, lq, m * d, dtype=torch.float64)
    op(*a).backward(g)
    ms_deform_attn_pytorch(*b).backward(g)
    for i in (0, 3, 4):
        torch.testing.assert_close(a[i].grad, b[i].grad, rtol=1e-9, atol=1e-9)


def test_gradcheck_float64(op, seed):
    value, hw, starts, locs, weights = _inputs(1, 2, 3, 3, 2, [(3, 4), (2, 2)], torch.float64, requires_grad=True)

    def f(v, loc, w):
        return op(v, hw, starts, loc, w)

    assert torch.autograd.gradcheck(f, (value, locs, weights), eps=1e-7, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("backend", ["graft", "pytorch"])
@pytest.mark.parametrize("ref_dim", [2, 4])
def test_layer_trains(graft_mod, backend, ref_dim, seed):
    if backend == "graft":
        from graft.deformable import graft_op_available
        if not graft_op_available():
            pytest.skip("graft's torch extension is not available")
    shapes = [(8, 8), (4, 4), (2, 2)]
    hw, starts, s = _levels(shapes)
    n, lq, c = 2, 10, 32
    layer = MultiScaleDeformableAttention(embed_dims=c, num_heads=4, num_levels=3, num_points=2, dropout=0.0,
                                          batch_first=True, backend=backend)
    query = torch.randn(n, lq, c)
    value = torch.randn(n, s, c)
    ref = torch.rand(n, lq, 3, ref_dim) * 0.8 + 0.1
    target = torch.randn(n, lq, c)
    opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        out = layer(query, value=value, reference_points=ref, spatial_shapes=hw, level_start_index=starts)
        loss = torch.nn.functional.mse_loss(out, target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0], losses
    # The offsets learn too (their gradient flows through the sampling locations).
    assert layer.sampling_offsets.weight.abs().sum() > 0


def test_layer_backends_agree(graft_mod, seed):
    from graft.deformable import graft_op_available
    if not graft_op_available():
        pytest.skip("graft's torch extension is not available")
    shapes = [(6, 7), (3, 4)]
    hw, starts, s = _levels(shapes)
    layer = MultiScaleDeformableAttention(embed_dims=16, num_heads=2, num_levels=2, num_points=3, dropout=0.0)
    query, value = torch.randn(9, 2, 16), torch.randn(s, 2, 16)  # batch_first=False: (L, N, C)
    ref = torch.rand(2, 9, 2, 2)
    kw = dict(value=value, reference_points=ref, spatial_shapes=hw, level_start_index=starts)
    layer.backend = "graft"
    a = layer(query, **kw)
    layer.backend = "pytorch"
    b = layer(query, **kw)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_export_emits_one_custom_node(op, graft_mod, tmp_onnx, seed):
    onnx = pytest.importorskip("onnx")
    try:
        export = graft_mod.export
    except AttributeError:
        pytest.skip("graft.export is not available")
    from graft import _registry, deformable
    info = _registry.find("MultiScaleDeformableAttention")

    class Wrap(torch.nn.Module):
        def forward(self, value, hw, starts, locs, weights):
            return ms_deform_attn(value, hw, starts, locs, weights)

    args = _inputs(1, 2, 4, 5, 2, [(3, 4), (2, 2)])
    # The op's first lookup happening inside the exporter's tracer must work too (it once depended
    # on an earlier test having cached it).
    deformable._info = None
    export(Wrap(), args, tmp_onnx, dynamic_batch=False)
    model = onnx.load(tmp_onnx)
    onnx.checker.check_model(model)
    nodes = [nd for nd in model.graph.node if nd.op_type == "MultiScaleDeformableAttention"]
    assert len(nodes) == 1, [nd.op_type for nd in model.graph.node]
    node = nodes[0]
    assert node.domain == "ai.onnx.contrib"
    assert "ai.onnx.contrib" in {o.domain for o in model.opset_import}
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert set(attrs) <= {"im2col_step", "plugin_version", "plugin_namespace"}, attrs
    assert attrs.get("plugin_version") == info.version.encode(), attrs
    assert attrs.get("plugin_namespace") == info.plugin_namespace.encode(), attrs
    # The node reads the graph inputs directly (no Cast in between): the index inputs as int64.
    graph_inputs = {i.name: i.type.tensor_type.elem_type for i in model.graph.input}
    want = [onnx.TensorProto.FLOAT, onnx.TensorProto.INT64, onnx.TensorProto.INT64,
            onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT]
    assert [graph_inputs.get(n) for n in node.input] == want, (list(node.input), graph_inputs)


def test_public_names(graft_mod):
    import graft.deformable as deformable_mod
    assert graft_mod.nn.MultiScaleDeformableAttention is MultiScaleDeformableAttention
    assert graft_mod.deformable is deformable_mod
    assert graft_mod.deformable.ms_deform_attn_pytorch is ms_deform_attn_pytorch
