"""scikit-learn-style estimators driving ``dplr fit``.

Three families, by the data kind an estimator reads (its catalogue entry):

* :class:`PCA` (rows data): ``fit``, ``transform``, ``components_``,
  ``mean_`` (when the estimator releases a mean), ``explained_variance_``
  (when it releases eigenvalues), ``explained_variance_ratio_`` (when it also
  releases the matrix they come from, so the total variance is public);
* :class:`TraceRegression` (trace data): ``fit(X, y)``, ``predict``, ``coef_``;
* :class:`Personalization` (users data): ``fit(X, y, users)``,
  ``predict(X, users)`` with each user's own head.

Every estimator installed gets its own class, generated from the catalogue
(``dplr.PcaAnalyzeGauss``, ``dplr.RgradStrict``, ``dplr.FedrepPrivate``, … or
:func:`estimator_class`), whose keyword arguments are the estimator's
parameters. After ``fit``, ``privacy_`` holds the guarantee dplr certified.
"""

from __future__ import annotations

import inspect
import itertools
import keyword
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Type

import numpy as np

from . import _cli
from ._data import transform_with_cli, ArrayLike, DataSpec, load_outputs, releases, tempdir
from .catalogue import EstimatorInfo, describe
from .budget import ledger_run_of
from .errors import DplrError, ParameterError, hide_tempdir

__all__ = ["Privacy", "DPEstimator", "PCA", "TraceRegression", "Personalization",
           "estimator_class", "class_name"]


@dataclass
class Privacy:
    """The guarantee of one fit, as dplr's ``result.json`` states it.

    Attributes:
        kind: ``pure``, ``approx`` ((ε, δ)-DP), ``zcdp``, ``model-based``,
            ``nominal`` or ``none``.
        epsilon, delta, rho: the certified figures (``None`` when not stated;
            a ``pure`` guarantee has no δ).
        statements: every true statement of the run, each in its own keys:
            ``pure_epsilon`` (ε′-DP, when every step is pure), ``epsilon``
            and ``delta`` ((ε, δ)-DP), ``rho`` (ρ-zCDP), ``mu`` (μ-GDP).
        neighbours: what a neighbouring data set is.
        assumptions: what the guarantee assumes (public parameters, models).
        steps: every privacy step (mechanism, sensitivity, scale, cost).
        text: the guarantee in words.
        composition: how the steps were composed (zcdp, gdp, pld, basic...).
        seeded: whether ``seed`` was given (then not private against anyone
            who knows it).
        grant: the budget the run was granted.
        ledger: the ledger's record of the run (run id, charge).
    """

    kind: str = ""
    epsilon: Optional[float] = None
    delta: Optional[float] = None
    rho: Optional[float] = None
    statements: Dict[str, float] = field(default_factory=dict)
    neighbours: str = ""
    assumptions: List[str] = field(default_factory=list)
    steps: List[Dict[str, Any]] = field(default_factory=list)
    text: str = ""
    composition: str = ""
    seeded: bool = False
    grant: Dict[str, Any] = field(default_factory=dict)
    ledger: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_result(cls, result: Dict[str, Any]) -> "Privacy":
        """The guarantee stated in a ``result.json`` object."""
        p = result.get("privacy") or {}
        return cls(kind=p.get("guarantee", ""), epsilon=p.get("epsilon"), delta=p.get("delta"),
                   rho=p.get("rho"), statements=dict(p.get("statements") or {}),
                   neighbours=p.get("neighbours", ""),
                   assumptions=list(p.get("assumptions") or []), steps=list(p.get("steps") or []),
                   text=p.get("text", ""), composition=p.get("composition", ""),
                   seeded=bool(p.get("seeded", False)), grant=dict(p.get("grant") or {}),
                   ledger=dict(result.get("ledger") or {}))

    def __str__(self) -> str:
        return self.text or self.kind


def class_name(estimator: str) -> str:
    """The Python class name of a dplr estimator: ``pca-analyze-gauss`` →
    ``PcaAnalyzeGauss``."""
    return "".join(part[:1].upper() + part[1:] for part in estimator.replace("_", "-").split("-") if part)


_COMMON = ("epsilon", "delta", "rho", "seed", "non_private", "timeout", "scale", "column_scales")


class DPEstimator:
    """Base class: one dplr estimator with a budget and parameters.

    Args:
        estimator: the dplr estimator name (fixed in generated classes).
        epsilon: ε of the run's budget ((ε, δ)-DP with ``delta``, pure ε-DP alone).
        delta: δ of an (ε, δ) budget.
        rho: ρ of a ρ-zCDP budget (instead of ``epsilon``/``delta``).
        seed: draw noise from this seed: reproducible, and NOT private against
            anyone who knows it.
        non_private: allow a non-private reference estimator (no budget needed).
        timeout: seconds after which dplr gives up on the fit (its ``--timeout``).
        scale: multiply every feature by this before fitting (dplr's
            ``--scale``; ``transform``/``predict`` apply it too).
        column_scales: public per-column scales (length p) of a table whose
            columns are in different units: column j is divided by
            ``column_scales[j]`` (after ``scale``) before anything else
            (dplr's ``--column-scales``; ``transform``/``predict`` apply
            them too). They must come from public knowledge (units, a
            codebook's ranges), never from the data: they cost nothing.
        **params: the estimator's parameters (see ``help()`` of the class or
            ``dplr describe``), checked against the catalogue. A parameter
            named like a Python keyword takes a trailing underscore
            (``lambda_=`` for ``lambda``). ``select={"clip_quantile": [0.5,
            0.9]}`` (estimators with a ``select`` parameter) chooses among
            candidate values privately in one fit with one stated cost, one
            ledger run (dplr's ``--select``; every combination of the listed
            values is a candidate).

    After ``fit``: ``privacy_`` (:class:`Privacy`), ``outputs_`` (every
    output by name), ``releases_`` (each output's release class),
    ``result_`` (the whole ``result.json``), ``n_features_in_``,
    ``data_hash_`` (the data set's source identity, which the ledger keys
    budgets on) and ``content_hash_`` (the hash of the data the plugin read);
    with ``select``, ``selection_``: ``{"chosen": {...}, "candidates": [...]}``.
    """

    _estimator: Optional[str] = None
    _family: Optional[str] = None  # rows, trace or users
    _default_estimator: Optional[str] = None

    def __init__(self, estimator: Optional[str] = None, *, epsilon: Optional[float] = None,
                 delta: Optional[float] = None, rho: Optional[float] = None, seed: Optional[int] = None,
                 non_private: bool = False, timeout: Optional[float] = None, scale: Optional[float] = None,
                 column_scales: Optional[ArrayLike] = None, **params: Any) -> None:
        name = self._estimator or estimator or self._default_estimator
        if self._estimator and estimator not in (None, self._estimator):
            raise ParameterError(f"{type(self).__name__} runs {self._estimator}, not {estimator!r}")
        if not name:
            raise ParameterError(f"{type(self).__name__}: say which estimator (estimator=...)")
        self.estimator = name
        self.epsilon, self.delta, self.rho, self.seed = epsilon, delta, rho, seed
        self.non_private, self.timeout, self.scale = non_private, timeout, scale
        self.column_scales = column_scales
        self.params: Dict[str, Any] = {}
        self.set_params(**params)

    # ---- scikit-learn protocol -------------------------------------------------

    @property
    def info(self) -> EstimatorInfo:
        """The catalogue entry of this estimator."""
        return describe(self.estimator)

    def get_params(self, deep: bool = True) -> Dict[str, Any]:
        """The constructor arguments (scikit-learn protocol)."""
        out: Dict[str, Any] = {k: getattr(self, k) for k in _COMMON}
        if not self._estimator:
            out["estimator"] = self.estimator
        out.update(self.params)
        return out

    def set_params(self, **params: Any) -> "DPEstimator":
        """Set budget or estimator parameters, checked against the catalogue."""
        info = self.info
        if self._family and info.data_kind != self._family:
            raise ParameterError(f"{self.estimator} reads {info.data_kind} data; "
                                 f"{type(self).__name__} is for {self._family} data")
        for k, v in params.items():
            if k in _COMMON:
                setattr(self, k, v)
            elif k == "estimator":
                if v != self.estimator:
                    raise ParameterError("the estimator cannot be changed by set_params; make a new object")
            elif k == "select" and isinstance(v, dict):
                for name, values in v.items():
                    if name.startswith("select") or not list(values):
                        raise ParameterError(f"{self.estimator}: select: {name!r} needs a list of candidate values")
                    for x in values:
                        info.encode({name: x})  # raises ParameterError
                info.encode({"select": "none"})  # the estimator has a selection
                self.params[k] = {name: list(values) for name, values in v.items()}
            else:
                if k.endswith("_") and keyword.iskeyword(k[:-1]):
                    k = k[:-1]  # lambda_=... for the parameter "lambda"
                info.encode({k: v})  # raises ParameterError
                self.params[k] = v
        return self

    def _select_args(self) -> List[str]:
        """``--select name=v1,v2`` flags of a ``select`` dict."""
        out: List[str] = []
        for name, values in (self.params.get("select") or {}).items():
            text = [self.info.encode({name: x})[1].split("=", 1)[1] for x in values]
            out += ["--select", f"{name}={','.join(text)}"]
        return out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items()
                         if v is not None and v is not False and k != "estimator")
        return f"{type(self).__name__}({args})"

    # ---- running ---------------------------------------------------------------

    def _budget_args(self) -> List[str]:
        info = self.info
        eps, delta, rho = self.epsilon, self.delta, self.rho
        if rho is not None and (eps is not None or delta is not None):
            raise ParameterError(f"{self.estimator}: give epsilon (and delta) or rho, not both")
        if delta is not None and eps is None:
            raise ParameterError(f"{self.estimator}: delta needs epsilon")
        out: List[str] = []
        if rho is not None:
            kind, out = "zcdp", ["--rho", repr(float(rho))]
        elif eps is not None:
            kind, out = ("approx", ["--epsilon", repr(float(eps)), "--delta", repr(float(delta))]) \
                if delta is not None else ("pure", ["--epsilon", repr(float(eps))])
        elif self.non_private:
            return ["--non-private"]
        else:
            raise ParameterError(f"{self.estimator}: give a budget: epsilon (with delta for (ε, δ)-DP) or rho")
        if info.grants and kind not in info.grants:
            names = {"approx": "(ε, δ) (epsilon and delta)", "pure": "pure ε (epsilon alone)", "zcdp": "ρ (rho)"}
            raise ParameterError(f"{self.estimator} does not accept a {names[kind]} budget; it accepts: "
                                 + ", ".join(names.get(g, g) for g in info.grants))
        if self.non_private:
            out.append("--non-private")
        return out

    def _args(self, command: str, spec: DataSpec, d: str) -> List[str]:
        """The arguments of ``dplr fit`` or ``dplr plan`` (``command``) on
        ``spec``, whose files go to the directory ``d``."""
        info = self.info
        sel = isinstance(self.params.get("select"), dict)
        params = {k: v for k, v in self.params.items() if not (sel and k == "select")}
        args = [command, self.estimator, *self._budget_args(), *info.encode(params),
                *(self._select_args() if sel else [])]
        spec.scale = self.scale
        spec.column_scales = self.column_scales
        spec.kind = info.data_kind
        return args + spec.args(d) + ["--json", "--quiet", *_cli.config.plugin_args(), *_cli.config.home_args(),
                                      *_cli.config.extra_args]

    def plan(self, X: ArrayLike, y: Optional[ArrayLike] = None, users: Optional[ArrayLike] = None, *,
             d1: Optional[int] = None, d2: Optional[int] = None) -> Dict[str, Any]:
        """What ``fit`` on this data would spend and whether its result can
        beat a random subspace, without reserving or spending anything
        (``dplr plan --json``): a dict with ``steps`` (each with its costs and
        ``noise_multiplier``), ``accounting``, ``expected_score``,
        ``random_score`` and ``near_random``. The indicator comes from a dry
        run on a public reference model of the data's shape (n, p), not from
        the data: the data may be easier or harder."""
        with tempdir() as d:
            return _cli.run_json(self._args("plan", DataSpec(X, y, users, d1=d1, d2=d2), d))

    def _run(self, spec: DataSpec, name: Optional[str] = None) -> Dict[str, Any]:
        """Run ``dplr fit`` on ``spec`` and set the fitted attributes."""
        with tempdir() as d:
            out = os.path.join(d, "out")
            args = self._args("fit", spec, d) + ["--out", out]
            if self.seed is not None:
                args += ["--seed", str(int(self.seed))]
            if self.timeout is not None:
                args += ["--timeout", f"{float(self.timeout)}s"]
            if name is not None:
                args += ["--name", name]
            try:
                result = _cli.run_json(args)
            except DplrError as e:
                hide_tempdir(e, d)
                if e.pid is not None:  # what the ledger recorded for this run, not the exit code alone
                    e.settle_from_ledger(ledger_run_of(spec, e.pid))
                raise
            result["out_dir"] = out
            outputs = load_outputs(result)
        result.pop("out_dir", None)
        self.result_ = result
        self.outputs_ = outputs
        self.releases_ = releases(result)
        self.privacy_ = Privacy.from_result(result)
        self.metrics_ = {m["name"]: m.get("value") for m in result.get("metrics") or []}
        # The notes that change what to conclude (also raised as DplrWarning).
        self.warnings_ = list(result.get("warnings") or [])
        data = result.get("data") or {}
        self.n_features_in_ = data.get("p") or (data.get("d1", 0) * data.get("d2", 0)) or None
        self.data_hash_ = data.get("source_hash") or data.get("hash")  # the ledger's data-set id
        self.content_hash_ = data.get("hash")
        if isinstance(self.params.get("select"), dict) and "selected_candidate" in outputs:
            grid = self.params["select"]
            cands = [dict(zip(grid, c)) for c in itertools.product(*grid.values())]
            self.selection_ = {"chosen": cands[int(outputs["selected_candidate"]) - 1], "candidates": cands}
        self._set_attributes()
        return result

    def _set_attributes(self) -> None:
        """Family hook: set the scikit-learn attributes from ``outputs_``."""

    def _scaled(self, X: ArrayLike) -> np.ndarray:
        """X read as the fit read its data: times ``scale``, then each column
        divided by its ``column_scales`` entry (rows and users data)."""
        a = np.asarray(X, dtype=np.float64)
        if self.scale is not None:
            a = a * self.scale
        cs = (getattr(self, "result_", None) or {}).get("data", {}).get("column_scales")
        if cs:  # as the fit recorded them
            a = a / np.asarray(cs, dtype=np.float64)
        return a

    def _check_fitted(self) -> None:
        if not hasattr(self, "outputs_"):
            raise AttributeError(f"{type(self).__name__} is not fitted yet: call fit first")


class PCA(DPEstimator):
    """Private principal components of rows data (``pca-*``, ``orbit-*``).

    ``fit(X)`` with X an n×p array (or a path). Attributes after fit:

    * ``components_``: r×p, the released eigenvectors as rows (dplr's ``U``ᵀ);
    * ``mean_``: the released private mean (``None`` when the estimator
      releases none; ``transform`` then does not center);
    * ``explained_variance_``: the released eigenvalues (``None`` when the
      estimator releases none);
    * ``explained_variance_ratio_``: the released ``explained_variance_ratio``
      (e.g. Analyze Gauss: private eigenvalues over the private trace);
      ``None`` when the estimator releases no total variance.
    """

    _family = "rows"
    _default_estimator = "pca-analyze-gauss"

    def fit(self, X: ArrayLike, y: Any = None, *, name: Optional[str] = None) -> "PCA":
        """Fit on rows ``X`` (n×p array or path); ``y`` is ignored
        (scikit-learn convention). ``name`` names the data set in the ledger."""
        self._run(DataSpec(X), name)
        return self

    def _set_attributes(self) -> None:
        o = self.outputs_
        u = o.get("U")
        self.components_ = None if u is None else np.ascontiguousarray(np.asarray(u).T)
        self.n_components_ = None if u is None else u.shape[1]
        mean = o.get("mean")
        self.mean_ = None if mean is None else np.asarray(mean, dtype=np.float64).ravel()
        ev = o.get("eigenvalues")
        self.explained_variance_ = None if ev is None else np.asarray(ev, dtype=np.float64)
        ratio = o.get("explained_variance_ratio")
        if ratio is None and ev is not None and isinstance(o.get("trace"), float) and o["trace"] > 0:
            ratio = self.explained_variance_ / o["trace"]  # a released trace (non-private reference)
        self.explained_variance_ratio_ = None if ratio is None else np.asarray(ratio, dtype=np.float64)

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Project ``X`` (n×p) onto the components exactly as ``dplr
        transform`` does, by running it on the fitted model: every released
        preprocessing is applied (``scale``, the released ``feature_scale``,
        the released mean), then the projection on ``components_``
        (post-processing: no budget is spent)."""
        self._check_fitted()
        if self.components_ is None:
            raise AttributeError(f"{self.estimator} released no components (output U)")
        return transform_with_cli(self.result_, self.outputs_, X, self.scale)

    def fit_transform(self, X: ArrayLike, y: Any = None, **kw: Any) -> np.ndarray:
        """``fit(X)`` then ``transform(X)`` (X must be an array)."""
        return self.fit(X, y, **kw).transform(X)

    def inverse_transform(self, Z: ArrayLike) -> np.ndarray:
        """Map scores back to the (scaled) feature space."""
        self._check_fitted()
        a = np.asarray(Z, dtype=np.float64) @ self.components_
        return a + self.mean_ if self.mean_ is not None else a


class TraceRegression(DPEstimator):
    """Private low-rank trace regression y_i = ⟨X_i, M⟩ + noise (``rgrad-*``).

    ``fit(X, y)`` with X an n×d1×d2 array (or n×(d1·d2) with ``d1``/``d2`` given
    to fit) and y of length n. ``coef_`` is the released d1×d2 estimate ``M``.
    """

    _family = "trace"
    _default_estimator = "rgrad-strict"

    def fit(self, X: ArrayLike, y: Optional[ArrayLike] = None, *, d1: Optional[int] = None,
            d2: Optional[int] = None, name: Optional[str] = None) -> "TraceRegression":
        """Fit on samples ``X`` and responses ``y`` (arrays or paths; a
        ``dplr gen`` directory needs no ``y``)."""
        self._run(DataSpec(X, y, d1=d1, d2=d2), name)
        return self

    def _set_attributes(self) -> None:
        m = self.outputs_.get("M")
        self.coef_ = None if m is None else np.asarray(m, dtype=np.float64)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """⟨X_i·scale, coef_⟩ for each sample (post-processing)."""
        self._check_fitted()
        if self.coef_ is None:
            raise AttributeError(f"{self.estimator} released no estimate (output M)")
        a = self._scaled(X)
        if a.ndim == 3:
            return np.einsum("nij,ij->n", a, self.coef_)
        if a.ndim == 2 and a.shape[1] == self.coef_.size:
            return a @ self.coef_.ravel()
        raise ValueError(f"X: want n×{self.coef_.shape[0]}×{self.coef_.shape[1]} or n×{self.coef_.size}, "
                         f"got shape {a.shape}")


class Personalization(DPEstimator):
    """Private shared representation with per-user heads (``fedrep-*``).

    ``fit(X, y, users)`` with X n×d, y of length n and the integer user id of
    each row. After fit: ``representation_`` (d×k, the public ``U``),
    ``heads_`` (user id → head, per-user outputs meant for that user only,
    outside the public guarantee), ``user_ids_``.
    """

    _family = "users"
    _default_estimator = "fedrep-private"

    def fit(self, X: ArrayLike, y: Optional[ArrayLike] = None, users: Optional[ArrayLike] = None, *,
            name: Optional[str] = None) -> "Personalization":
        """Fit on features ``X``, responses ``y`` and user ids ``users``."""
        self._run(DataSpec(X, y, users), name)
        return self

    def _set_attributes(self) -> None:
        o = self.outputs_
        u = o.get("U")
        self.representation_ = None if u is None else np.asarray(u, dtype=np.float64)
        v, ids = o.get("V"), o.get("V_user_ids")
        self.heads_: Optional[Dict[int, np.ndarray]] = None
        self.user_ids_ = None
        if v is not None and ids is not None:
            self.user_ids_ = np.asarray(ids).ravel().astype(np.int64)
            self.heads_ = {int(i): np.asarray(v[k], dtype=np.float64) for k, i in enumerate(self.user_ids_)}

    @property
    def is_classifier(self) -> bool:
        """Whether the estimator fits ±1 labels (``fedrep-classify*``)."""
        return "classify" in self.estimator

    def decision_function(self, X: ArrayLike, users: ArrayLike) -> np.ndarray:
        """x_i·scale @ representation_ @ head[users_i] for each row."""
        self._check_fitted()
        if self.representation_ is None or self.heads_ is None:
            raise AttributeError(f"{self.estimator} released no representation or heads "
                                 "(output_v=false?): nothing to predict with")
        a = self._scaled(X)
        ids = np.asarray(users).ravel()
        if a.ndim != 2 or len(ids) != a.shape[0]:
            raise ValueError(f"X: want n×d with n user ids, got shapes {a.shape} and {ids.shape}")
        missing = sorted({int(i) for i in ids} - set(self.heads_))
        if missing:
            raise ValueError(f"{len(missing)} user id(s) have no head (not in the fitted data), e.g. {missing[:5]}")
        heads = np.stack([self.heads_[int(i)] for i in ids]) if len(ids) else np.zeros((0, self.representation_.shape[1]))
        return np.einsum("nk,nk->n", a @ self.representation_, heads)

    def predict(self, X: ArrayLike, users: ArrayLike) -> np.ndarray:
        """Each row's prediction with its own user's head: the regression value,
        or the ±1 label for the classification estimators."""
        s = self.decision_function(X, users)
        return np.where(s > 0, 1.0, -1.0) if self.is_classifier else s


_FAMILIES: Dict[str, Type[DPEstimator]] = {"rows": PCA, "trace": TraceRegression, "users": Personalization}
_classes: Dict[Tuple[str, str], Type[DPEstimator]] = {}


def estimator_class(name: str) -> Type[DPEstimator]:
    """The class of dplr estimator ``name``, generated from its catalogue entry.

    Its constructor takes the budget (``epsilon``, ``delta``, ``rho``),
    ``seed`` and the estimator's parameters as keyword arguments; its
    docstring lists them.
    """
    info = describe(name)
    key = (_cli.config.resolve_binary() + "|" + "|".join(map(str, _cli.config.plugin_dirs)), name)
    if key in _classes:
        return _classes[key]
    base = _FAMILIES.get(info.data_kind, DPEstimator)
    params = [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=None) for k in _COMMON if k != "non_private"]
    params.insert(4, inspect.Parameter("non_private", inspect.Parameter.KEYWORD_ONLY, default=False))
    params += [inspect.Parameter(p + "_" if keyword.iskeyword(p) else p, inspect.Parameter.KEYWORD_ONLY, default=None)
               for p in info.params]

    def __init__(self: DPEstimator, **kw: Any) -> None:
        base.__init__(self, **kw)

    __init__.__signature__ = inspect.Signature([inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY),
                                                *params])  # type: ignore[attr-defined]
    cls = type(class_name(name), (base,), {
        "__init__": __init__, "_estimator": name, "__doc__": info.doc() + "\n\n" + (base.__doc__ or ""),
        "__module__": "dplr"})
    _classes[key] = cls
    return cls


