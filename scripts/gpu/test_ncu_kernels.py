"""scripts/gpu/ncu_kernels.py on inputs shaped like Nsight Compute's CSV and a tactic-trace build log."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_kernels  # noqa: E402

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n')


def row(i, name, unit, value):
    return (f'"{i}","1","graft","h","{name}","1","13","(256, 1, 1)","(49, 32, 1)","0","9.0",'
            f'"Command line profiler metrics","gpu__time_duration.sum","{unit}","{value}"\n')


def test_kernel_times_reads_units_and_thousands(tmp_path):
    p = tmp_path / "ncu.csv"
    p.write_text("==PROF== Connected to process 1\noutput: float32[32,1000]\n" + HEADER +
                 row(0, "void graft::<unnamed>::a_kernel<float>(const T1 *)", "ns", "20,800") +
                 row(1, "b_kernel", "usecond", "3.5") + row(2, "void graft::<unnamed>::a_kernel<float>(const T1 *)",
                                                            "nsecond", "1,000"))
    ks = ncu_kernels.kernel_times(str(p))
    assert [round(t, 3) for _, t in ks] == [20.8, 3.5, 1.0]
    assert ks[1][0] == "b_kernel"


def test_last_run_and_totals(tmp_path, capsys):
    p = tmp_path / "ncu.csv"
    p.write_text(HEADER + row(0, "k1", "ns", "100") + row(1, "k2", "ns", "200") + row(2, "k1", "ns", "1,000") +
                 row(3, "k2", "ns", "3,000"))
    ncu_kernels.print_kernels(str(p), runs=2, totals=True)
    out = capsys.readouterr().out
    assert "2 kernels, 4.0 us in all" in out  # the second run only
    assert "3.00 us    1x  k2" in out


def test_tactics_picks_the_fastest_of_each_problem(tmp_path, capsys):
    p = tmp_path / "build.log"
    p.write_text("[graft 0.1s] import\n"
                 "graft: tactic conv2d;x32x8x224x224;w64x7x7 algo 1 variant 1 ... 0.2030 ms\n"
                 "graft: tactic conv2d;x32x8x224x224;w64x7x7 algo 1 variant 0 ... 0.2500 ms\n"
                 "graft: tactic conv2d;x32x8x224x224;w64x7x7 graft kernel (variant 9) 0.0900 ms\n"
                 "graft: tactic conv2d;x32x64x56x56;w64x1x1 algo 0 via NCHW (variant 5) 0.0100 ms\n")
    ncu_kernels.print_tactics(str(p))
    out = capsys.readouterr().out
    assert "2 timed convolution problems" in out
    assert "best: graft kernel (variant 9) 0.0900 ms; next: algo 1 variant 1 0.2030, algo 1 variant 0 0.2500" in out
    assert "best: algo 0 via NCHW (variant 5) 0.0100 ms" in out
