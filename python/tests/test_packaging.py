"""The package builds and installs offline: its in-tree backend needs no
package from an index (pyproject.toml's build-system requires nothing)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1]


def _backend():
    spec = importlib.util.spec_from_file_location("dplr_build", PKG / "_build" / "dplr_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_wheel_holds_every_module_and_the_metadata(tmp_path):
    b = _backend()
    assert b.get_requires_for_build_wheel() == [] and b.get_requires_for_build_sdist() == []
    name = b.build_wheel(str(tmp_path))
    with zipfile.ZipFile(tmp_path / name) as z:
        names = set(z.namelist())
        want = {p.relative_to(PKG).as_posix() for p in (PKG / "dplr").glob("*.py")}
        assert want <= names
        meta = z.read("dplr-0.1.0.dist-info/METADATA").decode()
        assert "Requires-Dist: numpy" in meta and "Name: dplr" in meta
        record = z.read("dplr-0.1.0.dist-info/RECORD").decode()
        assert all(n in record for n in want)
    assert b.build_sdist(str(tmp_path)).endswith(".tar.gz")


def test_pip_installs_offline_into_a_fresh_venv(tmp_path):
    """pip install with build isolation and --no-index: no index is reached."""
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"no venv module with pip here: {made.stderr.strip()[-200:]}")
    py = venv / "bin" / "python"
    got = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(PKG)],
                         capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    where = subprocess.run([str(py), "-c", "import dplr.errors, os; print(dplr.errors.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert str(venv) in where.stdout
