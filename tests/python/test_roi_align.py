"""mmdeploy's MMCVRoiAlign through torch against torchvision.ops.roi_align (average pooling, aligned
and legacy), the output and the feature map's gradient, on the CPU and, where there is one, the GPU.
torchvision is on the GPU machine; elsewhere these tests skip (the op harness checks the gradient
against finite differences everywhere)."""
import itertools

import pytest

torch = pytest.importorskip("torch")

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(scope="module")
def mmcv_roi_align(graft_op):
    return graft_op("MMCVRoiAlign")


@pytest.mark.parametrize("device,aligned,ratio", list(itertools.product(DEVICES, (0, 1), (0, 2))))
def test_matches_torchvision(mmcv_roi_align, device, aligned, ratio, seed):
    torchvision = pytest.importorskip("torchvision")
    dtype = torch.float64 if device == "cpu" else torch.float32
    x = torch.randn(2, 3, 9, 11, dtype=dtype, device=device, requires_grad=True)
    corners = torch.rand(5, 4, dtype=dtype, device=device) * 20 - 3  # partly outside the 9x11 map at scale 0.5
    boxes = torch.cat([torch.minimum(corners[:, :2], corners[:, 2:]), torch.maximum(corners[:, :2], corners[:, 2:])], 1)
    rois = torch.cat([torch.tensor([[0.], [1.], [1.], [0.], [1.]], dtype=dtype, device=device), boxes], 1)
    attrs = dict(output_height=3, output_width=2, spatial_scale=0.5, sampling_ratio=ratio, mode="avg", aligned=aligned)
    y = mmcv_roi_align(x, rois, **attrs)
    xr = x.detach().clone().requires_grad_(True)
    want = torchvision.ops.roi_align(xr, rois, (3, 2), spatial_scale=0.5, sampling_ratio=ratio, aligned=bool(aligned))
    tol = dict(rtol=1e-9, atol=1e-9) if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(y, want, **tol)
    gy = torch.randn_like(y)
    y.backward(gy)
    want.backward(gy)
    torch.testing.assert_close(x.grad, xr.grad, **tol)


def test_nn_roi_align_layer(graft_mod):
    """graft.nn.RoIAlign (mmcv's layer): one sample at a roi's centre is the bilinear mean of the four
    pixels around it, its gradient a quarter on each; max pooling takes the largest sample."""
    x = torch.arange(2 * 16, dtype=torch.float64).reshape(1, 2, 4, 4).requires_grad_(True)
    rois = torch.tensor([[0.0, 0.0, 0.0, 3.0, 3.0]], dtype=torch.float64)
    layer = graft_mod.nn.RoIAlign(1, spatial_scale=1.0, sampling_ratio=1, aligned=False)
    assert "pool_mode='avg'" in repr(layer)
    y = layer(x, rois)
    want = x.detach()[0, :, 1:3, 1:3].mean(dim=(1, 2)).reshape(1, 2, 1, 1)
    torch.testing.assert_close(y, want)
    y.sum().backward()
    g = torch.zeros_like(x)
    g[0, :, 1:3, 1:3] = 0.25
    torch.testing.assert_close(x.grad, g)
    top = graft_mod.nn.RoIAlign((1, 1), sampling_ratio=2, pool_mode="max", aligned=False)(x.detach(), rois)
    assert torch.all(top >= y.detach())
    with pytest.raises(ValueError, match="pool_mode"):
        graft_mod.nn.RoIAlign(2, pool_mode="sum")
