"""Fixtures: the repository's bin/dplr and bin/plugins, a fresh dplr home per
test, and small synthetic data sets made by `dplr gen`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import dplr  # noqa: E402

BIN = Path(os.environ.get("DPLR_BIN") or ROOT / "bin" / "dplr")
PLUGINS = Path(os.environ.get("DPLR_TEST_PLUGIN_DIR") or ROOT / "bin" / "plugins")


@pytest.fixture(autouse=True)
def dplr_config(tmp_path, monkeypatch):
    """Point the package at the built binaries and a private home and tmpdir."""
    if not BIN.exists():
        pytest.skip(f"{BIN} missing: run make build")
    monkeypatch.delenv("DPLR_HOME", raising=False)
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    tmp.mkdir()
    old = dplr.Config(**vars(dplr.config))
    dplr.config.binary = str(BIN)
    dplr.config.plugin_dirs = [str(PLUGINS)]
    dplr.config.home = str(home)
    dplr.config.tmpdir = str(tmp)
    yield dplr.config
    for k, v in vars(old).items():
        setattr(dplr.config, k, v)


def _gen(model: str, out: Path, **params) -> Path:
    args = [str(BIN), "gen", model, "--out", str(out), "--seed", "7"]
    for k, v in params.items():
        args += ["--set", f"{k}={v}"]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "DPLR_HOME": str(out) + "-home"})
    return out


@pytest.fixture(scope="session")
def gendir(tmp_path_factory):
    if not BIN.exists():
        pytest.skip(f"{BIN} missing: run make build")
    return tmp_path_factory.mktemp("gen")


@pytest.fixture(scope="session")
def spiked(gendir):
    """Spiked-covariance rows (n = 2000, p = 10, rank 2) and the true subspace."""
    d = _gen("spiked", gendir / "spiked", n=2000, p=10, rank=2)
    return np.load(d / "X.npy"), np.load(d / "truth" / "U.npy")


@pytest.fixture(scope="session")
def trace(gendir):
    """Trace-regression data (n = 2000, 6×5, rank 2) and the true M."""
    d = _gen("trace-regression", gendir / "trace", n=2000, d1=6, d2=5, rank=2)
    return np.load(d / "X.npy"), np.load(d / "y.npy"), np.load(d / "truth" / "M.npy")


@pytest.fixture(scope="session")
def users(gendir):
    """Users data (300 users × 10 samples, d = 10, rank 2)."""
    d = _gen("users-lowrank", gendir / "users", users=300, dim=10, rank=2)
    return np.load(d / "X.npy"), np.load(d / "y.npy"), np.load(d / "users.npy")
