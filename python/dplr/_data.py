"""NumPy arrays to the files dplr reads, and dplr's outputs back to arrays.

Arrays are written as ``.npy`` files in a temporary directory that is removed
when the call ends. dplr identifies a data set by the values it holds (its
content hash and source identity), not by the file name, so the same array
written again is the same data set for the ledger, call after call.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional

import numpy as np

from ._cli import config
from .errors import DataError

__all__ = ["ArrayLike", "DataSpec", "tempdir", "data_args", "is_path"]

#: an array, anything ``np.asarray`` accepts, or a path to a file dplr reads
ArrayLike = Any

# dtypes dplr's .npy reader takes as they are (anything else is written as float64)
_NATIVE = {("f", 4), ("f", 8), ("i", 1), ("i", 2), ("i", 4), ("i", 8),
           ("u", 1), ("u", 2), ("u", 4), ("u", 8), ("b", 1)}


def is_path(x: Any) -> bool:
    """Whether ``x`` names a file or directory rather than holding values."""
    return isinstance(x, (str, os.PathLike))


@contextmanager
def tempdir(prefix: str = "dplr-py-") -> Iterator[str]:
    """A private temporary directory, removed on exit whatever happens."""
    d = tempfile.mkdtemp(prefix=prefix, dir=config.tmpdir)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _as_array(x: ArrayLike, what: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype.kind not in "fiub":
        raise DataError(f"{what}: dtype {a.dtype} is not numeric", exit_code=5)
    if (a.dtype.kind, a.dtype.itemsize) not in _NATIVE:
        a = a.astype(np.float64)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a


def _spool_path(a: np.ndarray) -> str:
    """Write ``a`` once into ``config.spool_dir`` under its content hash and
    return the path; an unchanged file lets dplr reuse its prepared data."""
    d = os.fspath(config.spool_dir)
    os.makedirs(d, mode=0o700, exist_ok=True)
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(memoryview(a).cast("B") if a.size else b"")
    path = os.path.join(d, h.hexdigest() + ".npy")
    if not _stamp_matches(path):  # missing, or changed since it was written
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")  # mode 0600
        try:
            with os.fdopen(fd, "wb") as f:
                np.save(f, a, allow_pickle=False)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise
        _write_stamp(path)
        _evict(d, keep=path)
    return path


def _stamp(st: os.stat_result) -> str:
    """A file's state without reading it: device, inode, size and change
    time (a write, a replacement or a touch changes it; the change time
    cannot be set back)."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_ctime_ns}"


def _write_stamp(path: str) -> None:
    with open(path + ".stamp", "w", encoding="ascii") as f:
        f.write(_stamp(os.stat(path)))


def _stamp_matches(path: str) -> bool:
    """Whether the spool file is exactly as this package wrote it: a file
    named by the content hash of an array is reused only then, so a spool
    file edited or replaced since is written again, never fitted in place of
    the array."""
    try:
        with open(path + ".stamp", encoding="ascii") as f:
            want = f.read().strip()
        st = os.stat(path)
    except OSError:
        return False
    return _stamp(st) == want


def _evict(d: str, keep: str) -> None:
    """Remove the least recently written spool files beyond ``config.spool_max_bytes``."""
    files = []
    for name in os.listdir(d):
        p = os.path.join(d, name)
        if name.endswith(".npy") and p != keep:
            with contextlib.suppress(OSError):
                st = os.stat(p)
                files.append((st.st_mtime, st.st_size, p))
    total = sum(f[1] for f in files) + os.path.getsize(keep)
    for _, size, p in sorted(files):
        if total <= config.spool_max_bytes:
            break
        with contextlib.suppress(OSError):
            os.remove(p)
            total -= size
        with contextlib.suppress(OSError):
            os.remove(p + ".stamp")


def _write(dirpath: str, name: str, x: ArrayLike, what: str, ndim: Optional[tuple] = None) -> str:
    """Write ``x`` as ``dirpath/name.npy`` (or into the spool, or return it
    when it is a path)."""
    if is_path(x):
        return os.fspath(x)
    a = _as_array(x, what)
    if ndim is not None and a.ndim not in ndim:
        raise DataError(f"{what}: want a {' or '.join(f'{d}-D' for d in ndim)} array, got shape {a.shape}",
                        exit_code=5)
    if config.spool_dir:
        return _spool_path(a)
    path = os.path.join(dirpath, name + ".npy")
    np.save(path, a, allow_pickle=False)
    return path


class DataSpec:
    """The data of one call: features ``X`` and, by kind, responses and user ids.

    Args:
        X: rows data (n×p), trace data (n×d1×d2, or n×(d1·d2) with ``d1``,
            ``d2``), users data (n×p); or a path to a file or ``dplr gen``
            directory.
        y: responses (trace and users data), an array or a path.
        users: integer user id of each row (users data), an array or a path.
        kind: the data kind the estimator reads (``rows``, ``trace``, ``users``).
        d1, d2: the matrix shape of trace data given as 2-D.
        scale: multiply every feature by this (dplr's ``--scale``).
        column_scales: divide column j by ``column_scales[j]`` (dplr's
            ``--column-scales``).
    """

    def __init__(self, X: ArrayLike, y: Optional[ArrayLike] = None, users: Optional[ArrayLike] = None,
                 *, kind: Optional[str] = None, d1: Optional[int] = None, d2: Optional[int] = None,
                 scale: Optional[float] = None, fmt: Optional[str] = None,
                 column_scales: Optional[ArrayLike] = None) -> None:
        self.X, self.y, self.users = X, y, users
        self.kind, self.d1, self.d2, self.scale, self.fmt = kind, d1, d2, scale, fmt
        self.column_scales = column_scales

    def args(self, dirpath: str) -> List[str]:
        """The dplr data flags, writing arrays into ``dirpath``."""
        dims = {"rows": (2,), "users": (2,), "trace": (2, 3)}.get(self.kind or "", None)
        out = ["--data", _write(dirpath, "X", self.X, "X", dims)]
        if self.kind == "trace" and self.y is None and not is_path(self.X):
            raise DataError("trace data needs the responses y", exit_code=5)
        if self.kind == "users" and not is_path(self.X) and (self.y is None or self.users is None):
            raise DataError("users data needs the responses y and the user ids users", exit_code=5)
        if self.y is not None:
            out += ["--response", _write(dirpath, "y", self.y, "y", (1,))]
        if self.users is not None:
            out += ["--users", _write(dirpath, "users", self.users, "users", (1,))]
        if self.d1 is not None:
            out += ["--d1", str(int(self.d1))]
        if self.d2 is not None:
            out += ["--d2", str(int(self.d2))]
        if self.scale is not None:
            out += ["--scale", repr(float(self.scale))]
        if self.column_scales is not None:
            cs = self.column_scales if is_path(self.column_scales) else \
                np.asarray(self.column_scales, dtype=np.float64).ravel()
            out += ["--column-scales", _write(dirpath, "column_scales", cs, "column_scales", (1,))]
        if self.fmt is not None:
            out += ["--format", self.fmt]
        return out


def data_args(X: ArrayLike, y: Optional[ArrayLike], users: Optional[ArrayLike], dirpath: str,
              **kw: Any) -> List[str]:
    """Shorthand for ``DataSpec(X, y, users, **kw).args(dirpath)``."""
    return DataSpec(X, y, users, **kw).args(dirpath)


def load_outputs(result: Dict[str, Any]) -> Dict[str, Any]:
    """Every output of a ``result.json`` as arrays and floats, by name.

    Matrices are read from the ``.npy`` files dplr wrote (``out_dir``),
    series become 1-D arrays and scalars floats.
    """
    outs: Dict[str, Any] = {}
    o = result.get("outputs") or {}
    out_dir = result.get("out_dir") or ""
    for m in o.get("matrices") or []:
        f = m.get("file")
        if f and out_dir and os.path.exists(os.path.join(out_dir, f)):
            outs[m["name"]] = np.load(os.path.join(out_dir, f), allow_pickle=False)
        elif "value" in m:
            outs[m["name"]] = np.asarray(m["value"], dtype=np.float64).reshape(m.get("rows", -1), m.get("cols", -1))
    for s in o.get("series") or []:
        outs[s["name"]] = np.asarray(s.get("values") or [], dtype=np.float64)
    for s in o.get("scalars") or []:
        outs[s["name"]] = float(s["value"])
    return outs


def releases(result: Dict[str, Any]) -> Dict[str, str]:
    """The release class (``public``, ``per-user``, ``evaluation``,
    ``diagnostic``) of every output, by name."""
    o = result.get("outputs") or {}
    return {m["name"]: m.get("release", "") for k in ("matrices", "series", "scalars") for m in (o.get(k) or [])}


def transform_with_cli(result: Dict[str, Any], outputs: Dict[str, Any], X: ArrayLike,
                       scale: Optional[float] = None) -> np.ndarray:
    """Map ``X`` through a fitted model with ``dplr transform``: the one
    implementation of every released preprocessing (``--scale``, a released
    ``feature_scale``, a released mean) and of the projection.

    The model directory is rebuilt from the fit's result (what ``dplr fit
    --json`` printed, equal to its ``result.json``) and its loaded outputs,
    in a temporary directory removed afterwards.
    """
    import json

    from . import _cli

    a = _as_array(X, "X")
    with tempdir("dplr-py-transform-") as d:
        model = os.path.join(d, "model")
        os.mkdir(model, 0o700)
        for m in (result.get("outputs") or {}).get("matrices") or []:
            f = m.get("file")
            if f and m.get("name") in outputs:
                if os.path.basename(f) != f or f.startswith("."):
                    raise ValueError(f"model output file name {f!r} is not a plain file name")
                np.save(os.path.join(model, f), np.asarray(outputs[m["name"]], dtype=np.float64))
        with open(os.path.join(model, "result.json"), "w", encoding="utf-8") as fh:
            json.dump(result, fh)
        xpath = os.path.join(d, "X.npy")
        np.save(xpath, np.ascontiguousarray(a, dtype=np.float64))
        out = os.path.join(d, "Z.npy")
        args = ["transform", "--model", model, "--data", xpath, "--out", out, *_cli.config.plugin_args(),
                *_cli.config.home_args()]
        if scale is not None:
            args += ["--scale", repr(float(scale))]
        _cli.run(args)
        return np.load(out, allow_pickle=False)
