#!/usr/bin/env python3
"""pca-cxz with rank=auto on real data, through the host (issue 28, item 3).

For every data set, ε and repetition (fresh noise seed each) it runs
`bin/dplr fit pca-cxz --set rank=auto --set center=private` and
`bin/dplr fit pca-analyze-gauss` at the rank pca-cxz kept (rank 1 when it
kept none), both with evaluate=true, and prints one markdown row per
(data set, ε): how the pca-cxz runs ended (full fit, planned stop, charged
failure), the median rank kept, the median centred captured-variance ratio
of each estimator at that rank, and the median ε the ledger charged
pca-cxz (the guarantee's ε of a planned stop is its achieved composition).

Data: scikit-learn's digits (1797×64, raw pixel values 0–16), the
Fashion-MNIST training images (60000×784, pixels scaled to [0, 1]), and two
tables standardised with public scales (breast_cancer 569×30, wine 178×13:
each column centred and divided by its deviation before the fit, the
standardised space users judge PCA in).

Run from the repository root after building bin/dplr and the pca plugin
(`go build -o bin/dplr ./cmd/dplr && go build -o bin/plugins/ ./plugins/pca/cmd/dplr-pca`):

    DPLR_HOME=$(mktemp -d) /usr/bin/python3 bench/studies/pca/cxzstudy.py --reps 5 --eps 1,2,4

Extra pca-cxz parameters: --set k=v (repeatable); --rank N fits a fixed
rank instead (the "rank kept" column then shows N, and the planned stops
are those of a requested spike that does not stand out). --worst runs
pca-cxz's worst-case mode (sensitivity=worst-case) with each data set's
public clip (CLIPS), and gives Analyze Gauss the same clip.

--grid runs the spiked-model regime table instead (`dplr gen spiked`, one
data set per (n, p, λ), fresh noise per run): the model-based mode with σ²
and λ given (both stages, and pca_only) and with them estimated, the worst-case mode and Analyze Gauss,
all at rank 2 with the same public clip (1.2 × the model's typical row norm
√(p + Σλ)), reporting the median ‖sin Θ(Û, U)‖₂ against the truth.
"""
import argparse
import json
import os
import statistics as st
import subprocess
import tempfile

import numpy as np

FMNIST = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"


def datasets(tmp):
    """Name → extra dplr fit arguments."""
    from sklearn import datasets as sk

    out = {}
    np.save(os.path.join(tmp, "digits.npy"), sk.load_digits().data.astype(float))
    out["digits"] = ["--data", os.path.join(tmp, "digits.npy")]
    if os.path.exists(FMNIST):
        out["fashion-mnist"] = ["--data", FMNIST, "--scale", repr(1 / 255)]
    for name, load in [("breast_cancer", sk.load_breast_cancer), ("wine", sk.load_wine)]:
        x = load().data.astype(float)
        x = (x - x.mean(0)) / x.std(0)
        path = os.path.join(tmp, name + ".npy")
        np.save(path, x)
        out[name] = ["--data", path]
    return out


# Public row-norm clips for --worst (after centring): digits' pixels lie in
# [0, 16], Fashion-MNIST's in [0, 1]; the standardised tables' clip is a
# round number above most rows' norm (rows beyond it are clipped).
CLIPS = {"digits": 60, "fashion-mnist": 15, "breast_cancer": 10, "wine": 6}


def fit(est, data, eps, seed, params, out):
    cmd = ["bin/dplr", "fit", est, "--plugin-dir", "bin/plugins", "--json", "--quiet", "--seed", str(seed),
           "--epsilon", str(eps), "--delta", "1e-6", "--out", out] + data
    for kv in params:
        cmd += ["--set", kv]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        return {"error": lines[-1] if lines else "exit %d" % p.returncode, "exit": p.returncode}
    r = json.loads(p.stdout)
    o = {s["name"]: s["value"] for s in r["outputs"].get("scalars", [])}
    o.update({m["name"]: m["value"] for m in r.get("metrics", [])})
    o["notes"] = r.get("notes", [])
    o["epsilon_spent"] = r["privacy"]["epsilon"]
    return o


def med(v, fmt="%.3f"):
    return fmt % st.median(v) if v else "–"


def grid(a):
    """The spiked-model regime table (--grid)."""
    cells = [(int(n), int(p), float(l)) for n, p, l in (c.split(":") for c in a.cells.split(","))]
    eps = [float(e) for e in a.eps.split(",")]
    print("| n | p | λ (spikes 1.2λ, λ; σ² = 1) | ε | model, σ² λ given | model, given, pca_only | model, estimated | worst-case | worst-case stops | analyze-gauss |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n, p, lam in cells:
            d = os.path.join(tmp, "spiked")
            subprocess.run(["bin/dplr", "gen", "spiked", "--out", d, "--seed", "1", "--set", "n=%d" % n, "--set", "p=%d" % p,
                            "--set", "rank=2", "--set", "lambda=%g,%g" % (1.2 * lam, lam), "--set", "sigma2=1"],
                           check=True, capture_output=True)
            clip = "clip=%.4g" % (1.2 * (p + 2.2 * lam) ** 0.5)
            modes = {
                "given": ("pca-cxz", ["rank=2", "center=none", "sigma2=1", "lambda=%g" % lam]),
                "given1": ("pca-cxz", ["rank=2", "center=none", "sigma2=1", "lambda=%g" % lam, "pca_only=true"]),
                "est": ("pca-cxz", ["rank=2", "center=none", clip]),
                "worst": ("pca-cxz", ["rank=2", "center=none", "sensitivity=worst-case", clip]),
                "ag": ("pca-analyze-gauss", ["rank=2", "center=none", clip]),
            }
            for e in eps:
                sin, stops = {k: [] for k in modes}, 0
                for rep in range(a.reps):
                    seed = 9100 + 31 * rep + int(100 * e)
                    for k, (est, params) in modes.items():
                        r = fit(est, ["--data", d], e, seed, params, os.path.join(tmp, k))
                        if "error" in r or any("planned stop" in x for x in r["notes"]):
                            stops += k == "worst"
                            sin[k].append(1.0)  # no subspace: counted as the worst score
                            continue
                        sin[k].append(r["U.sin_theta_spectral"])
                print("| %d | %d | %g | %g | %s | %s | %s | %s | %d/%d | %s |" % (n, p, lam, e, med(sin["given"]), med(sin["given1"]), med(sin["est"]),
                      med(sin["worst"]), stops, a.reps, med(sin["ag"])), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", action="store_true", help="the spiked-model regime table")
    ap.add_argument("--cells", default="20000:50:20,20000:400:10", help="n:p:λ,… for --grid")
    ap.add_argument("--worst", action="store_true", help="pca-cxz's worst-case mode with the public clips")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--eps", default="1,2,4")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--only", default="", help="comma-separated data set names")
    ap.add_argument("--rank", default="auto", help="pca-cxz's rank: auto (the study) or a number")
    a = ap.parse_args()
    if a.grid:
        return grid(a)
    eps = [float(e) for e in a.eps.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        ds = datasets(tmp)
        if a.only:
            ds = {k: v for k, v in ds.items() if k in a.only.split(",")}
        print("| data set | ε | full fits | planned stops | charged failures | rank kept (median) | pca-cxz ratio | analyze-gauss ratio at that rank | ε charged to pca-cxz |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name, data in ds.items():
            for e in eps:
                full = stop = fail = 0
                ranks, cxz, ag, spent = [], [], [], []
                for rep in range(a.reps):
                    seed = 9100 + 31 * rep + int(100 * e)
                    extra, agclip = [], []
                    if a.worst:
                        extra = ["sensitivity=worst-case", "clip=%g" % CLIPS[name]]
                        agclip = extra[1:]
                    r = fit("pca-cxz", data, e, seed, ["rank=" + a.rank, "center=private", "evaluate=true"] + extra + a.set, os.path.join(tmp, "cxz"))
                    if "error" in r:
                        fail += 1
                        print("<!-- %s ε=%g failure: %s -->" % (name, e, r["error"]))
                        continue
                    k = int(r.get("rank", 0)) if a.rank == "auto" else int(a.rank)
                    if any("planned stop" in n for n in r["notes"]):
                        stop += 1
                    else:
                        full += 1
                        cxz.append(r["captured_variance_ratio"])
                    ranks.append(k)
                    spent.append(r["epsilon_spent"])
                    g = fit("pca-analyze-gauss", data, e, seed, ["rank=%d" % max(k, 1), "center=private", "evaluate=true"] + agclip, os.path.join(tmp, "ag"))
                    if (k > 0 or a.rank != "auto") and "captured_variance_ratio" in g:
                        ag.append(g["captured_variance_ratio"])
                n = a.reps
                print("| %s | %g | %d/%d | %d/%d | %d/%d | %s | %s | %s | %s |" % (
                    name, e, full, n, stop, n, fail, n, med(ranks, "%g"), med(cxz), med(ag), med(spent, "%.3g")), flush=True)


if __name__ == "__main__":
    main()
