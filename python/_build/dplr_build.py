"""An in-tree PEP 517 build backend for the dplr Python package.

The package is pure Python (standard library + NumPy at run time): nothing
is compiled, so building it needs no setuptools. This backend writes the
wheel (and an sdist) with the standard library alone, which lets
``pip install ./python`` work offline from any virtual environment, with
pip's build isolation on: the isolated build environment needs no package
from an index.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
NAME = "dplr"
VERSION = "0.1.0"
TAG = "py3-none-any"
SUMMARY = ("Differentially private low-rank estimation from Python: scikit-learn-style estimators "
           "driving the dplr host and plugins")


def _metadata() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\nSummary: {SUMMARY}\n"
            "Requires-Python: >=3.9\nRequires-Dist: numpy\nLicense: see the dplr repository\n"
            "Description-Content-Type: text/markdown\n\n" + readme)


def _sources() -> List[Path]:
    return sorted(p for p in (ROOT / NAME).rglob("*.py") if "__pycache__" not in p.parts)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _wheel(wheel_directory: str, editable: bool) -> str:
    dist = f"{NAME}-{VERSION}.dist-info"
    files: Dict[str, bytes] = {}
    if editable:  # a .pth file puts the source tree on sys.path
        files[f"_{NAME}_editable.pth"] = (str(ROOT) + "\n").encode()
    else:
        for p in _sources():
            files[p.relative_to(ROOT).as_posix()] = p.read_bytes()
    files[f"{dist}/METADATA"] = _metadata().encode()
    files[f"{dist}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: dplr_build\nRoot-Is-Purelib: true\nTag: {TAG}\n").encode()
    record = [_record_line(n, d) for n, d in files.items()] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    name = f"{NAME}-{VERSION}-{TAG}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            z.writestr(zipfile.ZipInfo(n, date_time=(2020, 1, 1, 0, 0, 0)), d)
    return name


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> List[str]:
    """Nothing: the wheel is written with the standard library."""
    return []


get_requires_for_build_sdist = get_requires_for_build_wheel
get_requires_for_build_editable = get_requires_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None,
                metadata_directory: Optional[str] = None) -> str:
    """Write the pure-Python wheel into ``wheel_directory``."""
    return _wheel(wheel_directory, editable=False)


def build_editable(wheel_directory: str, config_settings: Optional[dict] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """Write an editable wheel (a .pth pointing at this source tree)."""
    return _wheel(wheel_directory, editable=True)


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    """Write the source distribution: the package, its tests, this backend."""
    base = f"{NAME}-{VERSION}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        paths = [ROOT / "pyproject.toml", ROOT / "README.md", Path(__file__)] + _sources()
        paths += sorted((ROOT / "tests").glob("*.py"))
        for p in paths:
            t.add(p, arcname=f"{base}/{p.relative_to(ROOT).as_posix()}")
        info = _metadata().encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(info)
        t.addfile(ti, io.BytesIO(info))
    return name
