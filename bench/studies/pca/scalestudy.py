#!/usr/bin/python3
"""Private per-feature scaling study (issue 17 §1): pca-analyze-gauss with and
without feature_scale=private, interleaved fresh-noise fits through the host.

Each fit's scores are x·diag(1/s)·U (s the released feature_scale, or ones);
they span B = diag(1/s)·U in the raw space. Two centred captured-variance
ratios are computed for that span (evaluation only, outside dplr):

  raw          tr(QᵀCQ)/(top-r of C), C the raw rows' covariance, Q an
               orthonormal basis of B (what a user without scaling wants);
  standardised the same in the space of the rows divided by their empirical
               deviations d (what StandardScaler + PCA targets): basis
               diag(d/s)·U, covariance D⁻¹CD⁻¹.

Data: --synthetic writes a 3-spike data set in p = 30 columns whose scales
span 10³ (n = 20000; the same construction as TestFeatureScaleImprovesMultiScale,
with NumPy's generator) to --workdir; --fmnist uses the Fashion-MNIST training
images scaled to [0, 1].

Usage: scalestudy.py (--synthetic | --fmnist) --eps 0.5,1 --reps 10 --rank R
"""
import argparse
import gzip
import json
import os
import shlex
import statistics as st
import subprocess

import numpy as np

FMNIST = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"


def synthetic(workdir, n=20000, p=30, lam=(30, 20, 10), seed=5):
    rng = np.random.default_rng(seed)
    w, _ = np.linalg.qr(rng.standard_normal((p, len(lam))))
    f = rng.standard_normal((n, len(lam))) * np.sqrt(lam)
    z = f @ w.T + rng.standard_normal((n, p))
    d = 10.0 ** (-3 * np.arange(p) / (p - 1))
    x = (z + 3) * d
    path = os.path.join(workdir, "multiscale.npy")
    np.save(path, x)
    return x, ["--data", path]


def fmnist():
    with gzip.open(FMNIST) as f:
        b = f.read()
    x = np.frombuffer(b, dtype=np.uint8, offset=16).reshape(-1, 784).astype(np.float64) / 255
    return x, ["--data", FMNIST, "--scale", "0.00392156862745098"]


def load_matrix(out, rep, name):
    for m in rep["outputs"]["matrices"]:
        if m["name"] == name:
            if m.get("file"):
                return np.load(os.path.join(out, m["file"]))
            return np.array(m["value"], dtype=float)
    return None


def ratio(c, basis, r):
    q, _ = np.linalg.qr(basis)
    top = np.sort(np.linalg.eigvalsh(c))[::-1][:r].sum()
    return float(np.trace(q.T @ c @ q) / top)


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--synthetic", action="store_true")
    g.add_argument("--fmnist", action="store_true")
    ap.add_argument("--eps", default="1")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--rank", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/scalestudy")
    ap.add_argument("--plugin-dir", default="bin/plugins-openblas")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    x, data_args = synthetic(a.workdir) if a.synthetic else fmnist()
    c = np.cov(x.T, bias=True)
    d = np.sqrt(np.diag(c))
    d[d == 0] = 1  # constant columns: any scale
    cz = c / np.outer(d, d)
    variants = [("feature_scale=private", ["feature_scale=private"]), ("no scaling", [])]
    cells = {}
    out = os.path.join(a.workdir, "out")
    for rep in range(a.reps):
        for e in [float(v) for v in a.eps.split(",")]:
            for name, extra in variants:
                cmd = ["bin/dplr", "fit", "pca-analyze-gauss", "--plugin-dir", a.plugin_dir, "--json", "--quiet",
                       "--seed", str(5000 + 31 * rep + int(1000 * e)), "--epsilon", str(e), "--delta", "1e-6",
                       "--out", out, "--set", "rank=%d" % a.rank, "--set", "center=private"] + data_args
                for kv in extra:
                    cmd += ["--set", kv]
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode != 0:
                    raise SystemExit("fit failed: %s\n%s" % (shlex.join(cmd), p.stderr))
                rep_json = json.loads(p.stdout)
                u = load_matrix(out, rep_json, "U")
                s = load_matrix(out, rep_json, "feature_scale")
                s = np.ones(x.shape[1]) if s is None else s.reshape(-1)
                cell = (ratio(c, u / s[:, None], a.rank), ratio(cz, (d / s)[:, None] * u, a.rank))
                cells.setdefault((name, e), []).append(cell)
                print("# rep %d, ε = %g, %s: raw %.4f, standardised %.4f" % (rep, e, name, *cell), flush=True)
    print("| variant | ε | raw centred ratio (median) | quartiles | standardised centred ratio (median) | quartiles | fits |")
    print("|---|---|---|---|---|---|---|")
    for (name, e), v in cells.items():
        raw = [t[0] for t in v]
        std = [t[1] for t in v]
        qr = st.quantiles(raw, n=4) if len(raw) > 1 else [raw[0]] * 3
        qs = st.quantiles(std, n=4) if len(std) > 1 else [std[0]] * 3
        print("| %s | %g | %.3f | %.3f–%.3f | %.3f | %.3f–%.3f | %d |" % (
            name, e, st.median(raw), qr[0], qr[2], st.median(std), qs[0], qs[2], len(v)))


if __name__ == "__main__":
    main()
