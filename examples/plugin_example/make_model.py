#!/usr/bin/env python3
"""Writes clamped_swish.onnx: y = ClampedSwish(x; beta, limit) + b, x: [batch, 8] float32.

Needs the onnx Python package (Debian: python3-onnx; run with /usr/bin/python3).
  /usr/bin/python3 make_model.py [--beta 1.5] [--limit 3.0] [-o clamped_swish.onnx]
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--beta", type=float, default=1.5)
    p.add_argument("--limit", type=float, default=3.0)
    p.add_argument("-o", "--output", default="clamped_swish.onnx")
    a = p.parse_args()

    bias = numpy_helper.from_array(np.linspace(-0.5, 0.5, 8, dtype=np.float32), name="b")
    # The custom node: its domain is the plugin's; its attributes are typed (FLOAT here).
    swish = helper.make_node("ClampedSwish", ["x"], ["s"], name="swish0", domain="ai.example",
                             beta=a.beta, limit=a.limit)
    add = helper.make_node("Add", ["s", "b"], ["y"], name="add0")
    graph = helper.make_graph(
        [swish, add], "clamped_swish_example",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        initializer=[bias])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.example", 1)])
    model.ir_version = 8
    onnx.save(model, a.output)
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
