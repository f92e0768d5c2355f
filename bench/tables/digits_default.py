"""The default private PCA on scikit-learn's digits (1797×64), given only the
rank and a budget: the centred captured-variance ratio (1 = non-private
centred PCA) of pca-analyze-gauss at rank 5, ε = 1, over fresh-noise runs.

Run from the repository root after `make build`:

    python3 bench/tables/digits_default.py [--runs 7] [--set center=none]
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import dplr  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--rank", type=int, default=5)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--set", action="append", default=[], help="estimator parameter key=value")
    args = ap.parse_args()
    from sklearn.datasets import load_digits

    dplr.config.binary = str(ROOT / "bin" / "dplr")
    dplr.config.plugin_dirs = [str(ROOT / "bin" / "plugins")]
    dplr.config.home = tempfile.mkdtemp(prefix="dplr-digits-")  # a scratch ledger
    atexit.register(shutil.rmtree, dplr.config.home, ignore_errors=True)
    X = load_digits().data
    Xc = X - X.mean(axis=0)
    C = Xc.T @ Xc / len(X)
    top = np.sort(np.linalg.eigvalsh(C))[::-1][:args.rank].sum()
    params = dict(kv.split("=", 1) for kv in args.set)
    scores = []
    for _ in range(args.runs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dplr.DplrWarning)
            est = dplr.PcaAnalyzeGauss(epsilon=args.epsilon, delta=1e-6, rank=args.rank, **params).fit(X)
        q, _ = np.linalg.qr(est.components_.T)
        scores.append(float(np.trace(q.T @ C @ q) / top))
    print(f"digits, rank {args.rank}, ε = {args.epsilon}, {params or 'defaults'}: median {np.median(scores):.3f} "
          f"(range {min(scores):.3f}–{max(scores):.3f}, {args.runs} runs)")


if __name__ == "__main__":
    main()
