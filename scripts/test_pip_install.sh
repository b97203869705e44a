#!/usr/bin/env bash
# `pip install .` as issue 18 asks for it: offline, in a venv made with --system-site-packages over
# Debian's torch, with no build isolation. It reuses an existing CMake build (default: build, which
# scripts/test.sh has just built) so CI does not build graft twice, then checks the installed
# package from outside the source tree: the engine builds and runs a model, the torch extension
# loads, and the `graft` command runs.
# Usage: scripts/test_pip_install.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:-build}" && pwd)
VENV=$(mktemp -d /tmp/graft-venv.XXXXXX)
trap 'rm -rf "$VENV"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$VENV"
GRAFT_CMAKE_BUILD_DIR="$BUILD" GRAFT_BUILD_JOBS="$(nproc)" \
  "$VENV/bin/pip" install --no-build-isolation --no-index --no-deps -q .
cd "$VENV"  # away from the checkout: nothing may come from python/ or build/
env -u PYTHONPATH -u GRAFT_LIB_DIR "$VENV/bin/python" - <<'PY'
import os, numpy as np, graft
from graft import _native
print("graft package:", os.path.dirname(graft.__file__))
assert os.path.dirname(_native.find_file(["_engine*.so"])) == os.path.dirname(graft.__file__), "bindings not from the package"
import onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 13)])
eng = graft.Engine.build(model.SerializeToString(), profile={"x": ((1, 4), (2, 4), (8, 4))})
a = np.random.default_rng(7).standard_normal((3, 4)).astype(np.float32)
out = eng.run({"x": a})["y"]
assert np.array_equal(out, np.maximum(a, 0)), (out, a)
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    import graft.ops  # loads libgraft_torch.so from the package
    assert os.path.dirname(_native.torch_library_path()) == os.path.dirname(graft.__file__)
    t = torch.randn(2, 5)
    got = graft.ops.custom_layer(t, beta=0.5)  # CustomLayer: x * sigmoid(beta * x)
    assert torch.allclose(got, t * torch.sigmoid(0.5 * t), atol=1e-6), (got, t)
print("pip-installed graft: engine and torch extension OK")
PY
# The first line of `graft --version` is "graft X.Y.Z" (the backends, opsets and plan formats follow).
cli_version=$(env -u PYTHONPATH -u GRAFT_LIB_DIR "$VENV/bin/graft" --version | head -n 1)
py_version=$(env -u PYTHONPATH -u GRAFT_LIB_DIR "$VENV/bin/python" -c 'import graft; print(graft.__version__)')
echo "$cli_version; graft.__version__ $py_version"
[ "$cli_version" = "graft $py_version" ] || { echo "graft --version and graft.__version__ differ" >&2; exit 1; }
"$VENV/bin/graft" ops --json > /dev/null
echo "pip install: OK"
