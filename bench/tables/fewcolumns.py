"""How often a dplr warning fires on the public tables of study.py (raw,
standardised, and raw with public column scales known to within a factor
of 2) and on scikit-learn's digits. By default the warning that a released
first component is one or two columns alone (the sign of columns in
different units); --match names another.

Run from the repository root after `make build`:

    python3 bench/tables/fewcolumns.py --runs 3 --eps 1,4
    python3 bench/tables/fewcolumns.py --runs 5 --eps 1 --estimators pca-analyze-gauss --match "mean's expected squared error"
"""
from __future__ import annotations

import argparse
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from sklearn.datasets import load_digits

sys.path.insert(0, os.path.dirname(__file__))
from study import tables  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--eps", default="1,4")
    ap.add_argument("--estimators", default="pca-analyze-gauss,orbit-em")
    ap.add_argument("--match", default="component 1 is col", help="a substring of the warning to count")
    ap.add_argument("--modes", default="raw,standardised", help="raw, standardised, public-x2")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    eps = args.eps.split(",")
    ests = args.estimators.split(",")
    sets = {k: v[0] for k, v in tables().items()}
    sets["digits"] = load_digits().data
    home, tmp = tempfile.mkdtemp(), tempfile.mkdtemp()
    for d in (home, tmp):
        atexit.register(shutil.rmtree, d, ignore_errors=True)
    path, spath = os.path.join(tmp, "x.npy"), os.path.join(tmp, "scales.npy")
    print("| data | columns | " + " | ".join(f"{e}, ε = {x}" for e in ests for x in eps) + " |")
    print("|---|---|" + "---|" * (len(ests) * len(eps)))
    for name, X in sets.items():
        for mode in args.modes.split(","):
            Z = (X - X.mean(0)) / (X.std(0) + 1e-12) if mode == "standardised" else X
            np.save(path, Z.astype(np.float64))
            extra = []
            if mode == "public-x2":
                extra = ["--column-scales", spath]
            cells = []
            for est in ests:
                for e in eps:
                    hits = 0
                    for _ in range(args.runs):
                        if extra:
                            np.save(spath, (X.std(0) + 1e-12) * 2.0 ** rng.uniform(-1, 1, X.shape[1]))
                        r = subprocess.run(["bin/dplr", "fit", est, "--set", "rank=2", "--epsilon", e, "--delta", "1e-6",
                                            "--data", path, "--home", home, "--out", os.path.join(tmp, "out"), "--quiet", *extra],
                                           capture_output=True, text=True, check=True)
                        hits += args.match in r.stderr
                    cells.append(f"{hits}/{args.runs}")
            print(f"| {name} {X.shape[0]}×{X.shape[1]} | {mode} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
