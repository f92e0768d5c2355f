"""The centred captured-variance ratio of private PCA with each
estimator's defaults (δ = 1e-6; the rank and the budget only), through the
Python client and the host: the median of RUNS fresh-noise fits per ε
(1 = non-private centred PCA at that rank). DATA=fmnist (the default): the
Fashion-MNIST training images (pixels / 255) at rank 10; DATA=digits:
scikit-learn's digits at rank 5.

    make build BACKEND=openblas
    PATH=$PWD/bin:$PATH EST=pca-analyze-gauss python3 bench/studies/pca/defaults.py 10 0.5,1,4
    PATH=$PWD/bin:$PATH EST=pca-analyze-gauss DATA=digits python3 bench/studies/pca/defaults.py 9 1
"""
import atexit
import gzip
import os
import shutil
import sys
import tempfile
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../python"))
import dplr  # noqa: E402

IMAGES = os.environ.get("FMNIST", "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")


def main() -> None:
    runs, eps_list = int(sys.argv[1]), [float(e) for e in sys.argv[2].split(",")]
    if os.environ.get("DATA", "fmnist") == "digits":
        from sklearn.datasets import load_digits

        X, k = load_digits().data.astype(np.float64), 5
    else:
        with gzip.open(IMAGES) as f:
            X = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float64) / 255
        k = 10
    Xc = X - X.mean(0)
    C = Xc.T @ Xc / len(X)
    top = np.linalg.eigvalsh(C)[::-1][:k].sum()
    scratch = tempfile.mkdtemp()
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    path = os.path.join(scratch, "data.npy")
    np.save(path, X)
    extra = {}  # SET="mean_share=0.3,clip_share=0.1": more parameters for every fit
    for kv in filter(None, os.environ.get("SET", "").split(",")):
        key, val = kv.split("=", 1)
        extra[key] = float(val) if val.replace(".", "", 1).isdigit() else val
    for est in os.environ.get("EST", "pca-analyze-gauss,pca-amin").split(","):
        for eps in eps_list:
            scores = []
            for _ in range(runs):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", dplr.DplrWarning)
                    fit = dplr.estimator_class(est)(epsilon=eps, delta=1e-6, rank=k, **extra).fit(path)
                Q, _ = np.linalg.qr(fit.components_.T)
                scores.append(np.trace(Q.T @ C @ Q) / top)
            print(f"{est} ε={eps}: median {np.median(scores):.3f} (range {min(scores):.3f}–{max(scores):.3f}, {runs} fits)", flush=True)


if __name__ == "__main__":
    main()
