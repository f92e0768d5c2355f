"""Private PCA on public tables whose columns are in different units.

Users judge PCA on such tables in the standardised space (scikit-learn's
StandardScaler followed by PCA). This study fits one dplr estimator on each
table in several ways and scores every released subspace there:

* ``standardised``: the table standardised with its empirical (non-private)
  means and deviations before the fit: the reference the issue names;
* ``public-x2-pairs``: the same public scales with ``center=pairs``
  (differences of disjoint random pairs of rows: no private mean, so no
  offset reaches the clip);
* ``public-x2``: the raw table with public per-column scales
  (``column_scales``) known only to within a factor of 2: each scale is the
  column's deviation times 2**u, u uniform on [-1, 1], drawn afresh per run;
* ``public-x2-released``: the same public scales with
  ``feature_scale=released`` (correlation PCA of the released covariance:
  each column divided by the square root of its released variance, no
  extra budget), and ``public-x2-pairs-released`` with both;
* ``raw``: the raw table, no scales (what a user gets by default);
* ``raw-released``: the raw table with ``feature_scale=released``;
* ``feature-scale-private``: the raw table with ``feature_scale=private``.

Score: the captured-variance ratio tr(QᵀCQ) / (sum of the top-k eigenvalues
of C), C the correlation matrix (covariance of the standardised table) and
Q an orthonormal basis of the released subspace mapped into the
standardised space (a fit on x/s maps to z by diag(s/σ); a released
feature_scale f multiplies s by f). 1 is what
StandardScaler + PCA gets; a random k-subspace's median is printed beside.

Run from the repository root after `make build`:

    python3 bench/tables/study.py --runs 5 --eps 0.5,1,2,4 --out bench/results/tables.json

It needs python3-sklearn, python3-vega-datasets and r-cran-mass (Debian).
``--tables small`` fits seven smaller MASS tables and iris instead.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import dplr  # noqa: E402


MODES = ["standardised", "public-x2", "public-x2-pairs", "public-x2-released", "public-x2-pairs-released", "raw",
         "raw-released",
         "feature-scale-private"]


def tables() -> dict:
    """The public tables: name → (n×p float array, column names)."""
    from sklearn import datasets as sk

    out = {}
    d = sk.load_diabetes(scaled=False)
    out["diabetes"] = (d.data, list(d.feature_names))
    w = sk.load_wine()
    out["wine"] = (w.data, list(w.feature_names))
    b = sk.load_breast_cancer()
    out["breast_cancer"] = (b.data, list(b.feature_names))
    import vega_datasets

    cars = json.load(open(Path(vega_datasets.__file__).parent / "_data" / "cars.json"))
    cols = ["Miles_per_Gallon", "Cylinders", "Displacement", "Horsepower", "Weight_in_lbs", "Acceleration", "Year"]
    rows = []
    for r in cars:
        vals = [r.get(c) for c in cols]
        if c := vals[-1]:
            vals[-1] = float(str(c)[:4])
        if all(isinstance(v, (int, float)) for v in vals):
            rows.append(vals)
    out["cars"] = (np.asarray(rows, dtype=float), cols)
    with tempfile.TemporaryDirectory() as t:
        path = os.path.join(t, "boston.csv")
        subprocess.run(["Rscript", "-e", f'write.csv(MASS::Boston, "{path}", row.names=FALSE)'], check=True,
                       capture_output=True)
        with open(path) as f:
            header = [h.strip('"') for h in f.readline().strip().split(",")]
        out["boston"] = (np.loadtxt(path, delimiter=",", skiprows=1), header)
    return out


SMALL = ["Pima.tr", "crabs", "birthwt", "fgl", "UScereal", "Cars93", "biopsy"]


def small_tables() -> dict:
    """Smaller public tables: MASS's numeric columns (rows with a missing value dropped) and iris."""
    from sklearn import datasets as sk

    out = {}
    with tempfile.TemporaryDirectory() as t:
        for name in SMALL:
            path = os.path.join(t, name + ".csv")
            subprocess.run(["Rscript", "-e", f'd <- MASS::{name}; d <- na.omit(d[sapply(d, is.numeric)]); '
                            f'write.csv(d, "{path}", row.names=FALSE)'], check=True, capture_output=True)
            with open(path) as f:
                header = [h.strip('"') for h in f.readline().strip().split(",")]
            X = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
            keep = X.std(axis=0) > 0
            out[name] = (X[:, keep], [h for h, k in zip(header, keep) if k])
    i = sk.load_iris()
    out["iris"] = (i.data, list(i.feature_names))
    return out


def captured(C: np.ndarray, basis: np.ndarray, k: int) -> float:
    """tr(QᵀCQ) / (top-k eigenvalues of C) for Q an orthonormal basis of span(basis)."""
    q, _ = np.linalg.qr(basis)
    top = np.sort(np.linalg.eigvalsh(C))[::-1][:k].sum()
    return float(np.trace(q.T @ C @ q) / top)


def random_subspace(C: np.ndarray, k: int, rng: np.random.Generator, draws: int = 2000) -> float:
    p = C.shape[0]
    return float(np.median([captured(C, rng.standard_normal((p, k)), k) for _ in range(draws)]))


def run(args) -> dict:
    rng = np.random.default_rng(args.seed)
    results = {"estimator": args.estimator, "rank": args.rank, "runs": args.runs, "params": args.set, "tile": args.tile,
               "tables": {}}
    params = dict(kv.split("=", 1) for kv in args.set) if args.set else {}
    for key, v in params.items():  # numbers as numbers: the package checks types
        try:
            params[key] = float(v)
        except ValueError:
            pass
    cls = dplr.estimator_class(args.estimator)
    for name, (X, cols) in (small_tables() if args.tables == "small" else tables()).items():
        X = np.tile(X, (args.tile, 1))
        n, p = X.shape
        mu, sd = X.mean(axis=0), X.std(axis=0)
        Z = (X - mu) / sd
        C = np.cov(Z, rowvar=False, bias=True)
        k = args.rank
        rec = {"n": n, "p": p, "random": random_subspace(C, k, rng), "cells": []}
        print(f"{name}: n={n} p={p} random subspace {rec['random']:.3f}", file=sys.stderr)
        for eps in args.eps:
            for mode in args.modes:
                scores = []
                for _ in range(args.runs):
                    kw = dict(epsilon=eps, delta=args.delta, rank=k, **params)
                    data, D = X, 1 / sd
                    if mode == "standardised":
                        data, D = Z, np.ones(p)
                    elif mode.startswith("public-x2"):
                        s = sd * 2.0 ** rng.uniform(-1, 1, size=p)
                        kw["column_scales"], D = s, s / sd
                        if mode.startswith("public-x2-pairs"):
                            kw["center"] = "pairs"
                    if mode.endswith("-released"):
                        kw["feature_scale"] = "released"
                    elif mode == "feature-scale-private":
                        kw["feature_scale"] = "private"
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", dplr.DplrWarning)
                            est = cls(**kw).fit(data)
                    except dplr.DplrError as e:
                        scores.append(None)
                        print(f"  {mode} ε={eps}: {e}", file=sys.stderr)
                        continue
                    fs = est.outputs_.get("feature_scale")
                    if fs is not None:  # the fit divided its input by fs too
                        D = D * np.asarray(fs).ravel()
                    U = est.components_.T  # p×k in the fitted space
                    scores.append(captured(C, D[:, None] * U, k))
                ok = [s for s in scores if s is not None]
                cell = {"epsilon": eps, "mode": mode, "scores": scores,
                        "median": float(np.median(ok)) if ok else None, "failed": len(scores) - len(ok)}
                rec["cells"].append(cell)
                med = "—" if cell["median"] is None else f"{cell['median']:.3f}"
                print(f"  ε={eps:<4} {mode:<22} median {med} ({len(ok)}/{len(scores)} ran)", file=sys.stderr)
        results["tables"][name] = rec
    return results


def markdown(res: dict) -> str:
    modes = sorted({c["mode"] for t in res["tables"].values() for c in t["cells"]},
                   key=MODES.index)
    lines = [f"{res['estimator']}, rank {res['rank']}, median of {res['runs']} fresh-noise runs; "
             "captured-variance ratio in the standardised space (1 = StandardScaler + PCA)", "",
             "| table | n×p | ε | random | " + " | ".join(modes)
             + " | public-x2-released − standardised | best public-x2 − standardised |",
             "|---|---|---|---|" + "---|" * len(modes) + "---|---|"]
    for name, t in res["tables"].items():
        for eps in sorted({c["epsilon"] for c in t["cells"]}):
            cells = {c["mode"]: c["median"] for c in t["cells"] if c["epsilon"] == eps}
            fmt = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
            pub = [cells[m] for m in MODES if m.startswith("public-x2") and cells.get(m) is not None]
            ref, rel = cells.get("standardised"), cells.get("public-x2-released")
            diff = None if not pub or ref is None else max(pub) - ref
            gap = None if rel is None or ref is None else rel - ref
            lines.append(f"| {name} | {t['n']}×{t['p']} | {eps} | {t['random']:.3f} | "
                         + " | ".join(fmt(cells.get(m)) for m in modes) + f" | {fmt(gap)} | {fmt(diff)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--estimator", default="pca-analyze-gauss")
    ap.add_argument("--rank", type=int, default=2)
    ap.add_argument("--eps", type=lambda s: [float(v) for v in s.split(",")], default=[1.0])
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--modes", type=lambda s: s.split(","), default=MODES)
    ap.add_argument("--set", action="append", default=[], help="estimator parameter key=value")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tile", type=int, default=1,
                    help="repeat every row this many times: the same population at k times the rows")
    ap.add_argument("--tables", choices=["main", "small"], default="main",
                    help="main: diabetes, wine, breast cancer, cars, Boston; small: 65-683 rows from MASS and iris")
    ap.add_argument("--out", help="JSON results (the markdown table goes to stdout)")
    args = ap.parse_args()
    dplr.config.binary = str(ROOT / "bin" / "dplr")
    dplr.config.plugin_dirs = [str(ROOT / "bin" / "plugins")]
    home = tempfile.mkdtemp(prefix="dplr-tables-")
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    dplr.config.home = home  # a scratch ledger: the study's spending is not the user's
    res = run(args)
    md = markdown(res)
    print(md)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
