"""mmdeploy's grid_sampler through torch against PyTorch's own grid_sample: the output and the gradients
of both the input and the grid, for every interpolation mode, padding mode and align_corners, on
random maps and on grids that reach past the border (so clamping and mirroring take part)."""
import itertools

import pytest

torch = pytest.importorskip("torch")

MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
PADS = {0: "zeros", 1: "border", 2: "reflection"}
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(scope="module")
def grid_sampler(graft_op):
    return graft_op("grid_sampler")


def _grid(n, ho, wo, h, w, align, reach):
    """A grid in [-reach, reach], each pixel coordinate at least 0.01 px from an integer or a
    half-integer (where a cell, a nearest pixel, a clamp or a mirror changes: the gradient is not
    defined there, and PyTorch and graft may take either side)."""
    g = (torch.rand(n, ho, wo, 2, dtype=torch.float64) * 2 - 1) * reach
    size = torch.tensor([w, h], dtype=torch.float64)
    u = (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2
    kink = torch.round(2 * u) / 2
    u = torch.where((u - kink).abs() < 0.01, kink + 0.05, u)
    return (2 * u / (size - 1) - 1) if align else ((2 * u + 1) / size - 1)


@pytest.mark.parametrize("device,mode,pad,align", list(itertools.product(DEVICES, MODES, PADS, (0, 1))))
def test_matches_pytorch_grid_sample(grid_sampler, device, mode, pad, align, seed):
    """float64 on the CPU (to 1e-9), float32 on the GPU (graft's CUDA kernels against PyTorch's)."""
    dtype, tol = (torch.float64, 1e-9) if device == "cpu" else (torch.float32, 1e-5)
    x = torch.randn(2, 3, 5, 7, dtype=dtype, device=device, requires_grad=True)
    grid = _grid(2, 4, 6, 5, 7, align, 1.6).to(device=device, dtype=dtype).requires_grad_(True)
    attrs = dict(interpolation_mode=mode, padding_mode=pad, align_corners=align)
    y = grid_sampler(x, grid, **attrs)
    xr, gr = x.detach().clone().requires_grad_(True), grid.detach().clone().requires_grad_(True)
    want = torch.nn.functional.grid_sample(xr, gr, mode=MODES[mode], padding_mode=PADS[pad], align_corners=bool(align))
    torch.testing.assert_close(y, want, rtol=tol, atol=tol)
    gy = torch.randn_like(y)
    y.backward(gy)
    want.backward(gy)
    torch.testing.assert_close(x.grad, xr.grad, rtol=tol, atol=tol, msg=lambda m: f"input's gradient: {m}")
    torch.testing.assert_close(grid.grad, gr.grad, rtol=10 * tol, atol=10 * tol, msg=lambda m: f"grid's gradient: {m}")


def test_float32_gradients_and_gradcheck(grid_sampler, seed):
    x = torch.randn(1, 2, 4, 6, dtype=torch.float64, requires_grad=True)
    grid = _grid(1, 3, 3, 4, 6, 0, 1.3).requires_grad_(True)
    attrs = dict(interpolation_mode=2, padding_mode=2, align_corners=0)
    assert torch.autograd.gradcheck(lambda a, b: grid_sampler(a, b, **attrs), (x, grid), eps=1e-7, atol=1e-6)
    x32, g32 = x.detach().float().requires_grad_(True), grid.detach().float().requires_grad_(True)
    y = grid_sampler(x32, g32, **attrs)
    y.sum().backward()
    x.grad = grid.grad = None
    grid_sampler(x, grid, **attrs).sum().backward()
    torch.testing.assert_close(x32.grad, x.grad.float(), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(g32.grad, grid.grad.float(), rtol=1e-4, atol=1e-4)



def test_nn_grid_sample_is_functional_grid_sample(graft_mod):
    """graft.nn.grid_sample takes torch.nn.functional.grid_sample's arguments; bad names are errors."""
    x = torch.randn(1, 2, 4, 5, dtype=torch.float64, requires_grad=True)
    grid = _grid(1, 3, 3, 4, 5, 1, 1.2)
    got = graft_mod.nn.grid_sample(x, grid, mode="bicubic", padding_mode="border", align_corners=True)
    want = torch.nn.functional.grid_sample(x, grid, mode="bicubic", padding_mode="border", align_corners=True)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)
    got.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="mode must be one of"):
        graft_mod.nn.grid_sample(x, grid, mode="area")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        graft_mod.nn.grid_sample(x, grid, padding_mode="wrap")
