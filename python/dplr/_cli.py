"""Finding and running the ``dplr`` executable.

The package drives the ``dplr`` host exactly as a shell user would: it runs
``dplr fit ... --json`` and reads the JSON it prints and the ``.npy`` files it
writes. :data:`config` says which executable to run and where plugins and the
ledger live.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence

from .errors import DplrNotFound, error_for_exit, warn_from_stderr

__all__ = ["Config", "config", "run", "run_json", "INTERRUPT_GRACE"]

#: seconds dplr gets to settle its reservation after SIGINT before it is killed
INTERRUPT_GRACE = 10.0


@dataclass
class Config:
    """Where the package finds dplr.

    Attributes:
        binary: path of the ``dplr`` executable. ``None``: the environment
            variable ``DPLR_BIN``, else ``dplr`` on PATH.
        plugin_dirs: directories passed as ``--plugin-dir`` (searched before
            the CLI's own search path: ``DPLR_PLUGIN_PATH``, ``bin/plugins``
            beside ``dplr``, ``$DPLR_HOME/plugins``). Empty: the CLI's default.
        home: the dplr home (ledger, cache) passed as ``--home``. ``None``:
            the CLI's default (``$DPLR_HOME``, else the user data directory).
        timeout: seconds after which a dplr process is interrupted (SIGINT,
            as Ctrl-C; raised as :class:`~dplr.errors.Interrupted`; ``None``:
            no limit). For a fit, the estimator's ``timeout`` (dplr's own
            ``--timeout``) is usually what you want.
        tmpdir: directory for the temporary ``.npy`` files and output
            directories (``None``: Python's default, ``tempfile.gettempdir()``).
        extra_args: flags added to every ``dplr fit`` (e.g. ``["--manifest",
            "SHA256SUMS"]``).
        spool_dir: ``None`` (default): arrays go to temporary files removed
            after each call. A directory: arrays are written there once,
            named by the SHA-256 of their dtype, shape and bytes, and kept,
            so a later call with the same array reuses the file and dplr's
            prepared copy of it (no conversion or hashing again: for
            repeated fits of large arrays). The directory then holds copies
            of the data (mode 0600 files in a 0700 directory): put it where
            the data may live, and remove it when done.
        spool_max_bytes: bound on the spool's size; the oldest files are
            removed beyond it.
    """

    binary: Optional[str] = None
    plugin_dirs: List[str] = field(default_factory=list)
    home: Optional[str] = None
    timeout: Optional[float] = None
    tmpdir: Optional[str] = None
    extra_args: List[str] = field(default_factory=list)
    spool_dir: Optional[str] = None
    spool_max_bytes: int = 4 << 30

    def resolve_binary(self) -> str:
        """The absolute path of the dplr executable, or :class:`DplrNotFound`."""
        cand = self.binary or os.environ.get("DPLR_BIN") or "dplr"
        path = shutil.which(cand) if os.sep not in cand else (cand if os.access(cand, os.X_OK) else None)
        if not path:
            raise DplrNotFound(
                f"dplr executable {cand!r} not found: build it (make build) and put bin/ on PATH, "
                "or set DPLR_BIN or dplr.config.binary")
        return os.path.abspath(path)

    def plugin_args(self) -> List[str]:
        """``--plugin-dir`` flags for the configured directories."""
        out: List[str] = []
        for d in self.plugin_dirs:
            out += ["--plugin-dir", os.fspath(d)]
        return out

    def home_args(self) -> List[str]:
        """``--home`` flag when a home is configured."""
        return ["--home", os.fspath(self.home)] if self.home else []


#: The module-level configuration every call uses.
config = Config()


def run(args: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``dplr ARGS`` and return the completed process.

    Each ``dplr: warning:`` line dplr prints is raised as a
    :class:`~dplr.errors.DplrWarning` (Python's warnings machinery: shown
    once per place by default, an error under ``-W error``).

    Raises the :mod:`dplr.errors` exception for a non-zero exit code when
    ``check`` is true. On KeyboardInterrupt (or ``config.timeout``) dplr is
    sent SIGINT and given :data:`INTERRUPT_GRACE` seconds to refund or settle
    its reservation, as Ctrl-C in a shell would; the result is raised as
    :class:`~dplr.errors.Interrupted` (or the error of its exit code).
    """
    cmd = [config.resolve_binary(), *args]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        try:
            out, err = proc.communicate(timeout=config.timeout)
        except (KeyboardInterrupt, subprocess.TimeoutExpired) as exc:
            proc.send_signal(signal.SIGINT)
            try:
                out, err = proc.communicate(timeout=INTERRUPT_GRACE)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            code = proc.returncode
            if isinstance(exc, subprocess.TimeoutExpired):
                err = (err or "") + f"\ndplr: did not finish within config.timeout = {config.timeout} s"
            raise error_for_exit(code if code is not None and code > 0 else 130, err or "", cmd, proc.pid) from None
    finally:
        if proc.poll() is None:  # an exception escaped: never leave dplr running
            proc.kill()
            proc.wait()
    done = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if check and done.returncode != 0:
        raise error_for_exit(done.returncode, err or "", cmd, proc.pid)
    warn_from_stderr(err or "")
    return done


def run_json(args: Sequence[str]) -> Any:
    """Run ``dplr ARGS`` (which must include ``--json``) and parse its stdout."""
    proc = run(args)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        from .errors import RuntimeFailure
        raise RuntimeFailure(f"dplr printed output that is not JSON: {exc}", 1, proc.stderr, list(args)) from None
