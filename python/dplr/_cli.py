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
import subprocess
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence

from .errors import DplrNotFound, error_for_exit

__all__ = ["Config", "config", "run", "run_json"]


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
        timeout: seconds after which a dplr process is abandoned (``None``:
            no limit); for a fit, prefer the estimator's ``timeout`` which
            dplr itself enforces.
        tmpdir: directory for the temporary ``.npy`` files and output
            directories (``None``: Python's default, ``tempfile.gettempdir()``).
        extra_args: flags added to every ``dplr fit`` (e.g. ``["--manifest",
            "SHA256SUMS"]``).
    """

    binary: Optional[str] = None
    plugin_dirs: List[str] = field(default_factory=list)
    home: Optional[str] = None
    timeout: Optional[float] = None
    tmpdir: Optional[str] = None
    extra_args: List[str] = field(default_factory=list)

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

    Raises the :mod:`dplr.errors` exception for a non-zero exit code when
    ``check`` is true.
    """
    cmd = [config.resolve_binary(), *args]
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=config.timeout)
    except subprocess.TimeoutExpired as exc:  # the child is killed by run()
        from .errors import PluginFailure
        raise PluginFailure(f"dplr did not finish within {config.timeout} s", 4,
                            (exc.stderr or "") if isinstance(exc.stderr, str) else "", cmd) from None
    if check and proc.returncode != 0:
        raise error_for_exit(proc.returncode, proc.stderr, cmd)
    return proc


def run_json(args: Sequence[str]) -> Any:
    """Run ``dplr ARGS`` (which must include ``--json``) and parse its stdout."""
    proc = run(args)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        from .errors import RuntimeFailure
        raise RuntimeFailure(f"dplr printed output that is not JSON: {exc}", 1, proc.stderr, list(args)) from None
