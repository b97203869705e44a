"""Shared fixtures for graft's Python tests.

Run: PYTHONPATH=python:build-python/python GRAFT_TEST_PLUGIN=build-python/tests/python/graft_python_test_ops.so \
     /usr/bin/python3 -m pytest -q tests/python   (or ctest -R python in the build dir)
Every test draws fresh random data; the seed is printed on failure (pytest shows captured stdout).
"""
import glob
import os
import random
import sys

import pytest

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.join(_REPO, "python") not in sys.path:
    sys.path.insert(0, os.path.join(_REPO, "python"))

torch = pytest.importorskip("torch")


def _test_plugin_path():
    p = os.environ.get("GRAFT_TEST_PLUGIN")
    if p:
        return p
    hits = sorted(glob.glob(os.path.join(_REPO, "build*", "tests", "python", "*graft_python_test_ops.so")))
    return hits[0] if hits else None


@pytest.fixture(scope="session")
def graft_mod():
    import graft
    plugin = _test_plugin_path()
    if plugin:
        graft.load_plugin(plugin)
    from graft import _registry
    _registry.ensure_loaded()
    return graft


@pytest.fixture(scope="session")
def graft_op(graft_mod):
    """graft_op(name): graft.ops' function for the registered op `name`; the test skips where the
    torch extension lacks it (a build without torch, or an op left out)."""
    def find(name):
        from graft import _registry
        try:
            info = _registry.find(name)
        except Exception as e:  # noqa: BLE001
            pytest.skip(f"graft's torch extension has no {name}: {e}")
        return getattr(graft_mod.ops, info.python_name)
    return find


@pytest.fixture(scope="session")
def has_test_plugin(graft_mod):
    return _test_plugin_path() is not None


@pytest.fixture
def seed():
    s = random.randrange(1 << 31)
    torch.manual_seed(s)
    print(f"[graft test] random seed {s}")
    return s


@pytest.fixture
def tmp_onnx(tmp_path):
    return str(tmp_path / "model.onnx")
