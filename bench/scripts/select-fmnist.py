#!/usr/bin/python3
"""Private selection of pca-analyze-gauss's clip quantile on Fashion-MNIST,
through the host (bench/results/select.md).

Each fit is `dplr fit` with fresh noise on the 60000 training images (pixels
/255); its components are judged, non-privately, on the 10000 test images
(rows the fit never read): the centred captured variance
Σ‖Uᵀ(x − x̄)‖² / Σ‖x − x̄‖², x̄ the test mean. For each repetition: one
selection run (--select clip_quantile=...) at ε = 1, and every candidate
fitted alone at the full ε = 1.

Usage: select-fmnist.py DPLR REPS OUT.json
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

FM = "/usr/share/datasets/fashion-mnist/"
QS = ["0.5", "0.75", "0.9", "0.99"]


def idx_images(path):
    with gzip.open(path) as f:
        raw = f.read()
    n, r, c = (int.from_bytes(raw[4 * i:4 * i + 4], "big") for i in (1, 2, 3))
    return np.frombuffer(raw, np.uint8, offset=16).reshape(n, r * c) / 255.0


def fit(dplr, out, extra):
    args = [dplr, "fit", "pca-analyze-gauss", "--data", FM + "train-images-idx3-ubyte.gz",
            "--scale", "0.00392156862745098", "--epsilon", "1", "--delta", "1e-6",
            "--set", "rank=10", "--out", out, "--quiet", "--json", *extra]
    res = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    return np.load(os.path.join(out, "U.npy")), res


def captured(u, xc, tot):
    return float(np.sum((xc @ u) ** 2) / tot)


def main():
    dplr, reps, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    test = idx_images(FM + "t10k-images-idx3-ubyte.gz")
    xc = test - test.mean(axis=0)
    tot = float(np.sum(xc ** 2))
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for rep in range(reps):
            row = {"rep": rep}
            u, res = fit(dplr, os.path.join(d, f"s{rep}"), ["--select", "clip_quantile=" + ",".join(QS)])
            sc = {s["name"]: s["value"] for s in res["outputs"]["scalars"]}
            row["selected"] = sc["selected_clip_quantile"]
            row["selected_score"] = captured(u, xc, tot)
            row["charged"] = res.get("privacy", {}).get("epsilon")
            for q in QS:
                u, _ = fit(dplr, os.path.join(d, f"c{rep}-{q}"), ["--set", "clip_quantile=" + q])
                row[q] = captured(u, xc, tot)
            rows.append(row)
            print(json.dumps(row), flush=True)
    json.dump(rows, open(path, "w"), indent=1)


if __name__ == "__main__":
    main()
