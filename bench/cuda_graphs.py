"""CUDA-graph capture for the benchmarks, with a check that a replay really recomputes its output.

A graph holds only the work launched on the capturing stream. An op that launches a kernel on the
legacy default stream instead (torchvision's deform_conv2d does: its im2col kernel is launched
without a stream in torchvision/csrc/ops/cuda/deform_conv2d_kernel.cu) runs that kernel once, at
capture time, outside the graph, because PyTorch captures on a non-blocking stream. Each replay then
skips it: the replay is faster than the op and its output is wrong. So a graph time, and a
torch.compile mode that replays graphs ("reduce-overhead"), count only after a replay has been seen
to recompute the output.
"""


def capture(torch, fn, inner):
    """A CUDA graph of `inner` calls of fn (warmed up on a side stream, as torch.cuda.graphs
    recommends) and the captured calls' outputs."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = [fn() for _ in range(inner)]
    return g, outs


def relative_error(torch, got, want):
    got, want = got.double(), want.double()
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


def replay_recomputes(torch, graph, outs, expected, tol=1e-3):
    """(True, error) when a replay, with the captured outputs poisoned with NaN first, gives the last
    call's output within `tol` (relative L2) of `expected` (the same call run eagerly); else False."""
    for o in outs:
        o.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    err = relative_error(torch, outs[-1], expected)
    return err <= tol, err  # NaN compares false: the replay left the poison


def deform_conv2d_graph_safe(torch, deform_conv2d):
    """Whether a CUDA-graph replay of torchvision.ops.deform_conv2d recomputes its output, on a small
    FP16 problem: (True/False, detail), or (None, reason) where it cannot be tried."""
    if not torch.cuda.is_available():
        return None, "no CUDA device"
    try:
        g = torch.Generator(device="cuda").manual_seed(5)
        x = torch.randn(2, 16, 12, 12, device="cuda", generator=g).half()
        offset = (torch.rand(2, 18, 12, 12, device="cuda", generator=g) * 2 - 1).half()
        mask = torch.rand(2, 9, 12, 12, device="cuda", generator=g).half()
        w = (torch.randn(16, 16, 3, 3, device="cuda", generator=g) / 12).half()

        def call():
            return deform_conv2d(x, offset, w, None, padding=(1, 1), mask=mask)

        with torch.no_grad():
            expected = call().clone()
            graph, outs = capture(torch, call, 1)
            ok, err = replay_recomputes(torch, graph, outs, expected)
        del graph
        return ok, f"replay vs eager relative error {err:.1e}"
    except Exception as e:  # noqa: BLE001 - a failed probe is reported, not fatal
        torch.cuda.synchronize()
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
