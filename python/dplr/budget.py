"""The per-data-set privacy budget ledger (``dplr budget``).

``dplr.budget(X).set(epsilon=3, delta=1e-5)`` sets the total of the data set
``X`` holds; every later fit on the same values (written again to a new
temporary file, or read from any file holding them) is admitted against it.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from . import _cli
from ._data import ArrayLike, DataSpec, tempdir
from .errors import DplrError, ParameterError, hide_tempdir

__all__ = ["Budget", "budget", "ledger_list", "ledger_verify"]


def _budget_flags(epsilon: Optional[float], delta: Optional[float], rho: Optional[float]) -> List[str]:
    if rho is not None:
        if epsilon is not None or delta is not None:
            raise ParameterError("give epsilon (and delta) or rho, not both")
        return ["--rho", repr(float(rho))]
    if epsilon is None:
        raise ParameterError("give a budget: epsilon (with delta for (ε, δ)-DP) or rho")
    out = ["--epsilon", repr(float(epsilon))]
    if delta is not None:
        out += ["--delta", repr(float(delta))]
    return out


class Budget:
    """The ledger entry of one data set.

    Make it with :func:`budget`. Each method runs ``dplr budget ...`` and
    raises the :mod:`dplr.errors` exception of its exit code.
    """

    def __init__(self, data: Optional[ArrayLike] = None, y: Optional[ArrayLike] = None,
                 users: Optional[ArrayLike] = None, *, kind: Optional[str] = None,
                 dataset: Optional[str] = None, hash: Optional[str] = None,
                 d1: Optional[int] = None, d2: Optional[int] = None) -> None:
        given = sum(x is not None for x in (data, dataset, hash))
        if given != 1:
            raise ParameterError("budget: give exactly one of data, dataset= or hash=")
        if kind is None and data is not None:
            import numpy as np
            if users is not None:
                kind = "users"
            elif y is not None or (not isinstance(data, (str, os.PathLike)) and np.ndim(data) == 3):
                kind = "trace"
        self._spec = DataSpec(data, y, users, kind=kind, d1=d1, d2=d2) if data is not None else None
        self._kind = kind
        self.dataset, self.hash = dataset, hash

    def _run(self, sub: str, args: List[str], json_out: bool) -> Any:
        with tempdir() as d:
            if self._spec is not None:
                ident = self._spec.args(d)
                if self._kind and sub not in ("link", "unlink"):
                    ident += ["--kind", self._kind]
            elif self.dataset is not None:
                ident = ["--dataset", self.dataset]
            else:
                ident = ["--hash", str(self.hash)]
            full = ["budget", sub, *ident, *args, *_cli.config.home_args()]
            try:
                if json_out:
                    return _cli.run_json(full + ["--json"])
                return _cli.run(full).stdout
            except DplrError as e:
                hide_tempdir(e, d)
                raise

    def set(self, epsilon: Optional[float] = None, delta: Optional[float] = None, rho: Optional[float] = None,
            *, name: Optional[str] = None, neighbours: Optional[str] = None, change: bool = False,
            note: Optional[str] = None) -> Dict[str, Any]:
        """Set the data set's total budget (``change=True`` with a ``note`` to
        change an existing total). Returns :meth:`show`."""
        args = _budget_flags(epsilon, delta, rho)
        if name is not None:
            args += ["--name", name]
        if neighbours is not None:
            args += ["--neighbours", neighbours]
        if change:
            if not note:
                raise ParameterError("budget.set(change=True) needs a note")
            args.append("--change")
        if note is not None:
            args += ["--note", note]
        self._run("set", args, json_out=False)
        return self.show()

    def show(self) -> Dict[str, Any]:
        """The budget position: ``total``, ``spent``, ``remaining``, ``runs``…
        (``dplr budget show --json``)."""
        return self._run("show", [], json_out=True)

    def history(self, changes: bool = False) -> List[Dict[str, Any]]:
        """Every run on the data set (estimator, state, charge, guarantee
        class, relation); ``changes=True`` includes budget changes."""
        return self._run("history", ["--changes"] if changes else [], json_out=True)

    def charge(self, epsilon: Optional[float] = None, delta: Optional[float] = None, rho: Optional[float] = None,
               *, note: str, neighbours: Optional[str] = None) -> Dict[str, Any]:
        """Record a spend made outside dplr. Returns :meth:`show`."""
        args = _budget_flags(epsilon, delta, rho) + ["--note", note]
        if neighbours is not None:
            args += ["--neighbours", neighbours]
        self._run("charge", args, json_out=False)
        return self.show()

    def link(self, to: str, *, note: Optional[str] = None) -> None:
        """Make this data count against the budget of data set ``to`` (a name or hash)."""
        self._run("link", ["--to", to] + (["--note", note] if note else []), json_out=False)

    def unlink(self, *, note: Optional[str] = None) -> Dict[str, Any]:
        """Make this linked data a data set of its own, charged everything the
        data set it leaves was charged (dplr budget unlink). Returns :meth:`show`."""
        self._run("unlink", ["--note", note] if note else [], json_out=False)
        return self.show()

    def merge(self, into: str, *, note: Optional[str] = None, force: bool = False) -> Dict[str, Any]:
        """Join this data set into ``into`` (a name or hash) when both budgets
        cover the same people: ``into`` is charged every charge of this one,
        whose data then counts against it (dplr budget merge). A merge that
        does not fit ``into``'s total raises :class:`BudgetRefused` unless
        ``force``. Returns :meth:`show`, which now shows ``into``."""
        args = ["--into", into] + (["--note", note] if note else []) + (["--force"] if force else [])
        self._run("merge", args, json_out=False)
        return self.show()

    def remaining(self) -> Dict[str, Any]:
        """What admission still allows (``show()["remaining"]``)."""
        return self.show().get("remaining") or {}


def budget(data: Optional[ArrayLike] = None, y: Optional[ArrayLike] = None, users: Optional[ArrayLike] = None,
           **kw: Any) -> Budget:
    """The ledger entry of a data set: an array (rows; trace with ``y``;
    users with ``y`` and ``users``), a path, ``dataset=NAME`` or ``hash=HEX``."""
    return Budget(data, y, users, **kw)


def ledger_list() -> List[Dict[str, Any]]:
    """Every data set in the ledger (``dplr budget list --json``)."""
    return _cli.run_json(["budget", "list", "--json", *_cli.config.home_args()])


def ledger_verify() -> str:
    """Check the whole ledger (raises :class:`DataError` if it is damaged)."""
    return _cli.run(["budget", "verify", *_cli.config.home_args()]).stdout


def ledger_run_of(spec: DataSpec, pid: int) -> Optional[Dict[str, Any]]:
    """The ledger's record of the fit run by dplr process ``pid`` on the data
    ``spec`` describes (its files must still exist), or ``None`` when the
    ledger holds no run of that process. A ledger that cannot be read
    counts as unknown: the record is ``{"state": "unknown"}``, read as
    possibly spent."""
    from .errors import DplrError

    import copy

    ident = copy.copy(spec)
    ident.column_scales = None  # a view choice: the budget's key is the source's
    b = Budget.__new__(Budget)
    b._spec, b._kind, b.dataset, b.hash = ident, spec.kind, None, None
    saved, _cli.config.timeout = _cli.config.timeout, None  # the lookup must not inherit a fit's deadline
    try:
        runs = b.history()
    except DplrError:
        return {"state": "unknown"}
    finally:
        _cli.config.timeout = saved
    for r in runs:
        if r.get("pid") == pid:
            return r
    return None
