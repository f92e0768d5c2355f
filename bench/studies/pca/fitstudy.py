#!/usr/bin/env python3
"""Interleaved fresh-noise study through the host (issue 17 §1, §4).

Runs `bin/dplr fit` for every repetition, ε and variant, interleaved round by
round (rep → ε → variant) so that machine load hits every variant alike, with
a fresh noise seed per fit, and prints one markdown row per (variant, ε):
median and quartiles of the centred captured-variance ratio, the median
‖sin Θ(U, truth)‖₂ when the data carry a truth, median private estimates
(σ², λ_1, λ_r) when released, and how many fits failed (with the first
reason). Raw results are appended to --log as JSON lines.

Usage:
  fitstudy.py --data-args "--data DIR" --eps 0.5,1,2 --reps 10 --log FILE \
      --variant 'NAME|ESTIMATOR|k=v;k=v' [--variant ...] [--delta 1e-6]
"""
import argparse
import json
import shlex
import statistics as st
import subprocess
import sys


def run(args, est, params, eps, seed):
    cmd = ["bin/dplr", "fit", est, "--plugin-dir", args.plugin_dir, "--json", "--quiet",
           "--seed", str(seed), "--epsilon", str(eps), "--delta", str(args.delta),
           "--out", args.out] + shlex.split(args.data_args)
    for kv in params:
        cmd += ["--set", kv]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        return {"error": lines[-1] if lines else "exit %d" % p.returncode}
    r = json.loads(p.stdout)
    out = {m["name"]: m["value"] for m in r.get("metrics", [])}
    out.update({s["name"]: s["value"] for s in r["outputs"].get("scalars", [])})
    for s in r["outputs"].get("series", []):
        out[s["name"]] = s["values"]
    return out


def quart(v):
    q = st.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return "%.3f–%.3f" % (q[0], q[2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-args", required=True)
    ap.add_argument("--eps", default="1")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--variant", action="append", required=True)
    ap.add_argument("--plugin-dir", default="bin/plugins-openblas")
    ap.add_argument("--out", default="/tmp/fitstudy-out")
    ap.add_argument("--log", default="/tmp/fitstudy.jsonl")
    a = ap.parse_args()
    variants = []
    for v in a.variant:
        name, est, params = (v.split("|") + [""])[:3]
        variants.append((name, est, [kv for kv in params.split(";") if kv]))
    eps = [float(e) for e in a.eps.split(",")]
    cells = {}
    with open(a.log, "a") as log:
        for rep in range(a.reps):
            for e in eps:
                for name, est, params in variants:
                    seed = 7000 + 97 * rep + int(e * 1000)
                    r = run(a, est, params, e, seed)
                    r.update({"variant": name, "epsilon": e, "rep": rep})
                    log.write(json.dumps(r) + "\n")
                    log.flush()
                    cells.setdefault((name, e), []).append(r)
    print("| variant | ε | centred ratio (median) | quartiles | sin Θ₂ (median) | σ² est. | λ₁ est. | λ_r est. | failed |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, _, _ in variants:
        for e in eps:
            rs = cells[(name, e)]
            ok = [r for r in rs if "error" not in r]
            bad = [r for r in rs if "error" in r]
            cv = [r["captured_variance_ratio"] for r in ok if "captured_variance_ratio" in r]
            sin = [r["U.sin_theta_spectral"] for r in ok if "U.sin_theta_spectral" in r]
            s2 = [r["sigma2_estimate"] for r in ok if "sigma2_estimate" in r]
            l1 = [r["lambda_estimate"][0] for r in ok if "lambda_estimate" in r]
            lr = [r["lambda_estimate"][-1] for r in ok if "lambda_estimate" in r]
            f = lambda v, fmt="%.3f": (fmt % st.median(v)) if v else "–"
            fail = "%d/%d" % (len(bad), len(rs))
            print("| %s | %g | %s | %s | %s | %s | %s | %s | %s |" % (
                name, e, f(cv), quart(cv) if cv else "–", f(sin), f(s2, "%.4g"), f(l1, "%.4g"), f(lr, "%.4g"), fail))
    for name, _, _ in variants:
        for e in eps:
            bad = [r for r in cells[(name, e)] if "error" in r]
            if bad:
                print("\n%s, ε = %g, first failure: %s" % (name, e, bad[0]["error"]), file=sys.stdout)


if __name__ == "__main__":
    main()
