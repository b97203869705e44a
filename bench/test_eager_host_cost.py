"""The parts of bench/eager_host_cost.py that run off the GPU machine's path: reading the engine's
"eager host time by op" trace line, and catching the process's stderr (where the C++ engine writes
it) around a call. The script itself needs CUDA and torchvision; the GPU suite's eagercost step runs it."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import eager_host_cost as ehc  # noqa: E402

LINE = (ehc.TRACE_PREFIX + "59 layers, 1083.7 us, 999.9 us in the ops' calls; op layers us (us in the op's call): "
        "GraftConv 53 1035.8 (959.1); Add (CPU) 2 19.3 (18.1); Flatten 1 0.8 (0.0)")


def test_parse_host_by_op():
    r = ehc.parse_host_by_op(LINE)
    assert (r["traced_layers"], r["traced_us"], r["traced_op_calls_us"]) == (59, 1083.7, 999.9)
    assert r["host_by_op"] == [
        {"op": "GraftConv", "layers": 53, "us": 1035.8, "op_call_us": 959.1},
        {"op": "Add (CPU)", "layers": 2, "us": 19.3, "op_call_us": 18.1},  # an op type of two words
        {"op": "Flatten", "layers": 1, "us": 0.8, "op_call_us": 0.0},
    ]


def test_traced_reads_the_last_line_written_to_fd_2():
    def fn():
        os.write(2, (LINE.replace("59 layers", "1 layers") + "\nnot a trace line\n" + LINE + "\n").encode())
        return 7
    result, parsed = ehc.traced(fn)
    assert result == 7
    assert parsed["traced_layers"] == 59


def test_traced_without_a_trace_line():
    result, parsed = ehc.traced(lambda: "x")
    assert (result, parsed) == ("x", {})
