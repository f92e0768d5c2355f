#!/usr/bin/python3
"""Fits under contention: each estimator's slowdown beside six busy processes
against the slowdown of the NumPy Fashion-MNIST script in the same rounds.

Every estimator is fitted on the fixed data set of its backends-*.toml
scenario (bench/scenarios; data seed 1, the middle size of the scenario's
sweep, the scenario's parameters, ε = 1 and the scenario's δ), with the
OpenBLAS plugins when bin/plugins-openblas exists (the gonum ones otherwise).
Each round runs every fit and bench/studies/pca/fmnist_numpy.py once at low
load, then starts BUSY processes that spin on the CPU, runs the same fits and
script again, and stops them; the order of the estimators alternates from
round to round. Every figure is the wall time of a whole process. Per
estimator: median low-load time, median loaded time, slowdown (loaded /
low-load medians) and the ratio of that slowdown to NumPy's. The goal of
issue 27 is a ratio of at most 1.5 for every estimator. The 1-minute load
average is recorded at the start and the end of every phase.

Run from the repository root after `make build` (and `make build
BACKEND=openblas` where OpenBLAS is present):

    /usr/bin/python3 bench/scripts/contention.py --rounds 5 --out bench/results/contention.md
"""

from __future__ import annotations

import argparse
import atexit
import glob
import json
import os
import shutil
import statistics as st
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FMNIST = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
SPIN = "while True:\n    pass\n"


def load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def cells(plugin_dir: str, only: list[str]) -> list[dict]:
    """One fit per backends scenario: its estimator, data and parameters."""
    out = []
    for f in sorted(glob.glob(str(ROOT / "bench/scenarios/backends-*.toml"))):
        sc = tomllib.loads(Path(f).read_text())
        v = next((v for v in sc["variants"] if v.get("plugin_dir", "bin/plugins") == plugin_dir), sc["variants"][0])
        if only and v["estimator"] not in only:
            continue
        data = dict(sc["data"].get("params", {}))
        if "sweep" in sc:
            vals = sc["sweep"]["values"]
            data[sc["sweep"]["param"]] = vals[len(vals) // 2]
        out.append({"estimator": v["estimator"], "model": sc["data"]["model"], "data": data,
                    "params": v.get("params", {}), "pure": v.get("pure", False),
                    "non_private": v.get("non_private", False), "delta": sc.get("delta", 1e-6)})
    return out


def timed(cmd: list[str], env: dict | None = None, timeout: float = 600) -> float | None:
    """The wall time of cmd, or None (with its last error line on stderr)
    when it fails or outlives timeout."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"{cmd[2] if len(cmd) > 2 else cmd}: timed out after {timeout} s", file=sys.stderr)
        return None
    if p.returncode != 0:
        print(f"{' '.join(cmd[:3])}: {p.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--busy", type=int, default=6, help="busy processes beside the fits")
    ap.add_argument("--only", default="", help="comma-separated estimators (default: every backends scenario's)")
    ap.add_argument("--out", help="also write the markdown report here")
    ap.add_argument("--log", help="append every measurement here as JSON lines")
    ap.add_argument("--from", dest="source", help="measure nothing: report the measurements of a --log file")
    args = ap.parse_args()
    if args.source:
        recs = [json.loads(line) for line in open(args.source)]
        names = list(dict.fromkeys(r["fit"] for r in recs))
        times = {n: {ph: [r["wall_s"] for r in recs if r["fit"] == n and r["phase"] == ph] for ph in ("low", "busy")} for n in names}
        failed = {n: 0 for n in names}
        loads = {ph: [f"{r['load_start']:.1f}" for r in recs if r["phase"] == ph and r["fit"] == names[0]] for ph in ("low", "busy")}
        args.rounds = max(r["round"] for r in recs)
        report(args, names, times, failed, loads, recs[0].get("plugins", "bin/plugins-openblas"))
        return
    dplr = str(ROOT / "bin/dplr")
    plugins = "bin/plugins-openblas" if (ROOT / "bin/plugins-openblas").is_dir() else "bin/plugins"
    work = Path(tempfile.mkdtemp(prefix="dplr-contention-"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    env = dict(os.environ, DPLR_HOME=str(work / "home"))
    todo = cells(plugins, [s for s in args.only.split(",") if s])
    fits = {}
    for c in todo:
        d = work / c["estimator"]
        gen = [dplr, "gen", c["model"], "--out", str(d), "--seed", "1"]
        for k, v in c["data"].items():
            gen += ["--set", f"{k}={v}"]
        if timed(gen, env) is None:
            raise SystemExit(f"dplr gen {c['model']} failed")
        cmd = [dplr, "fit", c["estimator"], "--plugin-dir", str(ROOT / plugins), "--data", str(d),
               "--out", str(work / "out"), "--json", "--quiet", "--seed", "1001"]
        if c["non_private"]:
            cmd.append("--non-private")
        else:
            cmd += ["--epsilon", "1"] + ([] if c["pure"] else ["--delta", str(c["delta"])])
        for k, v in c["params"].items():
            cmd += ["--set", f"{k}={v}"]
        fits[c["estimator"]] = cmd
    fits["numpy-fmnist"] = ["/usr/bin/python3", str(ROOT / "bench/studies/pca/fmnist_numpy.py"), FMNIST]
    names = list(fits)
    times = {n: {"low": [], "busy": []} for n in names}
    failed = {n: 0 for n in names}
    loads = {"low": [], "busy": []}
    for r in range(args.rounds):
        order = names if r % 2 == 0 else names[::-1]
        for phase in ("low", "busy"):
            spinners = []
            if phase == "busy":
                spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.busy)]
                time.sleep(2)
            start = load()
            try:
                for n in order:
                    t = timed(fits[n], env)
                    if t is None:
                        failed[n] += 1
                    else:
                        times[n][phase].append(t)
                    print(f"round {r + 1} {phase} {n} {t} s", file=sys.stderr)
                    if args.log:
                        with open(args.log, "a") as f:
                            f.write(json.dumps({"round": r + 1, "phase": phase, "fit": n, "wall_s": t, "load_start": start, "plugins": plugins}) + "\n")
            finally:
                loads[phase].append(f"{start:.1f}→{load():.1f}")
                for p in spinners:
                    p.kill()
                    p.wait()
    report(args, names, times, failed, loads, plugins)
    subprocess.run(["rm", "-rf", str(work)])


def report(args, names, times, failed, loads, plugins) -> None:
    """Print (and write to --out) the medians, slowdowns and ratios."""
    med = {n: {ph: st.median(v) if v else float("nan") for ph, v in times[n].items()} for n in names}
    np_slow = med["numpy-fmnist"]["busy"] / med["numpy-fmnist"]["low"]
    lines = [
        f"# Under contention: {args.busy} busy processes beside the fit",
        "",
        f"{args.rounds} interleaved rounds on {os.cpu_count()} CPUs; plugins {plugins}; each round every fit at low load, "
        f"then the same fits beside {args.busy} CPU-spinning processes. Wall time of whole processes, medians over rounds. "
        f"1-minute load average at the start and end of each phase: low {', '.join(loads['low'])}; "
        f"busy {', '.join(loads['busy'])}.",
        "",
        f"Command: `/usr/bin/python3 bench/scripts/contention.py --rounds {args.rounds} --busy {args.busy}` (after `make build`"
        + (" and `make build BACKEND=openblas`)." if "openblas" in plugins else ")."),
        "",
        "| fit | low load (s) | beside busy processes (s) | slowdown | slowdown / NumPy's | ≤ 1.5 | failed runs |",
        "|---|---|---|---|---|---|---|",
    ]
    worst = 0.0
    for n in names:
        s = med[n]["busy"] / med[n]["low"]
        ratio = s / np_slow
        if n != "numpy-fmnist":
            worst = max(worst, ratio if failed[n] == 0 else float("inf"))
        ok = "yes" if ratio <= 1.5 and failed[n] == 0 else "**no**"
        lines.append(f"| {n} | {med[n]['low']:.3f} | {med[n]['busy']:.3f} | {s:.2f}× | {ratio:.2f} | {ok} | {failed[n]} |")
    lines += ["", f"Largest ratio {worst:.2f} (∞: a run failed): the goal (every estimator ≤ 1.5× NumPy's slowdown) is {'met' if worst <= 1.5 else 'not met'}."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
