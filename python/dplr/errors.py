"""Exceptions raised by the dplr Python package.

Every failure of the ``dplr`` command line arrives as a :class:`DplrError`
subclass chosen from the process's exit code (the table ``dplr help`` prints);
the exception carries that code, dplr's own message (its stderr) and the
command that was run. Whether budget was spent: a failed fit reads the
ledger's record of its own run (by the failed process's id) and sets
``may_have_spent`` from it; other commands follow the exit code, as the
exit-code table in docs/ledger.md says: usage, budget and data errors spend nothing.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional, Sequence, Type

__all__ = [
    "DplrError",
    "RuntimeFailure",
    "UsageError",
    "ParameterError",
    "BudgetRefused",
    "PluginFailure",
    "DataError",
    "EstimatorFailure",
    "Interrupted",
    "DplrNotFound",
    "DplrWarning",
    "warn_from_stderr",
    "hide_tempdir",
    "EXIT_CODES",
    "error_for_exit",
]


class DplrError(Exception):
    """A dplr command failed.

    Attributes:
        exit_code: dplr's exit code (see the table in docs/ledger.md).
        message: dplr's message (the last non-empty line of its stderr, or
            all of it when it is short).
        stderr: dplr's whole stderr.
        command: the argument list that was run (data paths are temporary
            files; no data values appear in it).
    """

    #: whether a run that failed this way may have been charged budget, from
    #: the exit code alone. A failed fit replaces it on the instance with
    #: what the ledger recorded for the run (see ``ledger_run``).
    may_have_spent: bool = False

    def __init__(self, message: str, exit_code: int = 1, stderr: str = "",
                 command: Optional[Sequence[str]] = None, pid: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.stderr = stderr
        self.command = list(command) if command is not None else None
        #: the process id of the dplr that failed (the ledger records it)
        self.pid = pid
        #: the ledger's record of the failed fit (``None``: the ledger holds
        #: no run of that process, so nothing was reserved or spent)
        self.ledger_run: Optional[Dict[str, Any]] = None

    def settle_from_ledger(self, run: Optional[Dict[str, Any]]) -> None:
        """Set ``may_have_spent`` and ``ledger_run`` from the ledger's record
        of this process's run: spent when the record counts a charge or is
        still reserved or interrupted (charged its full grant)."""
        self.ledger_run = run
        if run is not None and run.get("state") == "unknown":
            return  # the ledger could not be read: keep what the exit code says
        if run is None:
            self.may_have_spent = False
            return
        charge = run.get("charge") or {}
        charged = any(float(v or 0) > 0 for k, v in charge.items() if k in ("epsilon", "delta", "rho", "mu"))
        self.may_have_spent = charged or run.get("state") in ("reserved", "interrupted")

    def __str__(self) -> str:
        return f"{self.message} (dplr exit code {self.exit_code})"


class RuntimeFailure(DplrError):
    """Exit 1: a runtime error (the ledger could not be read or written,
    outputs could not be written after the release). A released run stays
    charged."""

    may_have_spent = True


class UsageError(DplrError, ValueError):
    """Exit 2: bad flags or parameters, an absurd budget, a request the
    estimator refused in its pre-flight check. Nothing was spent."""


class ParameterError(UsageError, TypeError):
    """A keyword argument the catalogue does not accept (unknown name, wrong
    type, value outside the declared choices). Raised by the Python package
    before dplr runs, with exit code 2 as dplr would give it. Nothing was
    spent."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=2)


class BudgetRefused(DplrError):
    """Exit 3: the budget ledger refused the run (or a non-private estimator
    on a data set with a budget). Nothing was spent."""


class PluginFailure(DplrError):
    """Exit 4: the plugin did not start, crashed, hung, sent malformed output
    or a privacy cost the host could not verify. Refunded if it ended before
    announcing a privacy step, charged its full grant otherwise."""

    may_have_spent = True


class DataError(DplrError, ValueError):
    """Exit 5: the data could not be read or failed validation (NaN or Inf,
    wrong shapes, a damaged ledger). Nothing was spent."""


class EstimatorFailure(DplrError):
    """Exit 6: the estimator failed while running, or anything failed once
    the run was charged (a failure after a charge is never exit 5). Refunded
    before its first privacy step, charged its full grant after."""

    may_have_spent = True


class Interrupted(DplrError):
    """Exit 130: dplr was interrupted. Refunded before the first privacy
    step, charged its full grant after."""

    may_have_spent = True


class DplrNotFound(DplrError, FileNotFoundError):
    """The ``dplr`` executable could not be found (set ``DPLR_BIN``,
    ``dplr.config.binary`` or put it on PATH)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=127)


class DplrWarning(UserWarning):
    """A note from dplr that changes what a result means (a seeded, hence
    reproducible, noise draw; a non-private estimator; a result expected to
    be near random; budget spent on data with no total). dplr prints these
    on stderr as ``dplr: warning: ...`` lines, even with ``--quiet``; the
    package raises each as a Python warning, where users look."""


def warn_from_stderr(stderr: str, stacklevel: int = 4) -> None:
    """Raise each ``dplr: warning:`` line of ``stderr`` as a :class:`DplrWarning`."""
    import warnings

    for ln in (stderr or "").splitlines():
        ln = ln.strip()
        if ln.startswith("dplr: warning:"):
            warnings.warn(ln[len("dplr: warning:"):].strip(), DplrWarning, stacklevel=stacklevel)


#: dplr's exit codes (cmd/dplr/cli/cli.go) and the exception each one raises.
EXIT_CODES: Dict[int, Type[DplrError]] = {
    1: RuntimeFailure,
    2: UsageError,
    3: BudgetRefused,
    4: PluginFailure,
    5: DataError,
    6: EstimatorFailure,
    130: Interrupted,
}


def _message(stderr: str) -> str:
    """dplr's error line: the last stderr line starting with "dplr:", else
    the last non-empty line."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    if not lines:
        return "dplr failed without a message"
    for ln in reversed(lines):
        if ln.startswith("dplr:"):
            return ln[len("dplr:"):].strip()
    return lines[-1]


#: dplr's advice on the data it was given, and the package's call that does
#: the same (the file dplr read is a temporary copy of the caller's array).
_ADVICE = [
    (re.compile(r"`budget link --to ([^`]+)` on this data"), r'dplr.budget(X).link("\1") on this array'),
    (re.compile(r"`budget unlink` this data"), "dplr.budget(X).unlink() this array"),
]


def _for_python(message: str) -> str:
    """``message`` with dplr's command-line advice given as package calls."""
    for pat, call in _ADVICE:
        message = pat.sub(call, message)
    return message


def hide_tempdir(e: DplrError, tempdir: str) -> None:
    """Name the caller's array, not the temporary file dplr read it from
    (removed once the call returns), in ``e``'s message."""
    e.message = re.sub(re.escape(tempdir) + r"[^\s:'\"`,;)]*", "the array", e.message)
    e.args = (e.message,)


def error_for_exit(code: int, stderr: str, command: Optional[Sequence[str]] = None,
                   pid: Optional[int] = None) -> DplrError:
    """The exception for a dplr process (``pid``) that exited with ``code``."""
    cls = EXIT_CODES.get(code, DplrError)
    msg = _for_python(_message(stderr))
    if code < 0:  # killed by a signal: it may have reserved and never settled
        e = DplrError(f"dplr was killed by signal {-code}: {msg}", code, stderr, command, pid)
        e.may_have_spent = True
        return e
    return cls(msg, code, stderr, command, pid)
