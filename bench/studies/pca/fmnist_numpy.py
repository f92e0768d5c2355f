"""Plain NumPy baseline for the Fashion-MNIST timing (issue 17 point 6).

The same work as `dplr fit pca-analyze-gauss --set rank=10 --set center=private`
with clip=auto: read and decompress the IDX file, scale to [0, 1], a median of
the row norms (the mean's clip), clipped mean plus Gaussian noise, centre, a
median of the centred norms (the clip), clip, XᵀX/n, symmetric Gaussian noise,
top-10 eigenvectors. Noise scales are fixed placeholders: this script times the
work, it is not a private implementation.
"""
import gzip
import sys

import numpy as np


def main(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    n, r, c = (int.from_bytes(raw[i:i + 4], "big") for i in (4, 8, 12))
    x = np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(n, r * c).astype(np.float64)
    x *= 1.0 / 255
    rng = np.random.default_rng()
    norms = np.linalg.norm(x, axis=1)
    mc = np.median(norms)
    w = np.minimum(1.0, mc / np.maximum(norms, 1e-300))
    mu = (x * w[:, None]).mean(axis=0) + rng.normal(0, 0.006, x.shape[1])
    x -= mu
    norms = np.linalg.norm(x, axis=1)
    cl = np.median(norms)
    x *= np.minimum(1.0, cl / np.maximum(norms, 1e-300))[:, None]
    s = x.T @ x / n
    e = rng.normal(0, 0.0077, s.shape)
    s += np.triu(e) + np.triu(e, 1).T
    vals, vecs = np.linalg.eigh(s)
    u = vecs[:, ::-1][:, :10]
    print(u.shape, vals[-1])


if __name__ == "__main__":
    main(sys.argv[1])
