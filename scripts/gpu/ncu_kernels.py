#!/usr/bin/env python3
"""Per-kernel GPU time from the GPU suite's Nsight Compute CSVs (zprofile with ZPROFILE_NCU=1), and
the convolution tactics a GRAFT_TACTIC_TRACE=1 build log timed. Standard library only.

    python3 scripts/gpu/ncu_kernels.py ncu_mobilenet_v2_b32.csv [...]   # kernels of the last run, in order
    python3 scripts/gpu/ncu_kernels.py --runs 2 --totals ncu_*.csv       # the second of two runs, plus per-name sums
    python3 scripts/gpu/ncu_kernels.py --tactics profile_resnet18_b32_fp16_dynamic.txt

The CSV holds one gpu__time_duration row per kernel launch (ncu --csv --metrics
gpu__time_duration.sum); `graft run --iterations N --warmup 0` launches the engine's kernels once per
run, so --runs N keeps the last 1/N of the rows: one run with warm caches and chosen tactics.
"""
import argparse
import collections
import csv
import io
import re
import sys

_UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}


def kernel_times(path):
    """[(kernel name, microseconds)] in launch order."""
    with open(path, encoding="utf-8", errors="replace") as f:
        rows = [line for line in f if line.startswith('"')]  # ncu's own log lines are not quoted
    out = []
    for r in csv.DictReader(io.StringIO("".join(rows))):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        scale = _UNITS.get(r.get("Metric Unit", "ns"), 1e-3)
        out.append((r["Kernel Name"], float(r["Metric Value"].replace(",", "")) * scale))
    return out


def short(name, width=110):
    name = name.replace("void graft::<unnamed>::", "").replace("(anonymous namespace)::", "")
    return name if len(name) <= width else name[: width - 3] + "..."


def print_kernels(path, runs, totals):
    ks = kernel_times(path)
    if not ks:
        print(f"== {path}: no gpu__time_duration rows")
        return
    last = ks[len(ks) - len(ks) // runs:] if runs > 1 else ks
    print(f"== {path}: {len(last)} kernels, {sum(t for _, t in last):.1f} us in all (ncu runs kernels one at a time)")
    for name, t in last:
        print(f"{t:9.2f} us  {short(name)}")
    if totals:
        by = collections.defaultdict(lambda: [0, 0.0])
        for name, t in last:
            key = short(name.split("(")[0], 80)
            by[key][0] += 1
            by[key][1] += t
        print("-- per kernel name")
        for key, (n, t) in sorted(by.items(), key=lambda kv: -kv[1][1]):
            print(f"{t:9.2f} us  {n:3d}x  {key}")


_TACTIC = re.compile(r"graft: tactic (?P<key>\S+) (?P<what>.*?) (?P<ms>[0-9.]+) ms$")


def print_tactics(path):
    """Per convolution problem: every timed (algorithm, variant) and the fastest."""
    by = collections.OrderedDict()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = _TACTIC.search(line.strip().replace(" ...", ""))
            if m:
                by.setdefault(m["key"], []).append((float(m["ms"]), m["what"]))
    print(f"== {path}: {len(by)} timed convolution problems")
    for key, timed in by.items():
        timed.sort()
        best = timed[0]
        rest = ", ".join(f"{w} {ms:.4f}" for ms, w in timed[1:4])
        print(f"{key}\n    best: {best[1]} {best[0]:.4f} ms; next: {rest}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--runs", type=int, default=1, help="runs the CSV holds; the last one is printed")
    ap.add_argument("--totals", action="store_true", help="also sum the time per kernel name")
    ap.add_argument("--tactics", action="store_true", help="the files are build logs with GRAFT_TACTIC_TRACE=1")
    a = ap.parse_args(argv)
    for path in a.files:
        if a.tactics:
            print_tactics(path)
        else:
            print_kernels(path, max(1, a.runs), a.totals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
