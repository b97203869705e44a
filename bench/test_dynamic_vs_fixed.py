"""CPU smoke test of bench/dynamic_vs_fixed.py: one of the zoo's smoke models exported, its dynamic-profile and
fixed-shape CPU engines built and timed in turns, the records and the summary written."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _smoke_names():
    """The zoo's smoke models: torchvision's small ones where it is importable, else its own tiny ones."""
    import zoo
    return zoo.zoo_names(smoke=True)[0]


def test_smoke_in_turns(tmp_path):
    pytest.importorskip("torch")
    try:
        import graft  # noqa: F401
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"graft's bindings are not importable here: {e}")
    names = _smoke_names()
    cache, out = tmp_path / "cache", tmp_path / "out"
    env = dict(os.environ)
    subprocess.run([sys.executable, os.path.join(HERE, "zoo.py"), "--export-only", "--smoke", "--cache", str(cache),
                    "--models", names[0]], check=True, capture_output=True, text=True, env=env, timeout=240)
    p = subprocess.run([sys.executable, os.path.join(HERE, "dynamic_vs_fixed.py"), "--smoke", "--cache", str(cache),
                        "--models", names[0], "--rounds", "2", "--iters", "5", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    recs = json.loads((out / "dynamic_vs_fixed.json").read_text())
    assert [r["batch"] for r in recs] == [1, 4]
    for r in recs:
        assert r["status"] == "ok", r
        assert len(r["dynamic_rounds_ms"]) == len(r["fixed_rounds_ms"]) == 2
        assert r["dynamic_over_fixed"] == pytest.approx(r["dynamic_ms"] / r["fixed_ms"])
        assert r["dynamic_host_call_us"] > 0 and r["fixed_host_call_us"] > 0
        assert r["dynamic_vs_fixed_rel_err"] < 1e-5  # the same model in float32 on the CPU
        assert "function calls" in r["dynamic_call_profile"]
    md = (out / "dynamic_vs_fixed.md").read_text()
    assert f"| {names[0]} | 1 |" in md and "Where a call's host time goes" in md
    # A model missing from the cache is a row that says why, and a non-zero exit.
    p = subprocess.run([sys.executable, os.path.join(HERE, "dynamic_vs_fixed.py"), "--smoke", "--cache", str(cache),
                        "--models", names[1], "--batches", "1", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=240)
    assert p.returncode == 1
    recs = json.loads((out / "dynamic_vs_fixed.json").read_text())
    assert recs[0]["status"] == "error" and "no export in the cache" in recs[0]["reason"]
