#!/usr/bin/env python3
"""Writes the ONNX backend suite's node cases of a newer onnx release as test data, in the layout of
onnx/backend/test/data/node (model.onnx and test_data_set_N/{input,output}_K.pb per case), so that
graft_conformance can run them (issue 16: "the newer ONNX suite").

Why this exists: the GPU machine's onnx wheel (1.23) ships neither the suite's data nor its node case
modules, and Debian's libonnx-testdata is onnx 1.12's. The case modules are Python that compute the
expected outputs with numpy and onnx.reference, so they need an onnx of their own release. Give this
script the `onnx/backend/test/case` tree of the installed onnx's release (from onnx's repository, kept
outside graft's tree) as --case-root (the folder that holds `onnx/backend/test/case`): it is put ahead
of the installed package's, the cases are collected, and each is written out.

    python3 scripts/gpu/gen_onnx_node_suite.py --case-root /path/to/overlay --out /tmp/onnx_suite

Prints how many cases were written, and those that failed to generate (named, with the error).
"""
import argparse
import os
import shutil
import sys


def write_value(path, value, value_info, numpy_helper, TensorProto):
    """One input or output .pb file: a tensor, sequence, optional or map, as the graph declares it."""
    kind = value_info.type.WhichOneof("value")
    name = value_info.name
    if kind == "map_type":
        proto = numpy_helper.from_dict(value, name)
    elif kind == "sequence_type":
        proto = numpy_helper.from_list(value, name)
    elif kind == "optional_type":
        proto = numpy_helper.from_optional(value, name)
    elif isinstance(value, TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(value, name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case-root", required=True, help="folder holding onnx/backend/test/case of the installed onnx's release")
    ap.add_argument("--out", required=True, help="where node/<case>/ folders are written")
    args = ap.parse_args()

    import onnx
    import onnx.backend.test as suite
    from onnx import TensorProto, numpy_helper

    overlay = os.path.join(os.path.abspath(args.case_root), "onnx", "backend", "test")
    if not os.path.isdir(os.path.join(overlay, "case", "node")):
        sys.exit(f"gen_onnx_node_suite: {overlay}/case/node is not there")
    for name in [m for m in sys.modules if m.startswith("onnx.backend.test.case")]:
        del sys.modules[name]
    suite.__path__.insert(0, overlay)
    import onnx.backend.test.case.node as node_cases
    if not node_cases.__file__.startswith(overlay):
        sys.exit(f"gen_onnx_node_suite: the case modules came from {node_cases.__file__}, not the overlay")

    cases = node_cases.collect_testcases()
    out_root = os.path.join(args.out, "node")
    os.makedirs(out_root, exist_ok=True)
    written, failed = 0, []
    for case in cases:
        case_dir = os.path.join(out_root, case.name)
        try:
            if os.path.exists(case_dir):
                shutil.rmtree(case_dir)
            os.makedirs(case_dir)
            with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
                f.write(case.model.SerializeToString())
            graph = case.model.graph
            for i, (inputs, outputs) in enumerate(case.data_sets):
                ds = os.path.join(case_dir, f"test_data_set_{i}")
                os.makedirs(ds)
                for j, v in enumerate(inputs):
                    write_value(os.path.join(ds, f"input_{j}.pb"), v, graph.input[j], numpy_helper, TensorProto)
                for j, v in enumerate(outputs):
                    write_value(os.path.join(ds, f"output_{j}.pb"), v, graph.output[j], numpy_helper, TensorProto)
            written += 1
        except Exception as e:  # one case's failure is reported, not fatal to the rest
            shutil.rmtree(case_dir, ignore_errors=True)
            failed.append(f"{case.name}: {type(e).__name__}: {e}")
    print(f"onnx {onnx.__version__}: {written} node cases written to {out_root}, {len(failed)} failed")
    for line in failed[:40]:
        print("  " + line)


if __name__ == "__main__":
    main()
