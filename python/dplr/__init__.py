"""dplr from Python: differentially private low-rank estimation.

A scikit-learn-style front end to the ``dplr`` command line and its
estimator plugins. It depends only on the standard library and NumPy::

    >>> import dplr
    >>> pca = dplr.PCA(epsilon=1.0, delta=1e-6, rank=2, clip=12)  # doctest: +SKIP
    >>> Z = pca.fit(X).transform(X)                                 # doctest: +SKIP

Every installed estimator also has its own class generated from the
catalogue (``dplr.PcaAnalyzeGauss``, ``dplr.RgradStrict``,
``dplr.FedrepPrivate``…), whose keyword arguments are checked against it.
``dplr.config`` says where ``dplr`` and its plugins are (default: ``DPLR_BIN``
or ``dplr`` on PATH, and the CLI's own plugin search path).
"""

from __future__ import annotations

from typing import Any, List

from ._cli import Config, config
from .budget import Budget, budget, ledger_list, ledger_verify
from .catalogue import EstimatorInfo, Param, catalogue, describe, estimator_names
from .errors import (EXIT_CODES, BudgetRefused, DataError, DplrError, DplrNotFound, DplrWarning, EstimatorFailure,
                     Interrupted, ParameterError, PluginFailure, RuntimeFailure, UsageError)
from .estimators import (DPEstimator, PCA, Personalization, Privacy, TraceRegression, class_name,
                         estimator_class)

__version__ = "0.1.0"

__all__ = [
    "Config", "config", "Budget", "budget", "ledger_list", "ledger_verify", "EstimatorInfo", "Param",
    "catalogue", "describe", "estimator_names", "EXIT_CODES", "BudgetRefused", "DataError", "DplrError",
    "DplrNotFound", "DplrWarning", "EstimatorFailure", "Interrupted", "ParameterError", "PluginFailure", "RuntimeFailure",
    "UsageError", "DPEstimator", "PCA", "Personalization", "Privacy", "TraceRegression", "class_name",
    "estimator_class", "estimators", "plan",
]


def plan(estimator: str, X: Any, y: Any = None, users: Any = None, **kw: Any) -> dict:
    """The plan of fitting ``estimator`` (with the keyword arguments of its
    class: budget and parameters) on ``X`` (``y``, ``users``), spending
    nothing: see :meth:`DPEstimator.plan`. ``d1`` and ``d2`` give trace
    data's matrix shape. A fit whose plan has ``near_random`` set warns
    (:class:`DplrWarning`) before it spends."""
    d1, d2 = kw.pop("d1", None), kw.pop("d2", None)
    return estimator_class(estimator)(**kw).plan(X, y, users, d1=d1, d2=d2)


def estimators() -> List[str]:
    """The class names of every installed estimator (``dplr.PcaAnalyzeGauss``…)."""
    return [class_name(n) for n in estimator_names()]


def __getattr__(attr: str) -> Any:
    """``dplr.PcaAnalyzeGauss`` etc.: the generated class of an installed estimator."""
    if attr[:1].isupper():
        for name in estimator_names():
            if class_name(name) == attr:
                return estimator_class(name)
    raise AttributeError(f"module 'dplr' has no attribute {attr!r}")
