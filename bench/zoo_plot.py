#!/usr/bin/env python3
"""Summary, table and plot of model-zoo records (bench/zoo.py); no torch needed.

    python3 bench/zoo_plot.py docs/results/zoo.json                       # summary + zoo.md + zoo.png beside it
    python3 bench/zoo_plot.py part0.json part1.json --out docs/results    # merge calls' records into one zoo.json

Records of the same (model, batch) from later files (and later in a file) replace earlier ones.
The plot needs matplotlib; without it the summary and table are still written, and it says so.
"""
import argparse
import datetime
import json
import math
import os
import sys

# The issue's targets (FP16, dynamic profile 1..32): what the summary checks.
TARGET_MODELS = 20
TARGET_GEOMEAN = 1.3
TARGET_ERR_RATIO = 2.0
TARGET_FIXED_GAP = 0.05  # a dynamic-profile engine within 5% of a fixed-shape one at the same shape
GRAFT_STAGES = ("model", "export", "graft_build", "graft_run")


def json_safe(v):
    """Strict JSON: NaN/inf become the strings "nan"/"inf"/"-inf"."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    return v


def num(v):
    """A record's number as a float (None when absent); "nan"/"inf" strings back to floats."""
    if v is None or isinstance(v, bool):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _ok(v):
    return v is not None and math.isfinite(v) and v > 0


def finalize(r):
    """Derived fields of one record: speedups, the error ratio, and status/stage/reason:
    ok        graft, eager and torch.compile measured; graft's error at most 2x PyTorch's FP16 error
    failed    graft has no number: `stage` is the first graft stage that failed (model, export,
              graft_build, graft_run), `reason` its message
    mismatch  graft measured, but its error is over 2x PyTorch's own FP16 error (or not finite).
              When PyTorch eager's FP16 output is not finite (swin_v2_t: F.normalize's 1e-12 is 0 in
              float16), torch.compile's FP16 error is the baseline instead (err_baseline says which);
              with neither finite, graft's error must merely be finite
    partial   graft measured and matching, but a peer or the reference is missing (stage/reason say which)"""
    g, e, c = num(r.get("graft_ms")), num(r.get("eager_ms")), num(r.get("compile_ms"))
    r["speedup_vs_compile"] = c / g if _ok(g) and _ok(c) else None
    r["speedup_vs_eager"] = e / g if _ok(g) and _ok(e) else None
    ge, te = num(r.get("graft_rel_err")), num(r.get("torch_fp16_rel_err"))
    r["err_baseline"] = "eager"
    if te is not None and not math.isfinite(te):
        ce = num(r.get("compile_rel_err"))
        if ce is not None and math.isfinite(ce):
            te, r["err_baseline"] = ce, "compile"
        else:
            r["err_baseline"] = "none finite"
    r["err_ratio"] = ge / te if ge is not None and te is not None and te > 0 and math.isfinite(te) else None
    r["status"], r["stage"], r["reason"] = "ok", None, None

    def first_bad(stages):
        for s in stages:
            st = r.get(f"{s}_status")
            if st != "ok":
                return s, st, r.get(f"{s}_reason") or (f"stage {s} did not run" if st is None else st)
        return None

    bad = first_bad(GRAFT_STAGES)
    if bad is not None or g is None:
        s, st, why = bad or ("graft_run", None, "no graft latency was recorded")
        r.update(status="failed", stage=s, reason=f"{st or 'not run'}: {why}")
        return r
    if r.get("reference_status") == "ok" and r.get("eager_status") == "ok":
        baseline_void = r["err_baseline"] == "none finite"
        if ge is None or te is None or not math.isfinite(ge) or not (baseline_void or ge <= TARGET_ERR_RATIO * te):
            peer = "torch_compile_fp16_rel_err" if r["err_baseline"] == "compile" else "torch_fp16_rel_err"
            r.update(status="mismatch", stage="accuracy",
                     reason=f"graft_rel_err {_e(ge)} > {TARGET_ERR_RATIO:g} x {peer} {_e(te)}")
            return r
    bad = first_bad(("reference", "eager", "compile"))
    if bad is not None:
        s, st, why = bad
        r.update(status="partial", stage=s, reason=f"{st or 'not run'}: {why}")
    return r


def _e(v):
    return "—" if v is None else f"{v:.2e}"


def _f(v, spec=".3f"):
    v = num(v)
    return "—" if v is None else format(v, spec)


def one_line(r):
    """A progress line for one record."""
    s = (f"graft {_f(r.get('graft_ms'))} ms, eager {_f(r.get('eager_ms'))} ms, compile {_f(r.get('compile_ms'))} ms, "
         f"err graft {_e(num(r.get('graft_rel_err')))} / torch fp16 {_e(num(r.get('torch_fp16_rel_err')))}: "
         f"{r.get('status')}")
    if r.get("stage"):
        s += f" [{r['stage']}] {r.get('reason')}"
    return s


def merge(record_lists):
    """Latest record per (model, batch), in first-seen model order."""
    by, order = {}, []
    for recs in record_lists:
        for r in recs:
            k = (r.get("model"), r.get("batch"))
            if k not in by:
                order.append(k)
            by[k] = r
    return [by[k] for k in order]


def _geomean(vals):
    vals = [v for v in vals if _ok(v)]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def summarize(records):
    """(text, facts): the summary the issue's targets are judged by."""
    recs = [finalize(dict(r)) for r in merge([records])]
    models = list(dict.fromkeys(r["model"] for r in recs))
    batches = sorted({r["batch"] for r in recs})
    by = {(r["model"], r["batch"]): r for r in recs}
    measured = [m for m in models if all(num(by.get((m, b), {}).get("graft_ms")) is not None for b in batches)]
    peer = "compile"
    if not any(num(r.get("compile_ms")) for r in recs):
        peer = "eager"  # e.g. a smoke run: no torch.compile numbers at all
    lines = []
    commits = sorted({str(r.get("commit")) for r in recs})
    gpus = sorted({str(r.get("gpu") or r.get("device")) for r in recs})
    dates = sorted(str(r.get("date")) for r in recs if r.get("date"))
    lines.append(f"zoo: {len(models)} models, graft measured at every batch for {len(measured)}; "
                 f"commit {', '.join(commits)}; {', '.join(gpus)}; "
                 f"{dates[0][:16] if dates else '?'} .. {dates[-1][:16] if dates else '?'}")
    if len(commits) > 1:
        lines.append(f"  note: records from {len(commits)} commits are mixed here")
    facts = {"models": len(models), "graft_measured": len(measured), "peer": peer, "geomean": {}, "slower": {},
             "worse_accuracy": [], "failed": []}
    for b in batches:
        sp = [num(by[(m, b)].get(f"speedup_vs_{peer}")) for m in models if (m, b) in by]
        sp = [v for v in sp if v is not None]
        gm = _geomean(sp)
        gm_e = _geomean([num(by[(m, b)].get("speedup_vs_eager")) for m in models if (m, b) in by])
        slower = [m for m in models if (m, b) in by and num(by[(m, b)].get(f"speedup_vs_{peer}")) is not None
                  and num(by[(m, b)][f"speedup_vs_{peer}"]) < 1.0]
        facts["geomean"][b], facts["slower"][b] = gm, slower
        lines.append(f"batch {b}: geomean {peer}_ms/graft_ms = {_f(gm, '.3f')} over {len(sp)} models"
                     + (f" (vs eager: {_f(gm_e, '.3f')})" if peer != "eager" else "")
                     + f"; slower than {peer}: {len(slower)}" + (f" ({', '.join(slower)})" if slower else ""))
    worse = []
    for m in models:
        for b in batches:
            r = by.get((m, b))
            if r is not None and r.get("status") == "mismatch":
                worse.append(f"{m} b{b} ({r.get('reason')})")
    facts["worse_accuracy"] = worse
    lines.append(f"graft_rel_err > {TARGET_ERR_RATIO:g} x torch_fp16_rel_err: {len(worse)}"
                 + ("".join(f"\n  - {w}" for w in worse)))
    # Rows whose PyTorch eager FP16 output was not finite were judged against torch.compile's FP16 error.
    other = [f"{r['model']} b{r['batch']} ({r['err_baseline']})" for r in recs if r.get("err_baseline") not in (None, "eager")]
    if other:
        lines.append("  PyTorch eager FP16 not finite, so judged against torch.compile FP16 (or only for a finite error): "
                     + ", ".join(other))
    # ONNX Runtime's CPU provider (FP32) on the same file: a second reference, independent of PyTorch.
    ort = [r for r in recs if num(r.get("ort_rel_err")) is not None]
    if ort:
        worst = max(ort, key=lambda r: num(r["ort_rel_err"]))
        vs = [r for r in ort if num(r.get("graft_vs_ort_rel_err")) is not None]
        lines.append(f"ONNX Runtime CPU FP32 reference at {len(ort)} rows: its error vs PyTorch FP32 at most "
                     f"{_e(num(worst['ort_rel_err']))} ({worst['model']} b{worst['batch']})"
                     + (f"; graft FP16 vs ONNX Runtime at most {_e(max(num(r['graft_vs_ort_rel_err']) for r in vs))}"
                        if vs else ""))
    facts["ort_rows"] = len(ort)
    failed = []
    for m in models:
        rs = [by[(m, b)] for b in batches if (m, b) in by and by[(m, b)].get("status") in ("failed", "partial")]
        seen = set()
        for r in rs:
            key = (r.get("status"), r.get("stage"), r.get("reason"))
            if key in seen:
                continue
            seen.add(key)
            bs = ",".join(str(x["batch"]) for x in rs if (x.get("status"), x.get("stage"), x.get("reason")) == key)
            failed.append(f"{m} b{bs}: {r['status']} at {r.get('stage')}: {r.get('reason')}")
    facts["failed"] = failed
    lines.append(f"failed or partial rows: {len(failed)}" + "".join(f"\n  - {f}" for f in failed))
    if peer == "compile":
        gms = [facts["geomean"].get(b) for b in batches]
        checks = [
            (f">= {TARGET_MODELS} models measured", len(measured) >= TARGET_MODELS, f"{len(measured)}"),
            (f"geomean >= {TARGET_GEOMEAN} x torch.compile at every batch",
             all(v is not None and v >= TARGET_GEOMEAN for v in gms), ", ".join(_f(v, ".2f") for v in gms)),
            ("no model slower than torch.compile", not any(facts["slower"].values()),
             f"{sum(len(v) for v in facts['slower'].values())} rows slower"),
            (f"graft error <= {TARGET_ERR_RATIO:g} x PyTorch FP16 error for every model", not worse,
             f"{len(worse)} rows over"),
        ]
        # Only where a call ran with --fixed-shape: the dynamic engine against a fixed-shape one.
        ratios = [(r["model"], r["batch"], num(r.get("dynamic_over_fixed"))) for r in recs
                  if num(r.get("dynamic_over_fixed")) is not None]
        if ratios:
            over = [f"{m} b{b} {v:.2f}x" for m, b, v in ratios if v > 1 + TARGET_FIXED_GAP]
            checks.append((f"dynamic engine within {TARGET_FIXED_GAP:.0%} of a fixed-shape one", not over,
                           f"{len(ratios)} rows, {len(over)} over" + (": " + ", ".join(over) if over else "")))
        # The issue sets its targets on the H200: a run on another GPU says so beside them.
        where = "" if gpus and all("H200" in g for g in gpus) else f", set for the H200; measured on {', '.join(gpus)}"
        lines.append(f"targets (issue 14{where}): " + "; ".join(f"{name}: {'MET' if ok else 'MISSED'} ({v})"
                                                        for name, ok, v in checks))
    return "\n".join(lines), recs, facts


def markdown(records, summary_text):
    recs = [finalize(dict(r)) for r in merge([records])]
    out = ["# Model zoo: graft (dynamic batch profile) vs PyTorch eager FP16 vs torch.compile FP16", "",
           "Written by `bench/zoo.py` (see bench/README.md). Latency: median ms (CUDA events); speedup = peer ms / "
           "graft ms (> 1: graft faster); rel err = ||y - y_fp32|| / ||y_fp32|| against PyTorch eager FP32.", "",
           "```", summary_text, "```", "",
           "| model | batch | graft ms | eager ms | compile ms | vs compile | vs eager | graft err | torch fp16 err "
           "| exporter | build s | status |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"]
    for r in recs:
        st = r["status"] if r["status"] == "ok" else f"{r['status']} ({r.get('stage')}): {r.get('reason')}"
        st = str(st).replace("|", "/")[:300]
        out.append(f"| {r.get('model')} | {r.get('batch')} | {_f(r.get('graft_ms'))} | {_f(r.get('eager_ms'))} | "
                   f"{_f(r.get('compile_ms'))} | {_f(r.get('speedup_vs_compile'), '.2f')} | "
                   f"{_f(r.get('speedup_vs_eager'), '.2f')} | {_e(num(r.get('graft_rel_err')))} | "
                   f"{_e(num(r.get('torch_fp16_rel_err')))} | {r.get('exporter') or '—'} | "
                   f"{_f(r.get('graft_build_s'), '.1f')} | {st} |")
    return "\n".join(out) + "\n"


def plot(records, path, facts):
    """Speedup vs torch.compile (or eager when there is no compile number) per model and batch, log
    scale, and graft's error relative to PyTorch's FP16 error. Returns the path or None."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("zoo_plot: matplotlib is not importable: no plot written", file=sys.stderr, flush=True)
        return None
    recs = [finalize(dict(r)) for r in merge([records])]
    peer = facts["peer"]
    batches = sorted({r["batch"] for r in recs})
    by = {(r["model"], r["batch"]): r for r in recs}
    models = list(dict.fromkeys(r["model"] for r in recs))

    def key(m):  # slowest first; models without a number at the end
        vals = [num(by.get((m, b), {}).get(f"speedup_vs_{peer}")) for b in batches]
        vals = [v for v in vals if v is not None]
        return (0, min(vals)) if vals else (1, 0.0)

    models.sort(key=key)
    fig, axes = plt.subplots(2, 1, figsize=(min(48, max(10, 0.32 * len(models) * len(batches) + 3)), 9), sharex=True,
                             gridspec_kw={"height_ratios": [3, 2]})
    width = 0.8 / len(batches)
    colors = ["#4c72b0", "#dd8452", "#55a868", "#c44e52"]
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    for panel, (ax, field, ref_lines, ylabel) in enumerate([
            (axes[0], f"speedup_vs_{peer}", [(1.0, "parity"), (TARGET_GEOMEAN, f"target {TARGET_GEOMEAN:g}x")],
             f"{peer} ms / graft ms (log)"),
            (axes[1], "err_ratio", [(1.0, ""), (TARGET_ERR_RATIO, f"limit {TARGET_ERR_RATIO:g}x")],
             "graft FP16 err / torch FP16 err (log)")]):
        handles, seen = [], [y for y, _ in ref_lines]
        for i, b in enumerate(batches):
            xs, ys, miss = [], [], []
            for j, m in enumerate(models):
                x = j + (i - (len(batches) - 1) / 2) * width
                v = num(by.get((m, b), {}).get(field))
                if v is not None and v > 0 and math.isfinite(v):
                    xs.append(x)
                    ys.append(v)
                else:
                    miss.append(x)
            color = colors[i % len(colors)]
            ax.bar(xs, ys, width, color=color)
            seen += ys
            for x in miss:  # no number (failed, timed out, not run): an x on the axis
                ax.plot([x], [0.03], marker="x", color=color, transform=ax.get_xaxis_transform(), clip_on=False)
            label = f"batch {b}" + (f" (geomean {_f(facts['geomean'].get(b), '.2f')})" if panel == 0 else "")
            handles.append(Patch(color=color, label=label))  # a proxy: a batch without any bar keeps its colour
        for y, name in ref_lines:
            ax.axhline(y, color="gray", lw=0.8, ls="-" if y == 1.0 else "--")
            if name:
                ax.text(-0.45, y, f" {name}", va="bottom", ha="left", fontsize=7, color="gray")
        ax.set_yscale("log")
        ax.set_ylim(min(seen) / 1.25, max(seen) * 1.25)  # the reference lines always in view
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlim(-0.6, len(models) - 0.4)
        ax.set_ylabel(ylabel)
        ax.legend(handles=handles, fontsize=8, loc="upper right")
        ax.grid(axis="y", which="major", alpha=0.3)
    axes[1].set_xticks(range(len(models)))
    axes[1].set_xticklabels(models, rotation=60, ha="right", fontsize=7)
    commits = ", ".join(sorted({str(r.get("commit")) for r in recs}))
    gpus = ", ".join(sorted({str(r.get("gpu") or r.get("device")) for r in recs}))
    axes[0].set_title(f"graft FP16, dynamic batch profile, vs torch {peer} FP16: {len(models)} models "
                      f"({gpus}, commit {commits}; x: no number)", fontsize=9)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_all(records, out_dir, plot_path=None):
    """zoo.md and the plot into out_dir; returns the summary text."""
    text, _, facts = summarize(records)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "zoo.md"), "w") as f:
        f.write(markdown(records, text))
    try:
        p = plot(records, plot_path or os.path.join(out_dir, "zoo.png"), facts)
    except Exception as e:  # noqa: BLE001 - the records and the table matter more than the picture
        print(f"zoo_plot: the plot failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        p = None
    return text + f"\nwrote {os.path.join(out_dir, 'zoo.md')}" + (f", {p}" if p else " (no plot, see above)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="zoo.json files (lists of records)")
    ap.add_argument("--out", default=None, help="directory for zoo.json (merged), zoo.md, zoo.png "
                                                "(default: beside the first file, without rewriting zoo.json)")
    ap.add_argument("--plot", default=None, help="plot path (default <out>/zoo.png)")
    args = ap.parse_args(argv)
    lists = []
    for p in args.files:
        with open(p) as f:
            data = json.load(f)
        lists.append(data.get("records", []) if isinstance(data, dict) else data)
    records = merge(lists)
    out = args.out or os.path.dirname(os.path.abspath(args.files[0]))
    if args.out:
        os.makedirs(out, exist_ok=True)
        tmp = os.path.join(out, f"zoo.json.tmp{os.getpid()}")
        with open(tmp, "w") as f:
            json.dump(json_safe(records), f, indent=1)
        os.replace(tmp, os.path.join(out, "zoo.json"))
    print(write_all(records, out, args.plot))
    print(f"({len(records)} records, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
