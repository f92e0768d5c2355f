#!/usr/bin/env python3
"""Fashion-MNIST PCA from Python vs the same `dplr fit` from the shell.

Interleaved rounds; each round runs, in turn:

* shell: ``dplr fit pca-analyze-gauss --data IDX.gz --scale 1/255 ...`` as a
  subprocess, wall time of the process;
* python-uint8: ``dplr.PcaAnalyzeGauss(..., scale=1/255).fit(X)`` with X the
  60000×784 uint8 pixel array already in memory (written to a temporary .npy
  as uint8), wall time of ``fit`` including the catalogue lookup (cache
  cleared each round);
* python-spool: the same with ``dplr.config.spool_dir`` set, so the array's
  file is written once and dplr's prepared copy is reused, as the shell's
  unchanged IDX file is;
* python-path: ``fit(IDX path)``, no array at all.

Prints a Markdown table of medians (and min–max). Usage:

    DPLR_HOME=$(mktemp -d) /usr/bin/python3 python/bench_fmnist.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
import dplr  # noqa: E402
_cat = sys.modules["dplr.catalogue"]

INNER: dict = {}
IDX = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
SCALE = 1 / 255
FLAGS = ["--epsilon", "1", "--delta", "1e-6", "--set", "rank=10", "--set", "clip=28"]


def load_idx(path: str) -> np.ndarray:
    """The IDX images as an n×(rows·cols) uint8 array."""
    with gzip.open(path, "rb") as f:
        buf = f.read()
    n, r, c = (int.from_bytes(buf[i:i + 4], "big") for i in (4, 8, 12))
    return np.frombuffer(buf, dtype=np.uint8, offset=16).reshape(n, r * c)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    binary = os.environ.get("DPLR_BIN") or str(ROOT / "bin" / "dplr")
    plugins = str(ROOT / "bin" / "plugins")
    dplr.config.binary, dplr.config.plugin_dirs = binary, [plugins]
    x8 = load_idx(IDX)
    spool_dir = dplr._data.tempfile.mkdtemp(prefix="dplr-bench-spool-")

    def shell() -> float:
        with dplr._data.tempdir() as d:
            t = time.perf_counter()
            out = subprocess.run([binary, "fit", "pca-analyze-gauss", "--data", IDX, "--scale", repr(SCALE),
                                  *FLAGS, "--plugin-dir", plugins, "--out", d + "/out", "--json", "--quiet"],
                                 check=True, stdout=subprocess.PIPE).stdout
            dt = time.perf_counter() - t
            inner.setdefault("shell", []).append(json.loads(out)["timings"])
            return dt

    inner = INNER

    def py(data, scale, key) -> float:
        _cat.clear_cache()
        est = sys.modules["dplr.estimators"]
        est._classes.clear()
        t = time.perf_counter()
        pca = dplr.PcaAnalyzeGauss(epsilon=1.0, delta=1e-6, rank=10, clip=28, scale=scale)
        pca.fit(data)
        dt = time.perf_counter() - t
        assert pca.components_.shape == (10, 784)
        inner.setdefault(key, []).append(pca.result_["timings"])
        return dt

    def spooled(data, scale, key) -> float:
        dplr.config.spool_dir = spool_dir
        try:
            return py(data, scale, key)
        finally:
            dplr.config.spool_dir = None

    cases = {
        "shell: dplr fit --data IDX.gz --scale 1/255": shell,
        "python: fit(uint8 array), scale=1/255": lambda: py(x8, SCALE, "u8"),
        "python: fit(uint8 array), scale=1/255, config.spool_dir set": lambda: spooled(x8, SCALE, "spool"),
        "python: fit(IDX path), scale=1/255": lambda: py(IDX, SCALE, "path"),
    }
    try:
        run_rounds(cases, times := {k: [] for k in cases}, args.rounds)
    finally:
        shutil.rmtree(spool_dir, ignore_errors=True)
    report(times, inner)


def run_rounds(cases, times, rounds) -> None:
    """Warm up, then run every case once per round, in turn."""
    for f in cases.values():  # warm-up: page cache, dplr's converted-data cache
        f()
    INNER.clear()
    for _ in range(rounds):
        for k, f in cases.items():
            times[k].append(f())


def report(times, inner) -> None:
    """Print the Markdown table."""
    base = statistics.median(times[next(iter(times))])
    print("| run | median wall s | min–max s | ÷ shell | median dplr total_s | median wall − total_s | median prepare_s |")
    print("|---|---|---|---|---|---|---|")
    for (k, v), key in zip(times.items(), ["shell", "u8", "spool", "path"]):
        m = statistics.median(v)
        tot = [t["total_s"] for t in inner[key]]
        over = [w - t for w, t in zip(v, tot)]
        prep = [t.get("prepare_s", float("nan")) for t in inner[key]]
        print(f"| {k} | {m:.3f} | {min(v):.3f}–{max(v):.3f} | {m / base:.3f}× | {statistics.median(tot):.3f} "
              f"| {statistics.median(over):.3f} | {statistics.median(prep):.3f} |")


if __name__ == "__main__":
    main()
