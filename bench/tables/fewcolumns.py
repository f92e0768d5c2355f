"""How often dplr warns that a released first component is one or two
columns alone (the sign of columns in different units), on the public
tables of study.py raw and standardised, and on scikit-learn's digits.

Run from the repository root after `make build`:

    python3 bench/tables/fewcolumns.py --runs 3 --eps 1,4
"""
from __future__ import annotations

import argparse
import os
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
    args = ap.parse_args()
    eps = args.eps.split(",")
    ests = args.estimators.split(",")
    sets = {k: v[0] for k, v in tables().items()}
    sets["digits"] = load_digits().data
    home, tmp = tempfile.mkdtemp(), tempfile.mkdtemp()
    path = os.path.join(tmp, "x.npy")
    print("| data | columns | " + " | ".join(f"{e}, ε = {x}" for e in ests for x in eps) + " |")
    print("|---|---|" + "---|" * (len(ests) * len(eps)))
    for name, X in sets.items():
        for mode in ("raw", "standardised"):
            Z = X if mode == "raw" else (X - X.mean(0)) / (X.std(0) + 1e-12)
            np.save(path, Z.astype(np.float64))
            cells = []
            for est in ests:
                for e in eps:
                    hits = 0
                    for _ in range(args.runs):
                        r = subprocess.run(["bin/dplr", "fit", est, "--set", "rank=2", "--epsilon", e, "--delta", "1e-6",
                                            "--data", path, "--home", home, "--out", os.path.join(tmp, "out"), "--quiet"],
                                           capture_output=True, text=True, check=True)
                        hits += "component 1 is col" in r.stderr
                    cells.append(f"{hits}/{args.runs}")
            print(f"| {name} {X.shape[0]}×{X.shape[1]} | {mode} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
